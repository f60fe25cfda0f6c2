"""Second derivatives of the scans (gradc.ops.scans): makers for their grad ops, composite (gradc.ops.composite) so
third derivatives follow. ``ddX`` is the grad of the grad op's output X@GRAD.

cummax, cummin, mode, median and nanmedian route dOut to elements their forward picked: the grad op is linear in
dOut with weights fixed by the pick (flat in X, Out and the indices), so d/d(dOut) is the adjoint of that routing
applied to ddX and every other derivative is zero. logcumsumexp's grad is smooth in X and is differentiated as a
whole (``expansion``).
"""

from __future__ import annotations

from math import prod

from ..errors import GradError
from ..ir import EMPTY_VAR, AttrType
from ..registry import defgrad
from . import scans  # noqa: F401  (registers the grad ops given makers here)
from .composite import Formula, expansion, first
from .loss_double import reducing


def _taken(x_slot: str, index_slot: str, dout_slot: str, keepdim: str | None = None):
    """cummax/cummin (index per element) and mode (index per reduced row): X@GRAD adds dOut at the index along
    the axis, so d/d(dOut) takes ddX there (the index given the axis back first when ``keepdim`` names an attribute
    that is false). A 0-d X is its own scan and mode: d/d(dOut) = ddX. Of an X of unknown rank the axis stays as
    the op has it: take_along_axis and unsqueeze2 place a negative one from the end at run time."""

    def maker(g):
        wanted, ddx = first(g.IG(dout_slot)), first(g.OG(x_slot + "@GRAD"))
        if wanted in (None, EMPTY_VAR) or ddx is None:
            return []
        f = Formula(g)
        x, indices, dout = first(g.I(x_slot)), first(g.I(index_slot)), first(g.I(dout_slot))
        shape = g.shape(x)
        if shape == []:
            f.into(wanted, "scale", {"X": ddx}, {"scale": 1.0})
            return f.ops
        axis = g.attr("axis") if shape is None else g.attr("axis") % len(shape)   # Paddle's take_along_axis: >= 0

        def unsqueezed(s):
            return s[:axis] + [1] + s[axis:] if axis >= 0 else s[:len(s) + 1 + axis] + [1] + s[len(s) + 1 + axis:]
        if keepdim is None:
            f.into(wanted, "take_along_axis", {"Input": ddx, "Index": indices}, {"Axis": axis}, slot="Result")
            return f.ops
        dims = None
        if not g.attr(keepdim):
            dims = unsqueezed
            indices = f.op("unsqueeze2", {"X": indices}, indices, {"axes": [axis]}, more={"XShape": f.xshape(indices)},
                           dims=unsqueezed)
        taken = f.op("take_along_axis", {"Input": ddx, "Index": indices}, dout, {"Axis": axis}, slot="Result",
                     dims=dims)
        f.shaped_like(taken, dout, out=wanted)
        return f.ops

    return maker


for _name in ("cummax", "cummin"):
    defgrad(f"{_name}_grad", grad=_taken("x", "indices", "out@GRAD"), no_grad_inputs=["x", "indices"])
defgrad("mode_grad", grad=_taken("X", "Indices", "Out@GRAD", keepdim="keepdim"), no_grad_inputs=["X", "Indices"])


def _median_spread(g, rank: int) -> list[int] | None:
    """The dims median / nanmedian fold (None: all of them)."""
    def fail(message: str):
        raise GradError(f"{g.fwd.type}: {message}")

    folded = scans.median_axes(g.attr("axis"), rank, fail)
    return None if len(folded) == rank else folded


def _shared(x_slot: str, out_slot: str):
    """median_grad, nanmedian_grad: X@GRAD_j = dOut_r w_j for j among the elements row r folds, the weights w
    (the grad op's own output for dOut = 1: at the index, shared among the elements equal to Out, or halves at the
    two middles) flat in X and Out: a reducing maker (d/d(dOut)_r = the sum of ddX_j w_j over row r's elements)."""
    reduced = reducing(out_slot + "@GRAD", _median_spread, x=x_slot)

    def maker(g):
        if g.I("AxisTensor") or g.I("AxisTensorList") or g.shape(first(g.I(x_slot))) is None:
            return _folded_at_run_time(g, x_slot, out_slot)
        return reduced(g)

    return maker


def _folded_at_run_time(g, x_slot: str, out_slot: str) -> list:
    """median_grad with its axes in AxisTensor(List), or of an x of unknown rank: d/d(dOut) sums ddX w over the folded
    dims (all for none or a rank <= 1 x, as reduce_sum's empty dim), reduce_sum placing them at run time (from its dim
    attribute: a tensor-valued one naming the same vars, or the median's axes), and keeping dims as the median did."""
    wanted = first(g.IG(out_slot + "@GRAD"))
    if wanted == EMPTY_VAR:
        return []
    f = Formula(g)
    dout, like = first(g.I(out_slot + "@GRAD")), first(g.O(x_slot + "@GRAD"))
    values = {slot: g.I(slot) for slot in g.opdef.inputs if slot != out_slot + "@GRAD"}
    weights = f.op(g.fwd.type, {**values, out_slot + "@GRAD": f.fill_like(dout, 1.0)}, like, slot=x_slot + "@GRAD",
                   same=True)
    f.into(wanted, "reduce_sum", {"X": f.mul(first(g.OG(x_slot + "@GRAD")), weights, like)},
           {"dim": list(g.attr("axis") or []), "keep_dim": g.attr("keepdim"), "reduce_all": False})
    axes, listed = g.I("AxisTensor"), g.I("AxisTensorList")
    if axes or listed:
        f.ops[-1].set_attr("dim", axes[0] if axes else list(listed), AttrType.VAR if axes else AttrType.VARS)
    return f.ops


defgrad("median_grad", grad=_shared("x", "out"), no_grad_inputs=["x", "AxisTensor", "AxisTensorList", "medians", "out"])
defgrad("nanmedian_grad", grad=_shared("X", "Out"), no_grad_inputs=["X", "MedianIndex", "Out"])


class _Scan:
    """Shifts along the axis of a scan of ``n`` (known) entries, in the scan's order: a reversed scan runs from the
    last index to the first, so its "later" entries have lower indices."""

    def __init__(self, f: Formula, rank: int, axis: int, n: int, reverse: bool):
        self.f, self.rank, self.axis, self.n, self.reverse = f, rank, axis, n, reverse

    def _cut(self, value: str, start: int, end: int) -> str:
        return self.f.slice(value, self.axis, start, end)

    def _head(self, value: str, by: int) -> str:
        """All but the last ``by`` entries."""
        return self._cut(value, by, self.n) if self.reverse else self._cut(value, 0, self.n - by)

    def _tail(self, value: str, by: int) -> str:
        """All but the first ``by`` entries."""
        return self._cut(value, 0, self.n - by) if self.reverse else self._cut(value, by, self.n)

    def _padded(self, part: str, by: int, like: str) -> str:
        """``part`` given ``by`` zeros at its end, back to the scan's length."""
        paddings = [0] * (2 * self.rank)
        paddings[2 * self.axis + (0 if self.reverse else 1)] = by
        return self.f.op("pad", {"X": part}, like, {"paddings": paddings, "pad_value": 0.0})

    def later(self, value: str, by: int) -> str:
        """Entry j holds ``value``'s entry j + by (zeros past the end)."""
        if by >= self.n:
            return self.f.scale(value, 0.0)   # all zeros, and still a function of value (with grad 0)
        return self._padded(self._tail(value, by), by, value)

    def discounted_sum(self, weights: str, running: str) -> str:
        """r_j = the sum over i >= j of weights_i exp(running_j - running_i), for a nondecreasing ``running``: the
        recurrence r_j = weights_j + a_j r_(j+1), a_j = exp(running_j - running_(j+1)) <= 1, as a scan of
        ceil(log2 n) rounds (round k adds the next 2^k terms, discounted by their product of a's, then doubles that
        product's reach). No factor exceeds 1, so nothing overflows."""
        f, total = self.f, weights
        if self.n < 2:
            return total
        step = f.unary("exp", f.sub(self._head(running, 1), self._tail(running, 1), running))
        discount = self._padded(step, 1, running)
        reach = 1
        while reach < self.n:
            total = f.add(total, f.mul(discount, self.later(total, reach), running), running)
            if 2 * reach < self.n:
                discount = f.mul(discount, self.later(discount, reach), running)
            reach *= 2
        return total


def _shifted(f: Formula, value: str, axis: int, reverse: bool) -> str:
    """Entry j holds ``value``'s entry after j in the scan's order (0 past the end), whatever the size and rank: rolled
    by one entry, the one that wrapped around zeroed where no entry comes after (an exclusive count of ones from the
    end, clipped to 1)."""
    rolled = f.op("roll", {"X": value}, value, {"shifts": [1 if reverse else -1], "axis": [axis]})
    after = f.op("cumsum", {"X": f.fill_like(value, 1.0)}, value, {"axis": axis, "flatten": False, "exclusive": True,
                                                                   "reverse": not reverse})
    return f.mul(rolled, f.op("clip", {"X": after}, value, {"min": 0.0, "max": 1.0}), value)


def _summed_on(f: Formula, g, row: str, running: str, weights: str, axis: int) -> str:
    """exp(x_j - s_j) times the discounted sum from j on of weights_i exp(s_j - s_i) (``_Scan.discounted_sum``) along
    a dim of unknown size: a cumsum of weights_i exp(c - s_i), times exp(x_j - c), c halfway between the scan's first
    and last s (its least and greatest), so neither factor overflows while the scanned s span less than twice the
    dtype's exp range."""
    ends = [f.op("slice", {"Input": running}, running, {"axes": [axis], "starts": [start], "ends": [end],
                                                         "infer_flags": [1], "decrease_axis": []},
                 dims=lambda s: [1 if i == axis % len(s) else d for i, d in enumerate(s)])
            for start, end in ((0, 1), (-1, 2 ** 31 - 1))]
    middle = f.scale(f.add(*ends, ends[0]), 0.5)
    scaled = f.mul(weights, f.unary("exp", f.sub(middle, running, running)), running)
    total = f.op("cumsum", {"X": scaled}, running, {"axis": axis, "flatten": False, "exclusive": False,
                                                    "reverse": not g.attr("reverse")})
    return f.mul(f.unary("exp", f.sub(row, middle, row)), total, row)


@expansion
def _logcumsumexp_grad(f, g):
    """X@GRAD_j = the sum over the outputs i holding x_j of dOut_i exp(x_j - out_i), as exp(x_j - s_j) times the
    discounted sum from j on of dOut_i exp(s_j - s_i), s the inclusive scan (logcumsumexp itself): every exponent is
    <= 0. Exclusive out_i is s at the entry before i, so there dOut is moved one entry back onto s first. The kernel
    reads X only (Out for its shape), so X is where s comes from; flatten and a 0-d X scan a 1-D row. Along a dim of
    unknown size the discounted sum is a cumsum (``_summed_on``)."""
    x, dout = first(g.I("X")), first(g.I("Out@GRAD"))
    shape = g.shape(x)
    flatten = g.attr("flatten") or shape == []
    row, axis, dout_row = x, (0 if flatten else g.attr("axis")), dout
    if flatten:
        size = prod(shape) if shape is not None and all(d >= 0 for d in shape) else -1
        row = f.op("reshape2", {"X": x}, x, {"shape": [-1]}, more={"XShape": f.xshape(x)}, dims=lambda s: [size])
        dout_row = f.shaped_like(dout, row)
    rank = 1 if flatten else None if shape is None else len(shape)
    axis = axis if rank is None else axis % rank
    n = -1 if g.shape(row) is None else g.shape(row)[axis]
    running = f.op("logcumsumexp", {"X": row}, row, {"axis": axis, "flatten": False, "exclusive": False,
                                                      "reverse": g.attr("reverse")})
    if n < 0:
        weights = _shifted(f, dout_row, axis, g.attr("reverse")) if g.attr("exclusive") else dout_row
        grad = _summed_on(f, g, row, running, weights, axis)
    else:
        scan = _Scan(f, rank, axis, n, g.attr("reverse"))
        weights = scan.later(dout_row, 1) if g.attr("exclusive") else dout_row
        grad = f.mul(f.unary("exp", f.sub(row, running, row)), scan.discounted_sum(weights, running), row)
    return {"X@GRAD": f.shaped_like(grad, x) if flatten else grad}


defgrad("logcumsumexp_grad", grad=_logcumsumexp_grad, no_grad_inputs=["Out"])   # gradc's kernel reads X, not Out

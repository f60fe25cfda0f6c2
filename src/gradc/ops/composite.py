"""Composite grad makers: a gradient written with existing ops, so it needs no kernel and is itself
differentiable (the maker of a grad op gives second derivatives, and the ops it emits give the third).

``Formula`` emits one op per call and returns its output var, so a maker reads like its formula:

    f = Formula(g)
    f.into(g.IG("Out")[0], "elementwise_mul", {"X": ddx, "Y": dout})

``expansion(expand)`` makes the maker of a grad op from the grad op's own computation written with
differentiable ops (``expand(f, g) -> {output slot: var}``): it emits that computation again and its
backward, seeded with the grads of the grad op's outputs (``differentiate``). Batch norm's grad, for
one, is easier to write than to differentiate by hand.
"""

from __future__ import annotations

from .. import registry
from ..ir import EMPTY_VAR, OpDesc, VarType, as_float32
from ..makers import GradContext


def _lists(slots: dict) -> dict[str, list[str]]:
    return {slot: list(v) if isinstance(v, (list, tuple)) else [v] for slot, v in slots.items() if v is not None}


class Formula:
    """The ops of a composite maker, in order (``ops``)."""

    def __init__(self, g: GradContext):
        self.g = g
        self.ops: list[OpDesc] = []

    def emit(self, type: str, inputs: dict, outputs: dict, attrs: dict | None = None, same: bool = False) -> None:
        """An op writing ``outputs`` (an output slot given only @EMPTY@ is left out, and so is an op with
        no output left); ``same``: with the attributes of the op differentiated (its forward's)."""
        op = self.g.op(type, _lists(inputs), _lists(outputs), attrs, forward_attrs=same)
        op.attrs.pop("op_role_var", None)   # the differentiated op's parameter tags are not this op's
        op.attr_types.pop("op_role_var", None)
        if any(op.output_names()):
            self.ops.append(op)

    def op(self, type: str, inputs: dict, like: str, attrs: dict | None = None, slot: str = "Out",
           more: dict | None = None, same: bool = False, dims=None, dtype=None) -> str:
        """A new temporary (declared like ``like``, with ``dims(shape)`` and ``dtype`` when given) written by
        the op's output ``slot``."""
        out = self.g.tmp(like, dims, dtype)
        self.emit(type, inputs, {slot: out, **(more or {})}, attrs, same)
        return out

    def into(self, out: str | None, type: str, inputs: dict, attrs: dict | None = None, slot: str = "Out",
             same: bool = False) -> None:
        """The op writes ``out`` (a grad the maker owes; nothing when it is @EMPTY@ or None)."""
        if out not in (None, EMPTY_VAR):
            self.emit(type, inputs, {slot: out}, attrs, same)

    # elementwise arithmetic, with Paddle's axis broadcasting
    def mul(self, x: str, y: str, like: str, axis: int = -1) -> str:
        return self.op("elementwise_mul", {"X": x, "Y": y}, like, {"axis": axis})

    def add(self, x: str, y: str, like: str, axis: int = -1) -> str:
        return self.op("elementwise_add", {"X": x, "Y": y}, like, {"axis": axis})

    def sub(self, x: str, y: str, like: str, axis: int = -1) -> str:
        return self.op("elementwise_sub", {"X": x, "Y": y}, like, {"axis": axis})

    def div(self, x: str, y: str, like: str, axis: int = -1) -> str:
        return self.op("elementwise_div", {"X": x, "Y": y}, like, {"axis": axis})

    def scale(self, x: str, scale: float, bias: float = 0.0) -> str:
        """x * scale + bias; a constant float32 cannot hold (scale's attributes are float32) is split in its float32
        and the float32 of the rest, two scales added, so a float64 formula keeps 48 of its bits."""
        high, high_bias = as_float32(scale), as_float32(bias)
        out = self.op("scale", {"X": x}, x, {"scale": high, "bias": high_bias, "bias_after_scale": True})
        if (high, high_bias) == (scale, bias):
            return out
        low = {"scale": as_float32(scale - high), "bias": as_float32(bias - high_bias), "bias_after_scale": True}
        return self.add(out, self.op("scale", {"X": x}, x, low), x)

    def fill_like(self, x: str, value: float) -> str:
        return self.op("fill_any_like", {"X": x}, x, {"value": value, "dtype": -1})

    def unary(self, type: str, x: str, attrs: dict | None = None) -> str:
        return self.op(type, {"X": x}, x, attrs)

    def reduce(self, type: str, x: str, dims: list[int], like: str) -> str:
        """reduce_sum/reduce_mean of ``x`` over ``dims``, which it drops; the result is shaped like ``like``."""
        return self.op(type, {"X": x}, like, {"dim": list(dims), "keep_dim": False, "reduce_all": False})

    def xshape(self, like: str) -> str:
        """A temporary for the XShape output of a reshaping op whose input is shaped like ``like``."""
        return self.g.tmp(like, lambda shape: [0, *shape])

    def shaped_like(self, x: str, target: str, out: str | None = None) -> str:
        """``x`` reshaped to ``target``'s shape, read at run time (into ``out`` when given)."""
        dims = self.op("shape", {"Input": target}, target, dims=lambda s: [len(s)], dtype=VarType.INT32)
        out = out or self.g.tmp(target)
        self.emit("reshape2", {"X": x, "Shape": dims}, {"Out": out, "XShape": self.xshape(x)})
        return out

    def summed_like(self, x: str, target: str, dims: list[int] | None = None, out: str | None = None) -> str:
        """``x`` summed over ``dims`` (non-negative; all when None) and reshaped to ``target``'s shape: the
        adjoint of spreading ``target`` over ``x`` (a loss's dOut over the grad it scales)."""
        attrs = {"dim": [0] if dims is None else list(dims), "keep_dim": False, "reduce_all": dims is None}
        total = self.op("reduce_sum", {"X": x}, x, attrs, dims=lambda s: [d for i, d in enumerate(s)
                                                                           if dims is not None and i not in dims])
        return self.shaped_like(total, target, out)

    def summed_to(self, grad: str, shape: list[int], target: str) -> str:
        """``grad`` (of ``shape``) summed over the dims that broadcasting ``target`` to ``shape`` spread it over (the
        leading ones, and those ``target`` has as 1), shaped like ``target``: the adjoint of that broadcast."""
        target_shape = self.g.shape(target)
        lead = len(shape) - len(target_shape)
        dims = [i for i, d in enumerate(shape) if i < lead or (target_shape[i - lead] == 1 and d != 1)]
        return self.summed_like(grad, target, dims) if dims else grad

    def slice(self, x: str, axis: int, start: int, end: int) -> str:
        """``x``'s entries ``start`` to ``end`` (known, >= 0) along ``axis`` (>= 0)."""
        attrs = {"axes": [axis], "starts": [start], "ends": [end], "infer_flags": [1], "decrease_axis": []}
        return self.op("slice", {"Input": x}, x, attrs, dims=lambda s: [*s[:axis], end - start, *s[axis + 1:]])

    def sum_along(self, x: str, axis: int) -> str:
        """The sum of ``x`` along ``axis``, kept as a dim of 1."""
        return self.op("reduce_sum", {"X": x}, x, {"dim": [axis], "keep_dim": True, "reduce_all": False},
                       dims=lambda shape: [1 if i == axis % len(shape) else d for i, d in enumerate(shape)])


def first(names: list[str]) -> str | None:
    """The one var of a slot, or None when the slot is empty (a grad nobody computed)."""
    return names[0] if names else None


def expansion(expand):
    """The maker of a grad op whose outputs ``expand(f, g)`` recomputes with differentiable ops."""

    def maker(g: GradContext) -> list[OpDesc]:
        f = Formula(g)
        outputs = expand(f, g)
        seeds = {var: og for slot, var in outputs.items() if (og := first(g.OG(slot))) is not None}
        targets = {var: ig for slot in g.opdef.inputs for var, ig in zip(g.I(slot), g.IG(slot)) if ig != EMPTY_VAR}
        return f.ops + differentiate(g, f.ops, seeds, targets)

    return maker


def differentiate(g: GradContext, ops: list[OpDesc], seeds: dict[str, str], targets: dict[str, str]) -> list[OpDesc]:
    """The grad ops of ``ops`` from the grads ``seeds`` ({var the ops write: its grad}) back to the grads
    ``targets`` ({var the ops read: the grad to write}), in the order they run. Grads of intermediate vars
    are temporaries; one written several times is summed."""
    path, wanting = _path(ops, seeds, targets)
    parts = _Parts(g, seeds)
    emitted: list[OpDesc] = []
    for op in reversed(path):
        outputs = set(op.output_names())

        def grad_of(var: str, outputs=outputs) -> str:
            return parts.finish(var, emitted) if var in outputs else parts.pending(var)

        opdef = registry.get(op.type)
        for grad_op in opdef.grad(GradContext(op, opdef, wanting.__contains__, g.tmp, grad_of=grad_of, shape=g.shape,
                                              block=g.block)):
            if any(grad_op.output_names()):
                parts.take(grad_op)
                emitted.append(grad_op)
    for var, target in targets.items():
        parts.finish(var, emitted, target)
    return emitted


def _path(ops: list[OpDesc], seeds: dict, targets: dict) -> tuple[list[OpDesc], set[str]]:
    """The ops on a path from a target to a seed, and the vars on it."""
    carries, forward = set(targets), []
    for op in ops:
        opdef = registry.get(op.type)
        reads = [n for slot, args in op.inputs.items() if slot not in opdef.no_grad_inputs
                 for n in args if n in carries]
        if reads and opdef.differentiable:
            carries.update(op.output_names())
            forward.append((op, reads))
    needed, path, wanting = set(seeds), [], set()
    for op, reads in reversed(forward):
        outs = [n for n in op.output_names() if n in needed]
        if outs:
            needed.update(reads)
            wanting.update(reads, outs)
            path.append(op)
    path.reverse()
    return path, wanting


class _Parts:
    """The writes of each var's grad, summed once complete (before its first reader, or at the end)."""

    _PENDING = "@GRAD@PENDING"

    def __init__(self, g: GradContext, seeds: dict[str, str]):
        self.g = g
        self.parts: dict[str, list[tuple[str, OpDesc | None, str, int]]] = {
            var: [(seed, None, "", 0)] for var, seed in seeds.items()}
        self.done: dict[str, str] = {}

    def pending(self, var: str) -> str:
        """The name a grad op writes ``var``'s grad under until ``take`` gives the write its own part."""
        return var + self._PENDING

    def take(self, op: OpDesc) -> None:
        for slot, args in op.outputs.items():
            for pos, name in enumerate(args):
                if name.endswith(self._PENDING):
                    var = name[: -len(self._PENDING)]
                    args[pos] = self.g.tmp(var)
                    self.parts.setdefault(var, []).append((args[pos], op, slot, pos))

    def finish(self, var: str, emitted: list[OpDesc], into: str | None = None) -> str | None:
        """The complete grad of ``var`` (written ``into`` a given name, else a temporary): its one part, the
        sum of its parts, or zeros. A target nobody wrote is left unwritten (None)."""
        if var in self.done:
            return self.done[var]
        parts = self.parts.pop(var, [])
        if not parts and into is not None:
            return None
        if len(parts) == 1 and (into is None or parts[0][1] is not None):
            name, op, slot, pos = parts[0]
            if into is not None:
                op.outputs[slot][pos] = name = into
        else:
            name = into or self.g.tmp(var)
            emitted.append(self.g.op("sum", {"X": [p[0] for p in parts]}, {"Out": [name]}) if parts else
                           self.g.op("fill_any_like", {"X": [var]}, {"Out": [name]}, {"value": 0.0, "dtype": -1}))
        self.done[var] = name
        return name


def bilinear(forward: str, x: str = "X", y: str = "Y", out: str = "Out"):
    """The maker of the grad op G of an op F(X, Y) linear in each input (a product, matmul, conv): G gives
    X@GRAD = G_X(Y, dOut) and Y@GRAD = G_Y(X, dOut), so with ddX, ddY the grads of those
        d/d(dOut) = F(ddX, Y) + F(X, ddY),   d/dX = G_X(ddY, dOut),   d/dY = G_Y(ddX, dOut)."""

    def maker(g: GradContext) -> list[OpDesc]:
        f = Formula(g)
        xv, yv, dout = first(g.I(x)), first(g.I(y)), first(g.I(out + "@GRAD"))
        ddx, ddy = first(g.OG(x + "@GRAD")), first(g.OG(y + "@GRAD"))
        for a, b in ((ddx, yv), (xv, ddy)):
            if a is not None and b is not None:
                f.into(first(g.IG(out + "@GRAD")), forward, {x: a, y: b}, slot=out, same=True)
        if ddy is not None:
            f.into(first(g.IG(x)), g.fwd.type, {x: xv, y: ddy, out + "@GRAD": dout}, slot=x + "@GRAD", same=True)
        if ddx is not None:
            f.into(first(g.IG(y)), g.fwd.type, {x: ddx, y: yv, out + "@GRAD": dout}, slot=y + "@GRAD", same=True)
        return f.ops

    return maker


def linear(forward: str, x: str = "X", out: str = "Out", passed: tuple[str, ...] = (), extra: tuple[str, ...] = (),
           fixed: dict | None = None):
    """The maker of the grad op of an op F linear in ``x`` (a reshape, slice, gather, sum over dims): the grad
    op is F's adjoint, linear in dOut and flat in all else, so d/d(dOut) is F applied to ddX. ``passed``:
    inputs of the grad op F reads too (index, axis tensors); ``extra``: outputs of F besides ``out`` (XShape),
    written to temporaries; ``fixed``: attributes F takes otherwise (a padding value 0: F affine, not linear).
    A list input missing a grad gets zeros there."""

    def maker(g: GradContext) -> list[OpDesc]:
        f = Formula(g)
        wanted = g.IG(out + "@GRAD")
        if all(name == EMPTY_VAR for name in wanted):
            return []
        written = g.O(x + "@GRAD")
        ddx = [dd if name != EMPTY_VAR else f.fill_like(value, 0.0)
               for name, dd, value in zip(written, g.OG(x + "@GRAD"), g.I(x) or written)]
        outputs = {out: wanted, **{slot: g.tmp(first(g.I(slot)) or ddx[0]) for slot in extra}}
        f.emit(forward, {x: ddx, **{slot: g.I(slot) for slot in passed}}, outputs, same=True)
        for name, value in (fixed or {}).items():
            f.ops[-1].set_attr(name, value)
        return f.ops

    return maker


def multilinear(forward: str, operands: str, grads: str, extra: tuple[str, ...] = ()):
    """The maker of the grad op G of an op F(X_1, ..., X_n) linear in each operand, G reading them from its slot
    ``operands`` with dOut and writing every X_i@GRAD = G_i(the others, dOut) to its slot ``grads`` (F's operand
    slot + "@GRAD"). With ddX_i the grads of those:
        d/d(dOut) = sum_i F(X with X_i -> ddX_i),   d/dX_j = sum over i != j of G_j(X with X_i -> ddX_i, dOut).
    ``extra``: list outputs of F besides Out (one var per operand), written to temporaries."""

    def maker(g):
        f = Formula(g)
        xs, dout = g.I(operands), first(g.I("Out@GRAD"))
        varied = {i: xs[:i] + [dd] + xs[i + 1:] for i, (written, dd) in enumerate(zip(g.O(grads), g.OG(grads)))
                  if written != EMPTY_VAR}
        if first(g.IG("Out@GRAD")) not in (None, EMPTY_VAR):
            terms = [f.op(forward, {grads.removesuffix("@GRAD"): args}, dout,
                          more={slot: [g.tmp(x) for x in xs] for slot in extra}, same=True) for args in varied.values()]
            f.into(first(g.IG("Out@GRAD")), "sum", {"X": terms})
        parts: dict[int, list[str]] = {}
        for i, args in varied.items():
            wanted = [g.tmp(x) if j != i and ig != EMPTY_VAR else EMPTY_VAR
                      for j, (x, ig) in enumerate(zip(xs, g.IG(operands)))]
            f.emit(g.fwd.type, {operands: args, "Out@GRAD": dout}, {grads: wanted}, same=True)
            for j, part in enumerate(wanted):
                if part != EMPTY_VAR:
                    parts.setdefault(j, []).append(part)
        for j, ig in enumerate(g.IG(operands)):
            if j in parts:
                f.into(ig, "sum", {"X": parts[j]})
        return f.ops

    return maker

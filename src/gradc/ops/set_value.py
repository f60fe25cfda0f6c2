"""set_value: `x[index] = value` in a static program (paddle.static.setitem). Out is Input with a strided
slice replaced by ValueTensor, or by the literal in `values` (shaped by `shape`), broadcast to the slice.

Its bounds are Python's, as strided_slice's (Paddle 3.3.1's static executor, checked on every start, end and step
in [-5, 5] and the int32 extremes); an empty slice leaves Input as it is. Axes in `decrease_axes` are dropped
and axes in `none_axes` inserted (as 1) in the shape the value broadcasts to.
"""

from __future__ import annotations

from ..ir import AttrType
from ..opdef import slot_names
from ..registry import defop, grad_op, typed
from ..shapes import broadcast_dims, normalize_axis, numel, value_error
from .creation import literal
from .infer import same_as

BOUNDS = ["StartsTensorList[]?", "EndsTensorList[]?", "StepsTensorList[]?"]


def _bound(start: int, end: int, step: int, size: int, fail) -> slice:
    if step == 0:
        fail("set_value step must not be 0")
    return slice(start, end, step)


def set_value_target(x: list[int], axes, starts, ends, steps, decrease_axes, none_axes, fail=value_error):
    """(the index of the slice, its dims, the dims the value broadcasts to) for Input dims ``x``."""
    index, dims = [slice(None)] * len(x), list(x)
    for axis, start, end, step in zip(axes, starts, ends, steps or [1] * len(axes)):
        axis = normalize_axis(axis, len(x), fail)
        if x[axis] > 0:
            index[axis] = _bound(start, end, step, x[axis], fail)
            dims[axis] = len(range(x[axis])[index[axis]])
        elif x[axis] < 0:
            dims[axis] = -1
    decrease = {normalize_axis(a, len(x), fail) for a in decrease_axes}
    if any(dims[a] not in (1, -1) for a in decrease):
        fail(f"set_value decreases axes {sorted(decrease)}, but the slice of {x} there is {dims}")
    target = [d for i, d in enumerate(dims) if i not in decrease]
    for axis in sorted(none_axes):
        target.insert(axis, 1)
    return tuple(index), dims, target


def fitted(value: list[int], target: list[int]) -> list[int]:
    """The value's dims without the leading 1s beyond the slice's rank, which Paddle drops (x[1] = v of [1, 3])."""
    extra = len(value) - len(target)
    return list(value[extra:]) if extra > 0 and all(d == 1 for d in value[:extra]) else list(value)


def _set_value_infer(ctx):
    x = ctx.shape("Input")
    if not any(ctx.has(slot) for slot in slot_names(BOUNDS)):   # else the bounds are known at run time only
        _, _, target = set_value_target(x, ctx.attr("axes"), ctx.attr("starts"), ctx.attr("ends"), ctx.attr("steps"),
                                        ctx.attr("decrease_axes"), ctx.attr("none_axes"), ctx.fail)
        value = ctx.shape("ValueTensor") if ctx.has("ValueTensor") else list(ctx.attr("shape"))
        def fail(_):
            ctx.fail(f"set_value's value of shape {value} does not broadcast to the slice's shape {target}")
        if len(broadcast_dims(fitted(value, target), target, -1, fail)) > len(target):
            fail("more dims")
    if not ctx.has("ValueTensor"):
        count, shape = len(literal({**ctx.op.attrs, "dtype": ctx.attr("dtype")})), list(ctx.attr("shape"))
        if count != numel(shape):
            ctx.fail(f"set_value holds {count} values for shape {shape}")
    return same_as("Input", "Out")(ctx)


LONGS = typed([], AttrType.LONGS)
defop("set_value", ["Input", "ValueTensor?"] + BOUNDS,
      attrs={"axes": LONGS, "starts": LONGS, "ends": LONGS, "steps": LONGS, "decrease_axes": LONGS, "none_axes": LONGS,
             "shape": LONGS, "dtype": 5, "values": typed([], AttrType.SCALARS)},
      no_grad_inputs=BOUNDS, infer=_set_value_infer, grad=grad_op("ValueTensor", *BOUNDS))

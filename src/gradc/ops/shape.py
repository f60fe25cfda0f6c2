"""Ops that move data around without arithmetic: reshape, transpose, squeeze, stack, expand, tile,
split, concat. Ops with an `XShape` output keep it (shape [0] + X's shape, no data) so their grads
read XShape instead of X, and X can be freed right after the forward op."""

from __future__ import annotations

from ..registry import defop, grad_op
from ..shapes import normalize_axis, numel, value_error


def xshape(ctx):
    return ([0] + ctx.shape("X"), ctx.dtype("X"))


def _with_xshape(out_shape):
    """Inference of an XShape op from ``out_shape(ctx, x_shape)``."""
    return lambda ctx: {"Out": (out_shape(ctx, ctx.shape("X")), ctx.dtype("X")), "XShape": xshape(ctx)}


def _xshape_op(type, inputs, attrs, out_shape, grad_reads=(), tensor_attrs=(), extra=True):
    """``extra``: Paddle marks XShape extra (all but reshape2's), and save_inference_model drops it."""
    defop(type, inputs, ["Out", "XShape!" if extra else "XShape"], attrs=attrs, no_grad_inputs=inputs[1:],
          no_grad_outputs=["XShape"], infer=_with_xshape(out_shape), grad=grad_op("XShape", *grad_reads),
          tensor_attrs=tensor_attrs)


def reshape_dims(fail, x: list[int], shape: list[int]) -> list[int]:
    """Paddle's reshape rule: 0 copies X's dim at that index, one -1 takes what is left."""
    if shape.count(-1) > 1:
        fail(f"cannot reshape {x} to {shape}: at most one -1")
    if 0 in x and min(x) >= 0:   # no elements (a -1 dim is unknown, not empty)
        return _empty_reshape_dims(fail, x, shape)
    if any(d == 0 and i >= len(x) for i, d in enumerate(shape)):
        fail(f"cannot reshape {x} to {shape}: 0 only where X has a dim")
    out = [x[i] if d == 0 else d for i, d in enumerate(shape)]
    total = numel(x)
    if -1 in shape:
        infer_at = shape.index(-1)
        rest = numel(d for i, d in enumerate(out) if i != infer_at)
        if rest > 0 and total >= 0:
            if total % rest:
                fail(f"cannot reshape {x} ({total} elements) to {shape}")
            out[infer_at] = total // rest
    elif total >= 0 and numel(out) >= 0 and numel(out) != total:
        fail(f"cannot reshape {x} ({total} elements) to {shape}")
    return out


def _empty_reshape_dims(fail, x: list[int], shape: list[int]) -> list[int]:
    """Paddle's reshape of a tensor with no elements: a 0 is a 0 (not X's dim); a -1 beside 0s, as many as X has, is
    what X's other dims leave (as its PIR reshape takes it: [3, 0, 4] to [0, -1] is [0, 12]), else 0."""
    out = list(shape)
    if -1 not in shape:
        if numel(shape) != 0:
            fail(f"cannot reshape {x} (0 elements) to {shape}")
        return out
    zeros, given, left = shape.count(0), numel(d for d in shape if d > 0), numel(d for d in x if d)
    if zeros and (zeros != x.count(0) or left % given):
        fail(f"cannot reshape {x} (0 elements) to {shape}: the -1 is ambiguous")
    out[shape.index(-1)] = left // given if zeros else 0
    return out


def tensor_length(ctx, slot: str) -> int | None:
    """How many values a 1-D (or 0-d) int input holds, if its declared shape tells."""
    shape = ctx.shape(slot)
    if shape is None or len(shape) > 1 or (shape and shape[0] < 0):
        return None
    return shape[0] if shape else 1


def runtime_dims(ctx, tensor: str, tensor_list: str) -> list[int] | None:
    """The dims of a shape given by a tensor (wins) or a list of 1-value tensors: the rank is known, the
    dims only at run time."""
    count = tensor_length(ctx, tensor) if ctx.has(tensor) else len(ctx.op.input(tensor_list))
    return None if count is None else [-1] * count


def _reshape_out(ctx, x):
    if ctx.has("ShapeTensor"):  # one 1-value tensor per dim, and it wins over Shape
        return [-1] * len(ctx.op.input("ShapeTensor"))
    if ctx.has("Shape"):
        return runtime_dims(ctx, "Shape", "ShapeTensor")
    return reshape_dims(ctx.fail, x, list(ctx.attr("shape") or []))


def squeeze_dims(x: list[int], axes, fail=value_error) -> list[int]:
    """Drops the listed dims of size 1 (all size-1 dims if none is listed); others are ignored. A listed dim
    not known before run time is taken to be 1, as Paddle's own inference does."""
    listed = {normalize_axis(a, len(x), fail) for a in axes}
    return [d for i, d in enumerate(x) if not (d == 1 and (i in listed or not listed) or (d < 0 and i in listed))]


def unsqueeze_dims(x: list[int], axes, fail=value_error) -> list[int]:
    """Inserts size-1 dims one after another: each axis indexes the shape built so far."""
    out = list(x)
    for axis in axes:
        out.insert(normalize_axis(axis, len(out) + 1, fail), 1)
    return out


def flatten_dims(x: list[int], start: int, stop: int, fail=value_error) -> list[int]:
    """Folds dims start..stop into one; a 0-d X (start and stop 0 or -1) becomes [1]."""
    start, stop = normalize_axis(start, len(x), fail), normalize_axis(stop, len(x), fail)
    if start > stop:
        fail(f"flatten start_axis {start} is after stop_axis {stop}")
    return x[:start] + [numel(x[start:stop + 1])] + x[stop + 1:]


def _transpose_out(ctx, x):
    axis = [ctx.axis(a, len(x)) for a in ctx.attr("axis")]
    if sorted(axis) != list(range(len(x))):
        ctx.fail(f"transpose axis {ctx.attr('axis')} is not a permutation of {len(x)} dims")
    return [x[a] for a in axis]


def _unsqueeze_out(ctx, x):
    if ctx.has("AxesTensor") or ctx.has("AxesTensorList"):
        axes = runtime_dims(ctx, "AxesTensor", "AxesTensorList")
        return None if axes is None else [-1] * (len(x) + len(axes))
    return unsqueeze_dims(x, ctx.attr("axes"), ctx.fail)


_xshape_op("reshape2", ["X", "Shape?", "ShapeTensor[]?"], {"shape": [], "use_quantizer": False}, _reshape_out,
           extra=False)
_xshape_op("transpose2", ["X"], {"axis": [], "data_format": "AnyLayout"}, _transpose_out)
_xshape_op("squeeze2", ["X"], {"axes": []}, lambda ctx, x: squeeze_dims(x, ctx.attr("axes"), ctx.fail),
           tensor_attrs=["axes"])
_xshape_op("unsqueeze2", ["X", "AxesTensor?", "AxesTensorList[]?"], {"axes": []}, _unsqueeze_out,
           grad_reads=["AxesTensor", "AxesTensorList"])
_xshape_op("flatten_contiguous_range", ["X"], {"start_axis": 1, "stop_axis": 1},
           lambda ctx, x: flatten_dims(x, ctx.attr("start_axis"), ctx.attr("stop_axis"), ctx.fail))


def along_axis(ctx, shape: list[int]) -> int:
    """The ``axis`` attribute of an op that cuts or joins X along one of its dims: X can't be 0-d."""
    if not shape:
        ctx.fail(f"{ctx.op.type} needs an input of rank >= 1, got a 0-d tensor")
    return ctx.axis(ctx.attr("axis"), len(shape))


def _stack_infer(ctx):
    shapes = ctx.shapes("X")
    if any(len(s) != len(shapes[0]) for s in shapes):
        ctx.fail(f"stack inputs differ in rank: {shapes}")
    out = list(shapes[0])
    out.insert(ctx.axis(ctx.attr("axis"), len(out) + 1), len(shapes))
    return {"Y": (out, ctx.dtype("X"))}


def _unstack_infer(ctx):
    x = ctx.shape("X")
    axis = along_axis(ctx, x)
    count = len(ctx.op.output("Y")) or ctx.attr("num") or x[axis]
    if x[axis] >= 0 and x[axis] != count:
        ctx.fail(f"unstack along axis {axis} of {x} gives {x[axis]} tensors, but {count} outputs are named")
    return {"Y": [(x[:axis] + x[axis + 1:], ctx.dtype("X"))] * count}


defop("stack", ["X[]"], ["Y"], attrs={"axis": 0}, infer=_stack_infer, grad=grad_op("X"))
defop("unstack", ["X"], ["Y[]"], attrs={"axis": 0, "num": 0}, infer=_unstack_infer, grad=grad_op())


def expand_dims_to(fail, x: list[int], shape: list[int]) -> list[int]:
    """expand_v2's target: X aligns with the trailing dims; -1 keeps X's dim."""
    lead = len(shape) - len(x)
    if lead < 0:
        fail(f"cannot expand {x} to the lower rank shape {shape}")
    out = []
    for i, d in enumerate(shape):
        own = x[i - lead] if i >= lead else 1
        if d == -1 and i < lead:
            fail(f"expand shape {shape}: -1 is only allowed where X has a dim")
        target = own if d == -1 else d
        if own not in (1, -1, target):
            fail(f"cannot expand dim {own} of {x} to {target} (shape {shape})")
        out.append(target)
    return out


def _expand_infer(ctx):
    if ctx.has("Shape"):  # Paddle's own inference declares X's rank here, whatever the tensor's length
        return {"Out": (None, ctx.dtype("X"))}
    if ctx.has("expand_shapes_tensor"):
        return {"Out": ([-1] * len(ctx.op.input("expand_shapes_tensor")), ctx.dtype("X"))}
    return {"Out": (expand_dims_to(ctx.fail, ctx.shape("X"), list(ctx.attr("shape"))), ctx.dtype("X"))}


def _expand_as_infer(ctx):
    target = ctx.shape("Y") if ctx.has("Y") else list(ctx.attr("target_shape"))
    return {"Out": (expand_dims_to(ctx.fail, ctx.shape("X"), target), ctx.dtype("X"))}


def _tile_infer(ctx):
    x = ctx.shape("X")
    if ctx.has("RepeatTimes") or ctx.has("repeat_times_tensor"):
        reps = runtime_dims(ctx, "RepeatTimes", "repeat_times_tensor")
        return {"Out": (None if reps is None else [-1] * max(len(x), len(reps)), ctx.dtype("X"))}
    reps = list(ctx.attr("repeat_times"))
    if any(r < 0 for r in reps):
        ctx.fail(f"repeat_times {reps} must not be negative")
    rank = max(len(x), len(reps))
    x, reps = [1] * (rank - len(x)) + x, [1] * (rank - len(reps)) + reps
    return {"Out": ([-1 if d < 0 else d * r for d, r in zip(x, reps)], ctx.dtype("X"))}


defop("expand_v2", ["X", "Shape?", "expand_shapes_tensor[]?"], attrs={"shape": []},
      no_grad_inputs=["Shape", "expand_shapes_tensor"], infer=_expand_infer,
      grad=grad_op("X", "Shape", "expand_shapes_tensor"))
defop("expand_as_v2", ["X", "Y?"], attrs={"target_shape": []}, no_grad_inputs=["Y"],
      infer=_expand_as_infer, grad=grad_op("X"))
defop("tile", ["X", "RepeatTimes?", "repeat_times_tensor[]?"], attrs={"repeat_times": []},
      no_grad_inputs=["RepeatTimes", "repeat_times_tensor"], infer=_tile_infer,
      grad=grad_op("X", "RepeatTimes", "repeat_times_tensor"), tensor_attrs=["repeat_times"])


def split_sizes(fail, size: int, num: int, sections: list[int]) -> list[int]:
    """The sizes split cuts a dim of ``size`` into: ``num`` equal parts, or ``sections`` (one may be -1,
    the rest). An unknown dim (-1) gives unknown sizes where they depend on it."""
    if not sections:
        if num <= 0:
            fail(f"split needs num > 0 or sections, got num {num}")
        if size >= 0 and size % num:
            fail(f"split cannot cut a dim of {size} into {num} equal parts")
        return [size // num if size >= 0 else -1] * num
    if sections.count(-1) > 1 or any(s < -1 for s in sections):
        fail(f"split sections {sections}: sizes >= 0 and at most one -1")
    known = sum(s for s in sections if s != -1)
    if size >= 0 and (known > size or (-1 not in sections and known != size)):
        fail(f"split sections {sections} do not add up to the dim of {size} they cut")
    return [size - known if s == -1 and size >= 0 else s for s in sections]


def _split_infer(ctx):
    shape = ctx.shape("X")
    axis = along_axis(ctx, shape)
    if ctx.has("AxisTensor"):  # the axis is known at run time only, so is every dim
        count = len(ctx.op.output("Out")) or ctx.attr("num") or len(ctx.attr("sections"))
        return {"Out": [([-1] * len(shape), ctx.dtype("X"))] * count}
    named = len(ctx.op.output("Out"))
    wanted = len(ctx.op.input("SectionsTensorList")) or len(ctx.attr("sections")) or ctx.attr("num")
    if named and wanted and named != wanted:
        ctx.fail(f"split names {named} output var(s) but num {ctx.attr('num')}, sections {ctx.attr('sections')} "
                 f"and SectionsTensorList ({len(ctx.op.input('SectionsTensorList'))} vars) ask for {wanted}")
    if ctx.has("SectionsTensorList"):
        sizes = [-1] * len(ctx.op.input("SectionsTensorList"))
    else:
        sizes = split_sizes(ctx.fail, shape[axis], len(ctx.op.output("Out")) or ctx.attr("num"),
                            list(ctx.attr("sections") or []))
    return {"Out": [(shape[:axis] + [size] + shape[axis + 1:], ctx.dtype("X")) for size in sizes]}


def _split_grad(g):
    """The grad of split is a concat of the output grads (missing ones zero-filled), along the same axis."""
    return [g.op("concat", {"X": g.OG("Out"), "AxisTensor": g.I("AxisTensor")}, {"Out": g.IG("X")},
                 {"axis": g.attr("axis")})]


defop("split", ["X", "AxisTensor?", "SectionsTensorList[]?"], ["Out[]"], attrs={"axis": 0, "num": 0, "sections": []},
      no_grad_inputs=["AxisTensor", "SectionsTensorList"], infer=_split_infer, grad=_split_grad)


def _concat_infer(ctx):
    shapes = ctx.shapes("X")
    if ctx.has("AxisTensor"):  # the axis is known at run time only, so is every dim
        if not shapes[0] or any(len(s) != len(shapes[0]) for s in shapes):
            ctx.fail(f"concat needs inputs of one rank >= 1, got {shapes}")
        return {"Out": ([-1] * len(shapes[0]), ctx.dtype("X"))}
    axis = along_axis(ctx, shapes[0])
    out = list(shapes[0])
    out[axis] = -1 if any(s[axis] < 0 for s in shapes) else sum(s[axis] for s in shapes)
    for shape in shapes[1:]:
        if len(shape) != len(out) or any(a != b and a >= 0 and b >= 0
                                         for i, (a, b) in enumerate(zip(shape, shapes[0])) if i != axis):
            ctx.fail(f"concat inputs differ outside axis {axis}: {shapes}")
    return {"Out": (out, ctx.dtype("X"))}


defop("concat", ["X[]", "AxisTensor?"], attrs={"axis": 0}, no_grad_inputs=["AxisTensor"],
      infer=_concat_infer, grad=grad_op("X", "AxisTensor"))

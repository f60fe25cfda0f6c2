"""Fake quantization (quantization-aware training: paddle.nn.quant's layers, PaddleSlim, paddle.quantization) and
the quantize/dequantize ops of quantized models.

With bin_cnt = 2^(bit_length - 1) - 1 and a scale s (X's abs max, a moving average of it, the largest of a window
of them, or a given one), a fake quantization writes q(X) and a fake quantize-dequantize writes q(X) * s / bin_cnt:
- round_type 1 (the fake ops' default): q = round-half-away-from-zero(bin_cnt / s * clip(X, -s, s));
- round_type 0 (quantize_linear's default): q = round-half-to-even(bin_cnt / s * X) clipped to [-bin_cnt - 1,
  bin_cnt]; quantize_linear's qmax 448 / 57344 (bin_cnt) instead rounds bin_cnt / s * X to float8_e4m3fn / e5m2
  (saturating: gradc.float8) and clips it to [-bin_cnt, bin_cnt], in X's dtype.
1/s is 1/(s + 1e-6) for s <= 1e-30 (an all-zero X). The moving average keeps state = rate * state + 1 and
accum = rate * accum + abs_max(X), scale = accum / state, in persistable vars (OutState/OutAccum/OutScale are
InState/InAccum/InScale in Paddle's programs); with is_test the op quantizes with InScale and updates nothing.
The channel-wise ops take one scale per slice along quant_axis (0 or 1). dequantize_abs_max and dequantize_log
turn the int8 tables of PaddleSlim's quant_embedding back into float32.

Gradients: the quantize-dequantize ops and moving_average_abs_max_scale differentiate with the straight-through
estimator, X@GRAD = Out@GRAD everywhere, clipped elements included: Paddle's gradient by design, not the
derivative of the step function (zero almost everywhere). The quantize-only and dequantize ops (quantize_linear and
dequantize_linear, the fake_quantize_* and fake_*dequantize_max_abs pairs of Paddle's QAT passes) pass their
gradient through unchanged (an assign), so that a quantize -> dequantize pair is the straight-through estimator too.
Paddle gives them no gradient: its QAT passes (QuantizationTransformPass and V2) run after the backward and point
each grad op at the dequantized values instead, which is the same gradient; gradc compiles the quantized forward.
"""

from __future__ import annotations

from ..ir import VarType, dtype_name
from ..registry import NO_GRAD, defop, get, grad_op
from ..shapes import dims_match
from .composite import Formula, first
from .infer import check_float

BITS = (1, 16)
ROUND_TYPES = (0, 1)
CHANNEL_AXES = (0, 1)
# quantize_linear's qmax values that round to float8 (round_type 0), as Paddle's QuantTensorFunctor
FLOAT8_QMAX = {448: VarType.FP8_E4M3FN, 57344: VarType.FP8_E5M2}
STATE = ["InAccum?", "InState?"]
STATE_OUTPUTS = ["OutState?", "OutAccum?"]


def _check_quantizer(ctx, axis: bool = False) -> None:
    check_float(ctx, "X")
    bits = ctx.attr("bit_length")
    if not BITS[0] <= bits <= BITS[1]:
        ctx.fail(f"bit_length {bits} must be in [{BITS[0]}, {BITS[1]}]")
    if ctx.attr("round_type") not in ROUND_TYPES:
        ctx.fail(f"round_type {ctx.attr('round_type')} must be 0 (half to even) or 1 (half away from zero)")
    if axis:
        _channel_count(ctx, "X")


def _channel_count(ctx, slot: str) -> int:
    """The size of ``slot``'s quant_axis (0 or 1; -1: unknown), after checking the axis and the rank."""
    axis, x = ctx.attr("quant_axis"), ctx.shape(slot)
    if axis not in CHANNEL_AXES:
        ctx.fail(f"quant_axis {axis} must be 0 or 1")
    if x is not None and len(x) <= axis:
        ctx.fail(f"{slot} needs a dim {axis} (quant_axis) to hold its channels, got shape {x}")
    return -1 if x is None else x[axis]


def _check_scale(ctx, slot: str, channels: int = 1) -> None:
    shape = ctx.shape(slot)
    count = None if shape is None or len(shape) > 1 else shape[0] if shape else 1
    if shape is not None and (count is None or not dims_match(count, channels)):
        ctx.fail(f"{slot} must hold {'one value' if channels == 1 else f'{channels} scales (one per channel)'}, "
                 f"got shape {shape}")


def _outputs(ctx, **shapes) -> dict:
    """Out like X, and each named output with the given shape and X's dtype; with is_test only Out (the op writes
    no state then)."""
    dtype = ctx.dtype("X")
    written = {} if _testing(ctx) else shapes
    return {"Out": (ctx.shape("X"), dtype), **{slot: (shape, dtype) for slot, shape in written.items()}}


def _testing(ctx) -> bool:
    """is_test, on the ops that have it."""
    return "is_test" in get(ctx.op.type).attrs and bool(ctx.attr("is_test"))


def _needs_state(ctx, *slots: str) -> None:
    """A training run updates state it reads from ``slots`` (one value each): Paddle's kernel crashes without them."""
    missing = [slot for slot in slots if not ctx.has(slot)]
    if missing and not _testing(ctx):
        ctx.fail(f"training (is_test false) updates the scale from {', '.join(missing)}, which the op lacks")
    for slot in slots:
        _check_scale(ctx, slot)


def _abs_max_infer(ctx):
    _check_quantizer(ctx)
    return _outputs(ctx, OutScale=[1])


def _channel_infer(ctx):
    _check_quantizer(ctx, axis=True)
    return _outputs(ctx, OutScale=[_channel_count(ctx, "X")])


def _moving_infer(ctx):
    _check_quantizer(ctx)
    _check_scale(ctx, "InScale")
    _needs_state(ctx, "InAccum", "InState")
    return _outputs(ctx, OutScale=[1], OutState=[1], OutAccum=[1])


def _range_infer(ctx):
    _check_quantizer(ctx)
    _check_scale(ctx, "InScale")
    _needs_state(ctx, "Iter")
    if ctx.attr("window_size") < 1:
        ctx.fail(f"window_size {ctx.attr('window_size')} must be >= 1")
    return _outputs(ctx, OutScale=[1], OutScales=[ctx.attr("window_size")])


def _scale_infer(ctx):
    check_float(ctx, "X")
    _needs_state(ctx, "InAccum", "InState")
    return _outputs(ctx, OutScale=[1], OutState=[1], OutAccum=[1])


def _pass_through(out_slot: str):
    """X@GRAD = <out_slot>@GRAD: the quantize or dequantize half of a straight-through pair."""

    def maker(g):
        f = Formula(g)
        f.into(first(g.IG("X")), "assign", {"X": g.OG(out_slot)})
        return f.ops

    return maker


QUANT = {"bit_length": 8, "round_type": 1}
MOVING = {**QUANT, "moving_rate": 0.9, "is_test": False}
# the gradient reads nothing of the forward: the scale outputs get none (they only feed later runs)
SCALES = ["OutScale", "OutState", "OutAccum"]
defop("fake_quantize_abs_max", ["X"], ["Out", "OutScale"], attrs=QUANT, infer=_abs_max_infer,
      no_grad_outputs=["OutScale"], grad=_pass_through("Out"))
defop("fake_quantize_dequantize_abs_max", ["X"], ["Out", "OutScale"], attrs=QUANT, infer=_abs_max_infer,
      no_grad_outputs=["OutScale"], grad=grad_op())
defop("fake_channel_wise_quantize_abs_max", ["X"], ["Out", "OutScale"],
      attrs={**QUANT, "quant_axis": 0, "is_test": False}, infer=_channel_infer, no_grad_outputs=["OutScale"],
      grad=_pass_through("Out"))
defop("fake_channel_wise_quantize_dequantize_abs_max", ["X"], ["Out", "OutScale"], attrs={**QUANT, "quant_axis": 0},
      infer=_channel_infer, no_grad_outputs=["OutScale"], grad=grad_op())
defop("fake_quantize_moving_average_abs_max", ["X", "InScale", *STATE], ["Out", "OutScale", *STATE_OUTPUTS],
      attrs=MOVING, infer=_moving_infer, no_grad_inputs=["InScale", "InAccum", "InState"], no_grad_outputs=SCALES,
      grad=_pass_through("Out"))
defop("fake_quantize_dequantize_moving_average_abs_max", ["X", "InScale", *STATE],
      ["Out", "OutScale", *STATE_OUTPUTS], attrs=MOVING, infer=_moving_infer,
      no_grad_inputs=["InScale", "InAccum", "InState"], no_grad_outputs=SCALES, grad=grad_op())
defop("fake_quantize_range_abs_max", ["X", "InScale", "Iter?"], ["Out", "OutScale", "OutScales?"],
      attrs={**QUANT, "window_size": 10000, "is_test": False}, infer=_range_infer, no_grad_inputs=["InScale", "Iter"],
      no_grad_outputs=["OutScale", "OutScales"], grad=_pass_through("Out"))
defop("moving_average_abs_max_scale", ["X", *STATE], ["Out?", "OutScale", *STATE_OUTPUTS],
      attrs={"moving_rate": 0.9, "is_test": False}, infer=_scale_infer, no_grad_inputs=["InAccum", "InState"],
      no_grad_outputs=SCALES, grad=grad_op(grad_type="straight_through_estimator_grad"))


def _dequantize_infer(ctx):
    check_float(ctx, "X")
    _check_scale(ctx, "Scale")
    if not ctx.attr("max_range") > 0:
        ctx.fail(f"max_range {ctx.attr('max_range')} must be > 0 (the quantized values' bound)")
    return {"Out": (ctx.shape("X"), ctx.dtype("X"))}


def _channel_dequantize_infer(ctx):
    """One scale vector: a weight's, per quant_axis slice, over 2^(quant_bits[0] - 1) - 1. Two: an output's, its
    weight scales per dim x_num_col_dims times one activation scale, over both bin counts. x_num_col_dims must be
    >= 1 either way (Paddle's inference refuses 0)."""
    check_float(ctx, "X")
    x, scales, bits = ctx.shape("X"), ctx.shapes("Scales"), list(ctx.attr("quant_bits"))
    if len(scales) not in (1, 2):
        ctx.fail(f"Scales must hold 1 (weight) or 2 (weight, activation) scale vars, got {len(scales)}")
    if len(bits) < len(scales) or not all(BITS[0] <= b <= BITS[1] for b in bits[:len(scales)]):
        ctx.fail(f"quant_bits {bits} must give a bit count in [{BITS[0]}, {BITS[1]}] for each of the "
                 f"{len(scales)} Scales")
    dim = ctx.attr("x_num_col_dims")
    if dim < 1:
        ctx.fail(f"x_num_col_dims {dim} must be >= 1")
    if len(scales) == 1:
        _check_scale(ctx, "Scales", _channel_count(ctx, "X"))
        return {"Out": (x, ctx.dtype("X"))}
    if x is not None and len(x) <= dim:
        ctx.fail(f"X needs a dim {dim} (x_num_col_dims) to hold its channels, got shape {x}")
    _check_scale(ctx, "Scales", -1 if x is None else x[dim])
    if scales[1] is not None and scales[1] != [1]:
        ctx.fail(f"the second of Scales (the activation's) must hold one scale, got shape {scales[1]}")
    return {"Out": (x, ctx.dtype("X"))}


defop("fake_dequantize_max_abs", ["X", "Scale"], attrs={"max_range": 0.0}, infer=_dequantize_infer,
      no_grad_inputs=["Scale"], grad=_pass_through("Out"))
defop("fake_channel_wise_dequantize_max_abs", ["X", "Scales[]"],
      attrs={"quant_bits": [8], "quant_axis": 0, "x_num_col_dims": 1}, infer=_channel_dequantize_infer,
      no_grad_inputs=["Scales"], grad=_pass_through("Out"))


def _int8_embedding_infer(table: str, log: bool):
    """dequantize_abs_max and dequantize_log: an int8 (abs_max: or int16) X, as PaddleSlim's quant_embedding stores
    an embedding table, to float32 with ``table``'s one scale or dictionary of magnitudes (Paddle's kernels take no
    other X, but its programs declare one float32)."""
    # FP32: PaddleSlim's pass leaves the looked-up rows of its int8 table declared float32 (they hold int8)
    allowed = (VarType.INT8, VarType.FP32) if log else (VarType.INT8, VarType.INT16, VarType.FP32)

    def infer(ctx):
        if ctx.dtype("X") is not None and ctx.dtype("X") not in allowed:
            names = [dtype_name(t) for t in allowed]
            ctx.fail(f"X must be {', '.join(names[:-1])} or {names[-1]}, got {dtype_name(ctx.dtype('X'))}")
        check_float(ctx, table)
        shape = ctx.shape(table)
        if log and shape is not None and len(shape) != 1:
            ctx.fail(f"{table} must be a vector (the magnitudes the codes index), got shape {shape}")
        if not log:
            _check_scale(ctx, table)
            if not ctx.attr("max_range") > 0:
                ctx.fail(f"max_range {ctx.attr('max_range')} must be > 0 (the quantized values' bound)")
        return {"Out": (ctx.shape("X"), VarType.FP32)}

    return infer


# Out = X * Scale / max_range; Out = Dict[X] for X >= 0 and -Dict[X + 128] below (a sign bit and 7 bits of index)
defop("dequantize_abs_max", ["X", "Scale"], attrs={"max_range": 0.0}, infer=_int8_embedding_infer("Scale", False),
      grad=NO_GRAD)
defop("dequantize_log", ["X", "Dict"], infer=_int8_embedding_infer("Dict", True), grad=NO_GRAD)


def _linear_infer(quantize: bool):
    """quantize_linear Y = q(X) with bin_cnt = qmax (zero points are ignored, as Paddle's); dequantize_linear Y =
    X * Scale / qmax, in Scale's dtype. quant_axis < 0: one scale; 0 or 1: one per channel."""

    def infer(ctx):
        if quantize:
            check_float(ctx, "X")
        check_float(ctx, "Scale")
        axis, qmax = ctx.attr("quant_axis"), ctx.attr("qmax")
        channels = 1 if axis < 0 else _channel_count(ctx, "X")
        _check_scale(ctx, "Scale", channels)
        if qmax < 1:
            ctx.fail(f"qmax {qmax} must be >= 1")
        if ctx.attr("round_type") not in ROUND_TYPES:
            ctx.fail(f"round_type {ctx.attr('round_type')} must be 0 (half to even) or 1 (half away from zero)")
        if not quantize:
            return {"Y": (ctx.shape("X"), ctx.dtype("Scale"))}
        if axis < 0:
            _needs_state(ctx, "InAccum", "InState")
        dtype = ctx.dtype("X")
        if _testing(ctx):
            return {"Y": (ctx.shape("X"), dtype)}
        state = {"OutState": ([1], dtype), "OutAccum": ([1], dtype)} if axis < 0 else {}
        return {"Y": (ctx.shape("X"), dtype), "OutScale": ([channels], dtype), **state}

    return infer


LINEAR_ATTRS = {"bit_length": 8, "quant_axis": 0, "qmin": -128, "qmax": 127, "round_type": 0, "is_test": True,
                "only_observer": False}
# InAccum, InState and the Out* slots are Paddle's extras, which a training run (is_test false) of quantize_linear
# uses; Paddle's dequantize_linear ignores them, and gradc leaves them out of it
defop("quantize_linear", ["X", "Scale", "ZeroPoint", *STATE], ["Y", "OutState?!", "OutAccum?!", "OutScale?!"],
      attrs=LINEAR_ATTRS, infer=_linear_infer(True), no_grad_inputs=["Scale", "ZeroPoint", *STATE],
      no_grad_outputs=["OutState", "OutAccum", "OutScale"], grad=_pass_through("Y"))
defop("dequantize_linear", ["X", "Scale", "ZeroPoint"], ["Y"], attrs=LINEAR_ATTRS, infer=_linear_infer(False),
      no_grad_inputs=["Scale", "ZeroPoint"], grad=_pass_through("Y"), int8_stored_inputs=["X"])

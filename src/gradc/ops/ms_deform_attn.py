"""Multi-scale deformable attention, the custom C++/CUDA op of Paddle's model suites (paddle.utils.cpp_extension,
PD_BUILD_OP): Paddle3D's ms_deform_attn (BEVFormer) and PaddleDetection's ms_deformable_attn (Deformable DETR,
GroundingDINO), one computation under two definitions. A program saved with such an op holds it by the suite's
names: legacy type ms_deform_attn with the suite's slot and attribute names, PIR custom_op.ms_deform_attn.

Value [N, S, M, D] holds L feature maps (SpatialShapes [L, 2] = (H, W), LevelIndex [L] their first rows) of M heads;
SamplingLocations [N, Q, M, L, P, 2] = (x, y) in [0, 1], AttentionWeights [N, Q, M, L, P]:

    Out[n, q, m*D + d] = sum over l, p of A[n, q, m, l, p] * bilinear(Value level l, head m, channel d;
                                                                       y H_l - 1/2, x W_l - 1/2)

with the corners outside the map zero and a point whose (y H - 1/2, x W - 1/2) is not inside (-1, H) x (-1, W)
skipped, as the suites' CUDA kernels do. Their grad ops give Value's, SamplingLocations' and AttentionWeights'
gradients (PaddleDetection's declares the integer inputs' too: gradc leaves them unwritten, integer vars having no
gradient). gradc.ops.ms_deform_attn_double has the second derivative.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import defop, grad_op
from ..shapes import dims_match
from .infer import check_float, one_dtype

# op type -> its input slots as the suite declares them, its output slot, its attributes
VARIANTS = {
    "ms_deform_attn": (("value", "sampling_locations", "attention_weights", "spatial_shapes", "level_start_index"),
                       "out", {"im2col_step": 64}),
    "ms_deformable_attn": (("Value", "SpatialShapes", "LevelIndex", "SamplingLocations", "AttentionWeights"), "Out",
                           {}),
}
ROLE_ORDER = {"ms_deform_attn": (0, 3, 4, 1, 2), "ms_deformable_attn": (0, 1, 2, 3, 4)}


def slots_of(op_type: str) -> tuple[str, ...]:
    """(value, spatial shapes, level starts, sampling locations, attention weights, out) of the variant, forward
    or grad op (of any order)."""
    forward = op_type.split("_grad")[0]
    inputs, out, _ = VARIANTS[forward]
    return (*(inputs[i] for i in ROLE_ORDER[forward]), out)


def _infer(ctx):
    value_slot, shapes_slot, starts_slot, loc_slot, attn_slot, out_slot = slots_of(ctx.op.type)
    dtype = one_dtype(ctx, value_slot, loc_slot, attn_slot)
    check_float(ctx, value_slot)
    for slot in (shapes_slot, starts_slot):
        if ctx.dtype(slot) not in (None, VarType.INT64):
            ctx.fail(f"{ctx.op.type} needs int64 {slot}")
    value, shapes, starts = ctx.shape(value_slot), ctx.shape(shapes_slot), ctx.shape(starts_slot)
    loc, attn = ctx.shape(loc_slot), ctx.shape(attn_slot)
    if value is not None and len(value) != 4:
        ctx.fail(f"{ctx.op.type} needs {value_slot} [batch, rows, heads, channels], got {value}")
    if shapes is not None and (len(shapes) != 2 or not dims_match(shapes[1], 2)):
        ctx.fail(f"{ctx.op.type} needs {shapes_slot} [levels, 2] (height, width), got {shapes}")
    levels = None if shapes is None else shapes[0]
    if starts is not None and (len(starts) != 1 or (levels is not None and not dims_match(starts[0], levels))):
        ctx.fail(f"{ctx.op.type} needs {starts_slot} [levels={levels}], got {starts}")
    if loc is not None:
        expected = None if value is None else [value[0], -1, value[2], levels if levels is not None else -1, -1, 2]
        if len(loc) != 6 or (expected and not all(dims_match(a, b) for a, b in zip(loc, expected))):
            ctx.fail(f"{ctx.op.type} needs {loc_slot} [batch, queries, heads, levels, points, 2] for {value_slot} "
                     f"{value} and {levels} levels, got {loc}")
        if attn is not None and (len(attn) != 5 or not all(dims_match(a, b) for a, b in zip(attn, loc[:5]))):
            ctx.fail(f"{ctx.op.type} needs {attn_slot} {loc[:5]} ({loc_slot} without its last dim), got {attn}")
    if value is None or loc is None:
        return {out_slot: (None, dtype)}
    return {out_slot: ([value[0], loc[1], -1 if min(value[2:]) < 0 else value[2] * value[3]], dtype)}


for _type, (_inputs, _out, _attrs) in VARIANTS.items():
    # Paddle3D's grad op writes no grads of the integer inputs; PaddleDetection's declares them
    defop(_type, _inputs, [_out], attrs=_attrs, infer=_infer, grad=grad_op(*_inputs),
          no_grad_inputs=slots_of(_type)[1:3] if _type == "ms_deform_attn" else ())

"""Third and fourth derivatives through the sampling positions' grads: grid_sampler_grad_grad,
deformable_conv(_v1)_grad_grad and ms_deform(able)_attn_grad_grad differentiated again (their makers emit the op
again with one more direction). Each case is a first-order case's program differentiated three times
(third_order_checked: the second backward's direction of the positions' grad is a checked input, so the grads of the
op's directions are checked), over the padding modes, both align_corners, 5-D, groups, deformable groups, strides,
dilations, with and without Mask, and both attention spellings; then a fourth time for a trilinear grid_sampler (5-D,
where two directions along two axes leave a third factor to differentiate) and a deformable convolution (its
Filter's grad along two directions). Nearest sampling has no grad-of-grad op (its Grid@GRAD is 0)."""

from dataclasses import replace

from . import deform_conv, ms_deform_attn, sampling
from .lod_rnn import third_order, third_order_checked
from .second_order import second_order

randn, grid = sampling.randn, sampling.grid


def _third(case, position: str, slots: list[str] | None = None):
    """``case``'s third derivative in the second backward's direction of ``position``'s grad and in the input
    ``slots`` (None: every float one, and the first backward's seed weights, which ``slots`` leaves out)."""
    twice = second_order(case.op, case.inputs, case.attrs, wrt=slots, grad_type=f"{case.op}_grad")
    if slots is not None:
        def without_seed(build=twice.program) -> dict:
            built = build()
            return {**built, "wrt": [name for name in built["wrt"] if not name.startswith("w1_")]}

        twice = replace(twice, program=without_seed)
    return third_order_checked(twice, f"{case.op}_grad_grad", None, [f"{position}0"])


TRILINEAR = sampling.sampler(randn(1, 1, 2, 2, 3), grid(1, 1, 1, 2, 3, size=(2, 2, 3)), padding_mode="border",
                             align_corners=True)
SAMPLERS = [
    sampling.sampler(randn(1, 1, 3, 4), grid(1, 1, 2, 2, size=(3, 4)), padding_mode="zeros", align_corners=True),
    sampling.sampler(randn(1, 1, 3, 4), grid(1, 2, 1, 2, size=(3, 4)), padding_mode="reflection",
                     align_corners=False),
    TRILINEAR,
]
# groups, deformable groups, strides and paddings with Mask; dilations and uneven strides without
DEFORMS = [deform_conv.deform(randn(1, 4, 4, 4), randn(2, 2, 2, 2), (3, 2), strides=[2, 2], paddings=[1, 0],
                              groups=2, deformable_groups=2),
           deform_conv.deform(randn(1, 1, 5, 5), randn(1, 1, 2, 2), (3, 2), masked=False, dilations=[2, 2],
                              strides=[1, 2])]


def _attention(variant: str, attrs: dict):
    """One query and head with two points per level, the first with its four corners inside the map (where the
    weights' cross derivatives act), the second anywhere ms_deform_attn.locations puts it."""
    inputs = ms_deform_attn.inputs(variant, batch=1, queries=1, heads=1, channels=2, points=2)
    loc = inputs["sampling_locations" if variant == "ms_deform_attn" else "SamplingLocations"]
    for level, (height, width) in enumerate(ms_deform_attn.SHAPES):
        for axis, size in ((0, width), (1, height)):
            pixel = sampling.r.integers(0, size - 1) + sampling.r.uniform(0.15, 0.85)
            loc[0, 0, 0, level, 0, axis] = (pixel + 0.5) / size
    return ms_deform_attn.Case(variant, inputs, attrs)


ATTENTIONS = [_attention("ms_deform_attn", {"im2col_step": 64}), _attention("ms_deformable_attn", {})]

CASES = [*(_third(case, "Grid") for case in SAMPLERS), *(_third(case, "Offset") for case in DEFORMS),
         *(_third(case, "sampling_locations" if case.op == "ms_deform_attn" else "SamplingLocations")
           for case in ATTENTIONS),
         third_order(_third(TRILINEAR, "Grid", ["Grid"]), "grid_sampler_grad_grad", order=4),
         third_order(_third(DEFORMS[1], "Offset", ["Offset", "Filter"]), "deformable_conv_v1_grad_grad", order=4)]

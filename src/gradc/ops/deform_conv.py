"""Deformable convolution (paddle.vision.ops.deform_conv2d, DeformConv2D): deformable_conv (v2, modulated by
Mask) and deformable_conv_v1 (no Mask).

Input [N, C, H, W], Filter [O, C/groups, kh, kw] as conv2d's. Each output cell (oh, ow) reads kernel point
(i, j) at (oh * stride - pad + i * dilation + dy, ow * stride - pad + j * dilation + dx), the offsets per
deformable group g (the channels split into deformable_groups runs): Offset [N, dg * 2 * kh * kw, oh, ow] holds
(dy, dx) interleaved, kernel points row-major, inside each group's block. The value there is bilinear in the
four pixels around it, a pixel outside the image reading 0, and a point at or beyond one pixel outside reading 0
altogether; v2 multiplies it by Mask [N, dg * kh * kw, oh, ow]. Then the columns meet the filter as in conv2d.

The grads are Paddle's: of Offset the derivative of the bilinear weights in the cell below and right of the
point (on a pixel row or column, the one-sided derivative toward the next one), 0 where the point reads nothing.
Where gradc departs from Paddle 3.3.1:
- im2col_step (samples per matmul in Paddle's kernels) changes no value in gradc; it must be >= 1. Paddle's grad
  kernel misses the transposition its forward makes, so with im2col_step > 1 its gradients are wrong (all zeros
  where im2col_step exceeds the batch), and it rejects a batch above im2col_step that im2col_step does not divide.
- Paddle computes Mask@GRAD only alongside Offset@GRAD (none when Offset has stop_gradient); gradc on its own.
- A NaN offset reads nothing (in Paddle too) and gets zero gradients; Paddle's there are NaN or arbitrary (its grad
  kernel takes the NaN point for one inside the image).
- Paddle requires the output channels to divide into deformable_groups, and gradc too; gradc also requires the
  input channels to (Paddle's kernel then reads past a group's channels).
"""

from __future__ import annotations

from ..registry import defop, grad_op
from .infer import check_float, one_dtype

DEFORM_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1, "deformable_groups": 1,
                "im2col_step": 64}
# op type -> whether it reads Mask
DEFORM_OPS = {"deformable_conv": True, "deformable_conv_v1": False}


def deform_out_sizes(sizes, k_sizes, strides, paddings, dilations) -> list[int]:
    """Paddle's output sizes, (size + 2 pad - dilated kernel) / stride + 1 with C's division toward zero (-1
    where the input size is unknown); ValueError for a size below 1."""
    out = []
    for axis, (size, k, s, p, d) in enumerate(zip(sizes, k_sizes, strides, paddings, dilations)):
        if size < 0:
            out.append(-1)
            continue
        span = size + 2 * p - (d * (k - 1) + 1)
        out.append(int(span / s) + 1)
        if out[-1] < 1:
            raise ValueError(f"the output {'HW'[axis]} would be {out[-1]}: input {size}, padding {p}, kernel {k}, "
                             f"dilation {d}, stride {s}")
    return out


def check_deform_attrs(attr) -> None:
    """The geometry attributes (ValueError naming the attribute)."""
    for name in ("strides", "paddings", "dilations"):
        if len(attr(name)) != 2:
            raise ValueError(f"{name} must hold 2 values (H, W), got {attr(name)}")
    for name in ("strides", "dilations"):
        if min(attr(name)) < 1:
            raise ValueError(f"{name} must be >= 1, got {attr(name)}")
    for name in ("groups", "deformable_groups", "im2col_step"):
        if attr(name) < 1:
            raise ValueError(f"{name} must be >= 1, got {attr(name)}")


def deform_geometry(attr, x, filt, offset, mask=None) -> list[int]:
    """The output shape [N, O, oh, ow] of the shapes given (-1: unknown), after checking them and the attributes
    (ValueError naming the disagreement)."""
    check_deform_attrs(attr)
    for slot, shape in (("Input", x), ("Filter", filt), ("Offset", offset), ("Mask", mask)):
        if shape is not None and len(shape) != 4:
            raise ValueError(f"{slot} must be 4-D, got shape {list(shape)}")
    groups, dg = attr("groups"), attr("deformable_groups")
    n, c, o, (kh, kw) = x[0], x[1], filt[0], filt[2:]
    if c >= 0 and filt[1] >= 0 and c != filt[1] * groups:
        raise ValueError(f"Input has {c} channels but Filter expects {filt[1]} per group x {groups} groups")
    for owner, channels, kind, count, name in (("Filter's", o, "output ", groups, "groups"),
                                               ("Filter's", o, "output ", dg, "deformable_groups"),
                                               ("Input's", c, "", dg, "deformable_groups")):
        if channels >= 0 and channels % count:
            raise ValueError(f"{owner} {channels} {kind}channels do not split into {count} {name}")
    out = deform_out_sizes(x[2:], (kh, kw), attr("strides"), attr("paddings"), attr("dilations"))
    points = kh * kw if min(kh, kw) >= 0 else -1
    for slot, shape, per_point in (("Offset", offset, 2), ("Mask", mask, 1)):
        if shape is None:
            continue
        expected = [n, -1 if points < 0 else dg * per_point * points, *out]
        if any(a >= 0 and b >= 0 and a != b for a, b in zip(shape, expected)):
            raise ValueError(f"{slot} must be [N, {'2 * ' * (per_point == 2)}deformable_groups * kh * kw, out_h, "
                             f"out_w] = {expected}, got shape {list(shape)}")
    return [n if n >= 0 else offset[0], o, *out]


def _known_shape(ctx, slot: str) -> list[int]:
    shape = ctx.shape(slot)
    if shape is None:
        ctx.fail(f"the shape of {slot} is unknown")
    return shape


def _deform_infer(masked: bool):
    def infer(ctx):
        slots = ("Input", "Filter", "Offset", *("Mask",) * masked)
        check_float(ctx, "Input")
        one_dtype(ctx, *slots)
        shapes = [_known_shape(ctx, slot) for slot in slots]
        try:
            out = deform_geometry(ctx.attr, *shapes)
        except ValueError as err:
            ctx.fail(str(err))
        return {"Output": (out, ctx.dtype("Input"))}
    return infer


for _name, _masked in DEFORM_OPS.items():
    _inputs = ["Input", "Offset", "Filter", *("Mask",) * _masked]
    defop(_name, _inputs, ["Output"], attrs=DEFORM_ATTRS, infer=_deform_infer(_masked), grad=grad_op(*_inputs))

"""The oneDNN convolutions with a bias that Paddle's conv bias passes write (kernels for oneDNN only; PIR:
onednn_op.fused_conv3d, pd_op / onednn_op.conv2d_transpose_bias):

- fused_conv3d (conv3d_bias_mkldnn_fuse_pass, and the conv activation passes): fused_conv2d in three spatial dims:
  conv3d, plus Bias per output channel, plus ResidualData (fuse_residual_connection), then fuse_activation.
- conv2d_transpose_bias (conv2d_transpose_bias_mkldnn_fuse_pass): conv2d_transpose plus Bias per output channel.
  Paddle 3.3.1's oneDNN kernel appends no post-op: it ignores fuse_activation and fuse_relu (an older Paddle test
  expected the relu), and so does gradc. Paddle's kernel also refuses to run unless is_test; gradc runs either way.

Paddle defines no grad for either; gradc differentiates both as the ops they fuse (composite makers, as
fused_conv2d's), so a program the passes optimized can be fine-tuned.
"""

from __future__ import annotations

from ..registry import defop, get
from .composite import expansion, first
from .conv import conv_attrs, conv_transpose_attrs
from .infer import check_choice, check_float, one_dtype
from .inference_fused import CONV_ATTR_NAMES, FUSE_ACTIVATIONS, ONEDNN_ATTRS, fused_conv_expansion

INT8_ATTRS = {"Scale_in": 1.0, "Scale_in_eltwise": 1.0, "Scale_weights": [1.0], "mkldnn_data_type": "float32"}


def _unfused_infer(unfused: str, dims: int):
    """The unfused op's shape inference, after the fused op's own checks (a float Input, a known activation, conv
    attributes for ``dims`` spatial dims: Paddle's defaults for fused_conv3d are two-dim ones)."""
    def infer(ctx):
        check_float(ctx, "Input")
        for name, sizes in (("strides", (dims,)), ("dilations", (dims,)), ("paddings", (dims, 2 * dims))):
            if len(ctx.attr(name)) not in sizes:
                ctx.fail(f"{name} {ctx.attr(name)} must have {' or '.join(map(str, sizes))} values for {dims} "
                         f"spatial dims")
        check_choice(ctx, "fuse_activation", FUSE_ACTIVATIONS)
        one_dtype(ctx, "Input", "Filter", "Bias")
        return get(unfused).infer(ctx)
    return infer


# Paddle's proto gives the conv attributes fused_conv2d's (two-dim) defaults; its programs always carry them
defop("fused_conv3d", ["Input", "Filter", "Bias?", "ResidualData?"], ["Output"],
      attrs={**conv_attrs(2), "fuse_residual_connection": False, **INT8_ATTRS, **ONEDNN_ATTRS},
      infer=_unfused_infer("conv3d", 3), grad=expansion(fused_conv_expansion("conv3d")))

TRANSPOSE_ATTR_NAMES = (*CONV_ATTR_NAMES, "output_size", "output_padding")


def _transpose_bias_expand(f, g):
    """conv2d_transpose and the per-channel bias add, each with its grad (fuse_activation is not applied)."""
    attrs = {name: g.attr(name) for name in TRANSPOSE_ATTR_NAMES}
    out = f.op("conv2d_transpose", {"Input": first(g.I("Input")), "Filter": first(g.I("Filter"))},
               first(g.O("Output")), attrs, slot="Output")
    return {"Output": f.add(out, first(g.I("Bias")), out, axis=-1 if g.attr("data_format") == "NHWC" else 1)}


defop("conv2d_transpose_bias", ["Input", "Filter", "Bias"], ["Output"],
      attrs={**conv_transpose_attrs(2), "is_test": False, "fuse_relu": False, "mkldnn_data_type": "float32",
             "fuse_activation": "", "fuse_alpha": 0.0, "fuse_beta": 0.0, "force_fp32_output": False},
      infer=_unfused_infer("conv2d_transpose", 2), grad=expansion(_transpose_bias_expand), tensor_attrs=["output_size"])

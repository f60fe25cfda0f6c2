"""The fused ops Paddle Inference's CPU analysis passes write into an optimized program (enable_save_optim_model):

- fusion_repeated_fc_relu (repeated_fc_relu_fuse_pass): X [N, K] through each (W_i, Bias_i) as relu(h W_i + b_i);
  ReluOut holds every layer's output but the last, Out the last.
- fusion_seqconv_eltadd_relu (seqconv_eltadd_relu_fuse_pass): relu(sequence_conv(X) + Bias) over X's one LoD level,
  the context rows past a sequence's ends zeros; ColMat is the [rows, contextLength * width] context matrix.
- fusion_seqexpand_concat_fc (seq_concat_fc_fuse_pass; 3.3.1 registers no such op, so a Predictor that fuses fails):
  X[0] [rows, M0] with one LoD level, X[i] [sequences, Mi] each repeated over its sequence's rows, concatenated along
  axis 1, times FCWeight plus FCBias, then fc_activation; FCOut is the later inputs' part per sequence (X[1:] W + b).
- fusion_seqpool_cvm_concat (seqpool_cvm_concat_fuse_pass): each X_i summed per sequence, cvm applied (use_cvm:
  log(show + 1), log(click + 1) - log(show + 1); else show and click dropped), concatenated along axis 1.
- fusion_seqpool_concat (seqpool_concat_fuse_pass, not in 3.3.1's CPU list): each X_i pooled per sequence (pooltype
  SUM, AVERAGE or SQRT: the sum over the square root of the length), concatenated along axis 1.
- fusion_squared_mat_sub (squared_mat_sub_fuse_pass): scalar * ((X Y)^2 - X^2 Y^2), squares elementwise; SquaredX,
  SquaredY and SquaredXY the squares it computes on the way.
- fused_conv2d (the oneDNN conv passes, conv_bn_fuse_pass's folded batch norm in Filter and Bias): conv2d, plus
  Bias per output channel, plus ResidualData (fuse_residual_connection), then fuse_activation.
- fused_elementwise_add / sub / mul / div (elementwise_act_onednn_fuse_pass, also where a conv's bias add takes
  the conv's activation): the elementwise op (axis as elementwise_*), then fuse_activation, times
  fused_output_scale, then unsqueezed by fused_unsqueeze2_axes (one axis after another, as unsqueeze2).
- fused_softplus (softplus_activation_onednn_fuse_pass): softplus (beta, threshold), then fuse_activation.
- fused_matmul (the oneDNN matmul passes): X and Y each reshaped (fused_reshape_*, 0 keeps a dim) and transposed
  (fused_transpose_*) first, then matmul_v2 (trans_x, trans_y) times matmul_alpha, plus ResidualData, then
  fuse_activation, times fused_output_scale, then Out transposed and reshaped (fused_transpose_Out, fused_reshape_Out).

Paddle defines no grad for any of them. gradc differentiates the two that fold trained layers,
fusion_repeated_fc_relu and fused_conv2d (batch norm folded in), as the ops they fuse (composite makers, as fc's),
so an optimized program can be fine-tuned; the others are forward-only. fused_conv2d's maker takes the
activations ACTIVATION_OPS spell as gradc ops; ReluOut is not differentiated (the pass fuses only when nothing
else reads it). fuse_activation (with fuse_alpha,
fuse_beta) is one of FUSE_ACTIVATIONS. The int8 attributes (Scale_*, force_fp32_output) are oneDNN quantization's,
which gradc does not run: the float ops ignore them, as Paddle's float kernels do.
"""

from __future__ import annotations

import math

from ..errors import GradError
from ..registry import defop
from .composite import expansion, first
from .infer import check_choice, check_float, one_dtype
from .onednn_quant import QUANTIZED, refuse_int8_grad

# oneDNN eltwise post-ops the fuse passes write (activation names of the fused op's fuse_activation)
FUSE_ACTIVATIONS = ("", "identity", "relu", "relu6", "leaky_relu", "sigmoid", "tanh", "swish", "hard_swish",
                    "hard_sigmoid", "gelu", "gelu_erf", "gelu_tanh", "mish", "abs", "sqrt", "square", "exp", "clip",
                    "elu")
ONEDNN_ATTRS = {"fuse_activation": "", "fuse_alpha": 0.0, "fuse_beta": 0.0, "force_fp32_output": False,
                "Scale_out": 1.0}


def _repeated_fc_infer(ctx):
    check_float(ctx, "X")
    x, layers = ctx.shape("X"), len(ctx.op.input("W"))
    if len(ctx.op.input("Bias")) != layers or layers < 1:
        ctx.fail(f"needs one Bias per W, got {len(ctx.op.input('Bias'))} Bias for {layers} W")
    if x is not None and len(x) != 2:
        ctx.fail(f"X must be [rows, width], got {x}")
    dtype, rows = ctx.dtype("X"), x[0] if x else -1
    widths = [(ctx.shape("W", i) or [-1, -1])[-1] for i in range(layers)]
    return {"ReluOut": [([rows, n], dtype) for n in widths[:-1]], "Out": ([rows, widths[-1]], dtype)}


def _repeated_fc_expand(f, g):
    """Each layer again as mul, the bias add and relu."""
    h = first(g.I("X"))
    for w, bias in zip(g.I("W"), g.I("Bias")):
        n = g.shape(w)[-1]
        h = f.op("mul", {"X": h, "Y": w}, h, {"x_num_col_dims": 1, "y_num_col_dims": 1}, dims=lambda s, n=n: [s[0], n])
        h = f.unary("relu", f.add(h, bias, h))
    return {"Out": h}


defop("fusion_repeated_fc_relu", ["X", "W[]", "Bias[]"], ["ReluOut[]", "Out"], infer=_repeated_fc_infer,
      no_grad_outputs=["ReluOut"], grad=expansion(_repeated_fc_expand))


def _seqconv_infer(ctx):
    check_float(ctx, "X")
    x, w = ctx.shape("X"), ctx.shape("Filter")
    if x is not None and len(x) != 2:
        ctx.fail(f"X must be [rows, width], got {x}")
    if ctx.attr("contextStride") != 1 or ctx.attr("contextLength") < 1:
        ctx.fail(f"contextLength must be at least 1 and contextStride 1, got {ctx.attr('contextLength')} and "
                 f"{ctx.attr('contextStride')}")
    dtype, rows = one_dtype(ctx, "X", "Filter", "Bias"), x[0] if x else -1
    return {"Out": ([rows, w[1] if w else -1], dtype)}   # ColMat left as declared: Paddle's PIR program says []


defop("fusion_seqconv_eltadd_relu", ["X", "Filter", "Bias"], ["Out", "ColMat"],
      attrs={"contextLength": 1, "contextStart": 0, "contextStride": 1}, infer=_seqconv_infer,
      lod_levels=lambda ctx: {"Out": ctx.lod_level("X"), "ColMat": ctx.lod_level("X")})


def _seqexpand_fc_infer(ctx):
    check_float(ctx, "X")
    check_choice(ctx, "fc_activation", ("identity", "relu", "sigmoid", "tanh"))
    shapes, weight = ctx.shapes("X"), ctx.shape("FCWeight")
    if any(shape is not None and len(shape) != 2 for shape in shapes) or len(shapes) < 2:
        ctx.fail(f"X must be two or more [rows, width] tensors, got {shapes}")
    widths = [shape[1] if shape else -1 for shape in shapes]
    if weight is not None and min(widths) >= 0 and (len(weight) != 2 or weight[0] != sum(widths)):
        ctx.fail(f"FCWeight must be [{sum(widths)}, D] (the widths of X summed), got {weight}")
    dtype, width = one_dtype(ctx, "X", "FCWeight", "FCBias"), weight[1] if weight else -1
    return {"Out": ([(shapes[0] or [-1])[0], width], dtype), "FCOut": ([(shapes[1] or [-1])[0], width], dtype)}


# X[0] a sequence batch; each later X one row per sequence, repeated over its rows, concatenated, then the fc
defop("fusion_seqexpand_concat_fc", ["X[]", "FCWeight", "FCBias?"], ["Out", "FCOut"],
      attrs={"fc_activation": "identity"}, infer=_seqexpand_fc_infer,
      lod_levels=lambda ctx: {"Out": ctx.lod_level("X"), "FCOut": 0})


def _seqpool_cvm_infer(ctx):
    check_float(ctx, "X")
    if ctx.attr("pooltype") != "SUM" or ctx.attr("axis") != 1:
        ctx.fail(f"Paddle's kernel sums (pooltype SUM) and concatenates along axis 1, got pooltype "
                 f"{ctx.attr('pooltype')!r} and axis {ctx.attr('axis')}")
    widths = [(ctx.shape("X", i) or [-1, -1])[-1] for i in range(len(ctx.op.input("X")))]
    kept = [-1 if n < 0 else n - (0 if ctx.attr("use_cvm") else 2) for n in widths]
    total = -1 if -1 in kept else sum(kept)
    return {"Out": ([(ctx.shape("CVM") or [-1])[0], total], ctx.dtype("X"))}


defop("fusion_seqpool_cvm_concat", ["X[]", "CVM"], ["Out"], attrs={"pooltype": "SUM", "use_cvm": True, "axis": 1},
      infer=_seqpool_cvm_infer)


def _seqpool_concat_infer(ctx):
    check_float(ctx, "X")
    check_choice(ctx, "pooltype", ("SUM", "AVERAGE", "SQRT"))
    if ctx.attr("axis") != 1:
        ctx.fail(f"Paddle's kernel concatenates along axis 1, got axis {ctx.attr('axis')}")
    widths = [(shape or [-1, -1])[-1] for shape in ctx.shapes("X")]
    return {"Out": ([-1, -1 if min(widths) < 0 else sum(widths)], ctx.dtype("X"))}


defop("fusion_seqpool_concat", ["X[]"], ["Out"], attrs={"pooltype": "SUM", "axis": 1}, infer=_seqpool_concat_infer,
      lod_levels=lambda ctx: {"Out": 0})


def _squared_mat_sub_infer(ctx):
    check_float(ctx, "X")
    dtype, x, y = one_dtype(ctx, "X", "Y"), ctx.shape("X"), ctx.shape("Y")
    if x is not None and y is not None and (len(x) != 2 or len(y) != 2 or x[1] != y[0]):
        ctx.fail(f"X {x} and Y {y} must be [M, K] and [K, N]")
    out = [x[0], y[1]] if x and y else None
    return {"SquaredX": (x, dtype), "SquaredY": (y, dtype), "SquaredXY": (out, dtype), "Out": (out, dtype)}


defop("fusion_squared_mat_sub", ["X", "Y"], ["SquaredX", "SquaredY", "SquaredXY", "Out"], attrs={"scalar": 1.0},
      infer=_squared_mat_sub_infer)


def _fused_conv_infer(ctx):
    if ctx.dtype("Input") not in QUANTIZED:   # an int8 / uint8 Input runs oneDNN's int8 kernel, Filter float32
        check_float(ctx, "Input")
        one_dtype(ctx, "Input", "Filter")
    check_choice(ctx, "fuse_activation", FUSE_ACTIVATIONS)
    return {}


CONV_ATTR_NAMES = ("strides", "paddings", "padding_algorithm", "groups", "dilations", "data_format")
# fuse_activation -> (gradc op, its attributes from fuse_alpha a and fuse_beta b) for fused_conv2d's grad
ACTIVATION_OPS = {
    "relu": ("relu", lambda a, b: {}), "sigmoid": ("sigmoid", lambda a, b: {}), "tanh": ("tanh", lambda a, b: {}),
    "leaky_relu": ("leaky_relu", lambda a, b: {"alpha": a}), "relu6": ("relu6", lambda a, b: {"threshold": b}),
    "swish": ("swish", lambda a, b: {"beta": a}), "mish": ("mish", lambda a, b: {"threshold": 20.0}),
    "gelu": ("gelu", lambda a, b: {"approximate": False}), "gelu_erf": ("gelu", lambda a, b: {"approximate": False}),
    "gelu_tanh": ("gelu", lambda a, b: {"approximate": True}), "abs": ("abs", lambda a, b: {}),
    "hard_swish": ("hard_swish", lambda a, b: {"threshold": 1 / a, "scale": 1 / a, "offset": b / a}),
}


def fused_conv_expansion(conv_type: str, conv_attr_names: tuple[str, ...] = CONV_ATTR_NAMES):
    """The composite grad of a fused conv: ``conv_type``, the per-channel bias add, the residual add and the
    activation, each with its grad."""

    def expand(f, g):
        refuse_int8_grad(g)
        conv_attrs = {name: g.attr(name) for name in conv_attr_names}
        out = f.op(conv_type, {"Input": first(g.I("Input")), "Filter": first(g.I("Filter"))}, first(g.O("Output")),
                   conv_attrs, slot="Output")
        if (bias := first(g.I("Bias"))) is not None:
            out = f.add(out, bias, out, axis=-1 if g.attr("data_format") in ("NHWC", "NDHWC") else 1)
        if (residual := first(g.I("ResidualData"))) is not None and g.attr("fuse_residual_connection"):
            out = f.add(out, residual, out)
        name = g.attr("fuse_activation")
        if name not in ("", "identity"):
            if name not in ACTIVATION_OPS:
                raise GradError(f"{g.fwd.type}: gradc differentiates fuse_activation only as one of "
                                f"{sorted(ACTIVATION_OPS)}, not {name!r}")
            op_type, attrs = ACTIVATION_OPS[name]
            out = f.unary(op_type, out, attrs(g.attr("fuse_alpha"), g.attr("fuse_beta")))
        return {"Output": out}
    return expand


defop("fused_conv2d", ["Input", "Filter", "Bias?", "ResidualData?"], ["Output"],
      grad=expansion(fused_conv_expansion("conv2d")),
      attrs={"strides": [1, 1], "paddings": [0, 0], "padding_algorithm": "EXPLICIT", "groups": 1,
             "dilations": [1, 1], "data_format": "NCHW", "fuse_residual_connection": False, "Scale_in": 1.0,
             "Scale_in_eltwise": 1.0, "Scale_weights": [1.0], "mkldnn_data_type": "float32", **ONEDNN_ATTRS},
      infer=_fused_conv_infer)


def _fused_matmul_infer(ctx):
    if ctx.dtype("X") not in QUANTIZED:
        check_float(ctx, "X")
    check_choice(ctx, "fuse_activation", FUSE_ACTIVATIONS)
    one_dtype(ctx, "X", "Y")
    return {}


defop("fused_matmul", ["X", "Y", "ResidualData?"], ["Out"],
      attrs={"trans_x": False, "trans_y": False, "matmul_alpha": 1.0, "fused_output_scale": 1.0,
             "fused_reshape_X": [], "fused_transpose_X": [], "fused_reshape_Y": [], "fused_transpose_Y": [],
             "fused_reshape_Out": [], "fused_transpose_Out": [], "Scale_x": 1.0, "Scale_y": 1.0,
             "Scale_in_eltwise": 0.0, "mkldnn_data_type": "float32", **ONEDNN_ATTRS},
      infer=_fused_matmul_infer)


def _fused_elementwise_infer(ctx):
    check_float(ctx, "X")
    check_choice(ctx, "fuse_activation", FUSE_ACTIVATIONS)
    one_dtype(ctx, "X", "Y")
    return {}


FUSED_ELEMENTWISE = ("fused_elementwise_add", "fused_elementwise_sub", "fused_elementwise_mul", "fused_elementwise_div")
for _type in FUSED_ELEMENTWISE:
    defop(_type, ["X", "Y"], ["Out"], attrs={"axis": -1, "fused_output_scale": 1.0, "fused_unsqueeze2_axes": [],
                                             "scale_x": 1.0, "scale_y": 1.0, "scale_out": 1.0, "fuse_activation": "",
                                             "fuse_alpha": 0.0, "fuse_beta": 0.0},
          infer=_fused_elementwise_infer)


def _fused_softplus_infer(ctx):
    check_float(ctx, "X")
    check_choice(ctx, "fuse_activation", FUSE_ACTIVATIONS)
    if ctx.attr("beta") == 0:
        ctx.fail("beta must be nonzero")
    return {"Out": (ctx.shape("X"), ctx.dtype("X"))}


defop("fused_softplus", ["X"], ["Out"], attrs={"beta": 1.0, "threshold": 20.0, "fuse_activation": "",
                                              "fuse_alpha": 0.0, "fuse_beta": 0.0}, infer=_fused_softplus_infer)


def _fused_transpose_infer(ctx):
    check_float(ctx, "X")
    if ctx.attr("shift") != 0 or ctx.attr("output_data_type") not in ("", "fp32"):
        ctx.fail(f"shift {ctx.attr('shift')} / output_data_type {ctx.attr('output_data_type')!r} quantize the "
                 f"output to int8 or bfloat16, which gradc does not compute (shift 0, output_data_type '' or 'fp32')")
    if ctx.attr("fused_unsqueeze2_axes") and ctx.attr("fused_reshape2_shape"):
        ctx.fail("fused_unsqueeze2_axes and fused_reshape2_shape cannot both be set (the pass fuses one of them)")
    axis, squeezed = ctx.attr("axis"), ctx.attr("fused_squeeze2_axes")
    if len(axis) > 1 and sorted(axis) != list(range(len(ctx.shape("X")) - len(squeezed))):
        ctx.fail(f"axis {axis} is not a permutation of the dims of X {ctx.shape('X')} squeezed at {squeezed}")
    return {"Out": (fused_transpose_shape(ctx.shape("X"), ctx.attr), ctx.dtype("X"))}


def fused_transpose_shape(shape: list[int], attr) -> list[int]:
    """Out's dims: X's squeezed, transposed, then unsqueezed or reshaped (-1 stays unknown where X has one)."""
    squeezed = {axis % len(shape) for axis in attr("fused_squeeze2_axes")}
    shape = [n for i, n in enumerate(shape) if i not in squeezed]
    if len(attr("axis")) > 1:
        shape = [shape[axis] for axis in attr("axis")]
    for axis in attr("fused_unsqueeze2_axes"):
        shape.insert(axis if axis >= 0 else axis + len(shape) + 1, 1)
    if reshape := attr("fused_reshape2_shape"):
        known = [shape[i] if n == 0 else n for i, n in enumerate(reshape)]
        if -1 in known and min(shape) > 0:
            rest = -math.prod(known)
            known[known.index(-1)] = math.prod(shape) // rest
        shape = known
    return shape


# oneDNN's transpose with the squeeze2 before it, and the unsqueeze2 or reshape2 after it, folded in
FUSED_TRANSPOSE = defop("fused_transpose", ["X"], ["Out", "XShape!"],
      attrs={"axis": [], "fused_squeeze2_axes": [], "fused_unsqueeze2_axes": [], "fused_reshape2_shape": [],
             "scale": 1.0, "shift": 0.0, "output_data_type": ""}, infer=_fused_transpose_infer)

"""ResNet's fused units.

resnet_unit (fuse_resnet_unit pass; paddle.incubate.operators.ResNetUnit): conv2d + batch_norm (+ a second
conv2d + batch_norm, or + Z) + relu in one op, on cuDNN's fused-ops API (Paddle's kernels take float16 only; the
CPU build has none). NHWC data; FilterX / FilterZ are KRSC [K, kh, kw, C / group] (a conv2d's [K, C, 1, 1] 1x1
filter is read as [K, 1, 1, C], as the kernel swaps it); the batch-norm vectors [K] or [1, 1, 1, K]:

    ConvX = conv2d(X, FilterX, stride, padding, dilation, group)
    Y = relu(BN_X(ConvX) + BN_Z(conv2d(Z, FilterZ, stride_z)))   with has_shortcut (ConvZ the second conv)
    Y = relu(BN_X(ConvX) + Z)                                      with fuse_add
    Y = relu(BN_X(ConvX))                                          otherwise

BN in training normalises with the batch's mean and biased variance over N, H, W (SavedMean*, SavedInvstd* = 1 /
sqrt(var + epsilon)) and updates RunningMean* / RunningVar* (the Mean* / Var* vars) to momentum * running + (1 -
momentum) * batch, the variance's batch value the unbiased one, n / (n - 1) var (cuDNN's BN finalize, which the
kernel's CudnnBNStatsFinalize runs with n = N Ho Wo: docs/inference-optimized.md); with is_test or use_global_stats
it normalises with the running statistics, left as they are (SavedMean* / SavedInvstd* then hold them). BitMask is
cuDNN's packed relu mask of Paddle's shape [ceil32(N Ho Wo), ceil64(K) / 32, 1] int32: gradc writes zeros there and
its grad reads Y's sign instead. resnet_unit_grad reads X, the filters, ConvX / ConvZ, the vectors, the saved
statistics, Y and Y@GRAD.

resnet_basic_block (paddle.incubate.xpu.resnet_block; Paddle's kernel is XPU's, float32), NCHW with OIHW filters:

    Conv2Input = relu(BN1(conv2d(X, Filter1, stride1, padding1, dilation1, group)))   (Conv1 the conv)
    Y = relu(BN2(conv2d(Conv2Input, Filter2, ...2)) + S)   (Conv2 the second conv)
    S = BN3(conv2d(X, Filter3, ...3)) with has_shortcut (Conv3 the conv), X otherwise

with the batch norms as resnet_unit's but the running variance's (biased, as Paddle's batch_norm); is_test
normalises with the running statistics unless trainable_statistics.
MaxInput* / MaxFilter* (find_conv_input_max) are XPU's findmax buffers of 6 floats for its int16 convolution: gradc
writes the largest |value| of the conv's input and filter in each. resnet_basic_block_grad reads X, the filters,
the convs' outputs, Conv2Input, the vectors, the saved statistics, Y and Y@GRAD. Both grad ops' makers (second
derivatives) are gradc.ops.resnet_fusion_double's.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import defop, grad_op
from ..shapes import dims_match
from .conv import conv_out_sizes, infer_geometry
from .infer import check_choice, check_float
from .nn import stats_dtype

BRANCHES = {"X": ("FilterX", "ScaleX", "BiasX", "MeanX", "VarX"), "Z": ("FilterZ", "ScaleZ", "BiasZ", "MeanZ", "VarZ")}
OUTPUTS = {"X": ("ConvX", "SavedMeanX", "SavedInvstdX", "RunningMeanX", "RunningVarX"),
           "Z": ("ConvZ", "SavedMeanZ", "SavedInvstdZ", "RunningMeanZ", "RunningVarZ")}


def krsc_filter(shape: list[int]) -> list[int]:
    """A KRSC filter's dims, a conv2d's [K, C, 1, 1] read as [K, 1, 1, C] as the kernel does."""
    return [shape[0], 1, 1, shape[1]] if shape[2:] == [1, 1] and shape[1] != 1 else list(shape)


def bitmask_shape(y: list[int]) -> list[int]:
    rows = y[0] * y[1] * y[2]
    return [(rows + 31) // 32 * 32, (y[3] + 63) // 64 * 2, 1]


def _branch_out(ctx, data: str, stride: str) -> list[int] | None:
    filter_slot, *vectors = BRANCHES[data][:3]
    x, w = ctx.shape(data), ctx.shape(filter_slot)
    if x is None or w is None:
        return None
    if len(x) != 4 or len(w) != 4:
        ctx.fail(f"{data} must be NHWC and {filter_slot} KRSC [K, kh, kw, C], got {x} and {w}")
    w = krsc_filter(w)
    if not dims_match(x[3], w[3] * ctx.attr("group")):
        ctx.fail(f"{filter_slot} {w} (KRSC, group {ctx.attr('group')}) does not fit {data}'s {x[3]} channels")
    pad, step, dilation = ctx.attr("padding"), ctx.attr(stride), ctx.attr("dilation")
    sizes = infer_geometry(ctx, conv_out_sizes, x[1:3], w[1:3], [step, step], [pad] * 4, [dilation, dilation])
    for slot in (*vectors, *BRANCHES[data][3:]):
        shape = ctx.shape(slot)
        if shape is not None and (len(shape) not in (1, 4) or not dims_match(shape[-1], w[0])
                                  or any(d != 1 for d in shape[:-1])):
            ctx.fail(f"{slot} must be [{w[0]}] or [1, 1, 1, {w[0]}] (the filters' count), got {shape}")
    return [x[0], *sizes, w[0]]


def _resnet_unit_infer(ctx):
    check_float(ctx, "X")
    check_choice(ctx, "act_type", ("relu",))
    if ctx.attr("data_format") != "NHWC":
        ctx.fail(f"data_format must be NHWC (the cuDNN fused ops' layout), got {ctx.attr('data_format')!r}")
    branches = ["X"] + (["Z"] if ctx.attr("has_shortcut") else [])
    needs = [*BRANCHES["Z"], "Z"] if ctx.attr("has_shortcut") else ["Z"] if ctx.attr("fuse_add") else []
    if missing := [slot for slot in needs if not ctx.has(slot)]:
        ctx.fail(f"has_shortcut / fuse_add need {', '.join(missing)}")
    y = _branch_out(ctx, "X", "stride")
    if "Z" in branches:
        z_out = _branch_out(ctx, "Z", "stride_z")
        if y is not None and z_out is not None and not all(map(dims_match, y, z_out)):
            ctx.fail(f"the shortcut's output {z_out} must match the main branch's {y}")
    elif ctx.attr("fuse_add") and y is not None and ctx.shape("Z") is not None \
            and not all(map(dims_match, ctx.shape("Z"), y)):
        ctx.fail(f"Z {ctx.shape('Z')} must have Y's shape {y}")
    dtype, results = ctx.dtype("X"), {}
    for branch in branches:
        vector = (ctx.shape(BRANCHES[branch][1]), stats_dtype(dtype))
        conv, *stats = OUTPUTS[branch]
        results |= {conv: (y, dtype)} | dict.fromkeys(stats, vector)
    return results | {"Y": (y, dtype), "BitMask": (bitmask_shape(y) if y else None, VarType.INT32)}


STATS = ("MeanX", "VarX", "MeanZ", "VarZ")
STAT_OUTPUTS = ("BitMask", *OUTPUTS["X"], *OUTPUTS["Z"])
_GRAD_READS = ("X", "FilterX", "ConvX", "ScaleX", "BiasX", "SavedMeanX", "SavedInvstdX", "Z", "FilterZ", "ConvZ",
               "ScaleZ", "BiasZ", "SavedMeanZ", "SavedInvstdZ", "Y", "BitMask")
defop("resnet_unit", ["X", "FilterX", "ScaleX", "BiasX", "MeanX", "VarX", "Z?", "FilterZ?", "ScaleZ?", "BiasZ?",
                      "MeanZ?", "VarZ?"],
      ["Y", "BitMask", "ConvX", "SavedMeanX", "SavedInvstdX", "RunningMeanX", "RunningVarX", "ConvZ?", "SavedMeanZ?",
       "SavedInvstdZ?", "RunningMeanZ?", "RunningVarZ?"],
      attrs={"stride": 1, "stride_z": 1, "padding": 0, "dilation": 1, "group": 1, "momentum": 0.9, "epsilon": 1e-5,
             "data_format": "NHWC", "fuse_add": False, "has_shortcut": False, "use_global_stats": False,
             "is_test": False, "use_addto": False, "act_type": "relu"},
      no_grad_inputs=STATS, no_grad_outputs=STAT_OUTPUTS, infer=_resnet_unit_infer, grad=grad_op(*_GRAD_READS))


# resnet_basic_block's branches: (scale, bias, mean, var) in, (saved mean, saved inverse std, new mean, new var) out
BASIC_BRANCHES = {b: ((f"Scale{b}", f"Bias{b}", f"Mean{b}", f"Var{b}"),
                      (f"SavedMean{b}", f"SavedInvstd{b}", f"Mean{b}Out", f"Var{b}Out")) for b in "123"}


def _basic_conv_out(ctx, x: list[int] | None, branch: str) -> list[int] | None:
    w = ctx.shape(f"Filter{branch}")
    if x is None or w is None:
        return None
    if len(x) != 4 or len(w) != 4 or not dims_match(x[1], w[1] * ctx.attr("group")):
        ctx.fail(f"Filter{branch} {w} (OIHW, group {ctx.attr('group')}) does not fit an NCHW input {x}")
    pad, step, dilation = (ctx.attr(f"{name}{branch}") for name in ("padding", "stride", "dilation"))
    sizes = infer_geometry(ctx, conv_out_sizes, x[2:], w[2:], [step, step], [pad] * 4, [dilation, dilation])
    for slot in BASIC_BRANCHES[branch][0]:
        shape = ctx.shape(slot)
        if shape is not None and (len(shape) != 1 or not dims_match(shape[0], w[0])):
            ctx.fail(f"{slot} must be a vector of Filter{branch}'s {w[0]} filters, got {shape}")
    return [x[0], w[0], *sizes]


def _basic_block_infer(ctx):
    check_float(ctx, "X")
    check_choice(ctx, "act_type", ("relu",))
    if ctx.attr("data_format") != "NCHW":
        ctx.fail(f"data_format must be NCHW (the XPU kernel's layout), got {ctx.attr('data_format')!r}")
    shortcut = ctx.attr("has_shortcut")
    if shortcut and (missing := [s for s in ("Filter3", *BASIC_BRANCHES["3"][0]) if not ctx.has(s)]):
        ctx.fail(f"has_shortcut needs {', '.join(missing)}")
    x, dtype = ctx.shape("X"), ctx.dtype("X")
    conv1 = _basic_conv_out(ctx, x, "1")
    y = _basic_conv_out(ctx, conv1, "2")
    other = _basic_conv_out(ctx, x, "3") if shortcut else x
    if y is not None and other is not None and not all(map(dims_match, y, other)):
        ctx.fail(f"the shortcut {other} must match the second conv's output {y}")
    results = {"Y": (y, dtype), "Conv1": (conv1, dtype), "Conv2Input": (conv1, dtype), "Conv2": (y, dtype)}
    if shortcut:
        results["Conv3"] = (y, dtype)
    finds = ["1", "2", "3"] if shortcut else ["1", "2"]
    for branch in finds:
        vector = (ctx.shape(f"Scale{branch}"), stats_dtype(dtype))
        results |= dict.fromkeys(BASIC_BRANCHES[branch][1], vector)
        if ctx.attr("find_conv_input_max"):
            results |= dict.fromkeys((f"MaxInput{branch}", f"MaxFilter{branch}"), ([6], VarType.FP32))
    return results


BASIC_STATS = [f"{stat}{b}" for b in "123" for stat in ("Mean", "Var")]
BASIC_OUTPUTS = ["Conv1", "SavedMean1", "SavedInvstd1", "Mean1Out", "Var1Out", "Conv2", "Conv2Input", "SavedMean2",
                 "SavedInvstd2", "Mean2Out", "Var2Out", "Conv3?", "SavedMean3?", "SavedInvstd3?", "Mean3Out?",
                 "Var3Out?", *(f"Max{kind}{b}?" for b in "123" for kind in ("Input", "Filter"))]
_BASIC_READS = ("X", "Filter1", "Conv1", "Scale1", "Bias1", "SavedMean1", "SavedInvstd1", "Filter2", "Conv2",
                "Conv2Input", "Scale2", "Bias2", "SavedMean2", "SavedInvstd2", "Filter3", "Conv3", "Scale3", "Bias3",
                "SavedMean3", "SavedInvstd3", *(f"Max{kind}{b}" for b in "123" for kind in ("Input", "Filter")), "Y")
defop("resnet_basic_block",
      ["X", *(f"{slot}{b}" for b in "12" for slot in ("Filter", "Scale", "Bias", "Mean", "Var")),
       *(f"{slot}3?" for slot in ("Filter", "Scale", "Bias", "Mean", "Var"))],
      ["Y", *BASIC_OUTPUTS],
      attrs={**{f"{name}{b}": value for name, value in (("stride", 1), ("padding", 0), ("dilation", 1))
                for b in "123"}, "group": 1, "momentum": 0.9, "epsilon": 1e-5, "data_format": "NCHW",
             "has_shortcut": False, "use_global_stats": False, "is_test": False, "trainable_statistics": False,
             "act_type": "relu", "find_conv_input_max": True},
      no_grad_inputs=BASIC_STATS, no_grad_outputs=[s.rstrip("?") for s in BASIC_OUTPUTS], infer=_basic_block_infer,
      grad=grad_op(*_BASIC_READS))

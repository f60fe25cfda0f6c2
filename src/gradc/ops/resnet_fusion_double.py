"""Second derivatives of ResNet's fused units (gradc.ops.resnet_fusion): the makers of resnet_unit_grad and
resnet_basic_block_grad, composite (gradc.ops.composite), so third derivatives follow. Each writes its unit again
with differentiable ops (conv2d, the batch norm's arithmetic, relu, adds), emits that forward's backward seeded with
Y@GRAD (``differentiate``) and has both differentiated again (``expansion``). Training-mode batch norms recompute the
batch's mean and inverse std from the conv's output, so their dependence on X and the filters is differentiated; in
is_test / use_global_stats the grad op's SavedMean* / SavedInvstd* (the running statistics) are constants, read
through stop_gradient copies (nn_double.constant) so that a third backward does not reach them either. Paddle
defines no double grad of either op (its kernels are cuDNN's float16 fused ops and XPU's).
"""

from __future__ import annotations

from ..registry import defgrad
from . import resnet_fusion  # noqa: F401  (registers the grad ops these makers differentiate)
from .composite import differentiate, expansion, first
from .nn_double import constant
from .resnet_fusion import BRANCHES, OUTPUTS, krsc_filter


def _frozen(g) -> bool:
    """Normalising with the running statistics, as the kernels' (resnet_basic_block trains on with
    trainable_statistics)."""
    test = g.attr("is_test") and not (g.fwd.type == "resnet_basic_block_grad" and g.attr("trainable_statistics"))
    return test or g.attr("use_global_stats")


def _batch_norm(f, g, conv: str, vectors: tuple[str, str, str, str], channel: int) -> str:
    """scale (conv - mean) inv + bias per channel (axis ``channel``); vectors: the scale, bias, saved mean and saved
    inverse std slots. In training the mean and inv = 1 / sqrt(var + epsilon) are the batch's, from ``conv``."""
    scale, bias, saved_mean, saved_inv = (first(g.I(slot)) for slot in vectors)
    if _frozen(g):
        centred = f.sub(conv, constant(f, saved_mean), conv, channel)
        normed = f.mul(centred, constant(f, saved_inv), conv, channel)
    else:
        axes = [d for d in range(4) if d != channel]

        def mean(x: str) -> str:
            return f.op("reduce_mean", {"X": x}, x, {"dim": axes, "keep_dim": True, "reduce_all": False},
                        dims=lambda s: [d if i == channel else 1 for i, d in enumerate(s)])

        centred = f.sub(conv, mean(conv), conv)
        inv = f.unary("rsqrt", f.scale(mean(f.unary("square", centred)), 1.0, g.attr("epsilon")))
        normed = f.mul(centred, inv, conv)
    return f.add(f.mul(normed, scale, conv, channel), bias, conv, channel)


def _conv(f, x: str, w: str, like: str, attrs: dict) -> str:
    return f.op("conv2d", {"Input": x, "Filter": w}, like, {"padding_algorithm": "EXPLICIT", **attrs}, slot="Output")


def _backward(f, g, y: str, inputs: list[str]) -> dict:
    """The grads of the recomputed Y (seeded with Y@GRAD) at the grad op's ``inputs`` slots it owes grads of."""
    owed = [slot for slot in inputs if first(g.I(slot)) is not None and first(g.O(f"{slot}@GRAD")) is not None]
    targets = {first(g.I(slot)): g.tmp(first(g.I(slot))) for slot in owed}
    f.ops.extend(differentiate(g, list(f.ops), {y: first(g.I("Y@GRAD"))}, targets))
    return {f"{slot}@GRAD": targets[first(g.I(slot))] for slot in owed}


@expansion
def _resnet_unit_grad(f, g):
    """Y = relu(BN_X(conv(X)) + BN_Z(conv(Z)) or + Z or alone), NHWC with KRSC filters (a conv2d-shaped 1x1 filter
    [K, C, 1, 1] is OIHW already; the others are moved there)."""
    geometry = {"paddings": [g.attr("padding")] * 2, "dilations": [g.attr("dilation")] * 2, "groups": g.attr("group"),
                "data_format": "NHWC"}

    def branch(data: str, stride: str) -> str:
        filter_slot, scale, bias = BRANCHES[data][:3]
        x, w = first(g.I(data)), first(g.I(filter_slot))
        shape = g.shape(w)
        if krsc_filter(shape) == shape:
            w = f.op("transpose2", {"X": w}, w, {"axis": [0, 3, 1, 2]}, more={"XShape": f.xshape(w)},
                     dims=lambda s: [s[0], s[3], s[1], s[2]])
        conv = _conv(f, x, w, first(g.I(OUTPUTS[data][0])), {**geometry, "strides": [g.attr(stride)] * 2})
        return _batch_norm(f, g, conv, (scale, bias, *OUTPUTS[data][1:3]), 3)

    total = branch("X", "stride")
    if g.attr("has_shortcut"):
        total = f.add(total, branch("Z", "stride_z"), total)
    elif g.attr("fuse_add"):
        total = f.add(total, first(g.I("Z")), total)
    y = f.unary("relu", total)
    return _backward(f, g, y, ["X", "Z", *BRANCHES["X"][:3], *BRANCHES["Z"][:3]])


@expansion
def _resnet_basic_block_grad(f, g):
    """Y = relu(BN2(conv2(relu(BN1(conv1(X))))) + BN3(conv3(X)) or + X), NCHW with OIHW filters."""

    def branch(x: str, b: str) -> str:
        attrs = {"strides": [g.attr(f"stride{b}")] * 2, "paddings": [g.attr(f"padding{b}")] * 2,
                 "dilations": [g.attr(f"dilation{b}")] * 2, "groups": g.attr("group"), "data_format": "NCHW"}
        conv = _conv(f, x, first(g.I(f"Filter{b}")), first(g.I(f"Conv{b}")), attrs)
        return _batch_norm(f, g, conv, (f"Scale{b}", f"Bias{b}", f"SavedMean{b}", f"SavedInvstd{b}"), 1)

    x = first(g.I("X"))
    hidden = f.unary("relu", branch(x, "1"))
    shortcut = branch(x, "3") if g.attr("has_shortcut") else x
    main = branch(hidden, "2")
    y = f.unary("relu", f.add(main, shortcut, main))
    return _backward(f, g, y, ["X", *(f"{slot}{b}" for b in "123" for slot in ("Filter", "Scale", "Bias"))])


# the grad ops' reads of the forward's outputs: recomputed (convs, Y) or, frozen, the running statistics (constants)
defgrad("resnet_unit_grad", grad=_resnet_unit_grad,
        no_grad_inputs=["Y", "BitMask", *(name for branch in "XZ" for name in OUTPUTS[branch][:3])])
defgrad("resnet_basic_block_grad", grad=_resnet_basic_block_grad,
        no_grad_inputs=["Y", "Conv2Input", *(f"{name}{b}" for b in "123" for name in (
            "Conv", "SavedMean", "SavedInvstd", "MaxInput", "MaxFilter"))])

"""Kernels of gradc.ops.inference_fused: each runs the unfused ops' kernels (or their formula) on the fused op's
inputs, in the input's dtype, as Paddle's CPU kernels do."""

from __future__ import annotations

import numpy as np

from ...ops.inference_fused import FUSE_ACTIVATIONS, FUSED_ELEMENTWISE
from ..lod import SETS_LOD
from . import KERNELS, kernel
from . import onednn_int8 as int8
from .activation import erf, sigmoid
from .sequence_lod_windows import context_columns

SETS_LOD.update(("fusion_seqconv_eltadd_relu", "fusion_seqexpand_concat_fc"))


class SlotView:
    """A kernel context whose slots (and attributes) are overridden: lets a fused kernel run an unfused op's
    kernel on values it computed. ``lods`` maps a slot to the slot of the real op whose LoD it has."""

    def __init__(self, k, values: dict, attrs: dict | None = None, lods: dict | None = None):
        self.k, self.values, self.attrs, self.lods, self.op = k, values, attrs or {}, lods or {}, k.op

    def x(self, slot: str, i: int = 0):
        return self.values[slot] if slot in self.values else self.k.x(slot, i)

    def optional(self, slot: str):
        return self.values[slot] if slot in self.values else self.k.optional(slot)

    def attr(self, name: str):
        return self.attrs[name] if name in self.attrs else self.k.attr(name)

    def lod(self, slot: str, i: int = 0):
        return self.k.lod(self.lods.get(slot, slot), i)

    def set_lod(self, slot: str, lod) -> None:   # the unfused kernel's own outputs are not the fused op's
        pass


def _gelu_erf(x):
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


# fuse_activation -> f(x, fuse_alpha, fuse_beta), as oneDNN's eltwise post-op of that name
ACTIVATE = {
    "": lambda x, a, b: x, "identity": lambda x, a, b: x, "relu": lambda x, a, b: np.maximum(x, 0),
    "relu6": lambda x, a, b: np.clip(x, 0, b or 6.0), "leaky_relu": lambda x, a, b: np.where(x > 0, x, a * x),
    "sigmoid": lambda x, a, b: sigmoid(x), "tanh": lambda x, a, b: np.tanh(x),
    "swish": lambda x, a, b: x * sigmoid((a or 1.0) * x),
    "hard_swish": lambda x, a, b: x * np.clip(a * x + b, 0, 1),   # the pass sets alpha 1/6, beta 1/2
    "hard_sigmoid": lambda x, a, b: np.clip(a * x + b, 0, 1),
    "gelu": lambda x, a, b: _gelu_erf(x), "gelu_erf": lambda x, a, b: _gelu_erf(x),
    "gelu_tanh": lambda x, a, b: _gelu_tanh(x), "mish": lambda x, a, b: x * np.tanh(np.logaddexp(0, x)),
    "abs": lambda x, a, b: np.abs(x), "sqrt": lambda x, a, b: np.sqrt(x), "square": lambda x, a, b: x * x,
    "exp": lambda x, a, b: np.exp(x), "clip": lambda x, a, b: np.clip(x, a, b),
    "elu": lambda x, a, b: np.where(x > 0, x, a * np.expm1(np.minimum(x, 0))),
}
assert set(ACTIVATE) == set(FUSE_ACTIVATIONS), "every fuse_activation the op accepts has a kernel"


def activate(k, out):
    name = k.attr("fuse_activation")
    if name not in ACTIVATE:
        raise ValueError(f"fuse_activation {name!r} is not one of {list(FUSE_ACTIVATIONS)}")
    wide = out.astype(np.float64)
    return ACTIVATE[name](wide, k.attr("fuse_alpha"), k.attr("fuse_beta")).astype(out.dtype, copy=False)


@kernel("fusion_repeated_fc_relu")
def fusion_repeated_fc_relu(k):
    h, weights, biases = k.x("X"), k.xs("W"), k.xs("Bias")
    if h.ndim != 2 or len(weights) != len(biases) or not weights:
        raise ValueError(f"needs X [rows, width] and one Bias per W, got X {list(h.shape)}, {len(weights)} W and "
                         f"{len(biases)} Bias")
    outs = []
    for i, (w, b) in enumerate(zip(weights, biases)):
        if w.ndim != 2 or w.shape[0] != h.shape[1] or b.size != w.shape[1]:
            raise ValueError(f"layer {i}: W {list(w.shape)} and Bias {list(b.shape)} do not fit its input "
                             f"{list(h.shape)}")
        h = np.maximum(h @ w + b.reshape(-1), 0).astype(h.dtype, copy=False)
        outs.append(h)
    return {"ReluOut": outs[:-1], "Out": outs[-1]} if k.wants("ReluOut") else {"Out": outs[-1]}


@kernel("fusion_seqconv_eltadd_relu")
def fusion_seqconv_eltadd_relu(k):
    cols = context_columns(SlotView(k, {}, {"paddingTrainable": False}))
    w, bias = k.x("Filter"), k.x("Bias")
    if bias.size != w.shape[1]:
        raise ValueError(f"Bias has {bias.size} values for Filter's {w.shape[1]} outputs")
    out = np.maximum(cols @ w + bias.reshape(-1), 0).astype(cols.dtype, copy=False)
    k.set_lod("Out", k.lod("X"))
    return {"Out": out, "ColMat": cols} if k.wants("ColMat") else {"Out": out}


@kernel("fusion_seqpool_cvm_concat")
def fusion_seqpool_cvm_concat(k):
    xs, counts, use_cvm = k.xs("X"), k.x("CVM"), k.attr("use_cvm")
    if k.attr("pooltype") != "SUM" or k.attr("axis") != 1:
        raise ValueError("Paddle's kernel only sums (pooltype SUM) and concatenates along axis 1")
    parts = []
    for i, x in enumerate(xs):
        lod = k.lod("X", i)
        if not lod:
            raise ValueError(f"X[{i}] has no LoD: fusion_seqpool_cvm_concat sums sequences")
        bounds = np.asarray(lod[-1], dtype=np.int64)
        if x.ndim != 2 or x.shape[1] < 2 or bounds[-1] != x.shape[0]:
            raise ValueError(f"X[{i}] {list(x.shape)} must be [rows, width >= 2] with a LoD ending at its rows")
        sums = np.zeros((len(bounds) - 1, x.shape[1]))
        np.add.at(sums, np.repeat(np.arange(len(bounds) - 1), np.diff(bounds)), x.astype(np.float64))
        if use_cvm:
            show = np.log1p(sums[:, 0])
            sums[:, 1] = np.log1p(sums[:, 1]) - show
            sums[:, 0] = show
        parts.append(sums if use_cvm else sums[:, 2:])
    if counts.shape[0] != parts[0].shape[0]:
        raise ValueError(f"CVM has {counts.shape[0]} rows for {parts[0].shape[0]} sequences")
    return {"Out": np.concatenate(parts, axis=1).astype(xs[0].dtype)}


@kernel("fusion_seqpool_concat")
def fusion_seqpool_concat(k):
    pooltype, parts = k.attr("pooltype"), []
    for i, x in enumerate(k.xs("X")):
        lod = k.lod("X", i)
        if not lod or x.ndim != 2 or lod[-1][-1] != x.shape[0]:
            raise ValueError(f"X[{i}] {list(x.shape)} must be [rows, width] with a LoD ending at its rows")
        bounds = np.asarray(lod[-1], dtype=np.int64)
        lengths = np.diff(bounds)
        sums = np.zeros((len(lengths), x.shape[1]))
        np.add.at(sums, np.repeat(np.arange(len(lengths)), lengths), x.astype(np.float64))
        counted = np.maximum(lengths, 1).reshape(-1, 1)   # an empty sequence pools to zeros
        parts.append(sums / {"SUM": 1.0, "AVERAGE": counted, "SQRT": np.sqrt(counted)}[pooltype])
    if len({p.shape[0] for p in parts}) > 1:
        raise ValueError(f"the inputs hold {[p.shape[0] for p in parts]} sequences: they must hold as many")
    return {"Out": np.concatenate(parts, axis=1).astype(k.xs("X")[0].dtype)}


FC_ACTIVATIONS = {"identity": lambda x: x, "relu": lambda x: np.maximum(x, 0), "sigmoid": sigmoid, "tanh": np.tanh}


@kernel("fusion_seqexpand_concat_fc")
def fusion_seqexpand_concat_fc(k):
    xs, w, bias = k.xs("X"), k.x("FCWeight").astype(np.float64), k.optional("FCBias")
    lod = k.lod("X", 0)
    if not lod or lod[-1][-1] != xs[0].shape[0]:
        raise ValueError(f"X[0] {list(xs[0].shape)} needs a LoD ending at its rows")
    lengths = np.diff(np.asarray(lod[-1], dtype=np.int64))
    if any(x.shape[0] != len(lengths) for x in xs[1:]):
        raise ValueError(f"X[1:] have {[x.shape[0] for x in xs[1:]]} rows for {len(lengths)} sequences")
    width = xs[0].shape[1]
    per_sequence = np.concatenate([x.astype(np.float64) for x in xs[1:]], axis=1) @ w[width:]
    if bias is not None:
        per_sequence = per_sequence + bias.reshape(-1)
    out = xs[0].astype(np.float64) @ w[:width] + np.repeat(per_sequence, lengths, axis=0)
    k.set_lod("Out", lod)
    dtype = xs[0].dtype
    return {"Out": FC_ACTIVATIONS[k.attr("fc_activation")](out).astype(dtype), "FCOut": per_sequence.astype(dtype)}


@kernel("fusion_squared_mat_sub")
def fusion_squared_mat_sub(k):
    x, y = k.x("X"), k.x("Y")
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[0]:
        raise ValueError(f"X {list(x.shape)} and Y {list(y.shape)} must be [M, K] and [K, N]")
    wide_x, wide_y = x.astype(np.float64), y.astype(np.float64)
    squared = {"SquaredX": wide_x ** 2, "SquaredY": wide_y ** 2, "SquaredXY": (wide_x @ wide_y) ** 2}
    out = k.attr("scalar") * (squared["SquaredXY"] - squared["SquaredX"] @ squared["SquaredY"])
    return {slot: value.astype(x.dtype) for slot, value in {**squared, "Out": out}.items()}


def _int8_conv(k, unfused: str):
    """oneDNN's int8 convolution of a quantize op's int8 / uint8 Input (gradc.executor.kernels.onednn_int8): float32
    before Bias, as Paddle 3.3.1 writes it (no Scale_out, whatever force_fp32_output says)."""
    x, w = k.x("Input"), k.x("Filter")
    if unfused != "conv2d":
        raise ValueError(f"Input holds {x.dtype} values: Paddle's oneDNN int8 convolution is 2-D only")
    adjust, scales = int8.weight_adjust(x), int8.weight_scales(k.attr("Scale_weights"), w.shape[0])
    wide = {"Input": x.astype(np.float64), "Filter": int8.quantized_weights(w, scales, 0, adjust)}
    acc = KERNELS[unfused](SlotView(k, wide))["Output"]
    return int8.dequantized(acc, k.attr("Scale_in"), scales, _channel_axis(k), adjust)


def _channel_axis(k) -> int:
    return -1 if k.attr("data_format") in ("NHWC", "NDHWC") else 1


def fused_conv(k, unfused: str, bias_only: bool = False):
    """The ``unfused`` conv kernel's Output (oneDNN's int8 one on int8 / uint8 Input), plus Bias per channel, then
    (unless ``bias_only``) plus ResidualData (fuse_residual_connection; an int8 one's sum post-op scales it by
    1 / Scale_in_eltwise) and fuse_activation."""
    quantized = int8.quantized(k.x("Input"))
    out = _int8_conv(k, unfused) if quantized else KERNELS[unfused](k)["Output"]
    bias, residual = k.optional("Bias"), None if bias_only else k.optional("ResidualData")
    channel_axis = _channel_axis(k)
    if bias is not None:
        if bias.size != out.shape[channel_axis]:
            raise ValueError(f"Bias has {bias.size} values for {out.shape[channel_axis]} output channels")
        shape = [1] * out.ndim
        shape[channel_axis] = -1
        out = out + bias.reshape(shape).astype(out.dtype, copy=False)
    if residual is not None and k.attr("fuse_residual_connection"):
        if residual.shape != out.shape:
            raise ValueError(f"ResidualData {list(residual.shape)} must have the output's shape {list(out.shape)}")
        if quantized:
            residual = residual.astype(np.float32) * (np.float32(1) / np.float32(k.attr("Scale_in_eltwise")))
        out = out + residual
    out = out.astype(np.float32 if quantized else k.x("Input").dtype, copy=False)
    return {"Output": out if bias_only else activate(k, out)}


@kernel("fused_conv2d")
def fused_conv2d(k):
    return fused_conv(k, "conv2d")


def _reshaped(a, shape: list[int], axes: list[int], transpose_first: bool):
    """``a`` reshaped (0 keeps that dim) and transposed, in the order the fuse pass folded them."""
    def reshape(a):
        return a.reshape([a.shape[i] if n == 0 else n for i, n in enumerate(shape)]) if shape else a

    def transpose(a):
        return a.transpose(axes) if axes else a
    return reshape(transpose(a)) if transpose_first else transpose(reshape(a))


@kernel("fused_matmul")
def fused_matmul(k):
    x = _reshaped(k.x("X"), k.attr("fused_reshape_X"), k.attr("fused_transpose_X"), False)
    y = _reshaped(k.x("Y"), k.attr("fused_reshape_Y"), k.attr("fused_transpose_Y"), False)
    quantized = int8.quantized(x)
    if quantized:
        out = _int8_matmul(k, x, y)
    else:
        out = KERNELS["matmul_v2"](SlotView(k, {"X": x, "Y": y}))["Out"] * k.attr("matmul_alpha")
    residual = k.optional("ResidualData")
    if residual is not None:
        out = out + (int8.dequantized_residual(residual, k.attr("Scale_in_eltwise")) if quantized else residual)
    dtype = np.float32 if quantized else x.dtype
    out = activate(k, out.astype(dtype, copy=False)) * np.asarray(k.attr("fused_output_scale"), dtype)
    out = _reshaped(out, k.attr("fused_reshape_Out"), k.attr("fused_transpose_Out"), True)
    if quantized and not k.attr("force_fp32_output"):
        return {"Out": int8.requantized(out, k.attr("Scale_out"), k.attr("fuse_activation"))}
    return {"Out": out.astype(dtype, copy=False)}


def _int8_matmul(k, x, y):
    """oneDNN's int8 matmul: exact integer products, times 1 / Scale_x and matmul_alpha / Scale_y in float32.
    Paddle's kernel reads Y as X's type."""
    if y.dtype != x.dtype:
        raise ValueError(f"X holds {x.dtype} and Y {y.dtype} values: Paddle's int8 matmul reads Y as X's type")
    acc = KERNELS["matmul_v2"](SlotView(k, {"X": x.astype(np.float64), "Y": y.astype(np.float64)}))["Out"]
    return int8.matmul_scaled(acc, k.attr("Scale_x"), k.attr("matmul_alpha"), k.attr("Scale_y"))


def _fused_elementwise(unfused: str):
    def run(k):
        out = activate(k, KERNELS[unfused](k)["Out"]) * k.attr("fused_output_scale")
        for axis in k.attr("fused_unsqueeze2_axes"):
            out = np.expand_dims(out, axis if axis >= 0 else axis + out.ndim + 1)
        return {"Out": out.astype(k.x("X").dtype, copy=False)}
    return run


for _type in FUSED_ELEMENTWISE:
    kernel(_type)(_fused_elementwise(_type.removeprefix("fused_")))


@kernel("fused_softplus")
def fused_softplus(k):
    return {"Out": activate(k, KERNELS["softplus"](k)["Out"])}


@kernel("fused_transpose")
def fused_transpose(k):
    x = k.x("X")
    squeezed = [axis % x.ndim for axis in k.attr("fused_squeeze2_axes")]
    if any(x.shape[axis] != 1 for axis in squeezed):
        raise ValueError(f"fused_squeeze2_axes {k.attr('fused_squeeze2_axes')} name dims of X {list(x.shape)} "
                         f"that are not 1")
    out = x.reshape([n for i, n in enumerate(x.shape) if i not in squeezed])
    axis = k.attr("axis")
    if len(axis) > 1:   # oneDNN copies a one-axis transpose unchanged
        out = out.transpose(axis)
    if k.attr("scale") != 1:
        out = out * k.attr("scale")
    for unsqueezed in k.attr("fused_unsqueeze2_axes"):
        out = np.expand_dims(out, unsqueezed if unsqueezed >= 0 else unsqueezed + out.ndim + 1)
    out = _reshaped(out, k.attr("fused_reshape2_shape"), [], False)
    return {"Out": out.astype(x.dtype, copy=False), "XShape": np.zeros((0,) + x.shape, x.dtype)}

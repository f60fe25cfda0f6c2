"""Kernels of gradc.ops.fp8_split: stacked and split float8 quantization of MoE expert batches, and the
blockwise-scaled float8 GEMM, in float32 as the CUDA kernels compute (the formulas: gradc.ops.fp8_split)."""

from __future__ import annotations

import numpy as np

from ...bfloat16 import round_to_bfloat16
from . import kernel
from .fp8 import BLOCK, F32, QUANT_INF_SCALE, quantize_rows, quantize_tiles


@kernel("fused_stack_quant", "fused_stack_transpose_quant")
def fused_stack_quant(k):
    flip = k.op.type == "fused_stack_transpose_quant"
    stacked = np.concatenate([x.T if flip else x for x in k.xs("x")]).astype(F32)
    out, inverse = quantize_tiles(stacked, 0.0, False)
    return {"out": out, "scale": inverse}


def _tokens(k, rows: int) -> list[int]:
    """tokens_per_expert: from TokensPerExpertTensor(List) when given (checked here), else the attribute."""
    if k.optional("TokensPerExpertTensor") is not None:
        tokens = [int(t) for t in np.ravel(k.x("TokensPerExpertTensor"))]
    elif k.has("TokensPerExpertTensorList"):
        tokens = [int(np.ravel(t)[0]) for t in k.xs("TokensPerExpertTensorList")]
    else:
        return list(k.attr("tokens_per_expert"))
    if any(t < 0 or t % BLOCK for t in tokens) or sum(tokens) != rows or len(tokens) != len(k.out_names("out")):
        raise ValueError(f"tokens_per_expert {tokens} must be one per out, multiples of 128 summing to the {rows} "
                         f"rows")
    return tokens


def _split(k, rows: np.ndarray) -> dict:
    """rows [M, K] split among the experts; each column's 128-row blocks quantized: out_i [K, t_i], scales_i
    [t_i / 128, K]."""
    out, scales = quantize_rows(np.ascontiguousarray(rows.T), pow2=k.attr("pow_2_scales"), inf_scale=QUANT_INF_SCALE)
    ends = np.cumsum([0, *_tokens(k, rows.shape[0])])
    return {"out": [np.ascontiguousarray(out[:, start:end]) for start, end in zip(ends, ends[1:])],
            "scales": [np.ascontiguousarray(scales[:, start // BLOCK:end // BLOCK].T) for start, end in
                       zip(ends, ends[1:])]}


@kernel("fused_transpose_split_quant")
def fused_transpose_split_quant(k):
    x = k.x("x").astype(F32)
    if k.optional("input_scales") is not None:   # a float8 x: dequantized to bfloat16 first
        per_block = np.repeat(k.x("input_scales").astype(F32), BLOCK, axis=1)[:, :x.shape[1]]
        x = round_to_bfloat16(x * per_block)
    return _split(k, x)


@kernel("fused_transpose_wlch_split_quant")
def fused_transpose_wlch_split_quant(k):
    x = k.x("x").astype(F32)
    return _split(k, x.transpose(1, 0, 2, 3).reshape(-1, x.shape[3]))


def _decode_scales(scale: np.ndarray, rows: int, k_len: int, one_d: bool) -> np.ndarray:
    """An operand's decode scale for each (row, 128 of K), [rows, K / 128], from its 1-D [K / 128, rows] or 2-D
    [rows / 128, K / 128] layout."""
    scale = scale.astype(np.float64)
    return scale.T if one_d else np.repeat(scale, BLOCK, axis=0)[:rows, :k_len // BLOCK]


@kernel("fp8_gemm_blockwise")
def fp8_gemm_blockwise(k):
    a, b = k.x("A").astype(np.float64), k.x("B").astype(np.float64)
    depth = a.shape[1] // BLOCK
    sa = _decode_scales(k.x("A_scale"), a.shape[0], a.shape[1], k.attr("is_A_1d_scaled"))
    sb = _decode_scales(k.x("B_scale"), b.shape[0], b.shape[1], k.attr("is_B_1d_scaled"))
    partial = np.einsum("mjc,njc->mnj", b.reshape(b.shape[0], depth, BLOCK), a.reshape(a.shape[0], depth, BLOCK))
    out = np.einsum("mnj,mj,nj->mn", partial, sb, sa)
    if k.attr("accumulate"):
        out = out + k.x("input_result").astype(np.float64)
    passed = {f"{slot}_out": k.x(slot) for slot in ("pre_gelu", "workspace") if k.optional(slot) is not None}
    return {"output": out.astype(F32), **passed}

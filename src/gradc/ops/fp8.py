"""Paddle 3.3.1's float8 ops (paddle.incubate.nn.functional.fp8, paddle.linalg.fp8_fp8_half_gemm_fused and
moe_gate_dispatch_and_quant): GPU kernels only, no gradients. gradc follows the CUDA kernels' formulas, computing
in float32 on float32 values of the vars' formats (gradc.float8, gradc.bfloat16).

A block's quantization (the kernels' ScaleWrapper / ComputeScale), amax the largest |v| of the block:

    scale = 448 / max(amax, epsilon)      1 where that max is 0; where it overflows to inf: 2^127 with
                                          power-of-two scales, else 0x1.FEp127 (ComputeScale: the largest float)
    power-of-two scales: scale = 2^floor(log2 scale)  (the float32 exponent kept, the mantissa dropped)
    out = float8_e4m3fn(v * scale)        (CUDA's conversion: nearest, saturating at 448)
    the scale output holds 1 / scale      (the dequantization factor: v ~ out * that)

fp8_quant_blockwise: x [rows, cols], blocks of 1 x 128 along each row (using_1x128_vec_quant) or 128 x 128 tiles;
scale [rows, ceil(cols / 128)] ([rows / 128, cols / 128] for tiles), transposed with output_scale_transpose; with
input_transpose also out_transposed = x^T quantized in 1 x 128 blocks of x's columns (for tiles: out^T) and its
scale_transposed; return_transpose_only leaves out and scale zero (Paddle's stay unwritten). The tiles, transposes
and rows % 128 need rows and cols multiples of 128; 1 x 128 blocks take cols % 4 == 0 (a short last block).
using_ue8m0_scale (forces power-of-two scales): each scale is the exponent byte of 1 / scale (2^(byte - 127)), one
per row and 128 columns (a tile's scale repeated on each of its 128 rows), four bytes to an int32 (little end first,
zero bytes past the last block): scale int32 [rows, ceil(ceil(cols / 128) / 4)], [that, rows] transposed.
fused_act_dequant: out[r, c] = x[r, c] * x_scale[r, c / 128] as bfloat16; an int32 x_scale packs four ue8m0
exponent bytes (2^(byte - 127)) per value, little end first.
fused_weighted_swiglu_act_quant: x [..., 2 n] -> act = silu(x[:, :n]) x[:, n:] (* prob[row]), quantized in 1 x 128
blocks with ComputeScale: out [rows, n], scale [rows, ceil(n / 128)]; with cols % 8 != 0 the kernel rounds each
block's amax to bfloat16 first, as gradc does.
fused_swiglu_weighted_bwd (o1 [..., 2 n], do2_s [..., n], unzipped_probs [...]): with s = sigmoid(x1),
t = s x1, g = do2_s * prob: do1 = [g x2 s (1 + x1 - t), g t], probs_grad = sum(do2_s t x2), o2_s = t x2 prob.
fp8_fp8_half_gemm_fused: out = act(scale * op(x) @ op(y) + bias) in float16 / bfloat16 (output_dtype); act
identity, relu or gelu (cuBLASLt's epilogue: the tanh form).
moe_gate_dispatch_and_quant: moe_gate_dispatch (gradc.ops.moe) with each kept row of y quantized in 1 x 128 blocks:
out_fp8 (zero rows where nothing lands), scale [rows, d / 128] (1 where nothing lands), combine_weights float32.
"""

from __future__ import annotations

from math import prod

from ..ir import AttrType, VarType, dtype_name
from ..registry import defop, typed
from .infer import check_choice
from .moe import _dispatch_infer

E4M3, BF16, FP32 = VarType.FP8_E4M3FN, VarType.BF16, VarType.FP32
HALF = {"float16": VarType.FP16, "bfloat16": VarType.BF16}


def check_dtype(ctx, slot: str, allowed: tuple, why: str) -> None:
    """Fails unless ``slot`` is declared one of the ``allowed`` dtypes (or not declared yet); ``why`` names the
    reason in the message."""
    dtype = ctx.dtype(slot)
    if dtype is not None and dtype not in allowed:
        ctx.fail(f"{slot} must be {' or '.join(map(dtype_name, allowed))} ({why}), got {dtype_name(dtype)}")


def _blocks(n: int) -> int:
    """How many 128-wide blocks cover n (-1: unknown)."""
    return -(-n // 128) if n >= 0 else -1


def _packed(blocks: int) -> int:
    """The int32 values holding ``blocks`` ue8m0 bytes, four to a value (-1: unknown)."""
    return -(-blocks // 4) if blocks >= 0 else -1


def _quant_blockwise_infer(ctx):
    check_dtype(ctx, "x", (BF16, VarType.FP16), "Paddle's kernel")
    if ctx.attr("using_e5m2"):
        ctx.fail("using_e5m2: Paddle's kernel writes float8_e4m3fn only")
    x = ctx.shape("x")
    if x is None:
        return {}
    if len(x) != 2:
        ctx.fail(f"x must be 2-D [rows, cols], got {x}")
    rows, cols = x
    row_blocks = ctx.attr("using_1x128_vec_quant")
    tiled = not row_blocks or ctx.attr("input_transpose") or ctx.attr("return_transpose_only")
    if tiled and min(rows, cols) >= 0 and (rows % 128 or cols % 128):
        ctx.fail(f"128 x 128 tiles, input_transpose and return_transpose_only need rows and cols multiples of 128, "
                 f"got {x}")
    if cols >= 0 and cols % 4:
        ctx.fail(f"cols must be a multiple of 4 (the kernel's vectors), got {x}")
    packed = ctx.attr("using_ue8m0_scale")   # a byte per row and 128 columns (tiles too), four to an int32
    if packed:
        scale, flipped = [rows, _packed(_blocks(cols))], [cols, _packed(_blocks(rows))]
    else:
        scale = [rows, _blocks(cols)] if row_blocks else [_blocks(rows), _blocks(cols)]
        flipped = [cols, _blocks(rows)] if row_blocks else scale[::-1]
    if ctx.attr("output_scale_transpose"):
        scale, flipped = scale[::-1], flipped[::-1]
    scale_dtype = VarType.INT32 if packed else FP32
    outs = {"out": (x, E4M3), "scale": (scale, scale_dtype)}
    if ctx.attr("input_transpose"):
        outs.update(out_transposed=([cols, rows], E4M3), scale_transposed=(flipped, scale_dtype))
    return outs


defop("fp8_quant_blockwise", ["x"], ["out", "scale", "out_transposed", "scale_transposed"],
      attrs={"epsilon": 0.0, "using_1x128_vec_quant": True, "input_transpose": False, "output_scale_transpose": True,
             "return_transpose_only": False, "using_e5m2": False, "using_pow2_scale": True,
             "using_ue8m0_scale": False},
      infer=_quant_blockwise_infer)


def _dequant_infer(ctx):
    check_dtype(ctx, "x", (E4M3,), "Paddle's kernel")
    check_dtype(ctx, "x_scale", (FP32, VarType.INT32), "float32 scales or int32 packed ue8m0 exponents")
    x, scale = ctx.shape("x"), ctx.shape("x_scale")
    if x is not None and len(x) != 2:
        ctx.fail(f"x must be 2-D [rows, cols], got {x}")
    if x is not None and scale is not None and min(*x, *scale) >= 0:
        needed = x[0] * _blocks(x[1])   # scales, read at row * ceil(cols / 128) + column / 128
        if ctx.dtype("x_scale") == VarType.INT32 and prod(scale) * 4 < needed:
            ctx.fail(f"x_scale's {prod(scale)} int32 values pack {prod(scale) * 4} ue8m0 scales, x {x} "
                     f"needs {needed}")
        if ctx.dtype("x_scale") != VarType.INT32 and scale != [x[0], _blocks(x[1])]:
            ctx.fail(f"x_scale must be [{x[0]}, {_blocks(x[1])}] (one scale per row and 128 columns of x {x}), "
                     f"got {scale}")
    return {"out": (x, BF16)}


defop("fused_act_dequant", ["x", "x_scale"], ["out"], infer=_dequant_infer)


def _swiglu_quant_infer(ctx):
    check_dtype(ctx, "x", (BF16,), "Paddle's kernel")
    if ctx.has("prob"):
        check_dtype(ctx, "prob", (FP32,), "Paddle's kernel")
    x = ctx.shape("x")
    if x is None:
        return {}
    if not x or x[-1] >= 0 and x[-1] % 2:
        ctx.fail(f"x's last dim is halved (silu of the first half times the second): it must be even, got {x}")
    rows = -1 if any(d < 0 for d in x[:-1]) else prod(x[:-1])
    prob = ctx.shape("prob") if ctx.has("prob") else None
    if prob is not None and rows >= 0 and (not prob or prob[0] not in (rows, -1)):
        ctx.fail(f"prob must have one value per row of x ({rows} rows), got {prob}")
    half = x[-1] // 2 if x[-1] >= 0 else -1
    return {"out": ([rows, half], E4M3), "scale": ([rows, _blocks(half)], FP32)}


defop("fused_weighted_swiglu_act_quant", ["x", "prob?"], ["out", "scale"], attrs={"using_pow2_scaling": False},
      infer=_swiglu_quant_infer)


def _swiglu_bwd_infer(ctx):
    for slot in ("o1", "do2_s"):
        check_dtype(ctx, slot, (BF16,), "Paddle's kernel")
    check_dtype(ctx, "unzipped_probs", (FP32,), "Paddle's kernel")
    o1, do2, probs = ctx.shape("o1"), ctx.shape("do2_s"), ctx.shape("unzipped_probs")
    if o1 is not None and do2 is not None and min(*o1, *do2, 0) >= 0:
        if not o1 or o1[-1] % 2 or do2 != [*o1[:-1], o1[-1] // 2]:
            ctx.fail(f"o1 must be [..., 2 n] and do2_s [..., n] with the same leading dims, got {o1} and {do2}")
        if probs is not None and min(probs, default=0) >= 0 and prod(probs) != prod(o1[:-1]):
            ctx.fail(f"unzipped_probs must hold one value per row of o1 ({prod(o1[:-1])}), got {probs}")
    return {"do1": (o1, BF16), "probs_grad": (probs, FP32), "o2_s": (do2, BF16)}


defop("fused_swiglu_weighted_bwd", ["o1", "do2_s", "unzipped_probs"], ["do1", "probs_grad", "o2_s"],
      infer=_swiglu_bwd_infer)


def _half_gemm_infer(ctx):
    for slot in ("x", "y"):
        check_dtype(ctx, slot, (E4M3, VarType.FP8_E5M2), "float8")
    out_dtype = HALF.get(ctx.attr("output_dtype"))
    if out_dtype is None:
        ctx.fail(f"output_dtype must be float16 or bfloat16, got {ctx.attr('output_dtype')!r}")
    check_choice(ctx, "activation_type", ("identity", "relu", "gelu"))
    if ctx.has("bias"):
        check_dtype(ctx, "bias", (out_dtype,), f"output_dtype {ctx.attr('output_dtype')}")
    x, y = ctx.shape("x"), ctx.shape("y")
    if x is None or y is None:
        return {"out": (None, out_dtype)}
    if len(x) != len(y) or len(x) < 2:
        ctx.fail(f"x and y must have one rank >= 2, got {x} and {y}")
    m, k = (x[-1], x[-2]) if ctx.attr("transpose_x") else (x[-2], x[-1])
    k_y, n = (y[-1], y[-2]) if ctx.attr("transpose_y") else (y[-2], y[-1])
    if min(k, k_y) >= 0 and k != k_y or min(k, 0) >= 0 and k % 16:
        ctx.fail(f"x's k ({k}) must equal y's ({k_y}) and be a multiple of 16, got {x} and {y}")
    bias = ctx.shape("bias") if ctx.has("bias") else None
    if bias is not None and (len(bias) != 1 or min(bias[0], n) >= 0 and bias[0] != n):
        ctx.fail(f"bias must be [{n}] (one per column of out), got {bias}")
    return {"out": ([*x[:-2], m, n], out_dtype)}


defop("fp8_fp8_half_gemm_fused", ["x", "y", "bias?"], ["out"],
      attrs={"transpose_x": False, "transpose_y": False, "scale": 1.0, "output_dtype": "float16",
             "activation_type": "identity"}, infer=_half_gemm_infer)


def _dispatch_quant_infer(ctx):
    check_dtype(ctx, "x", (BF16,), "Paddle's kernel")
    check_dtype(ctx, "gate_logits", (FP32,), "Paddle's kernel")
    outs = _dispatch_infer(ctx)
    if "y" not in outs:
        return {}
    rows, dim = outs.pop("y")[0]
    if dim >= 0 and dim % 128:
        ctx.fail(f"x's hidden dim must be a multiple of 128 (the quantization blocks), got {dim}")
    return {**outs, "out_fp8": ([rows, dim], E4M3), "scale": ([rows, _blocks(dim)], FP32)}


defop("moe_gate_dispatch_and_quant", ["x", "gate_logits", "corr_bias?"],
      ["out_fp8", "scale", "combine_weights", "scatter_index", "expert_offset", "expert_id"],
      attrs={"k": typed(2, AttrType.LONG), "capacity": typed(1, AttrType.LONG), "use_pad": True,
             "use_pow2_scale": True}, infer=_dispatch_quant_infer)

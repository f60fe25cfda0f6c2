"""Paddle 3.3.1's float8 ops for MoE expert batches and the blockwise-scaled float8 GEMM (paddle.incubate.nn.
functional.fp8): GPU kernels only, no gradients; gradc follows the CUDA kernels' formulas (the block scale:
gradc.ops.fp8's docstring, with ComputeScale's overflow value 0x1.FEp127).

fused_stack_quant: N bfloat16 inputs x_i [M, K] (M, K multiples of 128) stacked to [N M, K], quantized in 128 x 128
tiles: out [N M, K], scale [N M / 128, K / 128]. fused_stack_transpose_quant: the same of each x_i^T, out [N K, M],
scale [N K / 128, M / 128].
fused_transpose_split_quant: x [M, K] (bfloat16, or float8_e4m3fn dequantized by input_scales [M, ceil(K / 128)]
to bfloat16 first), rows split among experts by tokens_per_expert (multiples of 128, summing to M; the legacy op's
TokensPerExpertTensor, or TokensPerExpertTensorList of one-value tensors, overrides it); each column's 128-row
blocks quantized (pow_2_scales): out_i [K, t_i] = the expert's rows transposed, scales_i [t_i / 128, K].
fused_transpose_wlch_split_quant: x [W, L, C, H] read as the rows of x.transpose(1, 0, 2, 3) [L W C, H], then as
fused_transpose_split_quant: out_i [H, t_i], scales_i [t_i / 128, H].
fp8_gemm_blockwise (PIR pd_op.fp8_gemm_blockwise_, in place over input_result): A [N, K], B [M, K] float8 with
decode scales, output [M, N] = B A^T, each 128-wide slice of K scaled by both operands' scales, plus input_result
with accumulate. A 1-D scaled operand X [R, K] has scales [K / 128, R] (one per row and 128 of K), a 2-D scaled one
[R / 128, K / 128] (one per 128 x 128 tile); 2-D by 2-D, transa false and transb true are refused as by the
kernel; bias, pre_gelu and workspace are not read (cuBLASLt's default epilogue; pre_gelu_out and workspace_out
are pre_gelu and workspace passed on).
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import defop, typed
from .fp8 import BF16, E4M3, FP32, check_dtype

FLOAT8 = (E4M3, VarType.FP8_E5M2)


def _tiles(ctx, shape, what: str) -> None:
    if len(shape) != 2 or min(shape) >= 0 and (shape[0] % 128 or shape[1] % 128):
        ctx.fail(f"{what} must be 2-D with both dims multiples of 128, got {shape}")


def _stack_infer(ctx):
    check_dtype(ctx, "x", (BF16,), "Paddle's kernel")
    shapes = [s for s in ctx.shapes("x") if s is not None]
    if not shapes:
        return {}
    if any(s != shapes[0] for s in shapes):
        ctx.fail(f"every x must have one shape, got {ctx.shapes('x')}")
    _tiles(ctx, shapes[0], "each x")
    m, k = shapes[0] if ctx.op.type == "fused_stack_quant" else shapes[0][::-1]
    count = len(ctx.shapes("x"))
    return {"out": ([count * m, k], E4M3), "scale": ([count * m // 128, k // 128], FP32)}


for _stack in ("fused_stack_quant", "fused_stack_transpose_quant"):
    defop(_stack, ["x[]"], ["out", "scale"], infer=_stack_infer)


def _experts(ctx, rows: int) -> list[int] | None:
    """tokens_per_expert, checked; None when a tensor gives it at run time."""
    if ctx.has("TokensPerExpertTensor") or ctx.has("TokensPerExpertTensorList"):
        return None
    tokens = list(ctx.attr("tokens_per_expert"))
    if any(t < 0 or t % 128 for t in tokens) or rows >= 0 and sum(tokens) != rows:
        ctx.fail(f"tokens_per_expert {tokens} must be multiples of 128 (the kernel's row blocks) summing to the "
                 f"{rows} rows")
    return tokens


def _split_outputs(ctx, tokens: list[int] | None, width: int) -> dict:
    """Each expert's out and scales (tokens from a tensor: as many experts as out names, their tokens unknown)."""
    tokens = [-1] * len(ctx.op.output("out")) if tokens is None else tokens
    return {"out": [([width, t], E4M3) for t in tokens],
            "scales": [([t // 128 if t >= 0 else -1, width], FP32) for t in tokens]}


def _split_infer(ctx):
    check_dtype(ctx, "x", (BF16, E4M3), "Paddle's kernel")
    x = ctx.shape("x")
    if x is None:
        return {}
    if len(x) != 2:
        ctx.fail(f"x must be 2-D [tokens, K], got {x}")
    if ctx.dtype("x") == E4M3:
        if not ctx.has("input_scales"):
            ctx.fail("a float8_e4m3fn x needs input_scales (its 1 x 128 dequantization scales)")
        scales = ctx.shape("input_scales")
        if scales is not None and min(*x, *scales) >= 0 and scales != [x[0], -(-x[1] // 128)]:
            ctx.fail(f"input_scales must be [{x[0]}, {-(-x[1] // 128)}] for x {x}, got {scales}")
    return _split_outputs(ctx, _experts(ctx, x[0]), x[1])


TOKENS = ["TokensPerExpertTensor?", "TokensPerExpertTensorList[]?"]
SPLIT_ATTRS = {"tokens_per_expert": typed([], AttrType.LONGS), "pow_2_scales": False}
defop("fused_transpose_split_quant", ["x", "input_scales?", *TOKENS], ["out[]", "scales[]"], attrs=SPLIT_ATTRS,
      infer=_split_infer)


def _wlch_infer(ctx):
    check_dtype(ctx, "x", (BF16,), "Paddle's kernel")
    x = ctx.shape("x")
    if x is None:
        return {}
    if len(x) != 4:
        ctx.fail(f"x must be 4-D [W, L, C, H], got {x}")
    rows = x[0] * x[1] * x[2] if min(x[:3]) >= 0 else -1
    return _split_outputs(ctx, _experts(ctx, rows), x[3])


defop("fused_transpose_wlch_split_quant", ["x", *TOKENS], ["out[]", "scales[]"], attrs=SPLIT_ATTRS, infer=_wlch_infer)


def _scale_shape(rows: int, k: int, one_d: bool) -> list[int]:
    return [k // 128, rows] if one_d else [rows // 128, k // 128]


def _gemm_infer(ctx):
    for slot in ("A", "B"):
        check_dtype(ctx, slot, FLOAT8, "float8")
    for slot in ("A_scale", "B_scale"):
        check_dtype(ctx, slot, (FP32,), "Paddle's kernel")
    check_dtype(ctx, "input_result", (BF16, FP32), "the output's dtype")
    if not ctx.attr("transa") or ctx.attr("transb"):
        ctx.fail(f"transa={ctx.attr('transa')}, transb={ctx.attr('transb')}: Paddle's kernel takes transa true and "
                 f"transb false only")
    one_d = {"A": ctx.attr("is_A_1d_scaled"), "B": ctx.attr("is_B_1d_scaled")}
    if not any(one_d.values()):
        ctx.fail("2-D by 2-D scaling (both is_A_1d_scaled and is_B_1d_scaled false) is not supported by the kernel")
    a, b, out = ctx.shape("A"), ctx.shape("B"), ctx.shape("input_result")
    if a is None or b is None:
        return {"output": (out, ctx.dtype("input_result"))}
    if len(a) != 2 or len(b) != 2 or min(a[1], b[1]) >= 0 and (a[1] != b[1] or a[1] % 128):
        ctx.fail(f"A [N, K] and B [M, K] must share K, a multiple of 128, got {a} and {b}")
    for slot, shape in (("A", a), ("B", b)):
        expected, given = _scale_shape(shape[0], shape[1], one_d[slot]), ctx.shape(f"{slot}_scale")
        if given is not None and min(*shape, *given) >= 0 and given != expected:
            ctx.fail(f"{slot}_scale must be {expected} ({'1-D' if one_d[slot] else '2-D'} scales of {slot} {shape}), "
                     f"got {given}")
    if out is not None and min(*out, b[0], a[0]) >= 0 and out != [b[0], a[0]]:
        ctx.fail(f"input_result must be [{b[0]}, {a[0]}] (B's rows by A's), got {out}")
    passed = {f"{slot}_out": (ctx.shape(slot), ctx.dtype(slot)) for slot in ("pre_gelu", "workspace") if ctx.has(slot)}
    return {"output": ([b[0], a[0]], ctx.dtype("input_result")), **passed}


defop("fp8_gemm_blockwise", ["A", "A_scale", "B", "B_scale", "input_result", "bias", "pre_gelu", "workspace"],
      ["output", "pre_gelu_out", "workspace_out"],
      attrs={"transa": True, "transb": False, "grad": False, "accumulate": False, "use_split_accumulator": True,
             "math_sm_count": 112, "is_A_1d_scaled": True, "is_B_1d_scaled": True}, infer=_gemm_infer)

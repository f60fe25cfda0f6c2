"""paddle.nn.quant's weight-only quantization ops (PaddleNLP's weight_only_int8 / int4 inference):

    weight_quantize (x [k, n] -> out int8, scale): scale = max |x| per column (group_size -1) or per group of
        group_size rows and column ([ceil(k / group_size), n]) over 127 (int8) or 7 (int4), in x's dtype (float32
        for llm.int8); q = round(x / scale) (halves away from zero), clipped to +-127 / +-7; out holds q in the
        layout of the GPU GEMM of ``arch``: llm.int8 q transposed [n, k]; SM70 q row-major, each value + 128 (+8)
        and reordered within 32-bit registers; SM75..SM100 rows permuted for the tensor-core MMA, transposed to
        [n, k], 64-value runs of 2 (int4: 4) columns interleaved, then biased and reordered likewise. Paddle 3.3.1
        runs it on CPU (float16 / bfloat16 x); gradc follows that kernel byte for byte (tests/test_weight_quant.py)
        and takes any float x.
    weight_dequantize (x, scale -> out [k, n] in scale's dtype): q * scale from the SM75+ layout (the only one
        Paddle's GPU kernel reads; it has no arch attribute).
    weight_only_linear (x [..., k], weight, bias?, weight_scale -> out [..., n]): x W + bias with W = q * scale read
        from the layout of ``arch``; weight_only_linear_grad gives x@GRAD = out@GRAD W^T (Paddle's grad gives the
        weight, its scale and bias none), its own gradient weight_only_linear again (gradc.ops.weight_quant_double).
    llm_int8_linear (x [..., k], weight, bias?, weight_scale -> out [..., n]; no gradient in Paddle): LLM.int8 on
        llm.int8's layout (q [n, k]): columns of x holding any |x| > threshold are outliers, multiplied in float by
        q * scale; each row r of the rest is quantized by its range R_r = max |x_r| over its entries <= threshold,
        qx = round(127 x / R_r) (halves away from zero, 0 where R_r is 0), and out = x_outliers W_outliers^T +
        (qx q^T) R_r scale / 127 + bias.
These are GPU-only in Paddle 3.3.1 (the CUTLASS mixed-input GEMM, cuBLASLt's int8 GEMM): gradc reads the layout its
quantize writes.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import defop
from .infer import check_choice, check_float

BITS = {"weight_only_int8": 8, "weight_only_int4": 4, "llm.int8": 8}
ARCHS = (70, 75, 80, 86, 89, 90, 100)


def is_turing_plus(arch: int) -> bool:
    """Whether arch lays weights out for the SM75+ tensor-core GEMMs (else SM70's)."""
    return arch != 70


def _check_layout(ctx, k: int, n: int, bits: int, arch: int, group_size: int) -> None:
    """The sizes the layouts tile by: k a multiple of 64 (SM75+) and of the group; n of 4 (int4: 8)."""
    if group_size not in (-1, 64, 128):
        ctx.fail(f"group_size must be -1, 64 or 128, got {group_size}")
    if arch not in ARCHS:
        ctx.fail(f"arch must be one of {', '.join(map(str, ARCHS))}, got {arch}")
    if k >= 0 and is_turing_plus(arch) and k % 64:
        ctx.fail(f"the SM{arch} layout tiles k by 64: k = {k}")
    if k >= 0 and group_size > 0 and k % group_size:
        ctx.fail(f"k = {k} must be a multiple of group_size {group_size}")
    if n >= 0 and n % (32 // bits):
        ctx.fail(f"n = {n} must be a multiple of {32 // bits} (one 32-bit register of values)")


def _quantize_infer(ctx):
    check_float(ctx, "x")
    algo = check_choice(ctx, "algo", tuple(BITS))
    x = ctx.shape("x")
    if x is not None and len(x) != 2:
        ctx.fail(f"x must be 2-D [k, n], got {x}")
    bits, group_size = BITS[algo], ctx.attr("group_size")
    if x is None:
        return {}
    if algo == "llm.int8" and group_size != -1:
        ctx.fail("llm.int8 quantizes per channel: group_size must be -1")
    _check_layout(ctx, x[0], x[1], bits, ctx.attr("arch"), group_size)
    scale = [x[1]] if group_size == -1 else [-(-x[0] // group_size) if x[0] >= 0 else -1, x[1]]
    rows = x[1] if bits == 8 or x[1] < 0 else x[1] // 2
    return {"out": ([rows, x[0]], VarType.INT8),
            "scale": (scale, VarType.FP32 if algo == "llm.int8" else ctx.dtype("x"))}


# Paddle's PIR programs declare llm.int8's scale in x's dtype, but its kernel writes float32 (as gradc's does)
defop("weight_quantize", ["x"], ["out", "scale"], attrs={"algo": "weight_only_int8", "arch": 80, "group_size": -1},
      infer=_quantize_infer, kernel_dtype_outputs=["scale"])


def _weight_dims(ctx, weight_slot: str, scale_slot: str, bits: int) -> tuple[int, int] | None:
    """(k, n) of the weight a packed weight [n, k] ([n / 2, k] for int4) and its scale stand for."""
    weight, scale = ctx.shape(weight_slot), ctx.shape(scale_slot)
    if weight is None or scale is None:
        return None
    if ctx.dtype(weight_slot) != VarType.INT8 or len(weight) != 2:
        ctx.fail(f"{weight_slot} must be weight_quantize's 2-D int8 out, got {weight} {ctx.dtype(weight_slot)}")
    n = scale[-1]
    if n >= 0 and weight[0] >= 0 and weight[0] != (n if bits == 8 else n // 2):
        ctx.fail(f"{weight_slot} {weight} does not hold the {n} columns {scale_slot} {scale} scales")
    return weight[1], n


def _dequantize_infer(ctx):
    algo = check_choice(ctx, "algo", ("weight_only_int8", "weight_only_int4"))
    dims = _weight_dims(ctx, "x", "scale", BITS[algo])
    if dims is not None:
        _check_layout(ctx, *dims, BITS[algo], 80, ctx.attr("group_size"))
    return {"out": (None if dims is None else list(dims), ctx.dtype("scale"))}


def _linear_infer(ctx):
    check_float(ctx, "x")
    bits = {"int8": 8, "int4": 4}.get(ctx.attr("weight_dtype"))
    if bits is None:
        ctx.fail(f"weight_dtype must be 'int8' or 'int4', got {ctx.attr('weight_dtype')!r}")
    dims, x = _weight_dims(ctx, "weight", "weight_scale", bits), ctx.shape("x")
    if dims is None or x is None:
        return {"out": (None, ctx.dtype("x"))}
    _check_layout(ctx, *dims, bits, ctx.attr("arch"), ctx.attr("group_size"))
    if x[-1] >= 0 and dims[0] >= 0 and x[-1] != dims[0]:
        ctx.fail(f"x {x} must end in the weight's k = {dims[0]}")
    return {"out": ([*x[:-1], dims[1]], ctx.dtype("x"))}


def _linear_grad(g):
    """x@GRAD = out@GRAD W^T (Paddle's weight_only_linear_grad: the packed weight, its scale and bias get none)."""
    return [g.op("weight_only_linear_grad", {slot: g.I(slot) for slot in ("x", "weight", "bias", "weight_scale")}
                 | {"out@GRAD": g.OG("out")}, {"x@GRAD": g.IG("x")}, forward_attrs=True)]


LINEAR_ATTRS = {"weight_dtype": "int8", "arch": 80, "group_size": -1}
defop("weight_dequantize", ["x", "scale"], ["out"], attrs={"algo": "weight_only_int8", "group_size": -1},
      infer=_dequantize_infer)
defop("weight_only_linear", ["x", "weight", "bias?", "weight_scale"], ["out"], attrs=LINEAR_ATTRS,
      infer=_linear_infer, no_grad_inputs=["weight", "bias", "weight_scale"], grad=_linear_grad)


def _int8_linear_infer(ctx):
    check_float(ctx, "x")
    dims, x = _weight_dims(ctx, "weight", "weight_scale", 8), ctx.shape("x")
    if ctx.attr("threshold") < 0:
        ctx.fail(f"threshold={ctx.attr('threshold')} must not be negative")
    if dims is None or x is None:
        return {"out": (None, ctx.dtype("x"))}
    if x[-1] >= 0 and dims[0] >= 0 and x[-1] != dims[0]:
        ctx.fail(f"x {x} must end in the weight's k = {dims[0]}")
    return {"out": ([*x[:-1], dims[1]], ctx.dtype("x"))}


defop("llm_int8_linear", ["x", "weight", "bias?", "weight_scale"], ["out"], attrs={"threshold": 6.0},
      infer=_int8_linear_infer)

"""PIR programs of Paddle 3.3.1's float8 ops (gradc.ops.fp8), which its CPU build has no kernels for: each program
is written by hand with tools/paddle_gpu_only_handwritten.py's Writer (op, operand, result and attribute names of
Paddle's op definitions), loaded by Paddle, which checks every name; the expected numbers are Paddle's CPU run of the
same math composed of ops it has (abs, max, divide, frexp for power-of-two scales, cast to float8_e4m3fn, matmul,
math_moe_gate_dispatch). Written as tests/data/paddle/fp8/<case>/program.json, feed.npz and expected.npz (bfloat16
and float8 values as Paddle's uint16 / uint8 bits) and meta.json; tests/test_fp8_ops.py runs them. Not part of the
package.

    /work/paddle-venv/bin/python tools/paddle_fp8_programs.py
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import paddle
import paddle_gpu_only_handwritten as handwritten

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "fp8"
handwritten.TYPE_TAGS.update({"bfloat16": "0.t_bf16", "float16": "0.t_f16", "float8_e4m3fn": "0.t_f8e4m3fn",
                              "int32": "0.t_i32", "int64": "0.t_i64"})
F32, BF16, E4M3 = "float32", "bfloat16", "float8_e4m3fn"
FP8_MAX, QUANT_INF, SWIGLU_INF = 448.0, float(np.ldexp(255 / 128, 127)), float(np.finfo(np.float32).max)


def t(array) -> paddle.Tensor:
    return paddle.to_tensor(np.asarray(array, np.float32))


def as_format(values: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values rounded to ``dtype`` by Paddle's CPU cast (values in range: where it rounds as CUDA does)."""
    if dtype == F32:
        return values.astype(np.float32)
    return paddle.cast(paddle.cast(t(values), dtype), F32).numpy()


def block_scales(amax: paddle.Tensor, eps: float, pow2: bool, inf_scale: float) -> paddle.Tensor:
    """ScaleWrapper / ComputeScale in Paddle ops: 448 / max(amax, eps), the overflow's fixed value, 2^floor(log2)
    from frexp (exact), 1 for a zero amax."""
    amax = paddle.maximum(amax, paddle.full_like(amax, eps))
    scale = paddle.divide(paddle.full_like(amax, FP8_MAX), amax)
    scale = paddle.where(paddle.isinf(scale), paddle.full_like(scale, 2.0 ** 127 if pow2 else inf_scale), scale)
    if pow2:
        _, exponent = paddle.frexp(scale)
        scale = paddle.pow(paddle.full_like(scale, 2.0), exponent - 1)
    return paddle.where(amax == 0, paddle.ones_like(scale), scale)


def quant_rows(x: np.ndarray, eps=0.0, pow2=True, inf_scale=QUANT_INF, bf16_amax=False):
    """1 x 128 blocks along the rows of x [r, c], in Paddle: (float8 values, 1 / scale)."""
    rows, cols = x.shape
    blocks = -(-cols // 128)
    padded = t(np.pad(x, ((0, 0), (0, blocks * 128 - cols)))).reshape([rows, blocks, 128])
    amax = paddle.max(paddle.abs(padded), axis=2)
    if bf16_amax:
        amax = paddle.cast(paddle.cast(amax, BF16), F32)
    scale = block_scales(amax, eps, pow2, inf_scale)
    out = paddle.cast(paddle.cast(padded * scale.unsqueeze(2), E4M3), F32).reshape([rows, -1])[:, :cols]
    return out.numpy(), (1.0 / scale).numpy()


def quant_tiles(x: np.ndarray, eps: float, pow2: bool):
    rows, cols = x.shape
    tiles = t(x).reshape([rows // 128, 128, cols // 128, 128])
    amax = paddle.max(paddle.abs(tiles), axis=[1, 3])
    scale = block_scales(amax, eps, pow2, QUANT_INF)
    out = paddle.cast(paddle.cast(tiles * scale.unsqueeze(1).unsqueeze(3), E4M3), F32).reshape([rows, cols])
    return out.numpy(), (1.0 / scale).numpy()


def _quant_case(shape, attrs: dict) -> dict:
    rows, cols = shape
    row_blocks, flip = attrs["using_1x128_vec_quant"], attrs["output_scale_transpose"]
    scale = [rows, -(-cols // 128)] if row_blocks else [rows // 128, cols // 128]
    scale_t = [cols, rows // 128] if row_blocks else scale[::-1]
    if flip:
        scale, scale_t = scale[::-1], scale_t[::-1]
    results = [("out", shape, E4M3), ("scale", scale, F32)]
    results += [("out_t", [cols, rows], E4M3), ("scale_t", scale_t, F32)] if attrs["input_transpose"] else [None] * 2

    def reference(feed):
        x, eps, pow2 = feed["x"], attrs["epsilon"], attrs["using_pow2_scale"]
        out, inverse = quant_rows(x, eps, pow2) if row_blocks else quant_tiles(x, eps, pow2)
        expected = {"out": out, "scale": inverse.T if flip else inverse}
        if attrs["input_transpose"]:
            out_t, inverse_t = quant_rows(x.T.copy(), eps, pow2) if row_blocks else (out.T, inverse.T)
            expected |= {"out_t": out_t, "scale_t": inverse_t.T if flip else inverse_t}
        return expected

    return {"feeds": {"x": (shape, BF16, 3.0)}, "op": ("fp8_quant_blockwise", ["x"], results, list(attrs.items())),
            "reference": reference}


QUANT_ATTRS = {"epsilon": 0.0, "using_1x128_vec_quant": True, "input_transpose": False,
               "output_scale_transpose": True, "return_transpose_only": False, "using_e5m2": False,
               "using_pow2_scale": True, "using_ue8m0_scale": False}


def _dequant_case(int_scales: bool) -> dict:
    rows, cols = 4, 300
    scale = ([3], "int32") if int_scales else ([rows, 3], F32)

    def reference(feed):
        per_block = feed["x_scale"].astype("<i4").view(np.uint8).reshape(rows, 3) if int_scales else feed["x_scale"]
        if int_scales:   # 2^(byte - 127), in Paddle: pow of two
            per_block = paddle.pow(paddle.full([rows, 3], 2.0), t(per_block.astype(np.float32) - 127)).numpy()
        full = paddle.repeat_interleave(t(per_block), 128, axis=1)[:, :cols]
        return {"out": as_format((t(feed["x"]) * full).numpy(), BF16)}

    return {"feeds": {"x": ([rows, cols], E4M3, 40.0), "x_scale": (*scale, "ue8m0" if int_scales else 0.01)},
            "op": ("fused_act_dequant", ["x", "x_scale"], [("out", [rows, cols], BF16)], []), "reference": reference}


def swiglu(x: paddle.Tensor) -> paddle.Tensor:
    half = x.shape[-1] // 2
    return paddle.nn.functional.silu(x[:, :half]) * x[:, half:]


def _swiglu_quant_case(shape, prob: bool, pow2: bool) -> dict:
    rows, half = int(np.prod(shape[:-1])), shape[-1] // 2
    feeds = {"x": (shape, BF16, 2.0), **({"prob": ([rows], F32, 1.0)} if prob else {})}

    def reference(feed):
        act = swiglu(t(feed["x"]).reshape([rows, -1]))
        act = act * t(feed["prob"]).unsqueeze(1) if prob else act
        out, inverse = quant_rows(act.numpy(), 0.0, pow2, SWIGLU_INF, bf16_amax=shape[-1] % 8 != 0)
        return {"out": out, "scale": inverse}

    results = [("out", [rows, half], E4M3), ("scale", [rows, -(-half // 128)], F32)]
    return {"feeds": feeds, "op": ("fused_weighted_swiglu_act_quant", ["x", "prob" if prob else None], results,
                                   [("using_pow2_scaling", pow2)]), "reference": reference}


def _swiglu_bwd_case(rows: int, half: int) -> dict:
    feeds = {"o1": ([rows, 2 * half], BF16, 2.0), "do2_s": ([rows, half], BF16, 1.0), "probs": ([rows], F32, 1.0)}

    def reference(feed):
        """The VJP of o2_s = swiglu(o1) * prob by Paddle's autograd, in float32."""
        o1, probs = paddle.to_tensor(feed["o1"], stop_gradient=False), paddle.to_tensor(feed["probs"],
                                                                                       stop_gradient=False)
        o2 = swiglu(o1)
        (o2 * probs.unsqueeze(1)).backward(t(feed["do2_s"]))
        return {"do1": as_format(o1.grad.numpy(), BF16), "probs_grad": probs.grad.numpy(),
                "o2_s": as_format((o2 * probs.unsqueeze(1)).numpy(), BF16)}

    results = [("do1", [rows, 2 * half], BF16), ("probs_grad", [rows], F32), ("o2_s", [rows, half], BF16)]
    return {"feeds": feeds, "op": ("fused_swiglu_weighted_bwd", ["o1", "do2_s", "probs"], results, []),
            "reference": reference}


def _half_gemm_case(fmt: str, out_dtype: str, act: str, bias: bool, trans_y: bool) -> dict:
    x_shape, y_shape = [2, 4, 32], ([2, 8, 32] if trans_y else [2, 32, 8])
    feeds = {"x": (x_shape, fmt, 3.0), "y": (y_shape, fmt, 3.0), **({"bias": ([8], out_dtype, 1.0)} if bias else {})}
    attrs = [("transpose_x", False), ("transpose_y", trans_y), ("scale", 0.25), ("output_dtype", out_dtype),
             ("activation_type", act)]

    def reference(feed):
        out = 0.25 * paddle.matmul(t(feed["x"]), t(feed["y"]), transpose_y=trans_y)
        out = out + t(feed["bias"]) if bias else out
        out = {"relu": paddle.nn.functional.relu, "gelu": lambda v: paddle.nn.functional.gelu(v, approximate=True),
               "identity": lambda v: v}[act](out)
        return {"out": as_format(out.numpy(), out_dtype)}

    return {"feeds": feeds, "op": ("fp8_fp8_half_gemm_fused", ["x", "y", "bias" if bias else None],
                                   [("out", [2, 4, 8], out_dtype)], attrs), "reference": reference}


def _dispatch_quant_case(pow2: bool) -> dict:
    tokens, experts, dim, k, capacity = 6, 4, 256, 2, 6   # no token dropped: math_moe_gate_dispatch fails then
    feeds = {"x": ([tokens, dim], BF16, 2.0), "gate_logits": ([tokens, experts], "probs", 0.0)}
    results = [("out_fp8", [experts * capacity, dim], E4M3), ("scale", [experts * capacity, dim // 128], F32),
               ("combine_weights", [tokens, k], F32), ("scatter_index", [k, tokens], "int32"),
               ("expert_offset", [experts], "int64"), ("expert_id", [tokens, k], "int32")]

    def reference(feed):
        """Paddle's own unfused dispatch (math_moe_gate_dispatch, its NPU path), then the rows' quantization."""
        from paddle.incubate.nn.functional.moe_gate_dispatch import math_moe_gate_dispatch
        y, weights, scatter, offset, expert_id = math_moe_gate_dispatch(
            t(feed["x"]), t(feed["gate_logits"]), None, k, capacity, True)
        out, inverse = quant_rows(y.numpy(), 0.0, pow2)
        landed = np.zeros(len(out), bool)
        landed[scatter.numpy()[weights.numpy().T > 0]] = True
        out[~landed], inverse[~landed] = 0, 1
        return {"out_fp8": out, "scale": inverse, "combine_weights": weights.numpy(),
                "scatter_index": scatter.numpy(), "expert_offset": offset.numpy(), "expert_id": expert_id.numpy()}

    attrs = [("k", k), ("capacity", capacity), ("use_pad", True), ("use_pow2_scale", pow2)]
    return {"feeds": feeds, "op": ("moe_gate_dispatch_and_quant", ["x", "gate_logits", None], results, attrs),
            "reference": reference}


CASES = {
    "quant_1x128_transposed": _quant_case([128, 256], {**QUANT_ATTRS, "input_transpose": True}),
    "quant_128x128_no_pow2": _quant_case([256, 128], {**QUANT_ATTRS, "using_1x128_vec_quant": False,
                                                      "output_scale_transpose": False, "using_pow2_scale": False,
                                                      "epsilon": 1e-3, "input_transpose": True}),
    "quant_1x128_short_rows": _quant_case([3, 200], {**QUANT_ATTRS, "output_scale_transpose": False}),
    "act_dequant": _dequant_case(False),
    "act_dequant_ue8m0": _dequant_case(True),
    "swiglu_quant_prob_pow2": _swiglu_quant_case([2, 3, 512], True, True),
    "swiglu_quant_odd_width": _swiglu_quant_case([5, 260], False, False),
    "swiglu_weighted_bwd": _swiglu_bwd_case(6, 36),
    "half_gemm_bf16_gelu_bias": _half_gemm_case(E4M3, BF16, "gelu", True, True),
    # e4m3fn: Paddle's PIR reader refuses a data op of dtype float8_e5m2 ("Invalid enum data type")
    "half_gemm_fp16_relu": _half_gemm_case(E4M3, "float16", "relu", False, False),
    "dispatch_quant": _dispatch_quant_case(False),
}


def _feed(rng, shape, dtype, size):
    """A feed value: normal draws times ``size`` in the var's format (float32 values); a block of zeros in x."""
    if dtype == "int32":   # ue8m0 exponents 120 .. 130, four to a value
        return rng.integers(120, 131, (shape[0], 4)).astype(np.uint8).view("<i4").reshape(shape)
    if dtype == "uint8":   # a workspace the kernel only scribbles on
        return np.zeros(shape, np.uint8)
    if dtype == "probs":   # gate probabilities: softmax rows
        logits = rng.standard_normal(shape)
        return (np.exp(logits) / np.exp(logits).sum(1, keepdims=True)).astype(np.float32)
    values = (rng.standard_normal(shape) * size).astype(np.float32)
    if len(shape) == 2 and shape[1] >= 128 and shape[0] >= 2:
        values[1, :128] = 0   # an all-zero block: scale 1
    return as_format(values, dtype)


def bits(values: np.ndarray, dtype: str) -> np.ndarray:
    """A float8 or bfloat16 array as Paddle hands it to numpy (uint8 / uint16 bits, which gradc's feeds and tests
    read as such); any other array as it is."""
    if dtype not in (E4M3, BF16):
        return values
    held = paddle.cast(t(values), dtype).numpy()
    return held.view(np.uint8) if dtype == E4M3 else held


def _flat(results: list) -> list:
    """The (name, shape, dtype) of each result, lists of them flattened, null ones left out."""
    return [item for r in results if r for item in (r if isinstance(r, list) else [r])]


def check_names(path: Path, spec_op: tuple) -> None:
    """Paddle loads the program, and its definition of the op names each operand, result and attribute as written
    (builtin.combine / split ops around it aside)."""
    name, operands, results, attrs = spec_op
    program = paddle.base.libpaddle.pir.Program()
    paddle.base.core.deserialize_pir_program(str(path), program, 4)
    (op,) = [op for op in program.global_block().ops if op.name() == f"pd_op.{name}"]
    assert op.num_operands() == len(operands) == len(op.get_input_names()), (name, op.get_input_names())
    assert op.num_results() == len(results) == len(op.get_output_names()), (name, op.get_output_names())
    assert op.get_attr_names() == [n for n, _ in attrs], (name, op.get_attr_names())


def write(case: str, spec: dict, seed: int, out: Path = OUT) -> str:
    """The case's program (spec["build"](writer) writes the op and its fetches, or the plain op of spec["op"]),
    name-checked by Paddle, with its feed and Paddle's numbers, into out / case."""
    rng = np.random.default_rng(seed)
    feed = {name: _feed(rng, *spec["feeds"][name]) for name in spec["feeds"]}
    writer = handwritten.Writer()
    for name, (shape, dtype, _) in spec["feeds"].items():
        writer.data(name, shape, {"probs": F32}.get(dtype, dtype))
    name, operands, results, attrs = spec["op"]
    if "build" in spec:
        spec["build"](writer)
    else:
        writer.op(name, operands, [(r[0], r[1], r[2]) if r else None for r in results], attrs)
        for result in results:
            if result:
                writer.fetch(result[0])
    directory = out / case
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    (directory / "program.json").write_text(json.dumps(writer.program()))
    check_names(directory / "program.json", spec["op"])
    dtypes = {**{n: d for n, (_, d, _) in spec["feeds"].items()}, **{r[0]: r[2] for r in _flat(results)}}
    np.savez_compressed(directory / "feed.npz", **{n: bits(v, dtypes[n]) for n, v in feed.items()})
    np.savez_compressed(directory / "expected.npz",
                        **{n: bits(v, dtypes[n]) for n, v in spec["reference"](feed).items()})
    meta = {"case": case, "paddle_version": paddle.__version__, "fetches": writer.fetches, "pir_ops": [f"pd_op.{name}"],
            "built_by": "PIR JSON written by hand, loaded and name-checked by Paddle; expected.npz: Paddle's CPU run "
                        "of the same math composed of ops it has"}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return name


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.set_device("cpu")
    for index, case in enumerate(CASES):
        print(f"{case}: {write(case, CASES[case], 700 + index)}")
    sys.exit(0)

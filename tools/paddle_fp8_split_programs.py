"""PIR programs of Paddle 3.3.1's float8 ops with list operands or results (fused_stack_quant,
fused_stack_transpose_quant, fused_transpose_split_quant, fused_transpose_wlch_split_quant) and of
fp8_gemm_blockwise_, written as tools/paddle_fp8_programs.py writes its cases (builtin.combine / builtin.split
around the list ones), loaded and name-checked by Paddle, with the numbers of Paddle's CPU composition of the same
math. Written next to them, in tests/data/paddle/fp8/<case>/; tests/test_fp8_split_ops.py runs them.

    /work/paddle-venv/bin/python tools/paddle_fp8_split_programs.py
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import paddle
import paddle_gpu_only_handwritten as handwritten
from paddle_fp8_programs import BF16, E4M3, F32, QUANT_INF, as_format, block_scales, quant_tiles, t, write


def _vector(writer, values: list[str]) -> int:
    """A builtin.combine of the named values: its number."""
    types = [handwritten._tensor_type(*writer.values[v][1]) for v in values]
    number = writer._new(None)
    writer.ops.append({"#": "0.combine", "A": [], "I": [{"%": writer.values[v][0]} for v in values],
                       "O": [{"%": number, "TT": {"#": "0.t_vec", "D": types}}],
                       "OA": [{"AT": {"#": "0.a_array", "D": [{"#": "0.a_bool", "D": False}]}, "N": "stop_gradient"}]})
    return number


def _attr(name: str, value) -> dict:
    """An attribute; a list of ints as Paddle writes int64 lists (a_array of a_i64)."""
    if isinstance(value, list):
        return {"AT": {"#": "0.a_array", "D": [{"#": "0.a_i64", "D": v} for v in value]}, "N": name}
    return handwritten._attr(name, value)


def _list_op(writer, name: str, operands: list, results: list, attrs: list) -> None:
    """The op with list operands ([names]) combined and list results ([(name, shape, dtype)]) split, fetched."""
    ins = [{"%": _vector(writer, o) if isinstance(o, list) else writer.values[o][0]} for o in operands]
    outs, splits = [], []
    for result in results:
        items = result if isinstance(result, list) else [result]
        types = [handwritten._tensor_type(shape, dtype) for _, shape, dtype in items]
        number = writer._new(None if isinstance(result, list) else items[0][0], None if isinstance(result, list)
                             else tuple(items[0][1:]))
        outs.append({"%": number, "TT": {"#": "0.t_vec", "D": types} if isinstance(result, list) else types[0]})
        if isinstance(result, list):
            splits.append((number, items))
    writer.ops.append({"#": f"1.{name}", "A": [_attr(n, v) for n, v in attrs], "I": ins, "O": outs,
                       "OA": handwritten._flags(len(outs), persistable=False, stop_gradient=False)})
    for number, items in splits:
        parts = [{"%": writer._new(n, (shape, dtype)), "TT": handwritten._tensor_type(shape, dtype)}
                 for n, shape, dtype in items]
        writer.ops.append({"#": "0.split", "A": [], "I": [{"%": number}], "O": parts,
                           "OA": handwritten._flags(len(parts), persistable=False, stop_gradient=False)})
    for result in results:
        for item in result if isinstance(result, list) else [result]:
            writer.fetch(item[0])


def _stack_case(transpose: bool) -> dict:
    name = "fused_stack_transpose_quant" if transpose else "fused_stack_quant"
    m, k = (128, 256)
    rows, cols = (2 * k, m) if transpose else (2 * m, k)
    results = [("out", [rows, cols], E4M3), ("scale", [rows // 128, cols // 128], F32)]

    def reference(feed):
        stacked = np.concatenate([feed[n].T if transpose else feed[n] for n in ("x0", "x1")])
        out, inverse = quant_tiles(stacked, 0.0, False)
        return {"out": out, "scale": inverse}

    return {"feeds": {"x0": ([m, k], BF16, 2.0), "x1": ([m, k], BF16, 50.0)},
            "op": (name, [["x0", "x1"]], results, []), "reference": reference,
            "build": lambda writer: _list_op(writer, name, [["x0", "x1"]], results, [])}


def column_quant(rows: np.ndarray, pow2: bool):
    """Each column's 128-row blocks of rows [M, K] quantized, in Paddle: (float8 [K, M], 1 / scale [M / 128, K])."""
    m, k = rows.shape
    blocks = t(rows).reshape([m // 128, 128, k])
    scale = block_scales(paddle.max(paddle.abs(blocks), axis=1), 0.0, pow2, QUANT_INF)   # [M / 128, K]
    out = paddle.cast(paddle.cast(blocks * scale.unsqueeze(1), E4M3), F32).reshape([m, k])
    return out.numpy().T, (1.0 / scale).numpy()


def _split_case(name: str, shape: list[int], tokens: list[int], pow2: bool, float8: bool = False) -> dict:
    width = shape[-1]
    outs = [[(f"out{i}", [width, n], E4M3) for i, n in enumerate(tokens)],
            [(f"scales{i}", [n // 128, width], F32) for i, n in enumerate(tokens)]]
    feeds = {"x": (shape, E4M3 if float8 else BF16, 3.0)}
    if float8:
        feeds["input_scales"] = ([shape[0], -(-width // 128)], F32, 0.5)
    operands = ["x", "input_scales" if float8 else None] if name == "fused_transpose_split_quant" else ["x"]
    attrs = [("tokens_per_expert", tokens), ("pow_2_scales", pow2)]

    def reference(feed):
        x = feed["x"]
        if float8:   # dequantized to bfloat16 by input_scales first
            x = as_format(x * np.repeat(feed["input_scales"], 128, axis=1)[:, :width], BF16)
        rows = x.transpose(1, 0, 2, 3).reshape(-1, width) if x.ndim == 4 else x
        out, inverse = column_quant(rows, pow2)
        ends = np.cumsum([0, *tokens])
        pieces = {f"out{i}": out[:, a:b] for i, (a, b) in enumerate(zip(ends, ends[1:]))}
        return pieces | {f"scales{i}": inverse[a // 128:b // 128] for i, (a, b) in enumerate(zip(ends, ends[1:]))}

    def build(writer):   # a null input_scales: Paddle's null value, number 0
        writer.values.setdefault(None, (0, None))
        _list_op(writer, name, operands, outs, attrs)

    return {"feeds": feeds, "op": (name, operands, outs, attrs), "reference": reference, "build": build}


def _gemm_case(a_1d: bool, accumulate: bool) -> dict:
    n, m, k = 256, 64, 256
    a_scale = [k // 128, n] if a_1d else [n // 128, k // 128]
    feeds = {"A": ([n, k], E4M3, 50.0), "A_scale": (a_scale, F32, 0.01), "B": ([m, k], E4M3, 50.0),
             "B_scale": ([k // 128, m], F32, 0.01), "input_result": ([m, n], BF16, 1.0),
             "bias": ([0], BF16, 0), "pre_gelu": ([0], BF16, 0), "workspace": ([64], "uint8", 0)}
    operands = ["A", "A_scale", "B", "B_scale", "input_result", "bias", "pre_gelu", "workspace"]   # empty as the API's
    attrs = [("transa", True), ("transb", False), ("grad", False), ("accumulate", accumulate),
             ("use_split_accumulator", True), ("math_sm_count", 112), ("is_A_1d_scaled", a_1d),
             ("is_B_1d_scaled", True)]
    results = [("output", [m, n], BF16), ("pre_gelu_out", [0], BF16), ("workspace_out", [64], "uint8")]

    def reference(feed):
        """Paddle's reference loop of its test_fp8_gemm_blockwise: per 128 of K, the partial product times both
        decode scales, in float32 matmuls."""
        a, b, out = t(feed["A"]), t(feed["B"]), paddle.zeros([m, n])
        for kb in range(k // 128):
            part = paddle.matmul(b[:, kb * 128:(kb + 1) * 128], a[:, kb * 128:(kb + 1) * 128], transpose_y=True)
            sa = t(feed["A_scale"])[kb] if a_1d else paddle.repeat_interleave(t(feed["A_scale"])[:, kb], 128)
            out = out + part * t(feed["B_scale"])[kb].unsqueeze(1) * sa.unsqueeze(0)
        out = out + t(feed["input_result"]) if accumulate else out
        return {"output": as_format(out.numpy(), BF16), "pre_gelu_out": feed["pre_gelu"],
                "workspace_out": feed["workspace"]}

    return {"feeds": feeds, "op": ("fp8_gemm_blockwise_", operands, results, attrs), "reference": reference}


CASES = {
    "stack_quant": _stack_case(False),
    "stack_transpose_quant": _stack_case(True),
    "transpose_split_quant": _split_case("fused_transpose_split_quant", [384, 200], [128, 0, 256], True),
    "transpose_split_quant_fp8_in": _split_case("fused_transpose_split_quant", [256, 256], [256], False, True),
    "transpose_wlch_split_quant": _split_case("fused_transpose_wlch_split_quant", [2, 2, 64, 100], [128, 128], False),
    "gemm_blockwise_1d2d_accumulate": _gemm_case(False, True),
    "gemm_blockwise_1d1d": _gemm_case(True, False),
}


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.set_device("cpu")
    handwritten.TYPE_TAGS["uint8"] = "0.t_ui8"
    for index, case in enumerate(CASES):
        print(f"{case}: {write(case, CASES[case], 800 + index)}")
    sys.exit(0)

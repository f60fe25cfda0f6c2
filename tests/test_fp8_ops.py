"""Paddle 3.3.1's float8 ops (gradc.ops.fp8, gradc.ops.fp8_split): programs Paddle loads and name-checks, run to the
numbers of Paddle's CPU composition of the same math (tools/paddle_fp8_programs.py and paddle_fp8_split_programs.py
-> tests/data/paddle/fp8, feeds as Paddle's bits), float64 numpy references of the kernels' formulas, the scales'
edges, and bad input."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.bfloat16 import from_bits as bfloat16_bits
from gradc.bfloat16 import round_to_bfloat16
from gradc.errors import ProgramError
from gradc.float8 import from_bits as float8_bits
from gradc.float8 import round_to_float8
from gradc.ir import VarType
from gradc.verify_shapes import check_shapes

DATA = Path(__file__).parent / "data" / "paddle" / "fp8"
CASES = sorted(p.name for p in DATA.iterdir())
V = VarType
E4M3_STEP = 2.0 ** -3   # float8_e4m3fn's relative spacing


def run_case(case: str):
    meta = json.loads((DATA / case / "meta.json").read_text())
    with np.load(DATA / case / "feed.npz") as feed, np.load(DATA / case / "expected.npz") as expected:
        got = gradc.Executor().run(gradc.load(DATA / case / "program.json"), dict(feed), meta["fetches"])
        return dict(zip(meta["fetches"], got)), {name: values(array) for name, array in expected.items()}


def values(array: np.ndarray) -> np.ndarray:
    """A fixture array as gradc holds it: Paddle's float8_e4m3fn (uint8) and bfloat16 (uint16) bits as float32."""
    if array.dtype == np.uint8:
        return float8_bits(array, V.FP8_E4M3FN)
    return bfloat16_bits(array) if array.dtype == np.uint16 else array


@pytest.mark.parametrize("case", CASES)
def test_each_program_paddle_loads_gives_its_cpu_compositions_numbers(case):
    """float8 values, scales and routing bit for bit; bfloat16 / float16 results of a float32 sum or exp within a
    rounding step where Paddle's CPU sums in another order; probs_grad (a row sum) to float32 rounding."""
    got, expected = run_case(case)
    assert set(got) == set(expected)
    for name, value in got.items():
        want = expected[name]
        assert value.shape == want.shape, name
        if "gemm" in case or name == "probs_grad":
            np.testing.assert_allclose(value.astype(np.float64), want, rtol=2 ** -8, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(value, want, err_msg=name)


def one_op(op_type, ins: dict, outs: dict, attrs: dict):
    """A program of one op: ins / outs {name: (shape, dtype)}, each named like its slot (a list of them: a list
    slot of vars name0, name1, ...)."""
    program, slots = gradc.Program(), {}
    for name, spec in {**ins, **outs}.items():
        specs = spec if isinstance(spec, list) else [spec]
        slots[name] = [f"{name}{i}" for i in range(len(specs))] if isinstance(spec, list) else [name]
        for var, (shape, dtype) in zip(slots[name], specs):
            program.global_block.create_var(var, shape, dtype)
    program.global_block.append_op(op_type, {n: slots[n] for n in ins}, {n: slots[n] for n in outs}, attrs)
    return program


def quant(x: np.ndarray, **attrs):
    rows, cols = x.shape
    outs = {"out": ([rows, cols], V.FP8_E4M3FN), "scale": ([-(-cols // 128), rows], V.FP32)}
    program = one_op("fp8_quant_blockwise", {"x": (list(x.shape), V.BF16)}, outs, attrs)
    return gradc.Executor().run(program, {"x": x}, ["out", "scale"])


def nearest_e4m3(values: np.ndarray) -> np.ndarray:
    """float64 reference rounding to float8_e4m3fn: the nearest of its numbers (listed in bit-pattern order), a tie
    to the even pattern, beyond 448 saturated."""
    subnormals = [m * 2.0 ** -9 for m in range(8)]
    grid = np.array(subnormals + [m * 2.0 ** (e - 10) for e in range(1, 16) for m in range(8, 16)])
    grid = grid[grid <= 448]
    size = np.minimum(np.abs(values), 448)
    upper = np.clip(np.searchsorted(grid, size), 1, len(grid) - 1)
    low, high = grid[upper - 1], grid[upper]
    below, above = size - low, high - size
    pick = np.where(below < above, low, high)
    pick = np.where(below == above, np.where((upper - 1) % 2 == 0, low, high), pick)
    return np.copysign(pick, values)


def test_1x128_quantization_is_the_float64_formula():
    """scale = 2^floor(log2(448 / amax)) per 128 values of a row, out = the float8 number nearest x * scale, and the
    scale output its reciprocal, against numpy in float64 (scales of 2^k make every product exact)."""
    rng = np.random.default_rng(5)
    x = round_to_bfloat16(rng.standard_normal((2, 300)) * np.array([[1e-3], [40.0]]))   # x is bfloat16
    out, scale = quant(x, output_scale_transpose=True)
    for row in range(2):
        for block in range(3):
            values = x[row, block * 128:(block + 1) * 128].astype(np.float64)
            factor = 2.0 ** np.floor(np.log2(448 / np.max(np.abs(values))))
            assert scale[block, row] == 1 / factor
            np.testing.assert_array_equal(out[row, block * 128:(block + 1) * 128], nearest_e4m3(values * factor))


def test_scales_at_their_edges():
    """A zero block: scale 1; epsilon floors amax; an amax so small 448 / amax overflows: 2^127 with power-of-two
    scales, 0x1.FEp127 without (1 / that as the stored scale)."""
    x = np.zeros((1, 384), np.float32)
    x[0, 128:256] = 2.0 ** -133   # bfloat16's smallest
    x[0, 256:] = 1.0
    _, scale = quant(x, output_scale_transpose=True)
    assert scale[:, 0].tolist() == [1.0, 2.0 ** -127, 2.0 ** -8]
    _, scale = quant(x, output_scale_transpose=True, using_pow2_scale=False, epsilon=0.5)
    one = np.float32(1)
    assert scale[:, 0].tolist() == [one / np.float32(896), one / np.float32(896), one / np.float32(448)]
    _, scale = quant(x, output_scale_transpose=True, using_pow2_scale=False)
    assert scale[1, 0] == np.float32(1) / np.float32(np.ldexp(255 / 128, 127))


def quant_all(x: np.ndarray, packed: bool, **attrs):
    """fp8_quant_blockwise with input_transpose: (out, scale, out_transposed, scale_transposed)."""
    rows, cols = x.shape
    scale_dtype = V.INT32 if packed else V.FP32
    outs = {"out": ([rows, cols], V.FP8_E4M3FN), "scale": (None, scale_dtype),
            "out_transposed": ([cols, rows], V.FP8_E4M3FN), "scale_transposed": (None, scale_dtype)}
    program = one_op("fp8_quant_blockwise", {"x": (list(x.shape), V.BF16)}, outs,
                     {"input_transpose": True, "using_ue8m0_scale": packed, **attrs})
    check_shapes(program)
    return gradc.Executor().run(program, {"x": x}, list(outs))


@pytest.mark.parametrize("tiles", [False, True])
@pytest.mark.parametrize("flipped", [False, True])
def test_ue8m0_scales_are_the_power_of_two_scales_exponent_bytes(tiles, flipped):
    """using_ue8m0_scale: unpacked as Paddle's own test unpacks them (transpose back, the int32s' bytes, 2^(b - 127)),
    the scales are the power-of-two run's, a tile's on each of its rows; the float8 values are the same; 640 columns
    make 5 blocks, so each row's second int32 holds one scale and three zero bytes."""
    rng = np.random.default_rng(8)
    x = round_to_bfloat16(rng.standard_normal((256, 640)) * rng.uniform(0.01, 50, (256, 1)))
    attrs = {"using_1x128_vec_quant": not tiles, "output_scale_transpose": flipped, "using_pow2_scale": False}
    packed, plain = quant_all(x, True, **attrs), quant_all(x, False, **{**attrs, "using_pow2_scale": True})
    for got, want, (rows, blocks) in ((packed[1], plain[1], (256, 5)), (packed[3], plain[3], (640, 2))):
        assert got.dtype == np.int32 and got.shape == ((-(-blocks // 4), rows) if flipped else (rows, -(-blocks // 4)))
        data = np.ascontiguousarray(got.T if flipped else got).view(np.uint8)
        assert not data[:, blocks:].any()
        want = want.T if flipped else want
        np.testing.assert_array_equal(2.0 ** (data[:, :blocks].astype(np.float64) - 127),
                                      np.repeat(want, 128, axis=0) if tiles else want)
    for got, want in zip(packed[::2], plain[::2]):
        np.testing.assert_array_equal(got, want)


def test_ue8m0_scales_feed_fused_act_dequant_back_to_x():
    """Quantized with packed scales and dequantized by fused_act_dequant (4 blocks a row: the layouts agree), x comes
    back within float8's relative step."""
    rng = np.random.default_rng(9)
    x = round_to_bfloat16(rng.standard_normal((3, 512)) * rng.uniform(0.1, 100, (3, 1)))
    program = one_op("fp8_quant_blockwise", {"x": ([3, 512], V.BF16)},
                     {"out": ([3, 512], V.FP8_E4M3FN), "scale": ([3, 1], V.INT32)},
                     {"using_ue8m0_scale": True, "output_scale_transpose": False})
    block = program.global_block
    block.create_var("back", [3, 512], V.BF16)
    block.append_op("fused_act_dequant", {"x": ["out"], "x_scale": ["scale"]}, {"out": ["back"]}, {})
    (back,) = gradc.Executor().run(program, {"x": x}, ["back"])
    np.testing.assert_allclose(back, x, rtol=E4M3_STEP, atol=0)


def test_swiglu_bwd_is_the_vjp_of_the_weighted_swiglu_in_float64():
    rng = np.random.default_rng(6)
    o1, do2, probs = rng.standard_normal((3, 8)), rng.standard_normal((3, 4)), rng.random(3)
    ins = {"o1": ([3, 8], V.BF16), "do2_s": ([3, 4], V.BF16), "unzipped_probs": ([3], V.FP32)}
    outs = {"do1": ([3, 8], V.FP32), "probs_grad": ([3], V.FP32), "o2_s": ([3, 4], V.FP32)}   # float32: unrounded
    program = one_op("fused_swiglu_weighted_bwd", ins, outs, {})
    feed = {"o1": round_to_bfloat16(o1), "do2_s": round_to_bfloat16(do2), "unzipped_probs": probs.astype(np.float32)}
    do1, probs_grad, o2_s = gradc.Executor().run(program, feed, ["do1", "probs_grad", "o2_s"])
    x1, x2 = feed["o1"][:, :4].astype(np.float64), feed["o1"][:, 4:].astype(np.float64)
    g, p = feed["do2_s"].astype(np.float64), feed["unzipped_probs"].astype(np.float64)[:, None]
    swish = x1 / (1 + np.exp(-x1))
    eps = 1e-6   # central differences of y = swish(x1) x2 p against g
    numeric = (((x1 + eps) / (1 + np.exp(-x1 - eps)) - (x1 - eps) / (1 + np.exp(-x1 + eps))) / (2 * eps))
    np.testing.assert_allclose(do1, np.concatenate([g * p * x2 * numeric, g * p * swish], 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(probs_grad, (g * swish * x2).sum(1), rtol=1e-5)
    np.testing.assert_allclose(o2_s, swish * x2 * p, rtol=1e-5)


def test_half_gemm_honours_both_transposes_against_float64():
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal((32, 3)).astype(np.float32), rng.standard_normal((5, 32)).astype(np.float32)
    ins = {"x": ([32, 3], V.FP8_E5M2), "y": ([5, 32], V.FP8_E5M2)}
    program = one_op("fp8_fp8_half_gemm_fused", ins, {"out": ([3, 5], V.FP16)},
                     {"transpose_x": True, "transpose_y": True, "scale": 0.5})
    (out,) = gradc.Executor().run(program, {"x": x, "y": y}, ["out"])
    xs, ys = (round_to_float8(v, V.FP8_E5M2).astype(np.float64) for v in (x, y))
    np.testing.assert_allclose(out, (0.5 * xs.T @ ys.T).astype(np.float16), rtol=1e-3, atol=1e-3)
    assert out.dtype == np.float16


UNREAD = {"bias": ([0], V.BF16), "pre_gelu": ([0], V.BF16), "workspace": ([64], V.UINT8)}   # fp8_gemm_blockwise's
BAD_SHAPES = {
    "quant tiles": ("fp8_quant_blockwise", {"x": ([128, 200], V.BF16)}, {"using_1x128_vec_quant": False},
                    "need rows and cols multiples of 128"),
    "quant cols": ("fp8_quant_blockwise", {"x": ([4, 130], V.BF16)}, {}, "cols must be a multiple of 4"),
    "quant e5m2": ("fp8_quant_blockwise", {"x": ([4, 128], V.BF16)}, {"using_e5m2": True},
                   "writes float8_e4m3fn only"),
    "dequant scale": ("fused_act_dequant", {"x": ([4, 256], V.FP8_E4M3FN), "x_scale": ([4, 3], V.FP32)}, {},
                      "x_scale must be [4, 2]"),
    "dequant packed": ("fused_act_dequant", {"x": ([4, 256], V.FP8_E4M3FN), "x_scale": ([1], V.INT32)}, {},
                       "pack 4 ue8m0 scales, x [4, 256] needs 8"),
    "swiglu odd": ("fused_weighted_swiglu_act_quant", {"x": ([4, 255], V.BF16)}, {}, "it must be even"),
    "swiglu prob": ("fused_weighted_swiglu_act_quant", {"x": ([4, 256], V.BF16), "prob": ([3], V.FP32)}, {},
                    "prob must have one value per row of x (4 rows)"),
    "swiglu bwd": ("fused_swiglu_weighted_bwd", {"o1": ([4, 8], V.BF16), "do2_s": ([4, 8], V.BF16),
                                                 "unzipped_probs": ([4], V.FP32)}, {}, "o1 must be [..., 2 n]"),
    "gemm k": ("fp8_fp8_half_gemm_fused", {"x": ([4, 32], V.FP8_E4M3FN), "y": ([16, 8], V.FP8_E4M3FN)},
               {"output_dtype": "bfloat16"}, "x's k (32) must equal y's (16)"),
    "gemm dtype": ("fp8_fp8_half_gemm_fused", {"x": ([4, 32], V.FP8_E4M3FN), "y": ([32, 8], V.FP8_E4M3FN)},
                   {"output_dtype": "float32"}, "output_dtype must be float16 or bfloat16"),
    "gemm act": ("fp8_fp8_half_gemm_fused", {"x": ([4, 32], V.FP8_E4M3FN), "y": ([32, 8], V.FP8_E4M3FN)},
                 {"activation_type": "swish"}, "activation_type"),
    "stack shapes": ("fused_stack_quant", {"x": [([128, 256], V.BF16), ([128, 128], V.BF16)]}, {},
                     "every x must have one shape"),
    "stack tiles": ("fused_stack_transpose_quant", {"x": [([128, 200], V.BF16)]}, {},
                    "each x must be 2-D with both dims multiples of 128, got [128, 200]"),
    "split tokens": ("fused_transpose_split_quant", {"x": ([256, 64], V.BF16)}, {"tokens_per_expert": [100, 156]},
                     "tokens_per_expert [100, 156] must be multiples of 128"),
    "split sum": ("fused_transpose_split_quant", {"x": ([256, 64], V.BF16)}, {"tokens_per_expert": [128]},
                  "summing to the 256 rows"),
    "split fp8 scales": ("fused_transpose_split_quant", {"x": ([256, 64], V.FP8_E4M3FN)}, {"tokens_per_expert": [256]},
                         "a float8_e4m3fn x needs input_scales"),
    "wlch rank": ("fused_transpose_wlch_split_quant", {"x": ([256, 64], V.BF16)}, {"tokens_per_expert": [256]},
                  "x must be 4-D [W, L, C, H]"),
    "blockwise trans": ("fp8_gemm_blockwise", {"A": ([128, 128], V.FP8_E4M3FN), "A_scale": ([1, 128], V.FP32),
                                               "B": ([64, 128], V.FP8_E4M3FN), "B_scale": ([1, 64], V.FP32),
                                               "input_result": ([64, 128], V.BF16), **UNREAD}, {"transb": True},
                        "takes transa true and transb false only"),
    "blockwise 2d2d": ("fp8_gemm_blockwise", {"A": ([128, 128], V.FP8_E4M3FN), "A_scale": ([1, 1], V.FP32),
                                              "B": ([128, 128], V.FP8_E4M3FN), "B_scale": ([1, 1], V.FP32),
                                              "input_result": ([128, 128], V.BF16), **UNREAD},
                       {"is_A_1d_scaled": False, "is_B_1d_scaled": False}, "2-D by 2-D scaling"),
    "blockwise scale": ("fp8_gemm_blockwise", {"A": ([256, 128], V.FP8_E4M3FN), "A_scale": ([2, 1], V.FP32),
                                               "B": ([64, 128], V.FP8_E4M3FN), "B_scale": ([1, 64], V.FP32),
                                               "input_result": ([64, 256], V.BF16), **UNREAD}, {},
                        "A_scale must be [1, 256] (1-D scales of A [256, 128])"),
    "dispatch dim": ("moe_gate_dispatch_and_quant", {"x": ([4, 100], V.BF16), "gate_logits": ([4, 3], V.FP32)},
                     {}, "hidden dim must be a multiple of 128"),
}


@pytest.mark.parametrize("case", BAD_SHAPES, ids=str)
def test_bad_shapes_and_attributes_are_one_error_naming_the_op(case):
    op_type, ins, attrs, phrase = BAD_SHAPES[case]
    program = one_op(op_type, ins, {}, attrs)
    with pytest.raises(ProgramError) as error:
        check_shapes(program)
    assert str(error.value).startswith(f"block 0, op 0 ({op_type})") and phrase in str(error.value), error.value

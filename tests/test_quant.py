"""The quant family against Paddle 3.3.1's values (each expected array below is what Paddle's legacy kernels gave for
the same input): the two rounding modes on exact halves, an all-zero X (the guarded 1/scale), quantize_linear's
clipping, int8 dequantization, the moving-average and window state carried across runs in the persistable vars
Paddle's programs update in place, and the straight-through gradient."""

import json

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.ir import to_var_type
from one_op import run

REFERENCE = np.load(DATA / "quant_reference.npz")   # tools/paddle_quant_reference.py
REFERENCE_CASES = json.loads(str(REFERENCE["index"]))

@pytest.mark.parametrize("case", range(len(REFERENCE_CASES)),
                         ids=[f"{c['op']}{c['attrs']}" for c in REFERENCE_CASES])
def test_every_element_rounds_as_paddles(case):
    """Hundreds of random float32 values per op: each output element is Paddle's, bit for bit."""
    op, attrs = REFERENCE_CASES[case]["op"], REFERENCE_CASES[case]["attrs"]
    inputs = {key.split("/")[2]: REFERENCE[key] for key in REFERENCE.files if key.startswith(f"{case}/in/")}
    got = run(op, inputs, attrs)
    for key in (k for k in REFERENCE.files if k.startswith(f"{case}/out/")):
        slot = key.split("/")[2]
        np.testing.assert_array_equal(got[slot].reshape(REFERENCE[key].shape), REFERENCE[key], err_msg=slot)


X = np.array([[0.3, -1.2, 0.5], [2.0, -0.7, 0.05]], np.float32)   # abs max 2
TIES = np.array([127, 2.5, -2.5, 3.5, 0.5, -0.5, 126.5], np.float32)   # the scale is 127: bin_cnt / s = 1


@pytest.mark.parametrize("op", ["fake_quantize_abs_max", "fake_quantize_dequantize_abs_max"])
@pytest.mark.parametrize(("round_type", "expected"), [(0, [127, 2, -2, 4, 0, -0.0, 126]),
                                                       (1, [127, 3, -3, 4, 1, -1, 127])])
def test_halves_round_to_even_or_away_from_zero(op, round_type, expected):
    out = run(op, {"X": TIES}, {"round_type": round_type})
    np.testing.assert_array_equal(out["Out"], np.array(expected, np.float32))
    np.testing.assert_array_equal(out["OutScale"], [127])
    assert out["Out"].dtype == np.float32


def test_an_all_zero_x_quantizes_to_zero_with_scale_zero():
    out = run("fake_quantize_dequantize_abs_max", {"X": np.zeros((2, 3), np.float32)})
    np.testing.assert_array_equal(out["Out"], np.zeros((2, 3)))
    np.testing.assert_array_equal(out["OutScale"], [0])


def test_a_zero_channel_keeps_its_zero_scale():
    x = np.array([[0, 0, 0], [1, -2, 0.5]], np.float32)
    out = run("fake_channel_wise_quantize_abs_max", {"X": x}, {"quant_axis": 0, "bit_length": 4})
    np.testing.assert_array_equal(out["Out"], [[0, 0, 0], [4, -7, 2]])
    np.testing.assert_array_equal(out["OutScale"], [0, 2])


def test_a_negative_scale_clips_in_paddles_order():
    """Paddle's ClipFunctor, x < -s ? -s : x > s ? s : x, with s -1: X below 1 becomes 1, the rest -1 (np.clip would
    give -1 everywhere); then times 127 / s."""
    out = run("fake_quantize_moving_average_abs_max", {"X": X, "InScale": np.array([-1], np.float32)},
              {"is_test": True})
    np.testing.assert_array_equal(out["Out"], [[-127, -127, -127], [127, -127, -127]])


@pytest.mark.parametrize(("round_type", "expected"), [(0, [-5, 4, 4, 4]), (1, [-4, 4, 4, 4])])
def test_quantize_linear_clips_to_qmin_only_when_rounding_to_even(round_type, expected):
    """round_type 0 clips q to [-qmax - 1, qmax]; round_type 1 clips X to [-s, s] first, so q stays in +-qmax."""
    out = run("quantize_linear", {"X": np.array([[-3.0, 0.9, 1.0, 1.25]], np.float32),
                                  "Scale": np.ones(1, np.float32), "ZeroPoint": np.zeros(1, np.int32)},
              {"quant_axis": -1, "qmax": 4, "round_type": round_type})
    np.testing.assert_array_equal(out["Y"], [expected])


@pytest.mark.parametrize(("qmax", "values", "expected"), [
    (448, [470, -470, 500, 455, 0.3], [448, -448, 448, 448, 0.3125]),
    (57344, [470, 62000, -70000, 1e-9], [448, 57344, -57344, 0])])
def test_quantize_linear_float8_saturates_where_paddles_cpu_gives_nan(qmax, values, expected):
    """qmax 448 / 57344 rounds X / s * qmax to float8 and clips to +-qmax: e4m3 470 gives 448, where Paddle 3.3.1's CPU
    conversion gives NaN (464 < |v| < 480, which the clip keeps); e5m2 62000 and 70000 saturate in both."""
    out = run("quantize_linear", {"X": np.array(values, np.float32) / qmax, "Scale": np.ones(1, np.float32),
                                  "ZeroPoint": np.zeros(1, np.int32)}, {"quant_axis": -1, "qmax": qmax})
    np.testing.assert_array_equal(out["Y"], np.array(expected, np.float32))


def test_quantize_linear_training_averages_at_rate_0_9_whatever_moving_rate_says():
    """Paddle's kernel passes 0.9, not the attribute: state 0.9 * 3 + 1, accum 0.9 * 2 + abs max 2 (Paddle's values)."""
    one = np.ones(1, np.float32)
    out = run("quantize_linear", {"X": X, "Scale": one, "ZeroPoint": np.zeros(1, np.int32), "InAccum": 2 * one,
                                  "InState": 3 * one}, {"quant_axis": -1, "is_test": False, "moving_rate": 0.5})
    np.testing.assert_allclose(out["OutState"], [3.7], rtol=1e-6)
    np.testing.assert_allclose(out["OutAccum"], [3.8], rtol=1e-6)
    np.testing.assert_allclose(out["OutScale"], [3.8 / 3.7], rtol=1e-6)
    np.testing.assert_array_equal(out["Y"], [[37, -128, 62], [127, -87, 6]])


@pytest.mark.parametrize(("bits", "expected"), [
    (1, np.full((2, 3), np.nan)),   # bin_cnt 0: q is 0, and 0 * s / 0 is NaN, as in Paddle
    (16, [[0.299996942281723, -1.199987769126892, 0.5000152587890625],
          [2.0, -0.6999725103378296, 0.04998932033777237]]),   # Paddle's values
])
def test_bit_length_edges(bits, expected):
    out = run("fake_quantize_dequantize_abs_max", {"X": X}, {"bit_length": bits})
    np.testing.assert_array_equal(out["Out"], np.array(expected, np.float32))
    np.testing.assert_array_equal(out["OutScale"], [2])


def test_dequantize_linear_reads_int8_and_writes_the_scales_dtype():
    out = run("dequantize_linear", {"X": np.array([[-128, 127, 3]], np.int8), "Scale": np.array([0.5], np.float32),
                                    "ZeroPoint": np.zeros(1, np.int32)}, {"quant_axis": -1})
    assert out["Y"].dtype == np.float32
    np.testing.assert_allclose(out["Y"], [[-0.503937, 0.5, 0.01181102]], rtol=1e-6)


def _stateful(op: str, inputs: dict, outputs: dict, attrs: dict, persistable: dict) -> tuple:
    """A program of one op whose state vars (``persistable``: name -> initial value) it reads and writes in place."""
    program = gradc.Program()
    block = program.global_block
    scope = gradc.Scope()
    for name, value in persistable.items():
        block.create_var(name, list(value.shape), to_var_type(value.dtype), persistable=True)
        scope[name] = value
    for name in {**inputs, **outputs}.values():
        if block.find_var(name) is None:
            block.create_var(name, None, None)
    block.append_op(op, {slot: [name] for slot, name in inputs.items()},
                    {slot: [name] for slot, name in outputs.items()}, attrs)
    return program, scope


def test_the_moving_average_carries_over_runs():
    """state = 0.9 state + 1, accum = 0.9 accum + abs_max(X), scale = accum / state, run after run."""
    one = np.ones(1, np.float32)
    program, scope = _stateful(
        "fake_quantize_dequantize_moving_average_abs_max",
        {"X": "x", "InScale": "scale", "InAccum": "accum", "InState": "state"},
        {"Out": "out", "OutScale": "scale", "OutAccum": "accum", "OutState": "state"}, {"moving_rate": 0.9},
        {"scale": one, "accum": one, "state": one})
    state, accum = 1.0, 1.0
    for peak in (4.0, 2.0):
        x = np.array([peak, -1.0, 0.5], np.float32)
        out, scale = gradc.Executor().run(program, {"x": x}, ["out", "scale"], scope)
        state, accum = 0.9 * state + 1, 0.9 * accum + peak
        np.testing.assert_allclose(scale, [accum / state], rtol=1e-6)
        np.testing.assert_allclose(out, np.clip(x, -scale, scale), atol=scale[0] / 127 / 2 + 1e-6)


def test_the_range_window_drops_the_oldest_abs_max():
    """Paddle's scales for window_size 2 over abs maxes 3, 1, 2, 0.5: 3, 3 (3 is still in the window), 2 (3 left
    it: the largest left is 2), 2."""
    program, scope = _stateful(
        "fake_quantize_range_abs_max", {"X": "x", "InScale": "scale", "Iter": "iter"},
        {"Out": "out", "OutScale": "scale", "OutScales": "scales"}, {"window_size": 2},
        {"scale": np.zeros(1, np.float32), "scales": np.zeros(2, np.float32)})
    outs, scales = [], []
    for step, peak in enumerate([3.0, 1.0, 2.0, 0.5]):
        feed = {"x": np.array([peak, -0.5, 0.25], np.float32), "iter": np.array([step])}
        out, scale = gradc.Executor().run(program, feed, ["out", "scale"], scope)
        outs.append(out)
        scales.append(scale[0])
    assert scales == [3, 3, 2, 2]
    np.testing.assert_array_equal(outs, [[127, -21, 11], [42, -21, 11], [127, -32, 16], [32, -32, 16]])
    np.testing.assert_array_equal(scope["scales"], [2, 0.5])


@pytest.mark.parametrize(("window", "step", "phrase"), [
    (3, -5, r"Iter to be one step count >= 0, got int64 \[-5\]"),   # Paddle's C++ % would index before the window
    (2**40, 3, r"OutScales \(window_size\) of shape \[1099511627776\] would need"),
])
def test_the_range_window_refuses_a_negative_step_and_a_window_past_the_memory_limit(window, step, phrase):
    program, scope = _stateful(
        "fake_quantize_range_abs_max", {"X": "x", "InScale": "scale", "Iter": "iter"},
        {"Out": "out", "OutScale": "scale", "OutScales": "scales"}, {"window_size": window},
        {"scale": np.ones(1, np.float32)})
    with pytest.raises(gradc.ExecutionError, match=phrase):
        gradc.Executor().run(program, {"x": X, "iter": np.array([step])}, ["out"], scope)


def test_channel_wise_quantization_for_test_uses_the_scales_it_holds():
    program, scope = _stateful("fake_channel_wise_quantize_abs_max", {"X": "x"}, {"Out": "out", "OutScale": "scales"},
                               {"is_test": True, "quant_axis": 1, "bit_length": 4},
                               {"scales": np.array([1.0, 4.0], np.float32)})
    out, = gradc.Executor().run(program, {"x": np.array([[0.5, 2.0], [-3.0, -1.0]], np.float32)}, ["out"], scope)
    np.testing.assert_array_equal(out, [[4, 4], [-7, -2]])   # X clipped to each channel's scale, times 7 / scale


def test_the_straight_through_gradient_passes_clipped_elements_too():
    """Paddle's estimator copies dOut everywhere, also where X was clipped to the scale (X 5 with InScale 1)."""
    net = gradc.layers.ProgramBuilder()
    x = net.data("x", [3], stop_gradient=False)
    scale = net.data("scale", [1])
    out = net.op("fake_quantize_dequantize_moving_average_abs_max", {"X": [x], "InScale": [scale]},
                 {"is_test": True})[0]
    loss = net.op("reduce_sum", {"X": [out]}, {"reduce_all": True})[0]
    gradc.append_backward(net.program, loss)
    feed = {"x": np.array([5.0, -0.3, 0.2], np.float32), "scale": np.ones(1, np.float32)}
    value, grad = gradc.Executor().run(net.program, feed, [out, "x@GRAD"], gradc.Scope())
    np.testing.assert_allclose(value, [1.0, -38 / 127, 25 / 127], rtol=1e-6)
    np.testing.assert_array_equal(grad, [1, 1, 1])


def test_training_without_the_moving_average_state_is_refused():
    with pytest.raises(gradc.ProgramError, match="updates the scale from InAccum, InState"):
        run("fake_quantize_moving_average_abs_max", {"X": np.ones((2, 2), np.float32), "InScale": np.ones(1,
                                                                                                       np.float32)})


@pytest.mark.parametrize("form", ["default", "channel", "abs_max"])
def test_a_quantized_forward_compiles_to_paddles_quantization_aware_training_gradients(form):
    """PaddleSlim's quant_aware of an MLP's forward (tests/data/paddle/qat_mlp: tools/paddleslim_static.py's MLP
    configs, their forward.pb and the values, feed and first-step gradients it records; Paddle 3.3.1:
    quantize_linear and dequantize_linear pairs by default; fake_channel_wise_quantize_abs_max or
    fake_quantize_abs_max, then the dequantize op, in the older form). Paddle's QAT training program (quant_aware
    after minimize) points each grad op at the dequantized weights and activations; gradc's backward of the
    quantized forward gives the same gradients by passing them through each quantize and dequantize op. gradc had
    given these ops none (as Paddle's own append_backward does), so no weight behind a quantize op had a gradient."""
    program = gradc.load(DATA / "qat_mlp" / f"{form}.pb")
    values = np.load(DATA / "qat_mlp" / f"{form}.npz")
    paddle_grads = {key.removeprefix("@grad:"): values[key] for key in values.files if key.startswith("@grad:")}
    gradc.append_backward(program, "mean_0.tmp_0")
    scope = gradc.Scope()
    for key in (k for k in values.files if k.startswith("param:")):
        scope[key.removeprefix("param:")] = values[key]
    feed = {key.removeprefix("feed:"): values[key] for key in values.files if key.startswith("feed:")}
    got = gradc.Executor().run(program, feed, list(paddle_grads), scope)
    assert sorted(paddle_grads) == ["fc_0.b_0@GRAD", "fc_0.w_0@GRAD", "fc_1.b_0@GRAD", "fc_1.w_0@GRAD"]
    for (name, paddle), ours in zip(paddle_grads.items(), got):
        np.testing.assert_allclose(ours, paddle, rtol=2e-5, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("kind", ["abs_max", "log"])
def test_paddleslims_quantized_embedding_runs_to_paddles_outputs(kind):
    """PaddleSlim's quant_embedding (tests/data/paddle/quant_embedding, written by tools/paddleslim_compress.py with
    Paddle 3.3.1) stores an embedding table as
    int8 and dequantizes the looked-up rows: dequantize_abs_max (X * Scale / 127) or dequantize_log (a dictionary of
    magnitudes, the code's sign bit its sign). gradc had neither op. Its pass leaves the looked-up rows declared
    float32, which they hold exactly (lookup_table_v2's inference says so)."""
    program = gradc.load(DATA / "quant_embedding" / f"{kind}.pb")
    values = np.load(DATA / "quant_embedding" / f"{kind}.npz")
    assert [op.type for op in program.global_block.ops][:2] == ["lookup_table_v2", f"dequantize_{kind}"]
    assert not gradc.verify(program)
    scope = gradc.Scope()
    for key in (k for k in values.files if k.startswith("param:")):
        scope[key.removeprefix("param:")] = values[key]
    out, = gradc.Executor().run(program, {"ids": values["feed:ids"]}, ["fc_0.tmp_1"], scope)
    np.testing.assert_allclose(out, values["out"], rtol=0, atol=1e-7)

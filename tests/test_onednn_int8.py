"""The programs Paddle 3.3.1's oneDNN int8 passes write (tools/paddle_onednn_ptq.py: a conv net and an attention
layer, quantized by PostTrainingQuantization and optimized by a Predictor with enable_mkldnn_int8), with every op's
outputs from Paddle's run on this machine, an AMD EPYC without VNNI (GRADC_ONEDNN_ISA=avx2 reproduces its kernels):
gradc gives every int8 op's outputs byte for byte, op by op on Paddle's inputs, and the conv net's output, legacy and
PIR. Paddle's int8 fused_matmul with an int8 ResidualData reads memory it never wrote (pinned below)."""

import json

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.errors import ExecutionError, GradError
from gradc.ir import VarDesc
from gradc.layers import ProgramBuilder
from one_op import run

ROOT = DATA / "onednn_ops"
PTQ_CASES = ("ptq_int8", "ptq_int8_attention")
INT8_OPS = {"quantize", "fused_conv2d", "pool2d", "fc", "fused_matmul"}
FLOAT_BOUNDS = {"softmax": 1e-7, "layer_norm": 1e-6}   # oneDNN's float kernels against numpy: absolute bounds


@pytest.fixture(autouse=True)
def avx2(monkeypatch):
    monkeypatch.setenv("GRADC_ONEDNN_ISA", "avx2")


def _meta(case: str) -> dict:
    return json.loads((ROOT / case / "meta.json").read_text())


def _scope(case: str, program) -> gradc.Scope:
    scope = gradc.Scope()
    for name, value in gradc.read_params(ROOT / case / "model.pdiparams", program).items():
        scope[name] = value
    return scope


def _paddle_values(case: str) -> dict:
    with np.load(ROOT / case / "expected.npz") as expected, np.load(ROOT / case / "feed.npz") as feed:
        return {**expected, **feed}


def _faulty(op) -> bool:
    """Paddle's int8 fused_matmul with a ResidualData: its output holds memory Paddle never wrote."""
    return op.type == "fused_matmul" and bool(op.input("ResidualData"))


def _op_cases():
    for case in PTQ_CASES:
        program = gradc.load(ROOT / case / "model.pdmodel")
        for index, op in enumerate(program.global_block.ops):
            if op.type not in ("feed", "fetch") and not _faulty(op):
                yield pytest.param(case, index, id=f"{case}-{index}-{op.type}")


def _run_alone(case: str, index: int, values: dict) -> tuple:
    """Op ``index`` of the case's program run by itself on Paddle's values of its inputs: (op, {output: value})."""
    program = gradc.load(ROOT / case / "model.pdmodel")
    block = program.global_block
    op = block.ops[index]
    block.ops = [op]
    scope = _scope(case, program)
    feed = {name: values[name] for names in op.inputs.values() for name in names if name in values}
    outs = [name for names in op.outputs.values() for name in names if name in values]
    return op, dict(zip(outs, gradc.Executor().run(program, feed, outs, scope=scope)))


def test_the_programs_hold_the_int8_ops():
    ops = {op for case in PTQ_CASES for op in _meta(case)["ops"]}
    assert INT8_OPS <= ops
    int8_marked = {op.type for case in PTQ_CASES for op in gradc.load(ROOT / case / "model.pdmodel").global_block.ops
                   if op.attrs.get("mkldnn_data_type") == "int8"}
    assert int8_marked == {"fused_conv2d", "pool2d", "fc", "fused_matmul"}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # layer_norm of Paddle's unwritten memory overflows
@pytest.mark.parametrize(("case", "index"), list(_op_cases()))
def test_each_op_gives_paddles_outputs_on_paddles_inputs(case, index):
    values = _paddle_values(case)
    op, got = _run_alone(case, index, values)
    assert got
    for name, value in got.items():
        want = values[name]
        assert value.dtype == want.dtype and value.shape == want.shape, name
        if op.type in FLOAT_BOUNDS:
            np.testing.assert_allclose(value, want, rtol=0, atol=FLOAT_BOUNDS[op.type], err_msg=name)
        else:
            np.testing.assert_array_equal(value, want, err_msg=name)


@pytest.mark.parametrize("program_file", ["model.pdmodel", "program.json"])
def test_the_conv_net_runs_to_the_predictors_bytes(program_file):
    meta = _meta("ptq_int8")
    program = gradc.load(ROOT / "ptq_int8" / program_file)
    assert gradc.verify(program) == []
    values = _paddle_values("ptq_int8")
    out = gradc.Executor().run(program, {"x": values["x"]}, [meta["output"]],
                               scope=_scope("ptq_int8", gradc.load(ROOT / "ptq_int8" / "model.pdmodel")))[0]
    np.testing.assert_array_equal(out, values[f"{meta['output']}@predictor"])
    assert meta["executor_rerun_max_diff"] == 0 and meta["executor_three_reruns_max_spread"] == 0


def test_the_attention_programs_legacy_and_pir_agree():
    case, meta = "ptq_int8_attention", _meta("ptq_int8_attention")
    legacy = gradc.load(ROOT / case / "model.pdmodel")
    outs = [gradc.Executor().run(gradc.load(ROOT / case / name), {"x": _paddle_values(case)["x"]}, [meta["output"]],
                                 scope=_scope(case, legacy))[0] for name in ("model.pdmodel", "program.json")]
    np.testing.assert_array_equal(*outs)
    assert np.isfinite(outs[0]).all()


def test_paddles_int8_residual_matmul_adds_the_integers_and_unwritten_memory():
    """Paddle's fused_matmul appends the int8 ResidualData as a float binary add at its integer values, then a sum
    post-op that adds 1 / Scale_in_eltwise times what the output buffer held before (never written): in the run
    recorded, 164 of 192 values are matmul + the integers, the rest off by what the buffer held (to 2e30; other runs
    gave a NaN), and three reruns differ. gradc adds the residual at its scale."""
    case = "ptq_int8_attention"
    program = gradc.load(ROOT / case / "model.pdmodel")
    index = next(i for i, op in enumerate(program.global_block.ops) if _faulty(op))
    values = _paddle_values(case)
    op, got = _run_alone(case, index, values)
    name, out = op.input("ResidualData")[0], op.output("Out")[0]
    residual, scale = values[name], np.float32(op.attrs["Scale_in_eltwise"])
    assert residual.dtype == np.int8
    matmul = _run_alone(case, index, {**values, name: np.zeros_like(residual)})[1][out]
    np.testing.assert_allclose(got[out], matmul + residual / scale, rtol=1e-6, atol=1e-6)   # gradc: at its scale
    paddle_out = values[out]
    with np.errstate(invalid="ignore", over="ignore"):
        off = np.abs(matmul + residual.astype(np.float32) - paddle_out)
    assert np.count_nonzero(off < 1e-4) == 164
    assert np.abs(paddle_out).max() > 1e20   # what the unwritten buffer held
    assert _meta(case)["executor_three_reruns_max_spread"] > 0.1


def test_a_cpu_with_vnni_quantizes_the_weights_at_full_scale_and_does_not_saturate(monkeypatch):
    """The conv net on the exact int8 arithmetic (GRADC_ONEDNN_ISA=vnni) differs from Paddle's run here: the first
    convolution's weights (int8 input) at full scale, and fc's 18 saturated int16 pairs added exactly."""
    meta, values = _meta("ptq_int8"), _paddle_values("ptq_int8")
    index = meta["ops"].index("fc")
    monkeypatch.setenv("GRADC_ONEDNN_ISA", "vnni")
    op, got = _run_alone("ptq_int8", index, values)
    fc_in, weights = values[op.input("Input")[0]].astype(np.float64), gradc.read_params(
        ROOT / "ptq_int8" / "model.pdiparams", gradc.load(ROOT / "ptq_int8" / "model.pdmodel"))[op.input("W")[0]]
    scales = np.asarray(op.attrs["Scale_weights"], np.float32)
    exact = fc_in @ np.clip(np.rint(weights * scales), -128, 127) / (np.float64(op.attrs["Scale_in"]) * scales)
    out = got[op.output("Out")[0]]
    np.testing.assert_allclose(out, exact, rtol=1e-6, atol=1e-6)
    assert 0.4 < np.abs(out - values[op.output("Out")[0]]).max() < 0.5   # Paddle's saturation here
    conv = meta["ops"].index("fused_conv2d")
    _, full_scale = _run_alone("ptq_int8", conv, values)
    assert 0.03 < max(np.abs(v - values[n]).max() for n, v in full_scale.items()) < 0.04


def _run_declared(op_type: str, inputs: dict, attrs: dict, out_slot: str) -> np.ndarray:
    """One op whose output var is declared without a shape or type (fused_conv2d infers none), as
    cpu_quantize_pass declares it."""
    net = ProgramBuilder()
    slots = {slot: [net.data(slot.lower(), list(a.shape), a.dtype.name)] for slot, a in inputs.items()}
    net.block.add_var(VarDesc("out", None, None))
    net.block.append_op(op_type, slots, {out_slot: ["out"]}, attrs)
    feed = {names[0]: inputs[slot] for slot, names in slots.items()}
    return gradc.Executor().run(net.program, feed, ["out"], gradc.Scope())[0]


def test_int8_conv_adds_bias_then_the_residual_at_its_scale_then_the_activation(monkeypatch):
    monkeypatch.setenv("GRADC_ONEDNN_ISA", "vnni")
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (1, 2, 4, 4)).astype(np.int8)
    w = rng.uniform(-1, 1, (3, 2, 1, 1)).astype(np.float32)
    bias, residual = rng.uniform(-5, 5, 3).astype(np.float32), rng.integers(-128, 128, (1, 3, 4, 4)).astype(np.int8)
    attrs = {"Scale_in": 20.0, "Scale_weights": [100.0, 50.0, 80.0], "Scale_in_eltwise": 4.0,
             "fuse_residual_connection": True, "fuse_activation": "relu"}
    got = _run_declared("fused_conv2d", {"Input": x, "Filter": w, "Bias": bias, "ResidualData": residual}, attrs,
                        "Output")
    scales = np.array(attrs["Scale_weights"])
    weights = np.clip(np.rint(w[:, :, 0, 0] * scales[:, None]), -128, 127)
    conv = np.einsum("oc,nchw->nohw", weights, x.astype(np.float64)) / (20 * scales[None, :, None, None])
    want = np.maximum(conv + bias[None, :, None, None] + residual / 4.0, 0)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize(("activation", "dtype", "want"), [("", np.int8, [-128, -60, 40, 127]),
                                                             ("relu", np.uint8, [0, 0, 40, 240])])
def test_int8_fc_without_force_fp32_output_requantizes_at_scale_out(activation, dtype, want, monkeypatch):
    monkeypatch.setenv("GRADC_ONEDNN_ISA", "vnni")
    x = np.array([[-100], [-30], [20], [120]], np.int8)
    attrs = {"Scale_in": 10.0, "Scale_weights": [127.0], "Scale_out": 20.0, "activation_type": activation}
    got = run("fc", {"Input": x, "W": np.array([[1.0]], np.float32)}, attrs)["Out"]
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.ravel(), want)   # x / 10 * 20, rounded and saturated


def test_int8_pooling_rounds_averages_half_to_even_and_keeps_the_type():
    x = np.array([[[[1, 2], [3, 4]], [[5, 5], [6, 6]]]], np.uint8)   # averages 2.5 and 5.5
    attrs = {"ksize": [2, 2], "strides": [2, 2]}
    average = run("pool2d", {"X": x}, {**attrs, "pooling_type": "avg"})["Out"]
    maximum = run("pool2d", {"X": x - 3}, {**attrs, "pooling_type": "max"})["Out"]   # (1 - 3 wraps to 254)
    assert average.dtype == maximum.dtype == np.uint8
    np.testing.assert_array_equal(average.ravel(), [2, 6])
    np.testing.assert_array_equal(maximum.ravel(), [255, 3])


def test_an_unknown_isa_is_refused(monkeypatch):
    monkeypatch.setenv("GRADC_ONEDNN_ISA", "avx512")
    x = np.zeros((1, 1, 2, 2), np.int8)
    with pytest.raises(ExecutionError, match="GRADC_ONEDNN_ISA is 'avx512'"):
        _run_declared("fused_conv2d", {"Input": x, "Filter": np.ones((1, 1, 1, 1), np.float32)}, {}, "Output")


@pytest.mark.parametrize(("case", "param"), [("ptq_int8", "conv2d_0.w_0"), ("ptq_int8", "linear_0.w_0"),
                                             ("ptq_int8_attention", "linear_4.w_0")])
def test_no_gradient_through_an_int8_op(case, param):
    program = gradc.load(ROOT / case / "model.pdmodel")
    with pytest.raises(GradError, match=r"mkldnn_data_type int8 is oneDNN's int8 kernel.*Paddle defines none"), \
            pytest.warns(gradc.GradcWarning, match="one value per example"):   # the model's output as the loss
        gradc.gradients(program, _meta(case)["output"], [param])

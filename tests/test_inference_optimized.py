"""Programs Paddle Inference's CPU analysis passes wrote (tools/paddle_inference_optimized.py): gradc loads,
verifies and saves each byte for byte, and runs it to the Predictor's outputs."""

import json

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.gradcheck import check_program

ROOT = DATA / "inference_optimized"
CASES = sorted(p.name for p in ROOT.iterdir() if p.is_dir())
FUSED = {"fusion_repeated_fc_relu", "fusion_seqconv_eltadd_relu", "fusion_seqpool_cvm_concat", "fusion_gru",
         "fusion_lstm", "fused_conv2d", "fused_matmul"}


def _run(case: str, program=None, params=None) -> tuple[dict, dict]:
    program = program or gradc.load(ROOT / case / "model.pdmodel")
    params = params or ROOT / case / "model.pdiparams"
    scope = gradc.Scope()
    if params.exists():
        for name, value in gradc.read_params(params, program).items():
            scope[name] = value
    with np.load(ROOT / case / "feed.npz") as saved:
        feed = {n: saved[n] for n in saved.files if not n.endswith(".lod")}
        feed.update({n: gradc.LoDTensor(feed[n], [saved[f"{n}.lod"]]) for n in feed if f"{n}.lod" in saved.files})
    with np.load(ROOT / case / "expected.npz") as saved:
        expected = dict(saved)
    outs = gradc.Executor().run(program, feed, list(expected), scope=scope)
    return dict(zip(expected, outs)), expected


def test_the_fixtures_hold_every_fused_op():
    held = set().union(*(json.loads((ROOT / c / "meta.json").read_text())["ops"] for c in CASES))
    assert FUSED <= held


@pytest.mark.parametrize("case", CASES)
def test_runs_to_the_predictors_outputs(case):
    got, expected = _run(case)
    with np.load(ROOT / case / "unoptimized.npz") as unoptimized:
        for name, want in expected.items():
            np.testing.assert_allclose(unoptimized[name], want, rtol=1e-5, atol=1e-6)   # the passes kept the math
            assert got[name].dtype == want.dtype and got[name].shape == want.shape
            np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", CASES)
def test_loads_verifies_and_saves_byte_for_byte(case, tmp_path):
    program = gradc.load(ROOT / case / "model.pdmodel")
    assert gradc.verify(program) == []
    gradc.save(program, tmp_path / "again.pdmodel")
    assert (tmp_path / "again.pdmodel").read_bytes() == (ROOT / case / "model.pdmodel").read_bytes()


PIR_CASES = sorted(c for c in CASES if (ROOT / c / "model.json").exists())


@pytest.mark.parametrize("case", PIR_CASES)
def test_the_pir_program_runs_to_the_predictors_outputs(case):
    """The program a Predictor with enable_new_ir saves (_optimized.json): pd_op.feed inputs, the pd_op fused op."""
    program = gradc.load(ROOT / case / "model.json")
    assert gradc.verify(program) == []
    assert set(json.loads((ROOT / case / "meta.json").read_text())["ops"]) <= {op.type for op in
                                                                               program.global_block.ops}
    got, expected = _run(case, program, ROOT / case / "model_pir.pdiparams")
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("case", "wrt"), [
    ("mlp", ["linear_0.w_0", "linear_1.b_0", "linear_3.w_0"]),
        # fused_conv2d's filter and folded-BN bias, and through the batch_norm with fuse_with_relu before it
    ("convbn_onednn", ["conv2d_1.w_0", "fuse_conv_bn/conv2d_eltwise_y_in/1", "batch_norm2d_0.w_0", "conv2d_0.w_0"]),
])
def test_an_optimized_program_differentiates_through_its_fused_ops(case, wrt):
    """fusion_repeated_fc_relu, fused_conv2d and batch_norm's fuse_with_relu train as the ops they fuse: float64
    central differences."""
    program = gradc.load(ROOT / case / "model.pdmodel")
    for var in program.global_block.vars.values():
        if var.dtype == gradc.VarType.FP32:
            var.dtype = gradc.VarType.FP64
    params = {n: v.astype(np.float64) for n, v in gradc.read_params(ROOT / case / "model.pdiparams", program).items()}
    with np.load(ROOT / case / "feed.npz") as saved:
        feed = {n: saved[n].astype(np.float64) for n in saved.files}
    (loss,) = json.loads((ROOT / case / "meta.json").read_text())["outputs"]
    with pytest.warns(gradc.GradcWarning, match="one value per example"):   # an inference output as the loss
        grads = check_program(program, feed, wrt, loss=loss, params=params)
    assert all(np.abs(grads[name]).max() > 0 for name in wrt)

"""A model saved with Paddle's save_inference_model (.pdmodel + .pdiparams) runs in gradc."""

import json
import subprocess
import sys

import numpy as np
import pytest

import gradc
from fixtures import DATA

MODEL = DATA / "inference"


def test_runs_through_feed_and_fetch_ops_with_paddles_parameter_file():
    program = gradc.load(MODEL / "model.pdmodel")
    assert [op.type for op in program.global_block.ops][::len(program.global_block.ops) - 1] == ["feed", "fetch"]
    scope = gradc.Scope()
    for name, value in gradc.read_params(MODEL / "model.pdiparams", program).items():
        scope[name] = value
    with np.load(MODEL / "feed.npz") as feed:
        (out,) = gradc.Executor().run(program, dict(feed), scope=scope)
    np.testing.assert_allclose(out, np.load(MODEL / "expected.npy"), rtol=1e-5, atol=1e-6)


def test_parameter_file_round_trips_byte_for_byte(tmp_path):
    program = gradc.load(MODEL / "model.pdmodel")
    values = gradc.read_params(MODEL / "model.pdiparams", program)
    assert values["linear_0.w_0"].shape == (6, 8) and values["linear_0.w_0"].dtype == np.float32
    gradc.write_params(tmp_path / "again.pdiparams", program, values)
    assert (tmp_path / "again.pdiparams").read_bytes() == (MODEL / "model.pdiparams").read_bytes()


@pytest.mark.parametrize("cut", [3, 30, 300])
def test_truncated_parameter_file_names_the_var(tmp_path, cut):
    program = gradc.load(MODEL / "model.pdmodel")
    broken = tmp_path / "cut.pdiparams"
    broken.write_bytes((MODEL / "model.pdiparams").read_bytes()[:cut])
    with pytest.raises(gradc.FormatError, match=r"cut.pdiparams: truncated in the .* of '\w"):
        gradc.read_params(broken, program)


def test_parameter_file_of_another_program_is_refused(tmp_path):
    program = gradc.load(MODEL / "model.pdmodel")
    program.global_block.vars.pop("linear_1.w_0")
    with pytest.raises(gradc.FormatError, match="belongs to another program|truncated"):
        gradc.read_params(MODEL / "model.pdiparams", program)


def test_cli_run_prints_the_fetched_output(tmp_path):
    out = tmp_path / "r.npz"
    result = subprocess.run([sys.executable, "-m", "gradc", "run", str(MODEL / "model.pdmodel"),
                             "--params", str(MODEL / "model.pdiparams"), "--feed", str(MODEL / "feed.npz"),
                             "--out", str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("softmax_0.tmp_0: float32[4, 3]")
    with np.load(out) as saved:
        np.testing.assert_allclose(saved["softmax_0.tmp_0"], np.load(MODEL / "expected.npy"), rtol=1e-5, atol=1e-6)


FINETUNE = DATA / "inference_finetune"


def test_fine_tunes_a_saved_inference_model_to_paddles_gradients_of_the_model_before_export():
    """save_inference_model strips the outputs Paddle marks extra (XShape of flatten, transpose2, squeeze2 and
    unsqueeze2, dropout's Mask) though their grad ops read them (Paddle's own backward of the exported file fails);
    the backward gives them back, and the gradients are those Paddle computes on the model before export."""
    meta = json.loads((FINETUNE / "meta.json").read_text())
    program = gradc.load(FINETUNE / "model.pdmodel")
    block = program.global_block
    stripped = [stripped.split(".") for stripped in meta["outputs_stripped"]]
    assert all(not op.outputs.get(slot) for op_type, slot in stripped for op in block.ops if op.type == op_type)
    params = gradc.read_params(FINETUNE / "model.pdiparams", program)
    out = meta["output"]
    block.create_var("w", block.var(out).shape, gradc.VarType.FP32)
    block.create_var("weighted", block.var(out).shape, gradc.VarType.FP32)
    block.create_var("loss", [], gradc.VarType.FP32)
    block.append_op("elementwise_mul", {"X": [out], "Y": ["w"]}, {"Out": ["weighted"]}, {"axis": -1})
    block.append_op("reduce_mean", {"X": ["weighted"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
    pairs = gradc.append_backward(program, "loss", parameter_list=list(params))
    assert all(op.outputs.get(slot) for op_type, slot in stripped for op in block.ops if op.type == op_type)
    scope = gradc.Scope()
    for name, value in params.items():
        scope[name] = value
    with np.load(FINETUNE / "feed.npz") as feed, np.load(FINETUNE / "grads.npz") as expected:
        values = gradc.Executor().run(program, dict(feed), ["loss", *(grad for _, grad in pairs)], scope)
        np.testing.assert_allclose(values[0], np.load(FINETUNE / "loss.npy"), rtol=1e-5)
        assert sorted(param for param, _ in pairs) == sorted(expected.files)
        for (param, _), grad in zip(pairs, values[1:]):
            np.testing.assert_allclose(grad, expected[param], rtol=1e-5, atol=1e-8, err_msg=param)

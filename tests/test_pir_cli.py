"""Paddle 3 PIR programs from the command line, as a user runs them: `gradc compile model.json` (the loss is
the fetch target), `gradc run` with the parameters Paddle saved, `gradc convert train.pb train.json` and
runs of what it wrote; bad PIR files give one line. (Paddle runs the written files:
tools/run_pir_in_paddle.py.)"""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA
from pir_fixtures import INFERENCE, PIR_DATA

# the models: an MLP, a CNN with batch norm, a transformer encoder layer, an LSTM, cond, while_loop
MODELS = ["mlp", "cnn_bn", "transformer", "lstm", "cond", "while_loop"]


def run_and_compare(program, case_dir, out) -> None:
    loss = json.loads((case_dir / "meta.json").read_text())["loss"]
    with np.load(case_dir / "grads.npz") as archive:
        grads = {name: archive[name] for name in archive.files}
    fetches = [arg for name in [loss, *grads] for arg in ("--fetch", name)]
    ran = gradc_cli("run", program, "--feed", case_dir / "feed.npz", "--params", case_dir / "params.npz",
                    *fetches, "--out", out)
    assert ran.returncode == 0, ran.stderr
    with np.load(out) as got:
        np.testing.assert_allclose(got[loss], np.load(case_dir / "loss.npy"), rtol=1e-5, atol=1e-6)
        for name, want in grads.items():
            np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("case", MODELS)
def test_a_pir_model_compiles_runs_and_converts_back_to_pir(case, tmp_path):
    compiled = gradc_cli("compile", PIR_DATA / case / "forward.json", "-o", tmp_path / "train.pb")
    assert compiled.returncode == 0, compiled.stderr
    run_and_compare(tmp_path / "train.pb", PIR_DATA / case, tmp_path / "out.npz")
    converted = gradc_cli("convert", tmp_path / "train.pb", tmp_path / "train.json")
    assert converted.returncode == 0, converted.stderr
    assert json.loads((tmp_path / "train.json").read_text())["base_code"]["magic"] == "pir"
    run_and_compare(tmp_path / "train.json", PIR_DATA / case, tmp_path / "again.npz")


def test_a_legacy_training_program_converts_to_pir_that_gives_its_numbers(tmp_path):
    """gradc convert train.pb train.json keeps the loss's and the gradients' names (Paddle runs such files:
    tools/run_legacy_as_pir_in_paddle.py)."""
    assert gradc_cli("compile", DATA / "mlp" / "forward.pb", "-o", tmp_path / "train.pb").returncode == 0
    converted = gradc_cli("convert", tmp_path / "train.pb", tmp_path / "train.json")
    assert converted.returncode == 0, converted.stderr
    run_and_compare(tmp_path / "train.json", DATA / "mlp", tmp_path / "out.npz")


@pytest.mark.parametrize("case", INFERENCE)
def test_an_inference_model_runs_with_its_pdiparams(case, tmp_path):
    model = PIR_DATA / case
    ran = gradc_cli("run", model / "model.json", "--params", model / "model.pdiparams", "--feed", model / "feed.npz",
                    "--out", tmp_path / "out.npz")
    assert ran.returncode == 0, ran.stderr
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out[out.files[0]], np.load(model / "expected.npy"), rtol=1e-5, atol=1e-6)


def mangled(text: str) -> dict[str, str]:
    def edited(change) -> str:
        program = json.loads(text)
        change(program, program["program"]["regions"][0]["blocks"][0]["ops"])
        return json.dumps(program)

    def rename(ops, old, new):
        for op in ops:
            op["#"] = new if op["#"] == old else op["#"]

    return {"truncated.json": text[: len(text) // 2],
            "version.json": edited(lambda program, ops: program["base_code"].update(version=99)),
            "dangling.json": edited(lambda program, ops: next(op for op in ops if op["#"] == "1.relu").update(
                I=[{"%": 9999}])),
            "unmapped.json": edited(lambda program, ops: (rename(ops, "1.relu", "1.no_such_op"),
                                                          rename(ops, "1.mean", "1.another_op")))}


@pytest.mark.parametrize(("name", "phrases"), [
    ("truncated.json", ["truncated.json"]), ("version.json", ["version 99"]),
    ("dangling.json", ["9999", "pd_op.relu"]),
    ("unmapped.json", ["pd_op.another_op", "pd_op.no_such_op"])])
def test_bad_pir_files_fail_in_one_line(name, phrases, tmp_path):
    (tmp_path / name).write_text(mangled((PIR_DATA / "mlp" / "forward.json").read_text())[name])
    for command in (["compile", tmp_path / name, "-o", tmp_path / "out.pb"], ["run", tmp_path / name]):
        failed = gradc_cli(*command)
        lines = failed.stderr.strip().splitlines()
        assert failed.returncode == 1 and len(lines) == 1 and lines[0].startswith("gradc: error: "), failed.stderr
        assert all(phrase in lines[0] for phrase in phrases), lines[0]
    assert not (tmp_path / "out.pb").exists()

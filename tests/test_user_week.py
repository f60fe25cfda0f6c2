"""A Paddle 3 user's week (docs/tools.md, 'A Paddle 3 user's week'): each fault found, as the behaviour it has now."""

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA

MLP = DATA / "mlp"


def _export(directory, *inputs):
    return gradc_cli("export", MLP / "forward.pb", "--params", MLP / "params.npz", *inputs, "--fetch", "fc_1.tmp_1",
                     "-o", directory / "model")


def _usage_error(done) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradc: error: "), done.stderr
    return lines[0]


def test_export_names_its_inputs_with_input_and_the_export_runs(tmp_path):
    """Before, export's --feed took var names where run, train and check take an .npz of values: --input now."""
    done = _export(tmp_path, "--input", "x")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "(inputs x; fetches fc_1.tmp_1)" in done.stdout
    program = gradc.load(tmp_path / "model.pdmodel")
    assert [op.output("Out") for op in program.global_block.ops if op.type == "feed"] == [["x"]]
    with np.load(MLP / "feed.npz") as feed:
        np.savez(tmp_path / "x.npz", x=feed["x"])
    ran = gradc_cli("run", tmp_path / "model.pdmodel", "--params", tmp_path / "model.pdiparams",
                    "--feed", tmp_path / "x.npz")
    assert ran.returncode == 0 and "fc_1.tmp_1: float32[32, 10]" in ran.stdout, ran.stdout + ran.stderr


def test_export_feed_name_still_works_with_a_one_line_note(tmp_path):
    (tmp_path / "new").mkdir(), (tmp_path / "old").mkdir()
    assert _export(tmp_path / "new", "--input", "x").returncode == 0
    done = _export(tmp_path / "old", "--feed", "x")
    assert done.returncode == 0
    assert done.stderr.strip().splitlines() == [
        "gradc: warning: export's --feed NAME is now --input NAME (--feed x still works; --feed takes an .npz in run, "
        "train and check)"]
    for name in ("model.pdmodel", "model.pdiparams"):
        assert (tmp_path / "old" / name).read_bytes() == (tmp_path / "new" / name).read_bytes()


def test_export_feed_of_an_npz_file_says_to_name_its_arrays_with_input(tmp_path):
    line = _usage_error(_export(tmp_path, "--feed", MLP / "feed.npz"))
    assert "export names the model's inputs, not a file of their values: for its arrays, --input x --input label" \
           in line, line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("inputs, said", [
    ((), "Missing option '--input' (the model's input var names; gradc info lists them)"),
    (("--input", "x", "--feed", "x"), "give the model's inputs with --input alone (--feed is its old spelling)"),
])
def test_export_without_inputs_or_with_both_spellings_is_a_usage_error(tmp_path, inputs, said):
    assert said in _usage_error(_export(tmp_path, *inputs))


def test_memory_counts_a_saved_models_fed_inputs_as_inputs(tmp_path):
    """Before, `gradc show --memory` of a .pdmodel said 'fed inputs 24 B' for a ResNet fed 36 KiB of images: a var
    a feed op writes was counted as a temporary, and only the labels --add-loss declares (no feed op) as fed."""
    from gradc.memory import estimate
    assert _export(tmp_path, "--input", "x").returncode == 0
    saved = gradc.load(tmp_path / "model.pdmodel")
    assert [op.type for op in saved.global_block.ops][0] == "feed"
    assert saved.global_block.var("x").shape == [32, 16]
    assert estimate(saved, batch_size=8)[0].inputs == 32 * 16 * 4   # x, float32
    assert estimate(gradc.load(MLP / "forward.pb"), batch_size=8)[0].inputs == 32 * 16 * 4 + 32 * 8   # x and label

"""PCK normalised by a size of the data's (`--pck T*SIZE`): MPII's PCKh@0.5 counts a keypoint within half its
example's head segment, PCK@0.2 within a fifth of its box. Only absolute distances were taken (`--pck T`, pixels), so
a set of people of several sizes could not be scored as pose papers score it. Checked against numpy's count on week
54's SimpleBaseline (its flip-TTA program and Paddle's trained weights)."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

META = json.loads((DATA / "user_week54" / "meta.json").read_text())


@pytest.fixture(scope="module")
def posed(tmp_path_factory):
    """The held-out set with a size an example and one a keypoint beside it; the program's coordinates of it."""
    out = unpacked(DATA / "user_week54", tmp_path_factory.mktemp("pck"), ("simplebaseline",))
    test = dict(np.load(out / "test.npz"))
    rng = np.random.default_rng(5)
    test["head"] = rng.uniform(1, 6, size=len(test["image"])).astype(np.float32)
    test["box"] = rng.uniform(2, 9, size=test["keypoints"].shape[:2]).astype(np.float32)
    np.savez(out / "sized.npz", **test)
    coords = np.load(out / "simplebaseline" / "flip_outputs.npz")["coords"].astype(np.float64)
    return out, test, np.linalg.norm(coords - test["keypoints"], axis=-1)


def _evaluate(folder, *extra):
    spec = f"{META['flip_test']['coords']},keypoints,target_weight"
    return gradc_cli("evaluate", folder / "simplebaseline" / "infer.pb", "--params",
                     folder / "simplebaseline" / "trained.npz", "--data", folder / "sized.npz", "--keypoints", spec,
                     "--json", *extra)


@pytest.mark.parametrize("batch", [3, 8])
def test_pck_of_a_share_of_each_examples_size(posed, batch):
    folder, test, distances = posed
    run = _evaluate(folder, "--pck", "0.5*head", "--pck", "0.2*box", "--pck", 2, "--batch-size", batch)
    assert run.returncode == 0, run.stderr
    result, visible = json.loads(run.stdout), test["target_weight"].reshape(distances.shape) > 0
    head = np.broadcast_to(test["head"][:, None].astype(np.float64), distances.shape)
    box = test["box"].astype(np.float64)
    assert result["pck@0.5*head"] == pytest.approx(np.mean((distances <= 0.5 * head)[visible]), abs=1e-12)
    assert result["pck@0.2*box"] == pytest.approx(np.mean((distances <= 0.2 * box)[visible]), abs=1e-12)
    assert result["pck@2"] == pytest.approx(np.mean(distances[visible] <= 2), abs=1e-12)
    assert result["pck@0.5*head"] != pytest.approx(result["pck@0.2*box"])   # the sizes are read, not ignored


@pytest.mark.parametrize("pck, says, code", [
    ("0.5*", "'0.5*': give T or T*SIZE", 2), ("-1", "'-1': give T or T*SIZE", 2), ("nan*head", "give T or T*SIZE", 2),
    ("0.5*shoulders", "the data has no array 'shoulders'", 1),
    ("0.5*image", "the sizes 'image' [8, 1, 32, 32] are not a length of 0 or more for each of the 8 examples", 1)])
def test_a_bad_pck_size_is_one_line(posed, pck, says, code):
    run = _evaluate(posed[0], "--pck", pck)
    assert run.returncode == code and says in run.stderr and run.stderr.count("\n") == 1, run.stderr

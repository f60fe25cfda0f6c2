"""tools/real_models.py's gradc step (the Paddle step needs Paddle): on two shipped inference models it verifies,
runs, and writes the fine-tuning program and gradients that Paddle then runs (docs/real-models.md)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import gradc
import gradc.io.pdiparams
from fixtures import DATA

TOOL = Path(__file__).parent.parent / "tools" / "real_models.py"


def test_gradc_step_runs_and_compiles_each_model(tmp_path):
    for case in ("inference", "inference_finetune"):
        shutil.copy(DATA / case / "model.pdmodel", tmp_path / f"{case}.pdmodel")
    result = subprocess.run([sys.executable, str(TOOL), "gradc", str(tmp_path)], capture_output=True, text=True,
                            env={"PYTHONPATH": str(Path(gradc.__file__).parent.parent), "DIM": "6"})
    assert result.returncode == 0, result.stderr
    reports = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert sorted(reports) == ["inference.pdmodel", "inference_finetune.pdmodel"]
    for name, report in reports.items():
        report = json.loads(report)
        assert report["problems"] == [] and report["grads"] > 0, (name, report)
        check = tmp_path / f"{name}.check"
        program = gradc.load(check / "train.pb")
        with np.load(check / "grads.npz") as grads:
            assert len(grads.files) == report["grads"] + 1 and np.isfinite(grads["loss"])
        assert any(op.type.endswith("_grad") for op in program.global_block.ops)


def pir_model_step(tmp_path, **env) -> tuple[Path, str]:
    """The gradc step on the PIR fixture's model saved as Paddle 3 saves it (inference.json, inference.pdiparams)."""
    model = tmp_path / "jit" / "inference.json"
    model.parent.mkdir()
    shutil.copy(DATA / "pir" / "jit" / "model.json", model)
    shutil.copy(DATA / "pir" / "jit" / "model.pdiparams", model.with_suffix(".pdiparams"))
    result = subprocess.run([sys.executable, str(TOOL), "gradc", str(tmp_path)], capture_output=True, text=True,
                            env={"PYTHONPATH": str(Path(gradc.__file__).parent.parent), "DIM": "6", **env})
    assert result.returncode == 0, result.stderr
    return model, result.stdout


def test_gradc_step_on_a_pir_model_takes_its_saved_parameters_and_writes_a_pir_training_program(tmp_path):
    """The step runs the model with the parameters saved beside it, weighs the logits of its softmax output, and
    writes train.json (PIR), which Paddle's own loader reads."""
    model, stdout = pir_model_step(tmp_path)
    name, report = stdout.strip().split(" ", 1)
    assert name == "jit/inference.json" and json.loads(report)["problems"] == []
    check = tmp_path / "jit" / "inference.json.check"
    forward = gradc.load(model)
    saved = gradc.io.pdiparams.read_params(model.with_suffix(".pdiparams"), forward)
    with np.load(check / "params.npz") as params:
        assert sorted(params.files) == sorted(saved)
        for name, value in saved.items():
            np.testing.assert_array_equal(params[name], value)
    train = gradc.load(check / "train.json")
    (weighted,) = [op for op in train.global_block.ops if op.type == "elementwise_mul" and op.input("Y") == ["loss_w"]]
    (softmax,) = [op for op in forward.global_block.ops if op.type == "softmax"]
    assert weighted.input("X") == softmax.input("X")
    fetched = [op.input("X")[0] for op in train.global_block.ops if op.type == "fetch"]
    with np.load(check / "grads.npz") as grads:
        assert set(grads.files) <= set(fetched) and np.isfinite(grads["loss"])
        assert len(grads.files) == json.loads(report)["grads"] + 1 > 1


def test_calibrate_makes_batch_norms_running_statistics_those_of_the_input(tmp_path):
    """With CALIBRATE set, each batch norm's Mean and Variance are its input's per-channel mean and variance."""
    model, _ = pir_model_step(tmp_path, CALIBRATE="1")
    check = model.parent / "inference.json.check"
    program = gradc.load(model)
    (norm,) = [op for op in program.global_block.ops if op.type == "batch_norm"]
    scope = gradc.Scope()
    with np.load(check / "params.npz") as params, np.load(check / "feed.npz") as feed:
        for name in params.files:
            scope[name] = params[name]
        (x,) = gradc.Executor().run(program, dict(feed), norm.input("X"), scope)
        np.testing.assert_allclose(params[norm.input("Mean")[0]], x.mean(axis=(0, 2, 3)), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(params[norm.input("Variance")[0]], x.var(axis=(0, 2, 3)), rtol=1e-4, atol=1e-6)


def test_float64_writes_the_training_program_widened_and_its_gradients(tmp_path):
    """With FLOAT64 set, the step also writes train64 (every float32 var float64) and gradc's float64 gradients, for
    Paddle to run where float32 rounding decides a comparison."""
    model, _ = pir_model_step(tmp_path, FLOAT64="1")
    check = model.parent / "inference.json.check"
    wide = gradc.load(check / "train64.json")
    assert not [name for name, var in wide.global_block.vars.items() if var.dtype == gradc.VarType.FP32]
    with np.load(check / "grads.npz") as narrow, np.load(check / "grads64.npz") as grads:
        assert sorted(narrow.files) == sorted(grads.files)
        for name in grads.files:
            assert grads[name].dtype == np.float64
            np.testing.assert_allclose(narrow[name], grads[name], rtol=1e-3, atol=1e-6)


def test_a_gradient_zero_but_for_rounding_is_judged_against_the_models_largest():
    """An attention key's bias has a gradient of 1e-19 in both runs (softmax cancels it): its difference is measured
    against 100 ulps of the model's largest gradient, not against itself; any other gradient against itself."""
    sys.path.insert(0, str(TOOL.parent))
    from real_models import _worst
    grads = {"w@GRAD": np.array([0.5, -0.2]), "key_bias@GRAD": np.array([3e-19, -1e-19])}
    assert _worst({"w@GRAD": grads["w@GRAD"], "key_bias@GRAD": np.array([-2e-19, 5e-20])}, grads)[0] < 1e-4
    worst, name = _worst({"w@GRAD": np.array([0.5, -0.21]), "key_bias@GRAD": grads["key_bias@GRAD"]}, grads)
    assert name == "w@GRAD" and abs(worst - 0.02) < 1e-12
    worst, name = _worst({"w@GRAD": grads["w@GRAD"], "key_bias@GRAD": np.array([1e-3, 0.0])}, grads)
    assert name == "key_bias@GRAD" and np.isclose(worst, 1e-3 / (100 * np.finfo(np.float64).eps * 0.5))
    single = {name: grad.astype(np.float32) for name, grad in grads.items()}
    assert type(_worst(single, single)[0]) is float   # the report is JSON


def test_a_detectors_im_shape_is_its_images_size_and_its_scale_factor_one():
    """PaddleDetection's exports take image, im_shape and scale_factor: the step feeds the image's height and width
    and a scale of 1 (random values would clip boxes to a negative image), in each input's declared shape and dtype;
    a model without an image keeps its random inputs."""
    sys.path.insert(0, str(TOOL.parent))
    from real_models_inputs import detector_feed
    feed = {"image": np.zeros((2, 3, 40, 24), np.float32), "im_shape": np.full((2, 2), -0.5, np.float32),
            "scale_factor": np.full((2, 2), 0.3, np.float64)}
    fed = detector_feed(feed)
    np.testing.assert_array_equal(fed["im_shape"], [[40, 24], [40, 24]])
    np.testing.assert_array_equal(fed["scale_factor"], np.ones((2, 2)))
    assert fed["im_shape"].dtype == np.float32 and fed["scale_factor"].dtype == np.float64
    assert fed["image"] is feed["image"]
    other = {"x": np.zeros((1, 3, 8, 8)), "im_shape": np.full((1, 2), -0.5)}
    assert detector_feed(other)["im_shape"][0, 0] == -0.5


def test_a_detector_after_nms_is_trained_on_the_boxes_its_nms_selects_from(tmp_path):
    """An NMS's selection has no gradient: the loss weighs the boxes the NMS upstream of the output selects from,
    whose values are saved
    (loss_input.npz) and fetched by the training program, for Paddle's run to compare too."""
    from programs import Net
    net = Net("float32")
    boxes, scores, w = net.data("boxes", [1, 6, 4]), net.data("scores", [1, 2, 6]), net.param("w", [4])
    scaled = net.elementwise_mul(boxes, w, axis=-1)
    out = net.op("multiclass_nms3", {"BBoxes": scaled, "Scores": scores},
                 {"score_threshold": -1.0, "nms_top_k": -1, "keep_top_k": 10, "nms_threshold": 0.5,
                  "normalized": True, "nms_eta": 1.0, "background_label": -1})
    block = net.block
    block.create_var("feed", None, None).type = gradc.VarType.FEED_MINIBATCH
    block.create_var("fetch", None, None).type = gradc.VarType.FETCH_LIST
    for col, name in enumerate(("boxes", "scores")):
        block.ops.insert(col, gradc.OpDesc("feed", {"X": ["feed"]}, {"Out": [name]}, {"col": col}))
    scaled_out = net.scale(out, scale=2.0, bias=0.0, bias_after_scale=True)   # an R-CNN scales its selection
    block.append_op("fetch", {"X": [scaled_out]}, {"Out": ["fetch"]}, {"col": 0})
    gradc.save(net.program, tmp_path / "nms.pdmodel")
    result = subprocess.run([sys.executable, str(TOOL), "gradc", str(tmp_path)], capture_output=True, text=True,
                            env={"PYTHONPATH": str(Path(gradc.__file__).parent.parent)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.split(" ", 1)[1]).get("grads") == 1, result.stdout
    check = tmp_path / "nms.pdmodel.check"
    train = gradc.load(check / "train.pb")
    (weighted,) = [op for op in train.global_block.ops if op.type == "elementwise_mul" and op.input("Y") == ["loss_w"]]
    assert weighted.input("X") == [scaled]
    with np.load(check / "feed.npz") as feed, np.load(check / "params.npz") as params, \
            np.load(check / "loss_input.npz") as loss_input, np.load(check / "grads.npz") as grads:
        np.testing.assert_allclose(loss_input[scaled], feed["boxes"] * params["w"], rtol=1e-6)
        weight = np.load(check / "loss_w.npy")
        expected = (feed["boxes"] * weight).sum(axis=(0, 1)) / weight.size
        np.testing.assert_allclose(grads["w@GRAD"], expected, rtol=1e-5, atol=1e-7)


def _embedding_model(path: Path) -> None:
    """A legacy program feeding int64 ids [1, 8] to an embedding of 100 rows, fetching the rows."""
    from programs import Net
    net = Net("float32")
    ids, table = net.data("ids", [1, 8], gradc.VarType.INT64), net.param("table", [100, 4])
    rows = net.op("lookup_table_v2", {"Ids": ids, "W": table})
    block = net.block
    block.create_var("feed", None, None).type = gradc.VarType.FEED_MINIBATCH
    block.create_var("fetch", None, None).type = gradc.VarType.FETCH_LIST
    block.ops.insert(0, gradc.OpDesc("feed", {"X": ["feed"]}, {"Out": [ids]}, {"col": 0}))
    block.append_op("fetch", {"X": [rows]}, {"Out": ["fetch"]}, {"col": 0})
    gradc.save(net.program, path)


def test_int_bound_feeds_token_ids_random_below_it_and_all_ones_without(tmp_path):
    for bound, folder in ((None, "ones"), ("100", "ids")):
        (tmp_path / folder).mkdir()
        _embedding_model(tmp_path / folder / "embedding.pdmodel")
        env = {"PYTHONPATH": str(Path(gradc.__file__).parent.parent), **({"INT_BOUND": bound} if bound else {})}
        result = subprocess.run([sys.executable, str(TOOL), "gradc", str(tmp_path / folder)], capture_output=True,
                                text=True, env=env)
        assert result.returncode == 0, result.stderr
        with np.load(tmp_path / folder / "embedding.pdmodel.check" / "feed.npz") as feed:
            ids = feed["ids"]
        assert ids.dtype == np.int64 and ids.shape == (1, 8)
        if bound:
            assert ids.min() >= 1 and ids.max() < 100 and len(np.unique(ids)) > 1
        else:
            assert (ids == 1).all()

"""A deployment engineer's week (docs/tools.md): a model with two inputs (an image and int64 tokens), batch norm
and dropout, fine-tuned in gradc with Adam and exported for Paddle 3.3.1's inference stack
(tools/paddle_user_week6.py: Paddle's own save_inference_model of the model and its Predictor's outputs); each
fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.training import read_values

WEEK = DATA / "user_week6"
PADDLE_EXPORT = WEEK / "paddle_export" / "model"
DATA_NPZ = dict(np.load(WEEK / "data.npz"))
PREDICTOR = dict(np.load(WEEK / "predictor.npz"))
OUTPUTS = ("linear_0.tmp_1", "softmax_0.tmp_0")   # the logits and their softmax
ROLES = ["--input", "img", "--input", "tokens", "--fetch", OUTPUTS[0], "--fetch", OUTPUTS[1]]


def _compiled_with_adam(tmp_path):
    done = gradc_cli("compile", WEEK / "main.pb", "--optimizer", "adam", "--lr", "0.01", "-o", tmp_path / "train.pb")
    assert done.returncode == 0, done.stderr
    return tmp_path / "train.pb"


def _pir_data_ops(path) -> list[str]:
    """The names of a PIR file's pd_op.data ops, in the order of the program (Paddle's Predictor's input order)."""
    ops = json.loads(path.read_text())["program"]["regions"][0]["blocks"][0]["ops"]
    return [attr["AT"]["D"] for op in ops if op["#"] == "1.data" for attr in op["A"] if attr["N"] == "name"]


@pytest.mark.parametrize("suffix", [".pdmodel", ".json"])
def test_an_adam_training_programs_export_is_paddles_export_and_gives_its_predictors_outputs(tmp_path, suffix):
    """Exported from the training program with Paddle's initial values, the parameter file is Paddle's own
    save_inference_model's, byte for byte (no optimizer state), and the model runs at batch 1 and 7 to the
    Predictor's outputs of Paddle's export."""
    train = _compiled_with_adam(tmp_path)
    done = gradc_cli("export", train, "--params", f"{PADDLE_EXPORT}.pdiparams", *ROLES, "-o", tmp_path / f"m{suffix}")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "m.pdiparams").read_bytes() == PADDLE_EXPORT.with_suffix(".pdiparams").read_bytes()
    model = gradc.load(tmp_path / f"m{suffix}")
    assert not any(op.type.endswith("_grad") or op.type == "adam" for op in model.global_block.ops)
    params = read_values(tmp_path / "m.pdiparams", model)
    for size in ("1", "7"):
        scope = gradc.Scope()
        scope.vars.update(params)
        feed = {"img": DATA_NPZ[f"img{size}"], "tokens": DATA_NPZ[f"tokens{size}"]}
        logits, probs = gradc.Executor().run(model, feed=feed, fetch_list=list(OUTPUTS), scope=scope)
        np.testing.assert_allclose(logits, PREDICTOR[f"logits{size}"], atol=2e-6)
        np.testing.assert_allclose(probs, PREDICTOR[f"probs{size}"], atol=2e-6)


@pytest.mark.parametrize("inputs", [["img", "tokens"], ["tokens", "img"]])
def test_a_pir_export_gives_its_inputs_to_paddle_in_the_order_given(tmp_path, inputs):
    """Paddle's Predictor names a PIR model's inputs in the order of its data ops: they were written last input
    first (as the legacy feed ops are, which Paddle orders by their column), so predictor.run([img, tokens]) fed the
    image to the tokens."""
    roles = [word for name in inputs for word in ("--input", name)] + ["--fetch", OUTPUTS[0]]
    done = gradc_cli("export", WEEK / "main.pb", "--startup", WEEK / "startup.pb", *roles, "-o", tmp_path / "m.json")
    assert done.returncode == 0, done.stderr
    assert _pir_data_ops(tmp_path / "m.json") == inputs
    done = gradc_cli("convert", f"{PADDLE_EXPORT}.pdmodel", tmp_path / "converted.json")
    assert done.returncode == 0, done.stderr
    assert _pir_data_ops(tmp_path / "converted.json") == ["img", "tokens"]


def test_info_lists_a_saved_models_inputs_and_outputs_in_paddles_order():
    """save_inference_model writes the feed ops last column first: info listed the inputs as tokens, img, where
    the Predictor's get_input_names() is img, tokens."""
    done = gradc_cli("info", f"{PADDLE_EXPORT}.pdmodel", "--json")
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert [var["name"] for var in facts["inputs"]] == ["img", "tokens"]
    assert [var["name"] for var in facts["outputs"]] == list(OUTPUTS)


def test_export_makes_the_prefix_directory_as_paddle_does(tmp_path):
    """save_inference_model("deploy/v1/model", ...) makes deploy/v1; gradc export said "no such directory"."""
    prefix = tmp_path / "deploy" / "v1" / "model"
    done = gradc_cli("export", WEEK / "main.pb", "--params", f"{PADDLE_EXPORT}.pdiparams", *ROLES, "-o", prefix)
    assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in prefix.parent.iterdir()) == ["model.pdiparams", "model.pdmodel"]
    refused = gradc_cli("export", WEEK / "main.pb", "--params", f"{PADDLE_EXPORT}.pdiparams", "--input", "img",
                        "--fetch", OUTPUTS[0], "-o", tmp_path / "other" / "model")
    assert refused.returncode == 1 and "--input tokens" in refused.stderr
    assert not (tmp_path / "other").exists()   # a refused export leaves no empty directory behind
    (tmp_path / "afile").write_text("")
    blocked = gradc_cli("export", WEEK / "main.pb", "--params", f"{PADDLE_EXPORT}.pdiparams", *ROLES,
                        "-o", tmp_path / "afile" / "model")
    assert blocked.returncode == 1
    assert blocked.stderr.strip().splitlines() == [f"gradc: error: cannot export into '{tmp_path / 'afile'}': a file "
                                                   f"of that name is on the path"]


@pytest.mark.parametrize("suffix", [".pdmodel", ".json"])
def test_export_names_the_inputs_and_outputs_paddle_sees(tmp_path, suffix):
    """--input NAME=NEW, --fetch NAME=NEW: the Predictor's get_input_names() / get_output_names() are the new
    names (Paddle 3.3.1 checked: image, tokens; logits, probs), with the outputs of the unrenamed export."""
    roles = ["--input", "img=image", "--input", "tokens", "--fetch", f"{OUTPUTS[0]}=logits", "--fetch",
             f"{OUTPUTS[1]}=probs"]
    done = gradc_cli("export", WEEK / "main.pb", "--params", f"{PADDLE_EXPORT}.pdiparams", *roles,
                     "-o", tmp_path / f"m{suffix}")
    assert done.returncode == 0, done.stderr
    assert "inputs img as image, tokens; fetches linear_0.tmp_1 as logits, softmax_0.tmp_0 as probs" in done.stdout
    facts = json.loads(gradc_cli("info", tmp_path / f"m{suffix}", "--json").stdout)
    assert [var["name"] for var in facts["inputs"]] == ["image", "tokens"]
    assert [var["name"] for var in facts["outputs"]] == ["logits", "probs"]
    assert (tmp_path / "m.pdiparams").read_bytes() == PADDLE_EXPORT.with_suffix(".pdiparams").read_bytes()
    model = gradc.load(tmp_path / f"m{suffix}")
    scope = gradc.Scope()
    scope.vars.update(read_values(tmp_path / "m.pdiparams", model))
    logits, probs = gradc.Executor().run(model, feed={"image": DATA_NPZ["img7"], "tokens": DATA_NPZ["tokens7"]},
                                         fetch_list=["logits", "probs"], scope=scope)
    np.testing.assert_allclose(logits, PREDICTOR["logits7"], atol=2e-6)
    np.testing.assert_allclose(probs, PREDICTOR["probs7"], atol=2e-6)


def test_renaming_in_python_swaps_names_and_refuses_a_parameter_or_a_taken_name(tmp_path):
    main, values = gradc.load(WEEK / "main.pb"), read_values(f"{PADDLE_EXPORT}.pdiparams", gradc.load(WEEK / "main.pb"))
    gradc.export(main, tmp_path / "swapped", ["img", "tokens"], OUTPUTS, values=values, format="pir",
                 rename={OUTPUTS[0]: OUTPUTS[1], OUTPUTS[1]: OUTPUTS[0]})
    model = gradc.load(tmp_path / "swapped.json")
    assert [op.input("X")[0] for op in model.global_block.ops if op.type == "fetch"] == [OUTPUTS[1], OUTPUTS[0]]
    with pytest.raises(gradc.GradcError, match="cannot rename 'conv2d_0.w_0': it is a parameter"):
        gradc.export(main, tmp_path / "p", ["img"], ["conv2d_0.w_0"], values=values, rename={"conv2d_0.w_0": "w"})
    with pytest.raises(gradc.GradcError, match="cannot rename 'img' to 'tokens': the model has a var of that name"):
        gradc.export(main, tmp_path / "t", ["img", "tokens"], OUTPUTS, values=values, rename={"img": "tokens"})
    with pytest.raises(gradc.GradcError, match="cannot rename 'label': only an input or a fetch"):
        gradc.export(main, tmp_path / "l", ["img", "tokens"], OUTPUTS, values=values, rename={"label": "y"})

"""A recurrent-tagger engineer's week (docs/tools.md): a 2-layer BiGRU tagger (nn.GRU direction="bidirect" given the
lengths) and a Transformer-encoder tagger (nn.TransformerEncoder with a padding mask, positional embeddings), each
trained by AdamW with ClipGradByGlobalNorm on a token-level masked cross-entropy, built with Paddle 3.3.1's layers
(tools/paddle_user_week33.py); the GRU's flat weight buffer (gru_0.w_0) across save and load between gradc and
Paddle, and the tagger's PIR export; each fault found, as the behaviour it has now."""

import json
import pickle

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week33"
META = json.loads((WEEK / "meta.json").read_text())
ADAMW = ("--optimizer", "adamw", "--lr", 0.01, "--weight-decay", 0.01, "--clip-global-norm", 1.0)
KEY_BIASES = ("linear_1.b_0", "linear_7.b_0")   # the encoder layers' key projections' biases


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files as the user has them, each tagger compiled with AdamW and the clip."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week33"))
    for model in ("gru", "transformer", "gru_dropout"):
        compiled = gradc_cli("compile", out / f"{model}.pb", "-o", out / f"{model}_adamw.pb", *ADAMW)
        assert compiled.returncode == 0, compiled.stderr
        (out / f"{model}_compile.stderr").write_text(compiled.stderr)
    return out


def _train(files, model, *params, save="trained.npz", seeding=()):
    """gradc train of the compiled tagger, 4 steps of 4 sentences: its losses."""
    start = [arg for path in params for arg in ("--params", path)] or [
        "--startup", files / f"{model}_startup.pb", "--startup", files / f"{model}_adamw.startup.pb"]
    run = gradc_cli("train", files / f"{model}_adamw.pb", *start, "--data", files / "data.npz", "--batch-size", 4,
                    "--json", "--log-every", 1, "--save-params", files / save, *seeding)
    assert run.returncode == 0, run.stderr
    steps = [line for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "step"]
    return [step["values"][META[model]["loss"]] for step in steps]


def test_gru_tagger_trains_to_paddles_steps_and_saves_the_flat_buffer_paddle_holds(files):
    """The BiGRU tagger's 4 AdamW steps give Paddle's losses to 7.8e-8 relative and its parameters to 8.0e-7. Before,
    --save-params left gru_0.w_0 out (Paddle's buffer, sharing its cells' memory, holds their trained values); now it
    is written rebuilt from the trained cells, Paddle's trained buffer to 8.0e-7."""
    losses = _train(files, "gru")
    np.testing.assert_allclose(losses, META["gru"]["losses"], rtol=5e-7)
    paddle, saved = np.load(files / "gru_trained.npz"), np.load(files / "trained.npz")
    assert sorted(saved.files) == sorted(paddle.files) and "gru_0.w_0" in saved.files
    for name in paddle.files:
        np.testing.assert_allclose(saved[name], paddle[name], atol=2e-6, err_msg=name)


def test_compile_says_the_flat_buffer_is_rebuilt_not_that_it_will_not_train(files):
    """Before, compile warned "parameters that get no gradient and will not train: 1 (gru_0.w_0): the loss does not
    depend on it", though it trains with its cells in Paddle; now one note says what it is and what gradc does."""
    stderr = (files / "gru_compile.stderr").read_text()
    assert "will not train" not in stderr
    assert ("gradc: note: RNN flat weight buffers, which no op reads, get no gradient: gru_0.w_0; in Paddle they "
            "share their cells' memory and train with them: saved parameters hold them rebuilt") in stderr


def test_info_counts_the_flat_buffers_values_once(files):
    """Before, gradc info said "parameters: 20 (4,469 values)": the buffer's 2,112 values counted beside the cells'
    they repeat (Paddle's dygraph GRU lists 16 parameters of 2,112 values, no buffer). Now 2,357, the buffer named."""
    shown = gradc_cli("info", files / "gru.pb")
    assert shown.returncode == 0, shown.stderr
    assert ("parameters: 20 (2,357 values; RNN flat buffers repeating their cells' values: gru_0.w_0 2,112)"
            in shown.stdout.splitlines())
    facts = json.loads(gradc_cli("info", files / "gru.pb", "--json").stdout)
    assert facts["parameter_values"] == 2357 and facts["flat_buffers"] == {"gru_0.w_0": 2112}


def test_gradc_pdparams_and_pdopt_hold_what_paddle_static_load_asks_for(files):
    """paddle.static.load of Paddle's training program asks for every persistable it has, by name. Before, gradc's
    .pdparams lacked gru_0.w_0 ("Cannot find [gru_0.w_0] in model file") and its .pdopt named the learning rate
    gru's first parameter's (embedding_0.w_0_learning_rate_0: the untrained buffer made the optimizer look partial),
    so Paddle could load neither ("Can not find [learning_rate_0]"). Now both hold Paddle's names, the buffer its
    cells' values: Paddle, given them, computes gradc's trained loss (1.45524, checked once by hand)."""
    _train(files, "gru", save="gradc.pdparams")
    _train(files, "gru", save="gradc.pdopt")
    _train(files, "gru", save="gradc_trained.npz")   # its own: under xdist trained.npz's writer may run elsewhere
    for suffix in (".pdparams", ".pdopt"):
        with open(files / f"gru{suffix}", "rb") as paddles, open(files / f"gradc{suffix}", "rb") as gradcs:
            paddle, saved = pickle.load(paddles), pickle.load(gradcs)
        assert sorted(saved) == sorted(paddle), suffix
    trained = np.load(files / "gradc_trained.npz")
    cells = np.concatenate([trained[name].ravel() for name in META["gru"]["flat_buffers"]["gru_0.w_0"]])
    with open(files / "gradc.pdparams", "rb") as handle:
        np.testing.assert_array_equal(pickle.load(handle)["gru_0.w_0"], cells)


def test_paddles_checkpoint_resumes_in_gradc(files):
    """Paddle's paddle.static.save pair after the 4 steps, given as --params gru.pdparams --params gru.pdopt, resumes:
    the same 4 steps again give Paddle's losses to 1e-7 relative and its flat buffer, Linear and Embedding to 6e-8.
    Before, --params was not repeatable (the last given was loaded alone, the parameters missing) and the compiled
    program's learning rate was not Paddle's learning_rate_0."""
    losses = _train(files, "gru", files / "gru.pdparams", files / "gru.pdopt", save="resumed.npz")
    np.testing.assert_allclose(losses, META["gru"]["resumed_losses"], rtol=5e-7)
    paddle, saved = np.load(files / "gru_resumed.npz"), np.load(files / "resumed.npz")
    for name in paddle.files:
        np.testing.assert_allclose(saved[name], paddle[name], atol=5e-7, err_msg=name)


def test_paddles_training_program_runs_from_paddles_checkpoint_pair(files):
    """gradc run of Paddle's own training program (its AdamW step included) with --params gru.pdparams --params
    gru.pdopt on the 16 sentences: Paddle's loss of its trained tagger, 1.4552351, to 1e-7. Before, the second
    --params replaced the first, silently, and the run stopped: "no value for the persistable var(s) embedding_0.w_0,
    ... (19 in all)"."""
    ran = gradc_cli("run", files / "gru_train.pb", "--params", files / "gru.pdparams", "--params", files / "gru.pdopt",
                    "--feed", files / "data.npz", "--fetch", META["gru"]["loss"], "--json")
    assert ran.returncode == 0, ran.stderr
    (fetched,) = json.loads(ran.stdout)["fetched"]
    np.testing.assert_allclose(fetched["value"], np.load(files / "paddle_gru.npz")["loss"], rtol=1e-7)


def test_transformer_tagger_trains_to_paddles_steps(files):
    """The Transformer-encoder tagger (Paddle's dropout 0.1, its ops seeded by the program) gives Paddle's 4 losses to
    7.0e-8 relative and its 36 parameters to 3.1e-7, but for the key projections' biases: softmax ignores a shift of
    every key's score, so their gradient is 0 but for rounding (1e-9, the query biases' 0.02) and AdamW's steps of
    it, 4.2e-3 apart, are the rounding's. evaluate (dropout off) gives Paddle's test-mode loss (no fault)."""
    losses = _train(files, "transformer")
    np.testing.assert_allclose(losses, META["transformer"]["losses"], rtol=5e-7)
    paddle, saved = np.load(files / "transformer_trained.npz"), np.load(files / "trained.npz")
    assert sorted(saved.files) == sorted(paddle.files) and len(paddle.files) == 36
    for name in paddle.files:
        np.testing.assert_allclose(saved[name], paddle[name], atol=1e-2 if name in KEY_BIASES else 2e-6,
                                   err_msg=name)
    assert "note" not in (files / "transformer_compile.stderr").read_text()
    scored = gradc_cli("evaluate", files / "transformer.pb", "--params", files / "transformer_trained.npz", "--data",
                       files / "data.npz", "--batch-size", 16, "--json")
    assert scored.returncode == 0, scored.stderr
    np.testing.assert_allclose(json.loads(scored.stdout)["loss"], np.load(files / "paddle_transformer.npz")["loss"],
                               rtol=1e-6)


def test_gru_with_dropout_between_its_layers_takes_paddles_masks(files):
    """The BiGRU with dropout 0.1 between its layers draws its mask from paddle.seed(5)'s stream (the rnn op has no
    seed of its own): train --seed 5 --paddle-stream gives Paddle's 4 losses to 7.9e-8 relative and its trained flat
    buffer to 1.5e-6; per-step seeding (no --paddle-stream) draws other masks (1.5528 for 1.5587; no fault)."""
    losses = _train(files, "gru_dropout", seeding=("--seed", 5, "--paddle-stream"))
    np.testing.assert_allclose(losses, META["gru_dropout"]["losses"], rtol=5e-7)
    np.testing.assert_allclose(np.load(files / "trained.npz")["gru_0.w_0"],
                               np.load(files / "gru_dropout_trained.npz")["gru_0.w_0"], atol=5e-6)
    assert abs(_train(files, "gru_dropout", seeding=("--seed", 5))[0] - META["gru_dropout"]["losses"][0]) > 1e-3


def test_the_taggers_pir_exports_run_in_gradc(files):
    """Paddle's jit.save of the trained tagger (PIR JSON) run by gradc gives the Predictor's 96 tags exactly, and
    gradc export --format pir of gru.pb on Paddle's saved parameters, run by gradc, gives Paddle's logits to 1.2e-7
    (Paddle's Predictor, given gradc's export, the same: checked once by hand). The inference model holds no flat
    buffer, as Paddle's save_inference_model prunes it."""
    ran = gradc_cli("run", files / "tagger_pir.json", "--params", files / "tagger_pir.pdiparams", "--feed",
                    files / "data.npz", "-o", files / "tags.npz")
    assert ran.returncode == 0, ran.stderr
    np.testing.assert_array_equal(np.load(files / "tags.npz")["fetch_name_0"],
                                  np.load(files / "predictor_pir.npz")["fetch_name_0"])
    exported = gradc_cli("export", files / "gru.pb", "-o", files / "tagger", "--input", "words", "--input",
                         "lengths", "--fetch", META["gru"]["logits"], "--params", files / "gru.pdparams",
                         "--format", "pir")
    assert exported.returncode == 0, exported.stderr
    ran = gradc_cli("run", files / "tagger.json", "--params", files / "tagger.pdiparams", "--feed",
                    files / "data.npz", "-o", files / "logits.npz")
    assert ran.returncode == 0, ran.stderr
    np.testing.assert_allclose(np.load(files / "logits.npz")[META["gru"]["logits"]],
                               np.load(files / "paddle_gru.npz")["logits"], atol=5e-7)
    model = gradc.load(files / "tagger.json")
    assert "gru_0.w_0" not in model.global_block.vars


def test_save_params_rebuilds_the_buffer_from_the_cells_and_leaves_it_out_of_a_pdiparams(files, tmp_path):
    """The buffer written is the cells' values whatever the scope's copy holds (the startup's, which no gradc op
    updates); a .pdiparams, which Paddle reads against its pruned inference model, leaves it out."""
    program = gradc.load(files / "gru_adamw.pb")
    scope = gradc.Scope()
    gradc.load_params(scope, files / "gru.pdparams", program)
    scope["gru_0.w_0"] = np.zeros_like(scope["gru_0.w_0"])
    gradc.save_params(scope, tmp_path / "saved.npz", program)
    np.testing.assert_array_equal(np.load(tmp_path / "saved.npz")["gru_0.w_0"],
                                  np.load(files / "gru_trained.npz")["gru_0.w_0"])
    names = gradc.save_params(scope, tmp_path / "saved.pdiparams", program)
    assert "gru_0.w_0" not in names and len(names) == 19


def test_the_trainers_scope_holds_the_buffer_paddle_holds_after_each_step(files, tmp_path):
    """Before, the trainer's scope kept the startup's gru_0.w_0 while the cells trained (no op reads it), so the
    caller's scope and a checkpoint's arrays held the untrained buffer, 4.0e-2 off Paddle's. Now each step
    rebuilds it from the cells, as Paddle's shared memory holds them: after the 4 AdamW steps it is Paddle's trained
    buffer to 8.0e-7, in the scope and in the checkpoint."""
    trainer = gradc.Trainer(files / "gru_adamw.pb", [files / "gru_startup.pb", files / "gru_adamw.startup.pb"])
    startup = np.array(trainer.scope["gru_0.w_0"])
    trainer.fit(files / "data.npz", batch_size=4, checkpoint_dir=tmp_path / "run")
    paddle = np.load(files / "gru_trained.npz")["gru_0.w_0"]
    assert np.abs(startup - paddle).max() > 1e-2
    np.testing.assert_allclose(trainer.scope["gru_0.w_0"], paddle, atol=2e-6)
    (arrays,) = (tmp_path / "run").glob("checkpoint-*.npz")
    np.testing.assert_allclose(np.load(arrays)["gru_0.w_0"], paddle, atol=2e-6)


def test_train_eval_masks_the_padded_tokens_as_evaluate_does(files, tmp_path):
    """Before, gradc train --eval had no --mask nor --topk: each epoch's evaluation gave the loss alone, and the
    tagger's token accuracy needed gradc evaluate --mask lengths of saved parameters. Now train takes them (the code
    is evaluate's): the epoch's accuracy is what evaluate gives of the parameters that epoch ended with; a --mask
    without --eval is a usage error."""
    run = gradc_cli("train", files / "gru_adamw.pb", "--startup", files / "gru_startup.pb", "--startup",
                    files / "gru_adamw.startup.pb", "--data", files / "data.npz", "--batch-size", 4, "--json",
                    "--eval", files / "data.npz", "--mask", "lengths", "--topk", "1,2", "--save-params",
                    tmp_path / "epoch.npz")
    assert run.returncode == 0, run.stderr
    (epoch,) = [line["eval"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    scored = gradc_cli("evaluate", files / "gru_adamw.pb", "--params", tmp_path / "epoch.npz", "--data",
                       files / "data.npz", "--mask", "lengths", "--topk", "1,2", "--json", "--batch-size", 4)
    assert scored.returncode == 0, scored.stderr
    evaluated = json.loads(scored.stdout)
    assert list(epoch) == [META["gru"]["loss"], "acc_top1", "acc_top2"]
    assert epoch == {name: evaluated[name] for name in epoch}
    assert evaluated["acc_top1"] != evaluated["acc_top2"]
    unmasked = gradc_cli("evaluate", files / "gru_adamw.pb", "--params", tmp_path / "epoch.npz", "--data",
                         files / "data.npz", "--topk", "1,2", "--json")
    assert json.loads(unmasked.stdout)["acc_top1"] != epoch["acc_top1"]
    refused = gradc_cli("train", files / "gru_adamw.pb", "--data", files / "data.npz", "--mask", "lengths")
    assert refused.returncode == 2 and "--mask: only with --eval" in refused.stderr


def test_early_stopping_watches_a_metric_of_the_evaluation(files, tmp_path):
    """--monitor acc_top2 (a metric --topk asks of --eval, higher is better) was refused as "not fetched"; now the run
    keeps the epoch of the highest masked top-2 accuracy."""
    run = gradc_cli("train", files / "gru_adamw.pb", "--startup", files / "gru_startup.pb", "--startup",
                    files / "gru_adamw.startup.pb", "--data", files / "data.npz", "--batch-size", 4, "--json",
                    "--epochs", 3, "--eval", files / "data.npz", "--mask", "lengths", "--topk", "1,2",
                    "--early-stop", 3, "--monitor", "acc_top2")
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    scores = [line["eval"]["acc_top2"] for line in lines if line["event"] == "epoch"]
    assert len(scores) == 3 and lines[-1]["kept_epoch"] == 1 + scores.index(max(scores))


def test_evaluate_masks_the_padded_tokens_out_of_the_accuracy(files, tmp_path):
    """Before, the BiGRU tagger's accuracy counted the padded tokens (0.2917 = 28 of 96, every pad labelled 0 and
    predicted wrong). --mask lengths counts the real tokens alone: 28 of 70, as Paddle's logits give them; a 0/1 mask
    of the labels' shape the same; a mask that marks neither is one error line."""
    data = np.load(files / "data.npz")
    real = np.arange(6)[None, :] < data["lengths"][:, None]
    right = np.load(files / "paddle_gru.npz")["logits"].argmax(-1) == data["labels"]
    args = ["evaluate", files / "gru.pb", "--params", files / "gru.pdparams", "--json", "--batch-size", 5]
    plain = json.loads(gradc_cli(*args, "--data", files / "data.npz").stdout)
    masked = json.loads(gradc_cli(*args, "--data", files / "data.npz", "--mask", "lengths").stdout)
    assert plain["acc"] == right.mean() == 28 / 96
    assert masked["acc"] == right[real].mean() == 28 / 70
    np.savez(tmp_path / "marked.npz", **data, real=real.astype(np.float32))
    marked = json.loads(gradc_cli(*args, "--data", tmp_path / "marked.npz", "--mask", "real").stdout)
    assert marked["acc"] == masked["acc"]
    np.savez(tmp_path / "wrong.npz", **data, real=real[:, :5])
    refused = gradc_cli(*args, "--data", tmp_path / "wrong.npz", "--mask", "real")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr == (f"gradc: error: data '{tmp_path / 'wrong.npz'}': --mask real (bool, [16, 5]) marks "
                              f"neither each label of 'labels' [16, 6] (nonzero: counted) nor, as integers, the "
                              f"length of each example's sequence\n")

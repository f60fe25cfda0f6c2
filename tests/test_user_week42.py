"""A parameter-efficient fine-tuning engineer's week (docs/tools.md): a pretrained MLP block (Paddle 3.3.1's layers,
tools/paddle_user_week42.py) fine-tuned cheaply: LoRA adapters on its three Linears with the base frozen three ways
(ParamAttr(trainable=False), stop_gradient = True, ParamAttr(learning_rate=0)), AdamW, the adapters merged into the
base for export; BitFit (biases only); continual learning with an EWC penalty (a Fisher diagonal of squared
gradients) and a replay batch; layer-wise learning rates; the LoRA and layer-wise programs again in PIR. Each fault
found, as the behaviour it has now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week42"
META = json.loads((WEEK / "meta.json").read_text())
PIR_LOSSES = json.loads((WEEK / "pir_losses.json").read_text())
BASE = [f"linear_{k}.{kind}_0" for k in range(3) for kind in "wb"]
GRADS = [f"--fetch={name}@GRAD={name}" for name in BASE]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files as the user has them, the first batches of each task apart."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week42"))
    old, new = np.load(out / "data_a.npz"), np.load(out / "data_b.npz")
    for step in range(4):
        np.savez(out / f"old{step}.npz", x=old["x"][8 * step:8 * step + 8], label=old["label"][8 * step:8 * step + 8])
    np.savez(out / "new0.npz", x=new["x"][:8], label=new["label"][:8])
    np.savez(out / "test_x.npz", x=np.load(out / "test_b.npz")["x"])
    return out


def _ok(*args):
    run = gradc_cli(*args)
    assert run.returncode == 0, run.stderr
    return run


def _train(files, program, data, steps, save, *options, batch=8):
    """gradc train from the pretrained weights (Paddle's pretrained.pdparams): the losses per step."""
    run = _ok("train", files / program, "--params", files / "pretrained.pdparams", "--data", files / data,
              "--batch-size", batch, "--steps", steps, "--json", "--log-every", 1, "--save-params", files / save,
              *options)
    return [line["values"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "step"]


def _moved(files, saved, stem):
    """name -> whether gradc's training moved it; Paddle's trained values; and the values it started from."""
    gradc, paddle, start = (dict(np.load(files / name)) for name in (saved, f"{stem}_trained.npz", f"{stem}_start.npz"))
    return {name: bool((gradc[name] != start[name]).any()) for name in paddle}, gradc, paddle


@pytest.fixture(scope="module")
def lora_trained(files):
    """gradc's compile of lora.pb (AdamW, layer 2 at rate 0) and the stderr; the 5 steps' losses; its trained
    values (lora_gradc.npz)."""
    compiled = _ok("compile", files / "lora.pb", "-o", files / "lora_adamw.pb", "--optimizer", "adamw", "--lr", 0.01,
                   "--weight-decay", 0.01, "--param-lr", "linear_2*=0")
    steps = _train(files, "lora_adamw.pb", "data_b.npz", 5, "lora_gradc.npz", "--startup",
                   files / "lora_adamw.startup.pb", "--startup", files / "lora_startup.pb")
    return compiled.stderr, [step[META["lora"]["loss"]] for step in steps], dict(np.load(files / "lora_gradc.npz"))


def test_lora_trains_to_paddles_steps_with_the_frozen_base_bit_identical(files, lora_trained):
    """Paddle's lora.pb keeps the base's stop_gradient (layers 0 and 1: trainable=False and .stop_gradient = True),
    so compile freezes them with no --param, as Paddle's program; ParamAttr(learning_rate=0) of layer 2 is Python's
    only, given as --param-lr. The training program is Paddle's op for op, its 5 losses Paddle's to 1e-7, the 6 base
    weights the pretrained ones bit for bit, the 6 adapters Paddle's to 3.1e-8 (no fault)."""
    stderr, losses, _ = lora_trained
    assert "parameters frozen, without a gradient: 4 (linear_0.b_0, linear_0.w_0, linear_1.b_0" in stderr
    assert _ok("diff", files / "lora_train.pb", files / "lora_adamw.pb").stdout.strip().endswith("are the same")
    np.testing.assert_allclose(losses, META["lora"]["losses"], rtol=3e-7)
    moved, gradc, paddle = _moved(files, "lora_gradc.npz", "lora")
    assert [name for name, did in moved.items() if not did] == BASE
    for name in paddle:
        np.testing.assert_allclose(gradc[name], paddle[name], rtol=0, atol=1e-7, err_msg=name)
    # Paddle's own training program trains in gradc to the same numbers
    steps = _train(files, "lora_train.pb", "data_b.npz", 5, "lora_paddle.npz", "--startup", files / "lora_startup.pb")
    np.testing.assert_allclose([s[META["lora"]["loss"]] for s in steps], META["lora"]["losses"], rtol=3e-7)


def test_save_trained_writes_the_adapters_alone(files, lora_trained):
    """--save-params writes all 12 parameters, the frozen base too (788 values); a fine-tuner keeps the adapters alone,
    and before did it in numpy. Now --save-trained writes the 8 parameters the optimizer ops update (372 values; of
    Paddle's PIR program the same 8), and the base's file with it after give the trained model's logits exactly."""
    _ok("compile", files / "lora.pb", "-o", files / "lora_keep.pb", "--optimizer", "adamw", "--lr", 0.01,
        "--weight-decay", 0.01, "--param-lr", "linear_2*=0")
    _train(files, "lora_keep.pb", "data_b.npz", 5, "lora_all.npz", "--startup", files / "lora_keep.startup.pb",
           "--startup", files / "lora_startup.pb", "--save-trained", files / "adapters.npz")
    adapters = np.load(files / "adapters.npz")
    assert sorted(adapters.files) == sorted(META["lora"]["trainable"])
    assert sum(adapters[name].size for name in adapters.files) == 372
    for name in adapters.files:
        np.testing.assert_array_equal(adapters[name], lora_trained[2][name])
    for params, out in ((("--params", files / "pretrained.pdparams", "--params", files / "adapters.npz"), "split"),
                        (("--params", files / "lora_gradc.npz"), "whole")):
        _ok("run", files / "lora.pb", *params, "--feed", files / "test_x.npz", "--fetch", "tmp_5", "--out",
            files / f"{out}.npz")
    np.testing.assert_array_equal(np.load(files / "split.npz")["tmp_5"], np.load(files / "whole.npz")["tmp_5"])
    run = _ok("train", files / "lora_pir_train.json", "--startup", files / "lora_pir_startup.json", "--params",
              files / "pretrain_trained.npz", "--data", files / "data_b.npz", "--batch-size", 8, "--steps", 1,
              "--fetch", "loss", "--save-trained", files / "adapters_pir.npz")
    assert "wrote" in run.stdout and sorted(np.load(files / "adapters_pir.npz").files) == sorted(adapters.files)


def test_merged_export_gives_the_adapter_models_outputs_and_paddles(files, lora_trained):
    """W + A B alpha/r merged in numpy from gradc's adapters: merged.pb's logits are the adapter model's to 1e-6 and
    Paddle's merged ones to 1e-6; gradc export of it (PIR JSON) runs to the same, and Paddle's jit.save of the merged
    block (PIR) runs in gradc to its Predictor's outputs (no fault)."""
    trained = lora_trained[2]
    merged = {}
    for k in range(3):
        merged[f"linear_{k}.w_0"] = trained[f"linear_{k}.w_0"] + trained[f"lora{k}_A"] @ trained[f"lora{k}_B"] * 2.0
        merged[f"linear_{k}.b_0"] = trained[f"linear_{k}.b_0"]
    np.savez(files / "merged.npz", **merged)
    _ok("run", files / "lora.pb", "--params", files / "lora_gradc.npz", "--feed", files / "test_x.npz", "--fetch",
        "tmp_5=logits", "--out", files / "adapter_out.npz")
    _ok("export", files / "merged.pb", "--params", files / "merged.npz", "--input", "x", "--fetch",
        "linear_2.tmp_1=logits", "-o", files / "merged_export.json")
    _ok("run", files / "merged_export.json", "--params", files / "merged_export.pdiparams", "--feed",
        files / "test_x.npz", "--out", files / "merged_out.npz")
    adapter, merged_out = np.load(files / "adapter_out.npz")["logits"], np.load(files / "merged_out.npz")["logits"]
    paddle = np.load(files / "paddle_outputs.npz")
    np.testing.assert_allclose(merged_out, adapter, atol=1e-6)
    np.testing.assert_allclose(merged_out, paddle["merged"], atol=1e-6)
    _ok("run", files / "merged_pir.json", "--params", files / "merged_pir.pdiparams", "--feed", files / "test_x.npz",
        "--out", files / "pir_out.npz")
    predictor = np.load(files / "predictor_pir.npz")
    np.testing.assert_allclose(np.load(files / "pir_out.npz")["fetch_name_0"], predictor["fetch_name_0"], atol=1e-6)


@pytest.mark.parametrize("stem, options, steps", [
    ("bitfit", ("--optimizer", "momentum", "--lr", 0.05, "--momentum", 0.9), 5),
    ("layerwise", ("--optimizer", "sgd", "--lr", 0.1, "--param-lr", "linear_0*=0.25", "--param-lr", "linear_1*=0.5"),
     4),
])
def test_bitfit_and_layerwise_rates_are_paddles_programs(files, stem, options, steps):
    """BitFit (the weights trainable=False, kept in the file) and layer-wise rates (--param-lr, Paddle's ParamAttr
    learning_rate 0.25 / 0.5 / 1) compile to Paddle's training programs op for op and train to its losses (1e-7) and
    weights (1e-7 of each); BitFit's weights stay bit for bit (no fault)."""
    _ok("compile", files / f"{stem}.pb", "-o", files / f"{stem}_gradc.pb", *options)
    assert _ok("diff", files / f"{stem}_train.pb", files / f"{stem}_gradc.pb").stdout.strip().endswith("are the same")
    losses = _train(files, f"{stem}_gradc.pb", "data_b.npz", steps, f"{stem}_gradc.npz", "--startup",
                    files / f"{stem}_gradc.startup.pb")
    np.testing.assert_allclose([s["mean_1.tmp_0"] for s in losses], META[stem]["losses"], rtol=3e-7)
    moved, gradc, paddle = _moved(files, f"{stem}_gradc.npz", stem)
    assert sorted(name for name, did in moved.items() if did) == sorted(META[stem]["trainable"])
    for name in paddle:
        np.testing.assert_allclose(gradc[name], paddle[name], rtol=0, atol=2e-7 * abs(paddle[name]).max(),
                                   err_msg=name)


def test_ewc_fisher_from_gradc_gradients_by_a_fetch_glob(files):
    """EWC's Fisher diagonal is the mean squared gradient of the old task's loss: `gradc run` of the compiled
    pretraining program, --fetch 'linear_*.?_0@GRAD' over 4 batches. Before, a glob was taken for a name: "fetch var
    'linear_*.?_0@GRAD' is not a var of block 0", and the 6 gradients took 6 options (a deep model's hundreds). Now
    the Fisher is Paddle's to 3.6e-7 relative (1.3e-6 where numpy and OpenBLAS run their AVX2 kernels), and the EWC
    program (Fisher and old weights fed with --feed, a replay batch of task A in each step's 12) trains to Paddle's 5
    losses (1e-7)."""
    _ok("compile", files / "pretrain.pb", "-o", files / "pretrain_grads.pb")
    squares = []
    for step in range(4):
        run = _ok("run", files / "pretrain_grads.pb", "--params", files / "pretrain_trained.npz", "--feed",
                  files / f"old{step}.npz", "--fetch", "linear_*.?_0@GRAD", "--out", files / "grads.npz")
        assert run.stdout.count("@GRAD:") == 6
        grads = np.load(files / "grads.npz")
        squares.append({name: grads[name + "@GRAD"] ** 2 for name in BASE})
    fisher, paddle = {name: np.mean([s[name] for s in squares], axis=0) for name in BASE}, np.load(files / "fisher.npz")
    for name in BASE:
        np.testing.assert_allclose(fisher[name], paddle[name], rtol=3e-6, atol=1e-9 * paddle[name].max())
    old = np.load(files / "pretrain_trained.npz")
    np.savez(files / "ewc_const.npz", **{f"fisher_{n}": fisher[n] for n in BASE}, **{f"old_{n}": old[n] for n in BASE})
    _ok("compile", files / "ewc.pb", "-o", files / "ewc_adam.pb", "--optimizer", "adam", "--lr", 0.01)
    steps = _train(files, "ewc_adam.pb", "ewc_data.npz", 5, "ewc_gradc.npz", "--startup",
                   files / "ewc_adam.startup.pb", "--feed", files / "ewc_const.npz", batch=12)
    np.testing.assert_allclose([s[META["ewc"]["loss"]] for s in steps], META["ewc"]["losses"], rtol=3e-7)
    missing = gradc_cli("run", files / "pretrain_grads.pb", "--feed", files / "old0.npz", "--params",
                        files / "pretrain_trained.npz", "--fetch", "lora*@GRAD")
    assert missing.returncode == 1 and missing.stderr.startswith("gradc: error: --fetch 'lora*@GRAD' matches no var")


def test_param_lr_glob_over_a_partly_frozen_model(files):
    """Layer-wise decay written over every layer ('linear_*=0.5') of the LoRA model, whose layers 0 and 1 are frozen.
    Before: "param_attrs name linear_0.b_0, ..., which the program does not train", naming the Python API's argument
    to a CLI user, where Paddle takes a ParamAttr learning_rate on a frozen parameter and ignores it. Now the frozen
    ones are left out: layer 2's rate is halved (its scale op), and a name that is no parameter is still refused."""
    run = _ok("compile", files / "lora.pb", "-o", files / "lora_half.pb", "--optimizer", "adamw",
              "--param-lr", "linear_*=0.5")
    assert run.stdout.count("@GRAD") == 8
    info = _ok("info", files / "lora_half.pb").stdout
    assert "x 0.5 (ParamAttr learning_rate) for 2 (linear_2.b_0, linear_2.w_0)" in info


def test_param_naming_frozen_parameters_is_said(files):
    """--param 'linear_0*' names layer 0, which the program freezes (stop_gradient). Before: beside another --param,
    they got no gradient without a word; alone with --optimizer, "pass 'optimizer': no parameter has a gradient: run
    the backward pass first", though compile had run it. Now a warning names them and why, and the error says why."""
    run = gradc_cli("compile", files / "lora.pb", "-o", files / "x.pb", "--param", "linear_0*", "--param", "lora0*",
                    "--optimizer", "sgd")
    assert run.returncode == 0 and run.stdout.count("@GRAD") == 2
    assert ("--param names 2 parameter(s) the program freezes, which get no gradient: linear_0.b_0, linear_0.w_0 "
            "(stop_gradient") in run.stderr
    alone = gradc_cli("compile", files / "lora.pb", "-o", files / "y.pb", "--param", "linear_0*", "--optimizer", "sgd")
    assert alone.returncode == 1 and not (files / "y.pb").exists()
    assert alone.stderr.splitlines()[-1] == (
        "gradc: error: pass 'optimizer': no parameter got a gradient of the loss: each is stop_gradient (Paddle's "
        "trainable=False), left out by --param or --no-grad, or on no path to the loss")


def test_info_says_which_parameters_are_frozen_and_their_rate_multipliers(files):
    """gradc info of the LoRA forward said '4 of them frozen' without which; of Paddle's training programs, each
    ParamAttr learning_rate's scale op output was "learning rate tmp_6, a schedule's: ops of the program write it"
    (the layer-wise program: four such "schedules"). Now the frozen ones are marked and the rates are named as
    multiples of the one rate, with their parameters (PIR programs too)."""
    lines = _ok("info", files / "lora.pb").stdout.splitlines()
    assert [line.split()[0] for line in lines if line.endswith("  frozen")] == sorted(BASE[:4])
    optimizer = next(line for line in _ok("info", files / "layerwise_train.pb").stdout.splitlines()
                     if line.startswith("optimizer:"))
    assert "a schedule's" not in optimizer
    assert ("rate learning_rate_0 x 0.25 (ParamAttr learning_rate) for 2 (linear_0.b_0, linear_0.w_0); rate "
            "learning_rate_0 x 0.5 (ParamAttr learning_rate) for 2 (linear_1.b_0, linear_1.w_0)") in optimizer
    facts = json.loads(_ok("info", files / "lora_pir_train.json", "--json").stdout)["optimizer"]
    assert facts["learning_rates"] == ["learning_rate_0"] and facts["rates_written"] == []
    assert facts["rate_multipliers"] == {"learning_rate_0 x 0": ["linear_2.b_0", "linear_2.w_0"]}


def test_info_reads_a_checkpoint_and_a_partial_load(files):
    """A fine-tuner loading a pretraining checkpoint into the LoRA program wants to see, before training, what the file
    gives. Before, `gradc info pretrained.pdparams` was refused ("a parameter file, not a program") and nothing said
    which of a program's parameters a file gives: a missing one was found when train refused, a head of another shape
    one at a time. Now info lists the checkpoint, and `info PROGRAM --params FILE` the parameters given, those a
    startup must initialise, unused values and other shapes (--json too)."""
    lines = _ok("info", files / "pretrained.pdparams").stdout.splitlines()
    assert lines[0].endswith("a parameter file, 6 arrays (484 values); give it to a program with --params (gradc "
                             "info PROGRAM --params FILE: what it gives the program)")
    assert lines[1:] == [f"  {name}  float32{list(np.load(files / 'pretrain_trained.npz')[name].shape)}"
                         for name in sorted(BASE)]
    text = _ok("info", files / "lora.pb", "--params", files / "pretrained.pdparams").stdout
    assert "pretrained.pdparams: gives 6 of the 12 parameters\n  not given (a startup program must initialise " \
           "them): lora0_A, lora0_B, lora1_A, lora1_B, lora2_A, lora2_B\n" in text
    head = {**np.load(files / "pretrain_trained.npz"), "linear_2.w_0": np.zeros((16, 10), np.float32)}
    np.savez(files / "head10_extra.npz", **head, lora9_A=np.zeros(2))
    facts = json.loads(_ok("info", files / "merged.pb", "--params", files / "head10_extra.npz",
                           "--json").stdout)["params"]
    assert facts["not_given"] == [] and facts["unused"] == ["lora9_A"]
    assert facts["other_shape"] == {"linear_2.w_0": {"file": [16, 10], "program": [16, 4]}}


def test_diff_of_the_adapter_and_merged_programs_keeps_the_base_ops_paired(files):
    """gradc diff lora.pb merged.pb: before, ops paired by type alone, so layer 0's bias add (in both programs, the
    same op) showed as removed and the adapter's add after it as changed into it ("op 5/1 elementwise_add"), layer 1
    the other way round. Now ops the same in type and slots anchor the pairing: each layer's 4 adapter ops removed
    (matmul, matmul, scale, add) and its reader's input changed, the same for the three layers."""
    text = gradc_cli("diff", files / "lora.pb", files / "merged.pb").stdout
    assert "block 0: 12 ops removed, 3 ops changed" in text
    removed = [line.split()[3].split("(")[0] for line in text.splitlines() if line.startswith("  - op ")]
    assert removed == ["matmul_v2", "matmul_v2", "scale", "elementwise_add"] * 3
    assert "  ~ op 6/2 gelu: input X: ['tmp_1'] -> ['linear_0.tmp_1']" in text


def test_partial_loading_messages(files):
    """--params with the adapters missing (no startup given), a pretraining head of another shape, and a file with
    extra names: one line naming the vars and what to do, or a warning naming the unused ones (no fault)."""
    _ok("compile", files / "lora.pb", "-o", files / "lora_sgd.pb", "--optimizer", "sgd")
    run = gradc_cli("train", files / "lora_sgd.pb", "--startup", files / "lora_sgd.startup.pb", "--params",
                    files / "pretrained.pdparams", "--data", files / "data_b.npz", "--steps", 1)
    assert run.returncode == 1 and run.stderr == (
        "gradc: error: no value for the persistable var(s) lora0_A, lora0_B, lora1_A, lora1_B, lora2_A, lora2_B: not "
        f"in params '{files / 'pretrained.pdparams'}'; give them with --params, or run the startup programs that "
        "initialise them first (--startup, repeatable)\n")
    head = {**np.load(files / "pretrain_trained.npz"), "linear_2.w_0": np.zeros((16, 10), np.float32)}
    np.savez(files / "head10.npz", **head)
    run = gradc_cli("run", files / "merged.pb", "--params", files / "head10.npz", "--feed", files / "test_x.npz",
                    "--fetch", "linear_2.tmp_1")
    assert run.returncode == 1 and run.stderr == (
        f"gradc: error: params '{files / 'head10.npz'}': 'linear_2.w_0', read first by block 0, op 6 (matmul_v2), "
        "has shape [16, 10], but the program declares [16, 4]\n")
    run = _ok("run", files / "merged.pb", "--params", files / "fisher.npz", "--params", files / "lora_start.npz",
              "--feed", files / "test_x.npz", "--fetch", "linear_2.tmp_1")
    assert "6 of its 12 values name no var of the program (lora0_A, lora0_B" in run.stderr


@pytest.mark.parametrize("stem, steps", [("lora", 5), ("layerwise", 4)])
def test_paddles_pir_training_programs_train_to_its_losses(files, stem, steps):
    """Paddle 3's PIR minimize of the LoRA (AdamW, the base stop_gradient, layer 2 at rate 0) and layer-wise (SGD
    with three rates) programs: gradc trains them from their startups and the pretrained weights to Paddle's PIR
    losses (1e-7), the LoRA base bit for bit (no fault)."""
    steps_run = _train(files, f"{stem}_pir_train.json", "data_b.npz", steps, f"{stem}_pir.npz", "--startup",
                       files / f"{stem}_pir_startup.json", "--fetch", "loss")
    np.testing.assert_allclose([s["loss"] for s in steps_run], PIR_LOSSES[stem], rtol=3e-7)
    if stem == "lora":
        saved, start = np.load(files / "lora_pir.npz"), np.load(files / "pretrain_trained.npz")
        for name in BASE:
            assert (saved[name] == start[name]).all(), name

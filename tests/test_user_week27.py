"""A model-compression engineer's week (docs/tools.md): knowledge distillation of a frozen convolution teacher into a
smaller student (CE + T^2 KL of softened outputs + a feature-matching MSE through a 1x1 projection), magnitude pruning
by fixed 0/1 masks trained with Momentum and AdamW (weight decay included), Paddle's own 2:4 sparsity
(paddle.incubate.asp), a low-rank factorisation of a trained Linear by numpy's SVD, and the dense and compressed nets
exported and compared, all built with Paddle 3.3.1's layers (tools/paddle_user_week27.py); each fault found, as the
behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week27"
META = json.loads((WEEK / "meta.json").read_text())
MASKED = ("fc1.w", "fc2.w")
MASK_WARNING = ("gradc: warning: parameters multiplied elementwise into another parameter of their shape, as fixed "
                "pruning masks are, get gradients and will train: fc1.w_mask (into fc1.w), fc2.w_mask (into fc2.w); a "
                "legacy ProgramDesc keeps no trainable=False: if they are masks, freeze them with --no-grad "
                "(no_grad_set= in Python)")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files as the user has them: the programs unpacked beside the arrays, the test images as a feed, a
    batch for gradc check, the distillation's weights (teacher and trained student) in one file, and the pruned net's
    Momentum-trained weights."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week27"))
    np.savez(out / "test.npz", image=np.load(out / "predictor.npz")["image"])
    data = np.load(out / "data.npz")
    np.savez(out / "batch.npz", image=data["image"][:4], label=data["label"][:4])
    np.savez(out / "distill_all.npz", **np.load(out / "teacher.npz"), **np.load(out / "distill_trained.npz"))
    trained = np.load(out / "pruned_trained.npz")
    np.savez(out / "pruned_momentum.npz", **{name.split("/")[1]: trained[name] for name in trained.files
                                             if name.startswith("momentum/")})
    return out


def _steps(lines: str) -> list[dict]:
    return [line["values"] for line in map(json.loads, lines.splitlines()) if line["event"] == "step"]


def _train(files, program: str, startups: list[str], params: str, saved: str, *fetch: str) -> list[dict]:
    """One epoch of 6 batches of 16 in order, as Paddle trained, the step values fetched, the parameters saved."""
    args = [arg for startup in startups for arg in ("--startup", files / startup)]
    args += [arg for name in fetch for arg in ("--fetch", name)]
    run = gradc_cli("train", files / program, *args, "--params", files / params, "--data", files / "data.npz",
                    "--batch-size", 16, "--json", "--log-every", 1, "--save-params", files / saved)
    assert run.returncode == 0, run.stderr
    return _steps(run.stdout)


def _compile(files, program: str, name: str, *args: str) -> str:
    compiled = gradc_cli("compile", files / program, "-o", files / f"{name}.pb", *args)
    assert compiled.returncode == 0, compiled.stderr
    return compiled.stderr


def test_distillation_trains_the_student_to_paddles_the_teacher_untouched(files):
    """gradc compile of the distillation program (teacher trainable=False and its outputs stop_gradient) writes no
    gradient op for the teacher; trained with Adam from the teacher's saved weights, the 6 losses (4.430 ... 2.728),
    the KL term and the feature MSE are Paddle's to 1e-5, the student's and projection's weights Paddle's to 1e-6,
    and the teacher's saved weights are bit for bit those it was loaded with (no fault)."""
    stderr = _compile(files, "distill.pb", "distill_train", "--optimizer", "adam", "--lr", "0.01")
    assert "teacher.conv.w" in stderr and "not trainable in Paddle" in stderr   # a note since week 59, not a warning
    compiled = gradc.load(files / "distill_train.pb")
    assert not [op.type for op in compiled.global_block.ops if any(name.startswith("teacher.") and "@GRAD" in name
                                                                   for name in op.output_names())]
    names = META["distill"]
    steps = _train(files, "distill_train.pb", ["distill_startup.pb", "distill_train.startup.pb"], "teacher.npz",
                   "student.npz", names["loss"], names["kl"], names["feature_mse"])
    for key, paddle_values in names["steps"].items():
        np.testing.assert_allclose([step[names[key]] for step in steps], paddle_values, rtol=1e-5, err_msg=key)
    saved, paddle, teacher = (np.load(files / name) for name in ("student.npz", "distill_trained.npz", "teacher.npz"))
    for name in paddle.files:
        np.testing.assert_allclose(saved[name], paddle[name], atol=1e-6, err_msg=name)
    assert all(np.array_equal(saved[name], teacher[name]) for name in teacher.files)


@pytest.mark.parametrize("loss", ["loss", "kl"])
def test_check_of_the_distillation_loss_and_its_kl_term(files, loss):
    """float64 central differences of the whole distillation loss and of the KL term alone agree with gradc's
    gradients of every student and projection parameter (the KL's: every student parameter). Paddle's own float64
    KL gradient as to the student's logits agrees too (meta.json); the teacher's logits get none, in Paddle as in
    gradc: the target of kl_div has no gradient."""
    run = gradc_cli("check", files / "distill.pb", "--loss", META["distill"][loss], "--feed", files / "batch.npz",
                    "--params", files / "distill_all.npz", "--max-elements", 64, "--json")
    assert run.returncode == 0, run.stdout
    checked = {var["var"]: var for var in json.loads(run.stdout)["vars"]}
    student = [name for name in np.load(files / "distill_trained.npz").files if loss == "loss" or "project" not in name]
    assert sorted(checked) == sorted(student)
    assert max(var["max_abs_error"] for var in checked.values()) < 1e-8


def test_masks_that_train_are_warned_of(files):
    """The masks are parameters (create_parameter, trainable=False in Paddle), but a legacy ProgramDesc keeps no
    trainable=False. Before, gradc compile gave them gradients without a word: Momentum moved every kept mask entry
    off 1 (by up to 3e-3 in 6 steps) and the losses left Paddle's (1e-2 relative at step 5). Now compile warns,
    naming each mask and the weight it multiplies, and says how to freeze them; with --no-grad the warning is
    gone."""
    stderr = _compile(files, "pruned.pb", "drifting", "--optimizer", "momentum", "--lr", "0.05", "--momentum",
                      "0.9", "--weight-decay", "1e-3")
    assert MASK_WARNING in stderr.splitlines()
    steps = _train(files, "drifting.pb", ["pruned_startup.pb", "drifting.startup.pb"], "pruned_init.npz",
                   "drifting.npz")
    losses = [step[META["pruned_momentum"]["loss"]] for step in steps]
    assert np.abs(np.array(losses) / META["pruned_momentum"]["losses"] - 1).max() > 1e-3
    saved, paddle = np.load(files / "drifting.npz"), np.load(files / "pruned_trained.npz")
    assert not np.array_equal(saved["fc1.w_mask"], paddle["momentum/fc1.w_mask"])
    frozen = _compile(files, "pruned.pb", "frozen", "--optimizer", "momentum", "--no-grad", "*_mask")
    assert "warning" not in frozen


@pytest.mark.parametrize("optimizer, args, atol", [
    ("momentum", ("--lr", "0.05", "--momentum", "0.9", "--weight-decay", "1e-3"), 1e-7),
    ("adamw", ("--lr", "0.01", "--weight-decay", "0.01"), 2e-6)])
def test_pruned_weights_stay_zero_through_momentum_and_adamw(files, optimizer, args, atol):
    """With the masks frozen (--no-grad '*_mask'), Momentum with L2 weight decay and AdamW with decoupled decay
    train the masked MLP to Paddle's 6 losses (rtol 1e-5) and weights; every weight the mask zeroes is still exactly
    0 after training (decay of 0 is 0, and so is a zero gradient's Adam step) and the masks are unchanged (no
    fault)."""
    _compile(files, "pruned.pb", optimizer, "--optimizer", optimizer, *args, "--no-grad", "*_mask")
    steps = _train(files, f"{optimizer}.pb", ["pruned_startup.pb", f"{optimizer}.startup.pb"], "pruned_init.npz",
                   f"{optimizer}_trained.npz")
    paddle = META[f"pruned_{optimizer}"]
    np.testing.assert_allclose([step[paddle["loss"]] for step in steps], paddle["losses"], rtol=1e-5)
    saved, expected = np.load(files / f"{optimizer}_trained.npz"), np.load(files / "pruned_trained.npz")
    for name in saved.files:
        np.testing.assert_allclose(saved[name], expected[f"{optimizer}/{name}"], atol=atol, err_msg=name)
    for name in MASKED:
        mask = saved[f"{name}_mask"]
        assert np.array_equal(mask, expected[f"{optimizer}/{name}_mask"]) and mask.mean() == 0.5
        assert (saved[name][mask == 0] == 0).all() and (saved[name][mask == 1] != 0).all()


def _two_of_four(files, saved: str) -> dict:
    """Per pruned weight of the 2:4 program: whether it is zero wherever Paddle's mask is, and the mask keeps 2 of
    every 4 consecutive inputs of each output."""
    initial, weights = np.load(files / "asp_init.npz"), np.load(files / saved)
    masks = {name.removesuffix(".asp_mask"): initial[name] for name in initial.files if name.endswith(".asp_mask")}
    assert all((np.abs(mask.T.reshape(mask.shape[1], -1, 4)).sum(-1) == 2).all() for mask in masks.values())
    return {name: bool((weights[name][mask == 0] == 0).all()) for name, mask in masks.items()}


def test_paddles_two_of_four_sparsity_program_trains_to_paddles(files):
    """paddle.incubate.asp works on CPU in static mode: decorate(Momentum) appends a multiply of each weight by its
    2:4 mask after the updates. gradc trains Paddle's whole program from the pruned start to Paddle's losses
    (rtol 1e-5) and weights (1e-7), the masked weights exactly 0, and saves the masks with them (before, the
    saved file lacked them: the fault of the next test)."""
    steps = _train(files, "asp_train.pb", ["asp_startup.pb"], "asp_init.npz", "asp_gradc.npz")
    np.testing.assert_allclose([step[META["asp"]["loss"]] for step in steps], META["asp"]["losses"], rtol=1e-5)
    saved, paddle = np.load(files / "asp_gradc.npz"), np.load(files / "asp_trained.npz")
    for name in paddle.files:
        np.testing.assert_allclose(saved[name], paddle[name], atol=1e-7, err_msg=name)
    assert all(_two_of_four(files, "asp_gradc.npz").values())


@pytest.mark.parametrize("suffix", ["npz", "pdparams", "pdiparams"])
def test_saved_params_of_the_two_of_four_program_keep_its_masks(files, suffix):
    """Before, gradc train --save-params wrote the 4 weights and biases but not the 2 masks (parameters that only
    the multiply after the updates reads, outside the forward part), in .npz, .pdparams and .pdiparams alike, and
    .pdopt had them neither: a run resumed from the file took the startup's masks of ones, and after one epoch no
    pruned weight was 0 any more. Now the file holds the masks, as paddle.static.save's .pdparams does (the .pdopt
    still only the optimizer's state), and the resumed run keeps every pruned weight at 0."""
    run = gradc_cli("train", files / "asp_train.pb", "--startup", files / "asp_startup.pb", "--params",
                    files / "asp_init.npz", "--data", files / "data.npz", "--batch-size", 16, "--save-params",
                    files / f"asp_saved.{suffix}")
    assert run.returncode == 0, run.stderr
    assert f"wrote {files / f'asp_saved.{suffix}'} (6 model parameters)" in run.stdout
    steps = _train(files, "asp_train.pb", ["asp_startup.pb"], f"asp_saved.{suffix}", f"asp_resumed_{suffix}.npz")
    assert len(steps) == 6
    assert _two_of_four(files, f"asp_resumed_{suffix}.npz") == {"linear_9.w_0": True, "linear_10.w_0": True}
    state = gradc_cli("train", files / "asp_train.pb", "--startup", files / "asp_startup.pb", "--params",
                      files / "asp_init.npz", "--data", files / "data.npz", "--batch-size", 16, "--save-params",
                      files / "asp_state.pdopt")
    assert "wrote" in state.stdout and "(5 optimizer state values)" in state.stdout


def test_the_low_rank_factorisation_fine_tunes_to_paddles(files):
    """fc1's rank-8 SVD factors (numpy, sqrt(S) on each side) approximate it as the truncated SVD does; the
    two-Linear program, 932 parameter values where the dense net has 2,212, fine-tunes with Adam to Paddle's 6
    losses (rtol 1e-5) and weights (1e-6) (no fault)."""
    dense, factors = np.load(files / "dense.npz"), np.load(files / "lowrank_init.npz")
    singular = np.linalg.svd(dense["fc1.w"].astype(np.float64), compute_uv=False)
    error = np.linalg.norm(factors["fc1_u.w"] @ factors["fc1_v.w"] - dense["fc1.w"], 2)
    assert error == pytest.approx(singular[8], rel=1e-5)
    _compile(files, "lowrank.pb", "lowrank_train", "--optimizer", "adam", "--lr", "0.01")
    steps = _train(files, "lowrank_train.pb", ["lowrank_train.startup.pb"], "lowrank_init.npz", "lowrank_gradc.npz")
    np.testing.assert_allclose([step[META["lowrank"]["loss"]] for step in steps], META["lowrank"]["losses"],
                               rtol=1e-5)
    saved, paddle = np.load(files / "lowrank_gradc.npz"), np.load(files / "lowrank_trained.npz")
    for name in paddle.files:
        np.testing.assert_allclose(saved[name], paddle[name], atol=1e-6, err_msg=name)
    for program, values in (("dense.pb", "4 (2,212"), ("lowrank.pb", "5 (932")):
        assert f"parameters: {values} values)" in gradc_cli("info", files / program).stdout


@pytest.mark.parametrize("net, program, params, logits", [
    ("dense", "dense.pb", "dense.npz", "linear_1.tmp_1"),
    ("pruned", "pruned.pb", "pruned_momentum.npz", "linear_1.tmp_1"),
    ("lowrank", "lowrank.pb", "lowrank_trained.npz", "linear_2.tmp_1")])
def test_exported_nets_are_paddles_in_size_and_outputs(files, net, program, params, logits):
    """Paddle's saved nets run by gradc give the Predictor's logits to 2e-6; gradc export of the same forward programs
    writes .pdiparams of Paddle's sizes (dense 8,948 bytes, the pruned net twice that, its masks and zeros kept
    dense, the low-rank 3,854) whose runs give the same logits (no fault)."""
    expected = np.load(files / "predictor.npz")[net]
    run = gradc_cli("run", files / f"{net}.pdmodel", "--params", files / params, "--feed", files / "test.npz",
                    "-o", files / f"{net}_paddle_out.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(files / f"{net}_paddle_out.npz")[logits], expected, atol=2e-6)
    exported = files / f"{net}_exported.pdmodel"
    run = gradc_cli("export", files / program, "-o", exported, "--input", "image", "--fetch", f"{logits}=logits",
                    "--params", files / params)
    assert run.returncode == 0, run.stderr
    assert exported.with_suffix(".pdiparams").stat().st_size == META["predictor"]["pdiparams_bytes"][net]
    run = gradc_cli("run", exported, "--params", exported.with_suffix(".pdiparams"), "--feed", files / "test.npz",
                    "-o", files / f"{net}_exported_out.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(files / f"{net}_exported_out.npz")["logits"], expected, atol=2e-6)


def test_diff_of_the_dense_and_the_low_rank_program(files):
    """gradc diff of the dense and the factored program exits 1 and shows fc1.w gone, its two factors and the new
    matmul added (no fault)."""
    run = gradc_cli("diff", files / "dense.pb", files / "lowrank.pb")
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    assert lines[0].startswith("block 0: 1 op added")
    assert {"  - var fc1.w : float32[64, 32]", "  + var fc1_u.w : float32[64, 8]",
            "  + var fc1_v.w : float32[8, 32]"} <= set(lines)
    assert "  + op 1 matmul_v2(X=['flatten_0.tmp_0'], Y=['fc1_u.w']) -> Out=['linear_0.tmp_0']" in lines


def test_the_kl_target_gets_its_gradient_in_mutual_learning(files):
    """Online distillation (mutual learning): the teacher trained too, its outputs not detached (the user clears the
    stop_gradient marks Paddle left on them). Paddle's kldiv_loss_grad gives the target no gradient: its float64
    autograd gives the teacher's logits none where central differences give up to 0.116 (meta.json). Before, gradc
    did the same, and gradc check of the KL term reported a MISMATCH at the teacher's weights ("compiled 0, numeric
    0.0504307"). Now the target gets d/dt of t (log t - x), log(t) + 1 - x where t > 0: the teacher's and the
    student's weights agree with central differences."""
    assert not META["paddle_float64_kl_gradient"]["teacher"]["paddle_gave"]
    program = gradc.load(files / "distill.pb")
    for name, var in program.global_block.vars.items():
        if var.stop_gradient and not var.persistable and name not in ("image", "label"):
            var.stop_gradient = False
    gradc.save(program, files / "online.pb")
    run = gradc_cli("check", files / "online.pb", "--loss", META["distill"]["kl"], "--feed", files / "batch.npz",
                    "--params", files / "distill_all.npz", "--wrt", "teacher.fc.w", "--wrt", "teacher.conv.w",
                    "--wrt", "student.fc.w", "--max-elements", 64, "--json")
    assert run.returncode == 0, run.stdout
    checked = {var["var"]: var for var in json.loads(run.stdout)["vars"]}
    assert sorted(checked) == ["student.fc.w", "teacher.conv.w", "teacher.fc.w"]
    assert max(var["max_abs_error"] for var in checked.values()) < 1e-9

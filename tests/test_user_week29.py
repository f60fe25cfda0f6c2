"""An adversarial-robustness researcher's week (docs/tools.md): a small CNN with BatchNorm and dropout over 1x12x12
images built with Paddle 3.3.1's layers (tools/paddle_user_week29.py), attacked through its INPUT gradient: FGSM and
PGD examples, Paddle's own attack programs (paddle.static.gradients and clip(x + eps * sign(x@GRAD)) in the
program), the input gradient checked against float64 central differences in eval and train mode, robust accuracy,
and adversarial training (PGD from the current weights, then a Momentum step) step by step against Paddle's; each
fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week29"
META = json.loads((WEEK / "meta.json").read_text())
LOSS, EPS, ALPHA = META["loss"], META["eps"], META["alpha"]
# the input gradients (up to 0.069) as Paddle's: within 1e-8 on an AVX-512 machine, 1.1e-8 where numpy and OpenBLAS
# run their AVX2 kernels (float32 sums in another order)
GRAD_ATOL = 3e-8


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked and the test images as a feed."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week29"))
    test = np.load(out / "test.npz")
    np.savez(out / "feed.npz", x=test["x"], label=test["label"])
    np.savez(out / "fgsm_feed.npz", x=test["x"], label=test["label"], eps=np.array([EPS], np.float32))
    return out


@pytest.fixture(scope="module")
def attack(files):
    """The eval-mode attack program compiled as the docs say: compile --wrt x --test-mode."""
    compiled = gradc_cli("compile", files / "forward.pb", "-o", files / "attack.pb", "--wrt", "x", "--test-mode")
    assert compiled.returncode == 0, compiled.stderr
    return files / "attack.pb"


def _pgd(run_gradient, x, label, start, steps):
    """The generator's PGD: steps of ALPHA * sign(grad) from x + start, projected on the EPS-ball and [0, 1]."""
    adv = np.clip(x + start, 0, 1).astype(np.float32)
    for _ in range(steps):
        adv = np.clip(np.clip(adv + ALPHA * np.sign(run_gradient(adv, label)), x - EPS, x + EPS), 0, 1)
        adv = adv.astype(np.float32)
    return adv


def test_compile_wrt_gives_the_input_gradient_paddle_gives(files, attack):
    """Before, gradc compile had no way to give a fed input a gradient: Paddle saves x stop_gradient, `--param x`
    compiled "0 parameter gradients" with a warning that no parameter gets one, and `gradc run --fetch x@GRAD` said
    only "no op writes it". Now compile --wrt x lists x -> x@GRAD beside the parameters, and with --test-mode (as
    clone(for_test=True)) its gradient of the 16 test images is Paddle's eval-mode paddle.static.gradients(loss, x) to
    1e-8 (of a largest 0.02); the plain compile's fetch names --wrt."""
    compiled = gradc_cli("compile", files / "forward.pb", "-o", files / "listed.pb", "--wrt", "x", "--test-mode")
    assert "x                   x@GRAD  (--wrt)" in compiled.stdout
    assert compiled.stdout.endswith("(29 ops, 6 parameter gradients, 1 input gradient)\n")
    as_json = gradc_cli("compile", files / "forward.pb", "-o", files / "listed.pb", "--wrt", "x", "--json")
    assert json.loads(as_json.stdout)["inputs"] == [{"var": "x", "gradient": "x@GRAD"}]
    run = gradc_cli("run", attack, "--params", files / "clean.npz", "--feed", files / "feed.npz",
                    "--fetch", "x@GRAD", "-o", files / "grad.npz")
    assert run.returncode == 0, run.stderr
    paddle = np.load(files / "attack.npz")
    np.testing.assert_allclose(np.load(files / "grad.npz")["x@GRAD"], paddle["grad"], rtol=0, atol=1e-8)
    assert gradc_cli("compile", files / "forward.pb", "-o", files / "plain.pb").returncode == 0
    refused = gradc_cli("run", files / "plain.pb", "--params", files / "clean.npz", "--feed", files / "feed.npz",
                        "--fetch", "x@GRAD")
    assert refused.returncode == 1
    assert refused.stderr == ("gradc: error: fetch var 'x@GRAD' is not a var of block 0: no op writes it ('x' is "
                              "stop_gradient, as Paddle saves a fed input, so the backward gives it no gradient: "
                              "gradc compile --wrt x, or clear block.var('x').stop_gradient before "
                              "gradc.append_backward)\n")


@pytest.mark.parametrize("args, message", [
    (["--wrt", "y"], "gradc: error: --wrt: not declared in block 0: y\n"),
    (["--wrt", "label"], "gradc: error: --wrt: no gradient of label: on no path to the loss, or cut by a var the "
                         "program marks stop_gradient (--no-grad too)\n")])
def test_compile_wrt_of_a_var_without_a_gradient_is_one_error_line_and_writes_nothing(files, args, message):
    """An undeclared --wrt, or one the loss does not differentiate (the integer labels), is refused, nothing written."""
    run = gradc_cli("compile", files / "forward.pb", "-o", files / "bad.pb", *args)
    assert (run.returncode, run.stderr) == (1, message)
    assert not (files / "bad.pb").exists()


def test_the_train_mode_attack_moves_batch_norms_running_statistics_as_paddles_does(files):
    """The classic pitfall, in gradc as in Paddle: the attack run on the training-mode program (compile --wrt x alone,
    gradc.gradients of the loaded forward) normalises by the batch's statistics (its input gradient Paddle's
    train-mode one to 3e-8, up to 0.069, 3.4 times the eval-mode one) and moves the running mean and variance in the
    scope, to Paddle's values (1e-6); the test-mode program (compile --test-mode, gradc.set_test_mode) moves
    nothing."""
    paddle, feed = np.load(files / "attack.npz"), dict(np.load(files / "feed.npz"))
    moved, clean = np.load(files / "moved.npz"), np.load(files / "clean.npz")
    for test_mode in (False, True):
        program = gradc.load(files / "forward.pb")
        if test_mode:
            gradc.set_test_mode(program)
        program.global_block.var("x").stop_gradient = False
        (grad_name,) = gradc.gradients(program, LOSS, "x")
        scope = gradc.Scope()
        gradc.load_params(scope, files / "clean.npz", program)
        (grad,) = gradc.Executor().run(program, feed=feed, fetch_list=[grad_name], scope=scope)
        np.testing.assert_allclose(grad, paddle["grad" if test_mode else "grad_train"], rtol=0, atol=GRAD_ATOL)
        for name in META["moved_by_train_mode_attack"]:
            if test_mode:
                assert np.array_equal(np.asarray(scope[name]), clean[name]), name
            else:   # the batch's mean and variance: summed in an order of the CPU's kernels
                np.testing.assert_allclose(np.asarray(scope[name]), moved[name], rtol=1e-6, err_msg=name)
    assert np.abs(paddle["grad_train"]).max() > 3 * np.abs(paddle["grad"]).max()


@pytest.mark.parametrize("program, grad", [("fgsm.pb", "grad"), ("fgsm_train.pb", "grad_train")])
def test_paddles_own_fgsm_programs_give_paddles_examples(files, program, grad):
    """Paddle's attack programs (the input gradient and clip(x + eps * sign(x@GRAD), 0, 1) in the program, eps fed)
    run by gradc give Paddle's gradients to 3e-8 and its FGSM examples bit for bit (no fault). Ties: max pooling routes
    the gradient to one pixel of four, so 1677 of the 2304 input gradients are exactly 0 in both, and sign(0) = 0
    leaves those pixels as they are, in gradc as in Paddle."""
    run = gradc_cli("run", files / program, "--params", files / "clean.npz", "--feed", files / "fgsm_feed.npz",
                    "--fetch", "x@GRAD", "--fetch", f"{META['adv']}=adv", "-o", files / f"{program}.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / f"{program}.npz"), np.load(files / "attack.npz")
    np.testing.assert_allclose(ours["x@GRAD"], paddle[grad], rtol=0, atol=GRAD_ATOL)
    np.testing.assert_array_equal(ours["x@GRAD"] == 0, paddle[grad] == 0)
    if program == "fgsm.pb":
        np.testing.assert_array_equal(ours["adv"], paddle["fgsm"])
        still = ours["x@GRAD"] == 0
        assert still.sum() == 1677
        np.testing.assert_array_equal(ours["adv"][still], np.load(files / "test.npz")["x"][still])


@pytest.mark.parametrize("mode", [["--test-mode"], []])
def test_check_of_the_input_gradient_against_float64_central_differences(files, mode):
    """Before, the eval-mode input gradient could not be checked: check runs the forward in its saved (training) mode
    and refused the compiled attack program ("already a training program"). Now check --test-mode checks it: all 2304
    input elements agree with float64 central differences to 1e-9, in eval mode and in train mode."""
    run = gradc_cli("check", files / "forward.pb", "--params", files / "clean.npz", "--feed", files / "feed.npz",
                    "--wrt", "x", "--max-elements", 2304, "--json", *mode)
    assert run.returncode == 0, run.stdout
    (checked,) = json.loads(run.stdout)["vars"]
    assert checked["checked"] == 2304 and checked["max_abs_error"] < 1e-9


def test_check_of_the_compiled_attack_program_checks_its_own_input_gradient(files, attack):
    """The compiled attack program (a backward, no optimizer) was refused by check; its own x@GRAD is checked now."""
    run = gradc_cli("check", attack, "--params", files / "clean.npz", "--feed", files / "feed.npz", "--wrt", "x",
                    "--test-mode", "--max-elements", 300, "--json")
    assert run.returncode == 0, run.stderr
    (checked,) = json.loads(run.stdout)["vars"]
    assert checked["var"] == "x" and checked["checked"] >= 300 and checked["max_abs_error"] < 1e-9
    assert "checking the gradients it computes" in run.stderr


def test_fgsm_and_pgd_examples_and_robust_accuracy_equal_paddles(files, attack):
    """FGSM from gradc's eval-mode input gradient, and 5 PGD steps from Paddle's random start, give Paddle's examples
    bit for bit; gradc evaluate of them gives Paddle's accuracies: 0.5625 clean, 0.4375 under FGSM, 0.3125 under PGD
    (eps 0.1) (no fault)."""
    test, paddle = np.load(files / "test.npz"), np.load(files / "attack.npz")
    program, scope = gradc.load(attack), gradc.Scope()
    gradc.load_params(scope, files / "clean.npz", program)

    def gradient(x, label):
        return gradc.Executor().run(program, feed={"x": x, "label": label}, fetch_list=["x@GRAD"], scope=scope)[0]

    fgsm = np.clip(test["x"] + EPS * np.sign(gradient(test["x"], test["label"])), 0, 1).astype(np.float32)
    np.testing.assert_array_equal(fgsm, paddle["fgsm"])
    pgd = _pgd(gradient, test["x"], test["label"], paddle["start"], META["pgd_steps"])
    np.testing.assert_array_equal(pgd, paddle["pgd"])
    for name, images in [("clean", test["x"]), ("fgsm", fgsm), ("pgd", pgd)]:
        np.savez(files / f"{name}_set.npz", x=images, label=test["label"])
        run = gradc_cli("evaluate", files / "forward.pb", "--params", files / "clean.npz", "--data",
                        files / f"{name}_set.npz", "--json")
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["acc"] == META["accuracy"][name], name


def test_adversarial_training_step_by_step_equals_paddles(files, attack):
    """Adversarial training from the clean weights: each batch of 8 a 3-step PGD in eval mode (attack.pb) from the
    current weights, then a Momentum(0.1, 0.9) step of gradc compile --optimizer momentum on it (batch norm and dropout
    in train mode, dropout's fixed seed). The 4 losses are Paddle's to 1e-6 (0.706, 0.841, 0.650, 0.406), the weights
    and running statistics Paddle's to 1e-6 (no fault)."""
    compiled = gradc_cli("compile", files / "forward.pb", "-o", files / "train.pb", "--optimizer", "momentum", "--lr",
                         0.1, "--momentum", 0.9)
    assert compiled.returncode == 0, compiled.stderr
    train, attacking = gradc.load(files / "train.pb"), gradc.load(attack)
    executor, scope = gradc.Executor(), gradc.Scope()
    for startup in ("startup.pb", "train.startup.pb"):
        executor.run(gradc.load(files / startup), scope=scope)
    gradc.load_params(scope, files / "clean.npz", train)
    data, starts = np.load(files / "data.npz"), np.load(files / "adv_starts.npz")["start"]

    def gradient(x, label):
        return executor.run(attacking, feed={"x": x, "label": label}, fetch_list=["x@GRAD"], scope=scope)[0]

    losses = []
    for step, start in enumerate(starts):
        x, label = data["x"][step * 8:(step + 1) * 8], data["label"][step * 8:(step + 1) * 8]
        adv = _pgd(gradient, x, label, start, META["adversarial"]["pgd_steps"])
        losses.append(float(executor.run(train, feed={"x": adv, "label": label}, fetch_list=[LOSS], scope=scope)[0]))
    np.testing.assert_allclose(losses, META["adversarial"]["losses"], rtol=1e-6)
    paddle = np.load(files / "adv_trained.npz")
    for name in paddle.files:
        np.testing.assert_allclose(np.asarray(scope[name]), paddle[name], rtol=0, atol=1e-6, err_msg=name)

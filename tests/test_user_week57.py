"""A normalizing-flow researcher's week (docs/tools.md): a RealNVP-style flow (actnorm set from the first batch, two
affine couplings with tanh scales, invertible linear layers whose log-determinants are slogdet's and log|det|'s, an
LU-parameterised one of tril/triu and exp of a diagonal, a Gaussian base of learnt covariance through cholesky and
triangular_solve, the loss in bits per dimension), a linear flow whose log-determinant is read from paddle.linalg.lu
and lu_unpack, and a mixture-density network (log_softmax weights, logsumexp over components), each trained by
Adam(0.01) against Paddle 3.3.1's (tools/paddle_user_week57.py); checked against central differences, sampled by the
inverse pass. Each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from user_weeks import save_corner_feeds, save_first, train_steps

WEEK = DATA / "user_week57"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("flow", "mdn", "lu_flow")
BATCH = 16
CORNERS = ("unit_lower", "unit_lower_t")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model, each with its first batch (first.npz); the flow's initial weights
    without actnorm's two vectors (the data set them)."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week57"), MODELS)
    for model in MODELS:
        save_first(out / model, BATCH)
    save_corner_feeds(out, {name: "a b" for name in CORNERS})
    init = dict(np.load(out / "flow" / "init.npz"))
    np.savez(out / "flow" / "init_undone.npz", **{k: v for k, v in init.items() if not k.startswith("actnorm")})
    return out


def _compiled(folder):
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "t.pb", "--optimizer", "adam", "--lr", 0.01)
    assert compiled.returncode == 0, compiled.stderr
    return folder / "t.pb", folder / "t.startup.pb"


@pytest.mark.parametrize("model", MODELS)
def test_each_model_trains_to_paddles_losses_and_weights(files, model):
    """gradc compile --optimizer adam and train from Paddle's initial weights: its 5 losses (bits per dimension, the
    MDN's NLL) to 1e-6 and its trained weights to 3e-7, through slogdet, det, cholesky, triangular_solve, lu and
    lu_unpack's gradients (no fault)."""
    folder = files / model
    program, startup = _compiled(folder)
    run = train_steps(program, startup, folder / "data.npz", BATCH, "--params", folder / "init.npz",
                      "--save-params", folder / "mine.npz")
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)
    ours, paddle = np.load(folder / "mine.npz"), np.load(folder / "trained.npz")
    assert sorted(ours.files) == sorted(paddle.files)
    for name in paddle.files:
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=3e-7, err_msg=name)


@pytest.mark.parametrize("model", MODELS)
def test_paddles_own_programs_train_to_its_losses(files, model):
    """Paddle's minimize() programs from its startup and initial weights: its 5 losses (no fault)."""
    folder = files / model
    run = train_steps(folder / "train.pb", folder / "startup.pb", folder / "data.npz", BATCH, "--params",
                      folder / "init.npz")
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_check_agrees_with_central_differences(files, model):
    """gradc check on Paddle's trained weights and the first batch: every parameter's gradient agrees with float64
    central differences (no fault)."""
    run = gradc_cli("check", files / model / "forward.pb", "--params", files / model / "trained.npz", "--feed",
                    files / model / "first.npz", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["problems"] == []


@pytest.mark.parametrize("model", MODELS)
def test_run_gives_paddles_outputs(files, model):
    """gradc run of the forward on the trained weights: Paddle's loss and latents (the MDN's log-weights) of the first
    batch (no fault)."""
    folder, meta = files / model, META[model]
    run = gradc_cli("run", folder / "forward.pb", "--params", folder / "trained.npz", "--feed", folder / "first.npz",
                    "--fetch", f"{meta['loss']}=loss", "--fetch", f"{meta['value']}=value", "-o", folder / "out.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(folder / "out.npz"), np.load(folder / "outputs.npz")
    for key in ("loss", "value"):
        np.testing.assert_allclose(ours[key], paddle[key], rtol=1e-5, atol=1e-6, err_msg=key)


def test_sampling_by_the_inverse_pass_gives_paddles_samples(files):
    """gradc run of the sampler (the base's L times noise, then the flow inverted: inverse of the three linear
    layers, the couplings undone) on the trained weights: Paddle's latents and samples to 2e-6 (no fault)."""
    folder, meta = files / "flow", META["flow"]
    run = gradc_cli("run", folder / "inverse.pb", "--params", folder / "trained.npz", "--feed", folder / "noise.npz",
                    "--fetch", f"{meta['samples']}=samples", "--fetch", f"{meta['z']}=z", "-o", folder / "s.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(folder / "s.npz"), np.load(folder / "outputs.npz")
    for key in ("samples", "z"):
        np.testing.assert_allclose(ours[key], paddle[key], rtol=0, atol=2e-6, err_msg=key)


def test_actnorms_data_dependent_init_runs_on_the_first_batch(files):
    """Fault: the actnorm init program (loc and log-scale assigned from a batch's mean and deviation) given as
    --startup stopped at "reads var 'x' (slot X), which is not fed", and train had no way to feed it. Now train
    --data-init runs it on the first batch after the startups and --params: from weights without actnorm's, Paddle's
    5 losses and trained weights; the --startup refusal points to --data-init."""
    folder = files / "flow"
    program, startup = _compiled(folder)
    refused = gradc_cli("train", program, "--startup", startup, "--startup", folder / "actnorm_init.pb", "--data",
                        folder / "data.npz", "--batch-size", BATCH)
    assert refused.returncode == 1
    assert "actnorm_init.pb': block 0, op 0 (reduce_mean) reads var 'x'" in refused.stderr
    assert "runs on the first batch given to gradc train as --data-init" in refused.stderr
    run = train_steps(program, startup, folder / "data.npz", BATCH, "--params", folder / "init_undone.npz",
                      "--data-init", folder / "actnorm_init.pb", "--save-params", folder / "set.npz")
    np.testing.assert_allclose(step_losses(run), META["flow"]["losses"], rtol=1e-6)
    ours, paddle = np.load(folder / "set.npz"), np.load(folder / "trained.npz")
    for name in paddle.files:
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=3e-7, err_msg=name)
    said = gradc_cli("train", program, "--startup", startup, "--params", folder / "init_undone.npz", "--data-init",
                     folder / "actnorm_init.pb", "--data", folder / "data.npz", "--batch-size", BATCH, "--steps", 1)
    assert "initialised from the first batch: actnorm_loc, actnorm_logscale" in said.stdout


def test_a_data_init_that_sets_nothing_is_refused(files):
    """--data-init of a program that writes no persistable var (the forward, by mistake) is one line naming it."""
    folder = files / "flow"
    program, startup = _compiled(folder)
    run = gradc_cli("train", program, "--startup", startup, "--params", folder / "init.npz", "--data-init",
                    folder / "forward.pb", "--data", folder / "data.npz", "--batch-size", BATCH)
    assert run.returncode == 1
    assert run.stderr.startswith(f"gradc: error: --data-init program '{folder / 'forward.pb'}': it writes no "
                                 "persistable var")


def test_info_calls_the_actnorm_init_an_initialiser_from_the_data(files):
    """Fault: gradc info called the actnorm init "forward program without a loss gradc picks: gradc run runs it;
    gradc compile needs --loss NAME", which sends a user to compile it. Now it names what it sets and from what; a
    forward program and a startup program are said as before."""
    kinds = {name: json.loads(gradc_cli("info", files / "flow" / f"{name}.pb", "--json").stdout)["kind"]
             for name in ("actnorm_init", "forward", "startup", "inverse")}
    assert kinds["actnorm_init"] == ("initialiser from the data: sets actnorm_loc, actnorm_logscale from the input(s) "
                                     "x (gradc train --data-init runs it on the first batch)")
    assert kinds["forward"].startswith("forward program: gradc compile")
    assert kinds["startup"].startswith("startup program")
    assert kinds["inverse"].startswith("forward program without a loss")
    folder = files / "flow"   # its fetch ops write the persistable fetch list: not an initialiser
    exported = gradc_cli("export", folder / "inverse.pb", "-o", folder / "sampler", "--params", folder / "trained.npz",
                         "--input", "noise", "--fetch", f"{META['flow']['samples']}=samples")
    assert exported.returncode == 0, exported.stderr
    info = json.loads(gradc_cli("info", folder / "sampler.pdmodel", "--json").stdout)
    assert info["kind"].startswith("inference model (feed and fetch ops)")


@pytest.mark.parametrize("corner", CORNERS)
def test_unit_lower_triangular_solve_gradient_is_the_right_one_where_paddles_is_not(files, corner):
    """Paddle 3.3.1's triangular_solve_grad with upper=False and unitriangular=True (plain or transposed) gives the
    gradient of a full-matrix solve: values on the diagonal and above it, elements the forward never reads (with
    upper=True it gives zeros there). gradc check agrees with float64 central differences; gradc's gradient is
    Paddle's below the diagonal and zero elsewhere, and b's is Paddle's."""
    check = gradc_cli("check", files / f"corner_{corner}.pb", "--feed", files / f"feed_{corner}.npz", "--wrt", "a",
                      "--wrt", "b", "--json")
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(check.stdout)["problems"] == []
    saved = np.load(files / "corners.npz")
    program = gradc.load(files / f"corner_{corner}.pb")
    loss = program.global_block.ops[-1].output_names()[0]
    grads = gradc.gradients(program, loss, ["a", "b"])
    feed = {name: saved[f"{corner}_{name}"] for name in ("a", "b", "w")}
    grad_a, grad_b = gradc.Executor().run(program, feed, grads)
    paddles = saved[f"{corner}_a@GRAD"]
    below = np.tril(np.ones_like(grad_a, bool), -1)
    np.testing.assert_allclose(grad_a[below], paddles[below], rtol=1e-12, atol=1e-12)
    assert not grad_a[~below].any() and np.abs(paddles[~below]).max() > 0.1
    np.testing.assert_allclose(grad_b, saved[f"{corner}_b@GRAD"], rtol=1e-12, atol=1e-12)


def test_evaluate_averages_a_log_likelihood_of_each_example(files):
    """Fault: gradc evaluate --fetch of the flow's log-likelihood of each example (float32[B]), the set's mean a density
    researcher reports, was refused: "fetched var ... is float32[32]: training reports scalars". Now its mean over the
    80 examples, the same at batch 7 (a last batch of 3) and 80, of the exported scorer too, equals numpy's mean of
    gradc run's values and -4 ln 2 times the bits per dimension; a value of another shape is one line."""
    folder = files / "flow"
    log_prob = "tmp_34"   # the per-example log-likelihood the bits per dimension are the mean of
    run = gradc_cli("run", folder / "forward.pb", "--params", folder / "trained.npz", "--feed", folder / "data.npz",
                    "--fetch", log_prob, "-o", folder / "log_prob.npz")
    assert run.returncode == 0, run.stderr
    expected = float(np.mean(np.load(folder / "log_prob.npz")[log_prob], dtype=np.float64))
    exported = gradc_cli("export", folder / "forward.pb", "-o", folder / "scorer", "--params", folder / "trained.npz",
                         "--input", "x", "--fetch", f"{log_prob}=log_prob")
    assert exported.returncode == 0, exported.stderr
    for program, params, name in ((folder / "forward.pb", folder / "trained.npz", log_prob),
                                  (folder / "scorer.pdmodel", folder / "scorer.pdiparams", "log_prob")):
        for batch in (7, 80):
            evaluated = gradc_cli("evaluate", program, "--params", params, "--data", folder / "data.npz", "--fetch",
                                  name, "--batch-size", batch, "--json")
            assert evaluated.returncode == 0, evaluated.stderr
            result = json.loads(evaluated.stdout)
            assert result["examples"] == 80
            np.testing.assert_allclose(result[name], expected, rtol=1e-6)
            if name == log_prob:
                np.testing.assert_allclose(result[META["flow"]["loss"]], -expected / (4 * np.log(2)), rtol=1e-6)
    refused = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                        folder / "data.npz", "--fetch", "tmp_30", "--batch-size", 7)
    assert refused.returncode == 1
    assert refused.stderr.startswith("gradc: error: fetched var 'tmp_30' is float32[4, 7]: an evaluation averages")

"""A Bayesian / probabilistic deep-learning researcher's week (docs/tools.md): a mixture density network, Bayes by
backprop (reparameterised Normal weights, a KL to the prior), heteroscedastic regression (gaussian_nll_loss), MC
dropout and a deep ensemble, built with Paddle 3.3.1's layers and paddle.distribution (tools/paddle_user_week38.py)
and trained by Adam step by step against Paddle's, the noise drawn as paddle.seed(38) draws it; Beta / Dirichlet /
LogNormal / Laplace log-probs, entropies and rsamples with Paddle's gradients; MC dropout's passes; an ancestral
sampler exported as PIR. Each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week38"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("mdn", "bbb", "hetero", "mcdrop", "ensemble")
SEED = 38


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model, the distributions and the sampler in the top one; a feed of 6
    test points a model."""
    out = tmp_path_factory.mktemp("week38")
    unpacked(WEEK, out, MODELS)
    for model in MODELS:
        test = np.load(out / model / "test_data.npz")
        np.savez(out / model / "feed.npz", **{name: value[:6] for name, value in test.items()})
    dists = np.load(out / "dists.npz")
    np.savez(out / "dists_feed.npz", **{name: dists[name] for name in ("a", "b", "loc", "value")})
    return out


def _losses(stdout: str) -> list[float]:
    return [next(iter(line["values"].values())) for line in map(json.loads, stdout.splitlines())
            if line["event"] == "step"]


@pytest.mark.parametrize("model", MODELS)
def test_each_model_trains_to_paddles_losses_and_weights_with_paddles_noise(files, model):
    """6 Adam(0.01) steps of batch 16 from Paddle's initial weights, the random ops drawing from one stream seeded
    as paddle.seed(38) (Bayes by backprop's weight noise, MC dropout's masks): Paddle's losses to 3e-7 relative (mdn
    1.149 ... 1.078, bbb 21.59 ... 13.85, hetero 0.280 ... 0.246, mcdrop 0.736 ... 0.666, ensemble 4.139 ... 3.671)
    and its weights to 2.4e-7."""
    folder = files / model
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "train_gradc.pb", "--optimizer", "adam",
                         "--lr", 0.01)
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("train", folder / "train_gradc.pb", "--startup", folder / "train_gradc.startup.pb", "--params",
                    folder / "init.npz", "--data", folder / "data.npz", "--batch-size", 16, "--json", "--log-every", 1,
                    "--seed", SEED, "--paddle-stream", "--save-params", folder / "trained_gradc.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(_losses(run.stdout), META[model]["losses"], rtol=5e-7)
    ours, paddle = np.load(folder / "trained_gradc.npz"), np.load(folder / "trained.npz")
    assert sorted(ours.files) == sorted(paddle.files)
    for name in paddle.files:
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=5e-7, err_msg=name)


def test_paddles_own_training_program_with_dropout_trains_to_its_losses(files):
    """Paddle's minimize() program of the MC dropout net, run by gradc train from Paddle's startup program seeded as
    paddle.seed(38): its initial weights and its dropout masks, its losses to 1e-7."""
    folder = files / "mcdrop"
    run = gradc_cli("train", folder / "train.pb", "--startup", folder / "startup.pb", "--data", folder / "data.npz",
                    "--batch-size", 16, "--json", "--log-every", 1, "--seed", SEED, "--paddle-stream")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(_losses(run.stdout), META["mcdrop"]["losses"], rtol=2e-7)


@pytest.mark.parametrize("model", ["mdn", "bbb", "hetero"])
def test_check_through_rsample_and_the_kl_agrees_with_central_differences(files, model):
    """`gradc check --seed 38` of each loss at every parameter: the gradient through the reparameterised weights, the
    KL and softplus(rho), the mixture's logsumexp and gaussian_nll_loss's clipped variance (to 2.5e-9)."""
    folder = files / model
    run = gradc_cli("check", folder / "forward.pb", "--params", folder / "init.npz", "--feed", folder / "feed.npz",
                    "--seed", SEED, "--json")
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    assert document["ok"] and len(document["vars"]) == 4
    assert max(var["max_abs_error"] for var in document["vars"]) < 1e-8


def test_paddles_float64_distribution_gradients_run_in_gradc(files):
    """Paddle's gradients program of Beta / Dirichlet / LogNormal / Laplace log_prob, entropy and (LogNormal, Laplace)
    rsample of float64 parameters gives Paddle's every term and gradient to 2e-15, rsamples drawn as paddle.seed(38).
    Before, gradc refused it: Paddle's legacy float32 noise * float64 scale declares the float64 product float32
    ("block 0, op 79 (elementwise_mul): the kernel computed 'tmp_39' as float64, but the program declares
    float32"), where Paddle's executor keeps the kernel's float64."""
    fetches = [f"--fetch={var}={term}" for term, var in META["dists"].items()]
    run = gradc_cli("run", files / "dists.pb", "--feed", files / "dists_feed.npz", "--seed", SEED, *fetches,
                    "--fetch", "a@GRAD", "--fetch", "b@GRAD", "--fetch", "loc@GRAD", "-o", files / "dists_out.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / "dists_out.npz"), np.load(files / "dists.npz")
    assert len(ours.files) == 14
    for name in ours.files:
        assert ours[name].dtype == np.float64, name
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=4e-15, err_msg=name)


@pytest.mark.parametrize("input_dtype", [np.float32, np.float64])
def test_a_result_wider_than_declared_is_kept_only_where_an_input_is_that_wide(input_dtype):
    """A float64 result for a float32 var: kept when the op read float64 (Paddle's declaration is off), still
    reported when it read float32 alone (a kernel that widened float32 is gradc's fault, not to be cast away)."""
    from types import SimpleNamespace

    from gradc.errors import ExecutionError
    from gradc.executor import Scope
    from gradc.executor.stores import as_declared

    scope = Scope()
    scope.vars["x"] = np.ones(3, input_dtype)
    ctx = SimpleNamespace(where="block 0, op 0 (elementwise_mul)", ins={"X": ["x"]}, scope=scope)
    result = np.full(3, 1 / 3)
    if input_dtype == np.float64:
        assert as_declared(ctx, "out", result, np.dtype(np.float32)) is result
    else:
        with pytest.raises(ExecutionError, match="computed 'out' as float64, but the program declares float32"):
            as_declared(ctx, "out", result, np.dtype(np.float32))


def test_gradcs_distribution_gradients_are_paddles_and_central_differences(files):
    """gradc's compilation of the distributions' forward (--wrt a, b, loc) gives Paddle's gradients to 2e-15, and
    `check` agrees with float64 central differences at every element of a, b, loc and the value (to 1.4e-9)."""
    total = META["dists"]["total"]
    compiled = gradc_cli("compile", files / "dists_forward.pb", "-o", files / "dists_gradc.pb", "--loss", total,
                         "--wrt", "a", "--wrt", "b", "--wrt", "loc")
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("run", files / "dists_gradc.pb", "--feed", files / "dists_feed.npz", "--seed", SEED, "--fetch",
                    "a@GRAD", "--fetch", "b@GRAD", "--fetch", "loc@GRAD", "-o", files / "dists_grads.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / "dists_grads.npz"), np.load(files / "dists.npz")
    for name in ours.files:
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=4e-15, err_msg=name)
    check = gradc_cli("check", files / "dists_forward.pb", "--feed", files / "dists_feed.npz", "--seed", SEED,
                      "--loss", total, "--wrt", "a", "--wrt", "b", "--wrt", "loc", "--wrt", "value")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "4 var(s) checked" in check.stdout


def test_run_repeat_gives_paddles_mc_dropout_passes(files):
    """`gradc run --repeat 20 --seed 38` of the training forward (dropout on) with the trained weights: the 20 passes
    Paddle's executor gives after paddle.seed(38), stacked [20, 12, 1], to 3e-8, so their mean and variance (the
    predictive uncertainty, up to 0.022). Before, `run` had no --repeat: each run re-seeds, and 20 runs with one
    seed gave 20 equal passes."""
    folder = files / "mcdrop"
    run = gradc_cli("run", folder / "forward.pb", "--params", folder / "trained.npz", "--feed",
                    folder / "test_data.npz", "--seed", SEED, "--repeat", 20, "--fetch",
                    f"{META['mcdrop']['prediction']}=passes", "-o", folder / "passes.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(folder / "passes.npz")["passes"], np.load(folder / "mc.npz")
    assert ours.shape == (20, 12, 1)
    np.testing.assert_allclose(ours, paddle["passes"], rtol=0, atol=1e-7)
    np.testing.assert_allclose(ours.var(0), paddle["var"], rtol=1e-4, atol=1e-8)
    assert paddle["var"].max() > 0.01   # the passes differ: dropout was on


def test_run_repeat_refuses_fetches_whose_shapes_differ_between_runs(files):
    """A fetch whose shape changes from run to run cannot stack: one line naming it."""
    from gradc.commands.run_repeat import stacked
    from gradc.errors import GradcError
    with pytest.raises(GradcError, match="'boxes' has shapes \\[2, 4\\], \\[3, 4\\] in different runs"):
        stacked(["boxes"], [[np.zeros((3, 4))], [np.zeros((2, 4))]])


def test_evaluate_train_mode_gives_paddles_first_mc_dropout_pass(files):
    """`gradc evaluate --train-mode --seed 38` keeps dropout on: the mse of Paddle's first MC pass, 0.400366 (test mode
    gives 0.405023, Paddle's test program's). Before, evaluate ran in test mode only."""
    folder = files / "mcdrop"
    args = ["evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
            folder / "test_data.npz", "--seed", SEED, "--batch-size", 12, "--json"]
    passes, data = np.load(folder / "mc.npz")["passes"], np.load(folder / "test_data.npz")
    on, off = gradc_cli(*args, "--train-mode"), gradc_cli(*args)
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    np.testing.assert_allclose(json.loads(on.stdout)["loss"], np.mean((passes[0] - data["y"]) ** 2), rtol=1e-6)
    tested = np.load(folder / "test_out.npz")["out"]
    np.testing.assert_allclose(json.loads(off.stdout)["loss"], np.mean((tested - data["y"]) ** 2), rtol=1e-6)


def test_precision_leaves_a_random_ops_own_error_out(files):
    """`gradc precision` of the Bayes-by-backprop and MC dropout training programs: gaussian_random's and dropout's own
    error is '-' (run alone the op draws afresh: before, it read 1.2e+00 and 9.8e-01, the distance between two
    draws, not rounding); a deterministic op keeps a figure."""
    for model, random_ops in (("bbb", {"gaussian_random"}), ("mcdrop", {"dropout"})):
        folder = files / model
        assert gradc_cli("compile", folder / "forward.pb", "-o", folder / "p.pb", "--optimizer", "adam").returncode == 0
        run = gradc_cli("precision", folder / "p.pb", "--feed", folder / "feed.npz", "--params", folder / "init.npz",
                        "--startup", folder / "p.startup.pb", "--top", 40, "--json")
        assert run.returncode == 0, run.stderr
        rows = json.loads(run.stdout)["rows"]
        assert {row["type"] for row in rows} >= random_ops
        for row in rows:
            if row["type"] in random_ops:
                assert row["own"] is None, row
        assert all(row["own"] < 1e-6 for row in rows if row["type"] == "matmul_v2")


def test_the_mdn_sampler_exported_by_paddle_runs_in_gradc_with_paddles_draws(files):
    """Paddle's paddle.jit.save PIR of the trained MDN's ancestral sampler (Categorical's multinomial, then randn):
    `gradc run --seed 38` gives the mixture weights, means and scales and the very sample paddle.jit.load gives after
    paddle.seed(38), to 1.2e-7."""
    x = np.load(files / "mdn" / "test_data.npz")["x"]
    np.savez(files / "x.npz", x=x)
    run = gradc_cli("run", files / "sampler_pir.json", "--params", files / "sampler_pir.pdiparams", "--feed",
                    files / "x.npz", "--seed", SEED, "-o", files / "sampled.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / "sampled.npz"), np.load(files / "sampler_pir.npz")
    for key, name in zip(ours.files, ("weights", "mu", "sigma", "sample")):
        np.testing.assert_allclose(ours[key], paddle[name], rtol=0, atol=3e-7, err_msg=name)


def test_bayes_by_backprop_exported_as_pir_draws_as_its_program(files):
    """The trained Bayes-by-backprop net's test program exported by `gradc export` as PIR JSON (its weight sampler
    kept: gaussian_random is no training op) runs in gradc to the test program's own samples with --seed 38 (Paddle's
    Predictor gives them too, to 2e-7, by hand), and another seed draws other weights."""
    folder = files / "bbb"
    prediction = META["bbb"]["prediction"]
    exported = gradc_cli("export", folder / "test.pb", "-o", folder / "sampler.json", "--input", "x", "--fetch",
                         f"{prediction}=pred", "--params", folder / "trained.npz")
    assert exported.returncode == 0, exported.stderr
    np.savez(folder / "x.npz", x=np.load(folder / "test_data.npz")["x"])
    outputs = {}
    for name, program, params, seed in (("export", folder / "sampler.json", folder / "sampler.pdiparams", SEED),
                                        ("test", folder / "test.pb", folder / "trained.npz", SEED),
                                        ("other", folder / "sampler.json", folder / "sampler.pdiparams", SEED + 1)):
        fetch = [] if name != "test" else ["--fetch", f"{prediction}=pred"]
        run = gradc_cli("run", program, "--params", params, "--feed", folder / "x.npz", "--seed", seed, *fetch, "-o",
                        folder / f"{name}.npz")
        assert run.returncode == 0, run.stderr
        outputs[name] = np.load(folder / f"{name}.npz")["pred"]
    np.testing.assert_array_equal(outputs["export"], outputs["test"])
    assert np.abs(outputs["other"] - outputs["test"]).max() > 1e-3


def test_info_of_paddles_startup_program_is_no_forward_program_and_names_equal_draws(files):
    """`gradc info` of the ensemble's startup (Paddle's, random_seed 38): a startup program without a loss, and a
    note that the three members' weights start equal (every uniform_random has seed 38: Paddle's members are one
    net; their 6 losses and trained weights are equal, Paddle's and gradc's). Before, it read "kind: forward
    program: gradc compile appends its backward" and "loss: linear_9.w_0_beta2_pow_acc_0 (gradc compile picks it
    by itself)", and said nothing of the draws; a startup of differently seeded draws gets no note."""
    run = gradc_cli("info", files / "ensemble" / "startup.pb", "--json")
    assert run.returncode == 0, run.stderr
    facts = json.loads(run.stdout)
    assert facts["kind"].startswith("startup program") and facts["loss"] is None
    assert facts["equal_draws"] == [{"vars": ["linear_7.w_0", "linear_9.w_0", "linear_11.w_0"], "seed": SEED},
                                    {"vars": ["linear_8.w_0", "linear_10.w_0", "linear_12.w_0"], "seed": SEED}]
    trained = np.load(files / "ensemble" / "trained.npz")
    np.testing.assert_array_equal(trained["linear_7.w_0"], trained["linear_11.w_0"])
    text = gradc_cli("info", files / "ensemble" / "startup.pb").stdout
    assert "note: linear_7.w_0, linear_9.w_0, linear_11.w_0 start equal" in text
    assert json.loads(gradc_cli("info", files / "mdn" / "startup.pb", "--json").stdout)["equal_draws"] == []
    forward = json.loads(gradc_cli("info", files / "ensemble" / "forward.pb", "--json").stdout)
    assert forward["kind"].startswith("forward program") and forward["loss"] == META["ensemble"]["loss"]


def test_compile_refuses_paddles_startup_program_in_one_line(files, tmp_path):
    """`gradc compile startup.pb` (the startup given for the forward program): one line saying what it is, nothing
    written. Before, it differentiated an Adam accumulator, wrote a program of 0 parameter gradients with a warning,
    and with --optimizer failed "pass 'optimizer': no parameter has a gradient: run the backward pass first"."""
    for extra in ((), ("--optimizer", "adam")):
        run = gradc_cli("compile", files / "ensemble" / "startup.pb", "-o", tmp_path / "startup_train.pb", *extra)
        assert run.returncode == 1
        assert run.stderr.strip().splitlines() == [
            f"gradc: error: '{files / 'ensemble' / 'startup.pb'}' is a startup program (its every op initialises a "
            f"persistable var): it has no loss to differentiate; compile the forward program and give this one to "
            f"gradc train --startup"]
        assert not (tmp_path / "startup_train.pb").exists()

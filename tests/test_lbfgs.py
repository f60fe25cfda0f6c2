"""L-BFGS on the host (gradc.LBFGS, `gradc train --lbfgs`) against paddle.optimizer.LBFGS (dygraph; fixtures by
tools/paddle_lbfgs.py): the same steps from the same weights on a small regression net, with a fixed step and with
the strong Wolfe line search, its history full, its evaluations capped; and the line search's own conditions."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.training.lbfgs import LBFGS
from gradc.training.line_search import strong_wolfe

LBFGS_DATA = DATA / "lbfgs"
META = json.loads((LBFGS_DATA / "meta.json").read_text())
CASES = np.load(LBFGS_DATA / "cases.npz")
INIT = dict(np.load(LBFGS_DATA / "init.npz"))
BATCHES = dict(np.load(LBFGS_DATA / "batches.npz"))


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """The float64 and float32 nets compiled without an optimizer: their loss and gradients."""
    out = tmp_path_factory.mktemp("lbfgs")
    for suffix in ("", "32"):
        run = gradc_cli("compile", LBFGS_DATA / f"net{suffix}.pb", "-o", out / f"net{suffix}.pb")
        assert run.returncode == 0, run.stderr
    return out


def _batch(step: int, dtype: str) -> dict:
    rows = slice(0, 16) if step % 2 == 0 else slice(16, 32)
    return {name: value[rows].astype(dtype) for name, value in BATCHES.items()}


def _run(compiled, case: dict) -> tuple[list, list]:
    """Paddle's case by gradc's Trainer: the loss of each step and the weights after it."""
    suffix = "32" if case["dtype"] == "float32" else ""
    trainer = gradc.Trainer(compiled / f"net{suffix}.pb", LBFGS_DATA / f"net{suffix}_startup.pb",
                            lbfgs=gradc.LBFGS(**case["arguments"]))
    for name, value in INIT.items():
        trainer.scope[name] = value.astype(case["dtype"])
    losses, weights = [], []
    for step in range(len(case["losses"])):
        losses += trainer.train_step(_batch(step, case["dtype"]))
        weights.append({name: np.array(trainer.scope[name]) for name in META["params"]})
    return losses, weights


@pytest.mark.parametrize("name", [name for name, case in META["cases"].items() if case["dtype"] == "float64"])
def test_steps_are_paddles_in_float64(compiled, name):
    """Paddle's losses and weights after every step, to float64 round-off (the dot products sum in another order)."""
    case = META["cases"][name]
    losses, weights = _run(compiled, case)
    np.testing.assert_allclose(losses, case["losses"], rtol=1e-9)
    for step, values in enumerate(weights):
        for param, value in values.items():
            np.testing.assert_allclose(value, CASES[f"{name}.step{step}.{param}"], rtol=0, atol=1e-8,
                                       err_msg=f"{name} step {step} {param}")


def test_float32_rounds_no_worse_than_paddle(compiled):
    """In float32 the line-searched iterations round differently from Paddle's (another summation order), so both are
    judged by Paddle's float64 run of the same case: gradc's weights are within twice Paddle's own distance from it."""
    losses, weights = _run(compiled, META["cases"]["float32"])
    reference = "float32_in_float64"
    np.testing.assert_allclose(losses, META["cases"][reference]["losses"], rtol=1e-4)
    for step, values in enumerate(weights):
        ours = max(np.abs(values[p] - CASES[f"{reference}.step{step}.{p}"]).max() for p in META["params"])
        paddles = max(np.abs(CASES[f"float32.step{step}.{p}"] - CASES[f"{reference}.step{step}.{p}"]).max()
                      for p in META["params"])
        assert ours <= 2 * paddles, (step, ours, paddles)


def test_the_command_line_trains_by_lbfgs(compiled, tmp_path):
    """gradc train --lbfgs over the two batches (--data in order) takes Paddle's two line-searched steps."""
    case = META["cases"]["strong_wolfe"]
    arguments = ", ".join(f"{key}={value!r}" for key, value in case["arguments"].items())
    run = gradc_cli("train", compiled / "net.pb", "--startup", LBFGS_DATA / "net_startup.pb", "--params",
                    LBFGS_DATA / "init.npz", "--data", LBFGS_DATA / "batches.npz", "--batch-size", 16, "--lbfgs",
                    arguments, "--json", "--log-every", 1, "--save-params", tmp_path / "trained.npz")
    assert run.returncode == 0, run.stderr
    steps = [json.loads(line)["values"] for line in run.stdout.splitlines() if '"event": "step"' in line]
    assert all(list(values) == ["mean_0.tmp_0"] for values in steps)   # the loss, picked by itself
    np.testing.assert_allclose([values["mean_0.tmp_0"] for values in steps], case["losses"], rtol=1e-9)
    trained = np.load(tmp_path / "trained.npz")
    for param in META["params"]:
        np.testing.assert_allclose(trained[param], CASES[f"strong_wolfe.step1.{param}"], atol=1e-8)


def test_lbfgs_alone_takes_its_defaults(compiled, tmp_path):
    """--lbfgs without arguments is gradc.LBFGS() in Python: the same losses, step by step."""
    np.savez(tmp_path / "feed.npz", **_batch(0, "float64"))
    run = gradc_cli("train", compiled / "net.pb", "--startup", LBFGS_DATA / "net_startup.pb", "--params",
                    LBFGS_DATA / "init.npz", "--feed", tmp_path / "feed.npz", "--steps", 3, "--json", "--log-every", 1,
                    "--lbfgs")
    assert run.returncode == 0, run.stderr
    logged = [json.loads(line)["values"]["mean_0.tmp_0"] for line in run.stdout.splitlines() if '"step"' in line]
    trainer = gradc.Trainer(compiled / "net.pb", LBFGS_DATA / "net_startup.pb", lbfgs=gradc.LBFGS())
    for name, value in INIT.items():
        trainer.scope[name] = value
    assert logged == [trainer.train_step(_batch(0, "float64"))[0] for _ in range(3)]
    assert logged[2] < logged[1] < logged[0]


def test_what_lbfgs_refuses(compiled, tmp_path):
    """One line each: the forward program (no gradients), a training program (its updates would move the weights
    too), a misspelt or unknown argument, a line search Paddle does not have, a schedule, checkpoints; and
    compile --optimizer lbfgs says where L-BFGS is."""
    feed = tmp_path / "feed.npz"
    np.savez(feed, **_batch(0, "float64"))
    trained = tmp_path / "train.pb"
    assert gradc_cli("compile", LBFGS_DATA / "net.pb", "-o", trained, "--optimizer", "sgd").returncode == 0
    startup = ("--startup", LBFGS_DATA / "net_startup.pb", "--feed", feed)
    cases = {
        (LBFGS_DATA / "net.pb", ""): f"{LBFGS_DATA / 'net.pb'}: L-BFGS needs the parameters' gradients: give it the "
                                     f"program gradc compile writes (without --optimizer), not the forward program",
        (trained, ""): f"{trained}: L-BFGS moves the parameters itself: give it a program compiled without --optimizer "
                       f"(the update ops of this one would move them too)",
        (compiled / "net.pb", "max_iters=3"): "--lbfgs: LBFGS has no argument 'max_iters' (did you mean max_iter?); "
                                              "it takes learning_rate, max_iter, max_eval, tolerance_grad, "
                                              "tolerance_change, history_size, line_search_fn",
        (compiled / "net.pb", "line_search_fn='armijo'"): "LBFGS: line_search_fn must be None or 'strong_wolfe' "
                                                          "(Paddle's only one), not 'armijo'",
        (compiled / "net.pb", "history_size=0"): "LBFGS: history_size must be a whole number >= 1, not 0",
        (compiled / "net.pb", "max_iter=("): "cannot read --lbfgs 'max_iter=(': give LBFGS's keyword arguments, e.g. "
                                             "\"max_iter=20, line_search_fn='strong_wolfe'\"",
    }
    for (program, spec), message in cases.items():
        run = gradc_cli("train", program, *startup, "--lbfgs", spec)
        assert (run.returncode, run.stderr) == (1, f"gradc: error: {message}\n"), spec
    run = gradc_cli("train", compiled / "net.pb", *startup, "--lbfgs", "--lr", 0.1)
    assert run.returncode == 2 and "--lr " in run.stderr and "not with --lbfgs" in run.stderr
    refused = gradc_cli("compile", LBFGS_DATA / "net.pb", "-o", tmp_path / "x.pb", "--optimizer", "lbfgs")
    assert refused.returncode == 2 and "gradc train --lbfgs" in refused.stderr


@pytest.mark.parametrize("dtype, search", [("float32", "strong_wolfe"), ("float64", None)])
def test_a_checkpointed_run_resumes_bit_for_bit(compiled, tmp_path, dtype, search):
    """Checkpoints were refused with L-BFGS (its history would be lost). They keep it now: 2 epochs, then 2 more
    resumed from the checkpoint, give the losses and weights of 4 epochs in one run bit for bit (a history of 3
    pairs, full by then); a run with other L-BFGS arguments does not resume it."""
    suffix = "32" if dtype == "float32" else ""
    data = gradc.training.OneBatch(_batch(0, dtype))

    def trainer(**arguments):
        lbfgs = gradc.LBFGS(max_iter=4, history_size=3, line_search_fn=search, **arguments)
        made = gradc.Trainer(compiled / f"net{suffix}.pb", LBFGS_DATA / f"net{suffix}_startup.pb", lbfgs=lbfgs)
        made.scope.vars.update((name, value.astype(dtype)) for name, value in INIT.items())
        return made

    straight = trainer()
    whole = straight.fit(data, epochs=4)
    trainer().fit(data, epochs=2, checkpoint_dir=tmp_path / "run")
    resumed = trainer()
    tail = resumed.fit(data, epochs=4, resume=tmp_path / "run")
    assert tail.steps == whole.steps and len(whole.steps) == 4
    assert resumed.lbfgs.iterations == straight.lbfgs.iterations and len(resumed.lbfgs._steps) == 3
    for param in META["params"]:
        np.testing.assert_array_equal(resumed.scope[param], straight.scope[param])
    with pytest.raises(gradc.GradcError, match="other settings.*history_size"):
        trainer(tolerance_grad=1e-5).fit(data, epochs=4, resume=tmp_path / "run")


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(0, 2**31 - 1))
def test_line_search_steps_satisfy_the_strong_wolfe_conditions(size, seed):
    """On a random convex quartic, the step the line search returns along the steepest descent lowers the loss
    enough (Armijo, c1 = 1e-4) and flattens the slope (|slope| <= 0.9 |slope at 0|), as its docstring says."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((size, size))
    hessian, center = a @ a.T + 0.1 * np.eye(size), rng.standard_normal(size)

    def evaluate(x):
        d = x - center
        return float(d @ hessian @ d / 2 + (d ** 4).sum() / 4), hessian @ d + d ** 3
    x = rng.standard_normal(size) * 3
    loss, grad = evaluate(x)
    direction = -grad
    slope = grad @ direction
    new_loss, new_grad, step, _ = strong_wolfe(evaluate, x, direction, loss, grad, slope, 1.0)
    assert new_loss <= loss + 1e-4 * step * slope
    assert abs(new_grad @ direction) <= -0.9 * slope
    there_loss, there_grad = evaluate(x + step * direction)   # what it returns is the function's at that step
    assert new_loss == there_loss and np.array_equal(new_grad, there_grad)


@pytest.mark.parametrize("seed", range(4))
def test_a_quadratic_is_solved(seed):
    """On a random positive definite quadratic in 6 dimensions, one step of up to 24 iterations (the Wolfe search
    takes the unit step most of the time) ends at the minimum, to 1e-7."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((6, 6))
    hessian, center = a @ a.T + np.eye(6), rng.standard_normal(6)
    lbfgs = LBFGS(max_iter=24, max_eval=100, line_search_fn="strong_wolfe", tolerance_grad=1e-12,
                  tolerance_change=1e-14)
    x = lbfgs.step(lambda x: (float((x - center) @ hessian @ (x - center) / 2), hessian @ (x - center)), np.zeros(6))
    np.testing.assert_allclose(x, center, rtol=0, atol=1e-7)

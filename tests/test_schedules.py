"""Learning-rate schedules (gradc.schedules): Paddle's schedulers by name and arguments give the learning rate
Paddle wrote before each run (lrs.npy of the linear_lr_* fixtures, float32-exact), and training with them
through the executor API and `gradc train` follows Paddle's training."""

import re
import subprocess
import sys

import numpy as np
import pytest

import gradc
from gradc import schedules
from optim_cases import CASES, OptimCase, assert_trained_like_paddle, train
from test_cli import assert_clean_failure
from test_cli import gradc as gradc_cli

SCHEDULED = [name for name in CASES if name.startswith("linear_lr_")]


def paddles_schedule(case: OptimCase) -> schedules.Schedule:
    arguments = dict(case.meta["hyperparameters"]["learning_rate"])
    return schedules.make(arguments.pop("scheduler"), **arguments)


@pytest.mark.parametrize("name", SCHEDULED)
def test_schedule_gives_paddles_learning_rates(name):
    case = OptimCase(name)
    schedule = paddles_schedule(case)
    np.testing.assert_array_equal(np.float32([schedule(step) for step in range(case.steps)]), case.lrs)


@pytest.mark.parametrize("name", ["linear_lr_NoamDecay", "linear_lr_CosineAnnealingDecay"])
def test_training_with_a_schedule_follows_paddle(name):
    case = OptimCase(name)
    losses, states = train(case, case.program(), paddles_schedule(case))
    assert_trained_like_paddle(case, losses, states)


def test_schedules_past_the_fixtures():
    """Values Paddle's formulas give beyond 5 steps: the cosine rises again after T_max, the warm-up hands over
    to its inner schedule, piecewise and values hold their last value."""
    cosine = schedules.make("CosineAnnealing", learning_rate=1.0, T_max=2)
    assert [round(cosine(e), 12) for e in range(5)] == [1.0, 0.5, 0.0, 0.5, 1.0]
    warmup = schedules.LinearWarmup(schedules.StepDecay(0.1, step_size=1, gamma=0.5), 2, 0.0, 0.1)
    assert [warmup(e) for e in range(5)] == [0.0, 0.05, 0.1, 0.05, 0.025]
    assert schedules.PiecewiseDecay([1, 3], [3.0, 2.0, 1.0])(10) == 1.0
    assert schedules.parse("0.3, 0.2")(7) == 0.2
    poly = schedules.make("PolynomialDecay", learning_rate=1.0, decay_steps=4, end_lr=0.0, cycle=True)
    assert [poly(e) for e in (0, 2, 4, 6)] == [1.0, 0.5, 0.0, 0.25]


def test_parse_reads_names_with_arguments_and_values():
    assert schedules.parse("StepDecay(learning_rate=0.1, step_size=2, gamma=0.5)")(3) == pytest.approx(0.05)
    assert schedules.parse("MultiStepDecay(learning_rate=1.0, milestones=[1, 3])")(3) == pytest.approx(0.01)
    assert schedules.parse("0.1,0.05,0.01")(1) == 0.05
    nested = schedules.parse("LinearWarmup(learning_rate=CosineAnnealingDecay(learning_rate=0.1, T_max=4), "
                             "warmup_steps=2, start_lr=0.0, end_lr=0.1)")
    assert [round(nested(e), 12) for e in range(5)] == [0.0, 0.05, 0.1, 0.085355339059, 0.05]
    for bad, phrase in (("Nope(x=1)", "unknown learning-rate schedule 'Nope'"),
                        ("StepDecay(lr=1)", "schedule StepDecay"), ("0.1,,", "cannot read")):
        with pytest.raises(gradc.GradcError, match=phrase):
            schedules.parse(bad)


def test_the_learning_rate_var_is_found_behind_per_parameter_rates():
    """ParamAttr(learning_rate=0.5) makes the op read scale(learning_rate_0): the schedule writes the source."""
    program = OptimCase("mlp_param_learning_rate").program()
    assert schedules.learning_rate_vars(program) == ["learning_rate_0"]
    assert schedules.learning_rate_vars(OptimCase("mlp_rprop").program()) == []
    with pytest.raises(gradc.GradcError, match="no optimizer op reads a learning rate"):
        schedules.learning_rate_var(OptimCase("mlp_rprop").program())


def test_gradc_train_takes_a_schedule(tmp_path):
    """`gradc train --lr-schedule` writes the learning rate before each step as Paddle does: the same run in
    Python, one batch repeated, gives the same parameters; a constant rate gives others."""
    case = OptimCase("linear_lr_StepDecay")
    spec = "StepDecay(learning_rate=0.1, step_size=2, gamma=0.5)"
    feed = {name: batches[0] for name, batches in case.arrays("feeds").items()}
    np.savez(tmp_path / "feed.npz", **feed)
    np.savez(tmp_path / "init.npz", **case.arrays("init"))
    result = gradc_cli("train", case.directory / "train.pb", "--params", tmp_path / "init.npz", "--feed",
                       tmp_path / "feed.npz", "--steps", 4, "--lr-schedule", spec, "--fetch", case.meta["loss"],
                       "--save-params", tmp_path / "out.npz", "--checkpoint-dir", tmp_path / "ck")
    assert result.returncode == 0, result.stderr
    def python_run(schedule):
        scope, program, executor = gradc.Scope(), case.program(), gradc.Executor()
        for name, value in case.arrays("init").items():
            scope[name] = value
        for step in range(4):
            schedules.run_step(executor, program, scope, schedule, step, feed)
        return scope

    scheduled, constant = python_run(schedules.parse(spec)), python_run(schedules.Values([0.1]))
    with np.load(tmp_path / "out.npz") as trained:
        for name in case.meta["params"]:
            np.testing.assert_array_equal(trained[name], scheduled[name])
        assert "learning_rate_0" not in trained.files   # the model's parameters; the rest is in the checkpoint
    with np.load(tmp_path / "ck" / "checkpoint-00000004.npz") as checkpoint:
        assert checkpoint["learning_rate_0"] == np.float32(0.05)
        assert all(np.array_equal(checkpoint[name], scheduled[name]) for name in case.meta["params"])
    with np.load(tmp_path / "out.npz") as trained:
        assert not np.allclose(trained["linear_0.w_0"], constant["linear_0.w_0"])
    bad = gradc_cli("train", case.directory / "train.pb", "--params", tmp_path / "init.npz", "--feed",
                    tmp_path / "feed.npz", "--lr-schedule", "Warp(speed=9)")
    assert_clean_failure(bad, "unknown learning-rate schedule 'Warp'")


@pytest.mark.parametrize("spec, step, rate", [
    ("ExponentialDecay(learning_rate=0.1, gamma=10)", 400, "inf"),   # float ** int raised OverflowError
    ("NaturalExpDecay(learning_rate=0.1, gamma=-10)", 400, "inf"),   # math.exp raised OverflowError
    ("StepDecay(learning_rate=0.1, step_size=1, gamma=1e10)", 40, "inf"),
    ("ExponentialDecay(learning_rate=0.1, gamma=10)", 40, "1.0000000000000001e+39"),   # finite, inf in float32
    ("LambdaDecay(0.1, lambda e: 1e308 if e >= 3 else 1)", 3, "1.0000000000000001e+307"),
])
def test_a_decay_past_float32s_range_is_refused_by_its_step(spec, step, rate):
    """A growing decay (a gamma above 1) raised an internal OverflowError past the float range, and below it wrote
    inf into the float32 learning-rate var: every weight inf or NaN at that update, unsaid."""
    schedule = schedules.parse(spec)
    with pytest.raises(gradc.GradcError, match=re.escape(f"schedule gives {rate} at step {step}: not a finite")):
        schedules.rate_at(schedule, step)
    assert schedules.rate_at(schedule, 0) == pytest.approx(0.1)


def test_gradc_train_refuses_a_schedule_that_overflows_before_its_first_step(tmp_path):
    case = OptimCase("linear_lr_StepDecay")
    np.savez(tmp_path / "feed.npz", **{name: batches[0] for name, batches in case.arrays("feeds").items()})
    np.savez(tmp_path / "init.npz", **case.arrays("init"))
    result = gradc_cli("train", case.directory / "train.pb", "--params", tmp_path / "init.npz", "--feed",
                       tmp_path / "feed.npz", "--steps", 30, "--lr-schedule", "ExponentialDecay(0.1, gamma=100)",
                       "--save-params", tmp_path / "out.npz")
    assert_clean_failure(result, "the learning-rate schedule gives 1e+57 at step 29: not a finite float32 number")
    assert not (tmp_path / "out.npz").exists()


@pytest.mark.parametrize("spec, message", [
    ("LambdaDecay(0.1, lambda e: (-1) ** 0.5)", "at epoch 3: (6.123233995736766e-17+1j) is not a real number"),
    ("LambdaDecay(0.1, lambda e: int(1e308) * int(1e308))", "at epoch 3: int too large to convert to float"),
    ("LambdaDecay(0.1, lambda e: 1e308 * 10 if e >= 2 else 1)", "at epoch 3: the learning rate inf is not a finite"),
    ("LambdaDecay(0.1, lambda e: 1e308 * 10 - 1e308 * 10)", "at epoch 3: the learning rate nan is not a finite"),
    ("LambdaDecay(10, lambda e: 1e308)", "at epoch 3: the learning rate inf is not a finite number"),
    ("MultiplicativeDecay(0.1, lambda e: 1e300)", "at epoch 2: the learning rate inf is not a finite number"),
])
def test_a_lambdas_value_that_is_no_learning_rate_is_refused_by_its_epoch(spec, message):
    """A complex power gave a complex rate, of which the float32 var kept the real part (a silently wrong run); an
    integer past a float's range and a sum too deep to evaluate raised an internal error; an infinite or NaN rate
    (a float product past the range) trained every weight to NaN."""
    with pytest.raises(gradc.GradcError) as caught:
        schedules.parse(spec)(3)
    assert message in str(caught.value)


@pytest.mark.parametrize("spec, given", [("StepDecay(learning_rate=1e999, step_size=2)", "1e999"),
                                         ("0.1, -1e999", "0.1, -1e999"), ("1e999", "1e999"),
                                         ("PiecewiseDecay(boundaries=[2], values=[0.1, 1e999])", "[0.1, 1e999]")])
def test_a_schedules_number_that_is_not_finite_is_refused(spec, given):
    """A rate written past the float range (1e999 reads as inf) compiled and trained every weight to NaN, where --lr
    inf and a lambda's inf are refused."""
    with pytest.raises(gradc.GradcError, match=re.escape(f"schedule '{spec}': {given} is not a finite number")):
        schedules.parse(spec)


@pytest.mark.parametrize("spec", [f"LambdaDecay(0.1, lambda e: {body})" for body in (
    "-" * 50000 + "e", "+".join(["e"] * 5000), "+".join(["e"] * 400))] + [
    "MultiplicativeDecay(0.1, lambda e: " + "+".join(["e"] * 1000) + ")"])
def test_a_schedule_nested_too_deeply_for_the_parser_is_refused_in_one_line(spec):
    """Python's parser raised MemoryError (50,000 minus signs) or RecursionError (5,000 terms): internal errors.
    Python 3.10's and 3.13's parsers take 5,000 terms (3.11's and 3.12's 2,000), which then failed at the first
    step with the whole lambda in the message: refused as it is read, on every version."""
    with pytest.raises(gradc.GradcError, match=f"schedule of {len(spec)} characters: its expression is nested too"):
        schedules.parse(spec)


def test_a_long_lambda_within_the_nesting_bound_runs():
    schedule = schedules.parse(f"LambdaDecay(0.1, lambda e: {'+'.join(['e'] * 300)})")
    assert schedules.rate_at(schedule, 2) == pytest.approx(0.1 * 600)


def test_multiplicative_decay_steps_on_from_its_latest_rate():
    """Each step multiplied from epoch 1 again: a run of n steps evaluated n^2 / 2 lambdas (8,000 steps: 76 s). The
    rates are those of the product from epoch 1, as it is taken after a resume or a step back."""
    decay = schedules.parse("MultiplicativeDecay(0.1, lambda e: 0.9 if e % 3 else 1.01)")
    calls = []
    counted = decay.lr_lambda.__call__
    decay.lr_lambda = lambda epoch: calls.append(epoch) or counted(epoch)
    rates = [decay(step) for step in range(200)]
    assert len(calls) == 199
    fresh = schedules.parse("MultiplicativeDecay(0.1, lambda e: 0.9 if e % 3 else 1.01)")
    assert [fresh(step) for step in (150, 7, 199)] == [rates[150], rates[7], rates[199]]


def test_a_lambdas_round_of_an_integer_to_far_left_digits_does_not_hang():
    """round(5, -int(1e9)) of an int built 10 ** (10 ** 9) digit by digit (-int(1e7): 16 s; -int(1e9): hours); in
    floats it is 0 at once, as Paddle's float(lr) of it."""
    script = ("from gradc import schedules; "
              "print(schedules.parse('LambdaDecay(0.1, lambda e: round(5 * e, -int(1e9)) + round(e, 1))')(3))")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and float(run.stdout) == pytest.approx(0.3), run.stderr[-300:]


@pytest.mark.parametrize("rate", ["inf", "nan", "1e999"])
def test_train_refuses_a_rate_that_is_not_finite_naming_lr(tmp_path, rate):
    """train --lr inf said "cannot read the learning-rate schedule 'inf'", of an option not given."""
    run = gradc_cli("train", tmp_path / "t.pb", "--feed", tmp_path / "f.npz", "--lr", rate)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert f"Invalid value for '--lr': '{float(rate)}' is not a finite number" in run.stderr

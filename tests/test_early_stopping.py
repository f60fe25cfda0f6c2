"""--early-stop keeps the best epoch's parameters (by the eval loss, or --monitor's metric, higher better for an
accuracy), says which epoch in the summary, writes them with --save-params, and a run resumed from a checkpoint taken
after the best epoch ends with the same parameters, bit for bit, as an uninterrupted one."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from test_training_loop import ACC, EXAMPLE, LOSS, digits

# Adam at 0.1 on 32 examples: the eval loss falls to its lowest at epoch 6 and rises at 7 and 8
TRAIN, TEST = digits(32), digits(60, "test")


def make_trainer():
    program = gradc.load(EXAMPLE / "forward.pb")
    startup = gradc.minimize(program, optimizer="adam", lr=0.1)
    return gradc.Trainer(program, [EXAMPLE / "startup.pb", startup], fetch=[LOSS, ACC])


def fit(trainer, **options):
    return trainer.fit(TRAIN, batch_size=16, eval_data=TEST, **{"epochs": 12, "early_stop": 2, **options})


def parameters(trainer):
    names = gradc.training.model_parameters(trainer.program)
    return {name: np.array(trainer.scope[name]) for name in names}


@pytest.fixture(scope="module")
def whole():
    """An uninterrupted early-stopping run (evaluating it changes nothing)."""
    trainer = make_trainer()
    fit(trainer)
    return trainer


def test_the_best_epoch_by_eval_loss_is_kept_not_the_last(whole):
    trainer, history = whole, whole.history
    losses = [record["eval"][LOSS] for record in history.epochs]
    best = int(np.argmin(losses)) + 1
    assert len(losses) == best + 2 and history.kept_epoch == best, losses   # stopped after 2 epochs without a better
    assert trainer.evaluate(TEST, 16)[LOSS] == losses[best - 1] != losses[-1]
    assert history.last_eval == history.epochs[best - 1]["eval"]


def test_an_accuracy_monitor_keeps_its_highest_epoch():
    trainer = make_trainer()
    history = fit(trainer, monitor=ACC)
    accuracies = [record["eval"][ACC] for record in history.epochs]
    best = int(np.argmax(accuracies)) + 1   # the first of the highest
    assert history.kept_epoch == best and (len(accuracies) == best + 2 or len(accuracies) == 12), accuracies
    assert trainer.evaluate(TEST, 16)[ACC] == accuracies[best - 1]
    with pytest.raises(gradc.GradcError, match=r"watches 'softmax_0.tmp_0', which is not fetched .*--fetch"):
        fit(make_trainer(), monitor="softmax_0.tmp_0")


def test_a_resume_after_the_best_epoch_keeps_its_parameters_and_the_patience(whole, tmp_path):
    best = whole.history.kept_epoch
    first = make_trainer()
    fit(first, epochs=best + 1, checkpoint_dir=tmp_path)   # one epoch past the best: patience 1 of 2 used
    assert first.history.kept_epoch == best
    resumed = make_trainer()
    history = fit(resumed, resume=tmp_path)
    assert len(history.epochs) == best + 2 and history.kept_epoch == best   # one more epoch, then it stops
    assert history.epochs == whole.history.epochs
    kept, expected = parameters(resumed), parameters(whole)
    assert kept.keys() == expected.keys() and all((kept[name] == expected[name]).all() for name in kept)
    with pytest.raises(gradc.GradcError, match=r"other settings \(early_stop 2 -> 3\)"):
        fit(make_trainer(), resume=tmp_path, early_stop=3)


def test_the_cli_says_which_epoch_it_kept_and_saves_its_parameters(tmp_path):
    assert gradc_cli("compile", EXAMPLE / "forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "adam", "--lr",
                     "0.1").returncode == 0
    np.savez(tmp_path / "train.npz", **TRAIN)
    np.savez(tmp_path / "test.npz", **TEST)
    done = gradc_cli("train", tmp_path / "train.pb", "--startup", EXAMPLE / "startup.pb", "--startup",
                     tmp_path / "train.startup.pb", "--data", tmp_path / "train.npz", "--eval", tmp_path / "test.npz",
                     "--batch-size", "16", "--epochs", "12", "--early-stop", "2", "--fetch", LOSS, "--fetch", ACC,
                     "--save-params", tmp_path / "best.npz")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    evals = [float(line.split(f"| eval {LOSS}=")[1].split()[0]) for line in lines if "| eval" in line]
    best = int(np.argmin(evals)) + 1
    assert lines[-4] == (f"stopped early: eval {LOSS} has not improved on epoch {best}'s {evals[best - 1]:.6g} for "
                         "2 epochs (--early-stop)")
    assert lines[-3] == f"kept the parameters of epoch {best}, the best by eval {LOSS}={evals[best - 1]:.6g}"
    assert f"; eval {LOSS}={evals[best - 1]:.6g} " in lines[-2]   # the summary's eval is the kept epoch's
    evaluated = gradc_cli("evaluate", tmp_path / "train.pb", "--params", tmp_path / "best.npz", "--data",
                          tmp_path / "test.npz", "--batch-size", "16", "--json")
    assert float(f"{json.loads(evaluated.stdout)['loss']:.6g}") == evals[best - 1] != evals[-1]


def test_a_run_that_ends_before_its_patience_keeps_its_best_epoch_which_may_be_the_last(tmp_path):
    assert gradc_cli("compile", EXAMPLE / "forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "adam", "--lr",
                     "0.1").returncode == 0
    np.savez(tmp_path / "train.npz", **TRAIN)
    np.savez(tmp_path / "test.npz", **TEST)
    run = ("train", tmp_path / "train.pb", "--startup", EXAMPLE / "startup.pb", "--startup",
           tmp_path / "train.startup.pb", "--data", tmp_path / "train.npz", "--eval", tmp_path / "test.npz",
           "--batch-size", "16", "--early-stop", "3", "--fetch", LOSS)
    done = gradc_cli(*run, "--epochs", "2")
    assert done.returncode == 0, done.stderr
    kept = done.stdout.splitlines()[-2]
    assert kept.startswith(f"kept the parameters of epoch 2 (the last), the best by eval {LOSS}=")
    within = gradc_cli(*run, "--epochs", "2", "--steps", "3")   # the run ends one step into epoch 2
    assert within.stdout.splitlines()[-2].startswith(f"kept the parameters of epoch 1, the best by eval {LOSS}=")

"""A Paddle scheduler given to `gradc compile --lr-schedule` is recorded in the program (a string attribute of the
learning-rate var) and `gradc train` follows it unless told another rate: before, a train without the same
--lr-schedule ran every step at the step-0 rate (weeks 52, 54, 55 each met it)."""

import numpy as np
import pytest

import gradc
from gradc import schedule_record
from test_cli import MLP
from test_cli import gradc as gradc_cli

SPEC = "StepDecay(learning_rate=0.1, step_size=2, gamma=0.5)"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    out = tmp_path_factory.mktemp("recorded")
    done = gradc_cli("compile", MLP / "forward.pb", "-o", out / "train.pb", "--optimizer", "sgd", "--lr-schedule",
                     SPEC)
    assert done.returncode == 0, done.stderr
    return out


def _train(folder, out, *extra):
    return gradc_cli("train", folder / "train.pb", "--startup", MLP / "startup.pb", "--startup",
                     folder / "train.startup.pb", "--feed", MLP / "feed.npz", "--steps", 5, "--save-params", out,
                     *extra)


def test_the_schedule_is_recorded_once_and_read_back(compiled):
    program = gradc.load(compiled / "train.pb")
    assert schedule_record.recorded(program) == SPEC
    schedule_record.record(program, "ExponentialDecay(learning_rate=0.1, gamma=0.9)")   # replaced, not added
    assert schedule_record.recorded(program) == "ExponentialDecay(learning_rate=0.1, gamma=0.9)"
    assert [len(program.global_block.var(name).attrs) for name in schedule_record.learning_rate_vars(program)] == [1]


def test_train_follows_the_recorded_schedule_as_if_given(compiled, tmp_path):
    recorded, given = _train(compiled, tmp_path / "a.npz"), _train(compiled, tmp_path / "b.npz", "--lr-schedule", SPEC)
    assert recorded.returncode == 0 and given.returncode == 0, recorded.stderr + given.stderr
    assert f"gradc: note: the learning rate follows {SPEC}, the schedule gradc compile recorded" in recorded.stderr
    assert "gradc: note" not in given.stderr
    with np.load(tmp_path / "a.npz") as ours, np.load(tmp_path / "b.npz") as told:
        assert all(np.array_equal(ours[name], told[name]) for name in told.files)


def test_a_rate_given_to_train_wins_over_the_recorded_one(compiled, tmp_path):
    constant, recorded = _train(compiled, tmp_path / "c.npz", "--lr", 0.1), _train(compiled, tmp_path / "r.npz")
    assert constant.returncode == 0 and "gradc: note" not in constant.stderr, constant.stderr
    assert recorded.returncode == 0, recorded.stderr
    with np.load(tmp_path / "c.npz") as fixed, np.load(tmp_path / "r.npz") as scheduled:
        assert not all(np.array_equal(fixed[name], scheduled[name]) for name in fixed.files)


@pytest.mark.parametrize("suffix, records", [(".pbtxt", True), (".json", False)])
def test_compile_says_whether_the_program_records_it(tmp_path, suffix, records):
    """Paddle 3's PIR JSON gives a value no attribute to hold it: compile says train needs the schedule again."""
    out = tmp_path / f"train{suffix}"
    done = gradc_cli("compile", MLP / "forward.pb", "-o", out, "--optimizer", "sgd", "--lr-schedule", SPEC)
    assert done.returncode == 0, done.stderr
    follows = ("gradc train does (the program records it)" if records else
               f"gradc train does when given --lr-schedule '{SPEC}' too (a PIR program records no schedule)")
    assert f"the learning rate follows {SPEC} where the host steps it: {follows}; " in done.stdout
    assert schedule_record.recorded(gradc.load(out)) == (SPEC if records else None)


def test_info_names_the_recorded_schedule(compiled):
    said = gradc_cli("info", compiled / "train.pb")
    assert said.returncode == 0, said.stderr
    assert (f"optimizer: sgd 4; learning rate learning_rate_0, no op writes it: {SPEC}, recorded, which the host "
            f"steps (gradc train follows it)") in said.stdout.splitlines()

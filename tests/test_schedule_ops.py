"""Learning-rate schedules written as ops of the training program: the closed forms, the options of gradc compile,
and Paddle 3.3.1 running gradc's programs (tests/data/paddle/schedule_ops, tools/run_schedule_ops_in_paddle.py)."""

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.optimizers import ProgramSchedule
from gradc.training import Trainer, forward_part
from test_cli import assert_clean_failure
from test_cli import gradc as run_gradc

CASES = DATA / "schedule_ops"


def test_closed_forms():
    cosine = ProgramSchedule("cosine", 0.1, decay_steps=4, warmup_steps=2)
    assert [round(cosine(k), 6) for k in range(7)] == [0.0, 0.05, 0.1, 0.085355, 0.05, 0.014645, 0.0]
    step = ProgramSchedule("step", 1.0, decay_steps=3, gamma=0.5)
    assert [step(k) for k in range(7)] == [1, 1, 1, 0.5, 0.5, 0.5, 0.25]
    with pytest.raises(gradc.GradcError, match="needs decay steps"):
        ProgramSchedule("cosine", 0.1)


@pytest.mark.parametrize("case", ["cosine", "step"])
def test_paddle_runs_gradcs_schedule_ops_and_gradc_agrees(case):
    program = gradc.load(CASES / case / "train.pb")
    with np.load(DATA / "mlp" / "feed.npz") as feed, np.load(DATA / "mlp" / "params.npz") as params, \
            np.load(CASES / case / "paddle.npz") as paddle:
        trainer = Trainer(program, CASES / case / "startup.pb", fetch=["mean_0.tmp_0", "learning_rate_0"])
        trainer.scope.vars.update(dict(params))
        steps = [trainer.train_step(dict(feed)) for _ in range(len(paddle["lrs"]))]
        np.testing.assert_allclose([s[1] for s in steps], paddle["lrs"], rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose([s[0] for s in steps], paddle["losses"], rtol=1e-5)
    assert not any(op.type == "increment" for op in forward_part(program).global_block.ops), "evaluation keeps it"


def test_compile_options(tmp_path):
    out = tmp_path / "t.pb"
    done = run_gradc("compile", DATA / "mlp" / "forward.pb", "-o", out, "--optimizer", "adam", "--lr", "0.02",
                     "--beta1", "0.8", "--weight-decay", "0.001", "--lr-schedule", "step", "--decay-steps", "3")
    assert done.returncode == 0, done.stderr
    ops = gradc.load(out).global_block.ops
    assert ops[0].type == "increment" and ops[0].attrs["op_role"] == 16
    adam = [op for op in ops if op.type == "adam"]
    assert len(adam) == 4 and all(abs(op.attrs["beta1"] - 0.8) < 1e-7 for op in adam)
    assert sum(op.type == "sum" for op in ops) >= 4, "L2 decay ops, as Paddle's weight_decay=float"
    assert_clean_failure(run_gradc("compile", DATA / "mlp" / "forward.pb", "-o", out, "--optimizer", "sgd",
                                   "--momentum", "0.9"), "--momentum: sgd has no momentum argument")
    assert_clean_failure(run_gradc("compile", DATA / "mlp" / "forward.pb", "-o", out, "--optimizer", "sgd",
                                   "--decay-steps", "3"), "--decay-steps and --warmup-steps go with --lr-schedule")

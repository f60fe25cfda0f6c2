"""The training fixtures of tests/data/paddle/optim (tools/paddle_optimizer_fixtures.py): Paddle's own training
programs for every optimizer, clip, regularizer and schedule, with its numbers for each step, and a runner that
trains a program on a case's batches in gradc and compares every step with Paddle's."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path

import numpy as np

import gradc
from gradc import optimizers, schedules

DATA = Path(__file__).parent / "data" / "paddle" / "optim"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "meta.json").is_file())
RTOL, ATOL = 1e-4, 1e-6


class OptimCase:
    def __init__(self, name: str, data: Path = DATA):
        self.name = name
        self.directory = data / name
        self.meta = json.loads((self.directory / "meta.json").read_text())
        self.steps = self.meta["steps"]

    def arrays(self, part: str) -> dict[str, np.ndarray]:
        path = self.directory / f"{part}.npz"
        if not path.exists():
            return {}
        with np.load(path) as archive:
            return {name: archive[name] for name in archive.files}

    @cached_property
    def lrs(self) -> np.ndarray:
        return np.load(self.directory / "lrs.npy")

    def program(self, kind: str = "train") -> gradc.Program:
        return gradc.load(self.directory / f"{kind}.pb")

    def forward(self) -> gradc.Program:
        return gradc.load(self.directory.parent / self.meta["forward"])

    def paddle_states(self) -> list[dict[str, np.ndarray]]:
        """Every persistable after each step."""
        states = self.arrays("states")
        return [{n: v[k] for n, v in states.items()} for k in range(self.steps - 1)] + [self.arrays("final")]


def train(case: OptimCase, program: gradc.Program, schedule: schedules.Schedule | None = None,
          scope: gradc.Scope | None = None) -> tuple[list[float], list[dict[str, np.ndarray]]]:
    """Run ``program`` on the case's batches, starting from Paddle's initial persistables (init.npz) unless a
    scope is given; the learning rate each step is the schedule's, else the one Paddle used (lrs.npy).
    -> the loss and every persistable of Paddle's after each step."""
    if scope is None:
        scope = gradc.Scope()
        for name, value in case.arrays("init").items():
            scope[name] = value
    schedule = schedule or schedules.Values(case.lrs.tolist())
    feeds, executor = case.arrays("feeds"), gradc.Executor()
    names = list(case.arrays("final"))
    losses, states = [], []
    for step in range(case.steps):
        feed = {name: batches[step] for name, batches in feeds.items()}
        loss, = schedules.run_step(executor, program, scope, schedule, step, feed, [case.meta["loss"]],
                                   case.meta["learning_rate_var"])
        losses.append(float(loss))
        states.append({name: np.asarray(scope[name]) for name in names})
    return losses, states


def assert_trained_like_paddle(case: OptimCase, losses, states, skip: frozenset[str] = frozenset()) -> None:
    """Paddle's loss at each step and every persistable after each step (rtol 1e-4, atol 1e-6; integers exact)."""
    np.testing.assert_allclose(losses, np.load(case.directory / "losses.npy"), rtol=RTOL, atol=ATOL,
                               err_msg=f"{case.name}: losses")
    for step, (ours, theirs) in enumerate(zip(states, case.paddle_states())):
        for name, expected in theirs.items():
            if name in skip:
                continue
            what = f"{case.name} step {step + 1}: {name}"
            actual = ours[name]
            assert actual.shape == expected.shape and actual.dtype == expected.dtype, \
                f"{what}: {actual.dtype}{list(actual.shape)}, Paddle {expected.dtype}{list(expected.shape)}"
            if expected.dtype.kind in "iub":
                np.testing.assert_array_equal(actual, expected, err_msg=what)
            else:
                np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, err_msg=what)


# ---------------------------------------------------------------- the same training set up with gradc's own API
FUNCTIONS = {"function not_bias": lambda name: not name.endswith(".b_0"),
             "function is_bias": lambda name: name.endswith(".b_0")}
CLASSES = {"LarsMomentumOptimizer": "lars_momentum", "RMSProp": "rmsprop"}
# the parameters "first.w" / "last.w" of tools/paddle_optimizer_cases.py, by model
LAYER_WEIGHTS = {"mlp": {"first.w": "linear_0.w_0", "last.w": "linear_1.w_0"},
                 "cnn": {"first.w": "conv2d_0.w_0", "last.w": "linear_0.w_0"},
                 "linear": {"first.w": "linear_0.w_0"}}


def _argument(key: str, value):
    """A hyper-parameter as meta.json describes it -> gradc's object."""
    if isinstance(value, str) and value in FUNCTIONS:
        return FUNCTIONS[value]
    if not isinstance(value, dict):
        return value
    if "tensor" in value:
        return optimizers.Tensor(value["tensor"], f"{key}_tensor")
    if "scheduler" in value:
        arguments = dict(value)
        return schedules.make(arguments.pop("scheduler"), **arguments)
    settings = {k: v for k, v in value.items() if k in ("clip_norm", "max", "min", "coeff")}
    return getattr(optimizers, value["class"])(**settings)


def gradc_optimizer(case: OptimCase) -> tuple[optimizers.Optimizer, dict]:
    """The case's optimizer and ParamAttrs built with gradc.optimizers from meta.json."""
    meta = case.meta
    name = CLASSES.get(meta["optimizer"], meta["optimizer"].lower())
    arguments = {k: _argument(k, v) for k, v in meta["hyperparameters"].items()}
    if arguments.pop("use_multi_tensor", False):
        name = "merged_" + name
    param_attrs = {LAYER_WEIGHTS[meta["model"]][layer]: optimizers.ParamAttr(**{k: _argument(k, v)
                                                                                for k, v in attrs.items()})
                   for layer, attrs in meta["param_attrs"].items()}
    return optimizers.make_optimizer(name, **arguments), param_attrs


def gradc_program(case: OptimCase) -> tuple[gradc.Program, gradc.Program]:
    """The case's forward program compiled by gradc (backward + its optimizer pass) and gradc's startup."""
    program = case.forward()
    optimizer, param_attrs = gradc_optimizer(case)
    startup = optimizer.minimize(program, case.meta["loss"], param_attrs=param_attrs)
    return program, startup

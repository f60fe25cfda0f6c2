"""The training fixtures of tests/data/paddle/vision_train (tools/paddle_vision_training.py): a tiny model of
every paddle.vision.models family, trained by Paddle with Adam for a few steps on one batch (and PaddleNLP's in
tests/data/paddle/nlp_dropout, tools/paddlenlp_static.py, with AdamW: the same layout). `train(fixture)` does the same
in gradc, from Paddle's forward program and initial parameters; `compare` applies the rule of tests/layer_fixtures.py
(rtol 1e-5 / atol 1e-6, or within 4x Paddle's float32 error of its float64 run)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

import gradc
from fixtures import FixtureFiles
from gradc.optimizers import OPTIMIZERS
from layer_fixtures import agrees

DATA = Path(__file__).parent / "data" / "paddle" / "vision_train"
MODELS = sorted(d.name for d in DATA.iterdir() if (d / "meta.json").exists())


@dataclass
class Fixture(FixtureFiles):
    name: str
    root: Path = DATA
    optional_files: ClassVar[bool] = True

    @property
    def dir(self) -> Path:
        return self.root / self.name

    @property
    def has_dropout(self) -> bool:
        return (self.dir / "startup.pb").exists()


@dataclass
class Trained:
    init: dict[str, np.ndarray]        # every parameter before the first step
    losses: np.ndarray                 # one per step
    grads: dict[str, np.ndarray]       # the first step's parameter gradients
    final: dict[str, np.ndarray]       # every parameter after the last step


def train(fixture: Fixture) -> Trained:
    """gradc compiles Paddle's forward program with its optimizer (the fixture's hyper-parameters), runs the startup
    program, takes Paddle's initial parameters and trains the fixture's steps on its batch. With dropout on
    (startup.pb kept), the initial parameters are gradc's run of Paddle's startup program, seeded as Paddle's
    was: the steps' dropouts then draw on from where Paddle's drew."""
    meta = fixture.meta
    program = gradc.load(fixture.dir / "forward.pb")
    startup = OPTIMIZERS[meta["optimizer"]](**meta["hyperparameters"]).minimize(program, meta["loss"])
    scope, executor = gradc.Scope(), gradc.Executor()
    if fixture.has_dropout:
        gradc.seed(meta["seed"])
        executor.run(gradc.load(fixture.dir / "startup.pb"), scope=scope)
    else:
        for name, value in fixture.npz("init").items():
            scope[name] = value
    executor.run(startup, scope=scope)
    init = {p: np.asarray(scope[p]).copy() for p in meta["params"]}
    grads = list(fixture.npz("grads"))
    feed, losses, first = fixture.npz("feed"), [], {}
    for step in range(meta["steps"]):
        values = executor.run(program, feed=feed, fetch_list=[meta["loss"], *(grads if step == 0 else [])],
                              scope=scope)
        losses.append(np.asarray(values[0]).reshape(()))
        first = first or dict(zip(grads, values[1:]))
    return Trained(init, np.stack(losses), first, {p: np.asarray(scope[p]) for p in meta["params"]})


def compare(fixture: Fixture, trained: Trained) -> list[str]:
    """What differs from Paddle's training: the losses, a first-step gradient, a parameter after the last step."""
    expected = [("losses", trained.losses, fixture.npy("losses"), fixture.npy("losses64"))]
    for part, ours in (("grads", trained.grads), ("final", trained.final)):
        paddle32, paddle64 = fixture.npz(part), fixture.npz(f"{part}64")
        expected += [(name, ours[name], value, paddle64.get(name)) for name, value in paddle32.items()]
    return [name for name, ours, paddle32, paddle64 in expected if not agrees(np.asarray(ours), paddle32, paddle64)]

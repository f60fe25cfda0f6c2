"""Paddle fixtures copied into tests/data/paddle: programs, inputs and Paddle's own gradients."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import gradc

DATA = Path(__file__).parent / "data" / "paddle"


@dataclass
class Fixture:
    case: str

    @property
    def dir(self) -> Path:
        return DATA / self.case

    @property
    def meta(self) -> dict:
        return json.loads((self.dir / "meta.json").read_text())

    def npz(self, name: str) -> dict[str, np.ndarray]:
        with np.load(self.dir / f"{name}.npz") as archive:
            return {k: archive[k] for k in archive.files}

    @property
    def loss(self) -> float:
        return float(np.load(self.dir / "loss.npy"))

    def scope(self) -> gradc.Scope:
        scope = gradc.Scope()
        for name, value in self.npz("params").items():
            scope[name] = value
        return scope

    def run(self, program: gradc.Program, feed: dict | None = None) -> dict[str, np.ndarray]:
        """Run ``program`` on the fixture's inputs; fetch the loss and every grad Paddle computed."""
        names = [self.meta["loss"], *self.npz("grads")]
        values = gradc.Executor().run(program, feed=feed or self.npz("feed"), fetch_list=names, scope=self.scope())
        return dict(zip(names, values))

    def assert_matches_paddle(self, results: dict[str, np.ndarray]) -> None:
        np.testing.assert_allclose(results[self.meta["loss"]], self.loss, rtol=1e-5, atol=1e-6)
        for name, expected in self.npz("grads").items():
            np.testing.assert_allclose(results[name], expected, rtol=1e-5, atol=1e-6, err_msg=name)


def grad_vars(program: gradc.Program) -> set[str]:
    """Every gradient var of every block, renamed partial sums excluded."""
    return {name for block in program.blocks for name in block.vars
            if "@GRAD" in name and "@RENAME@" not in name}

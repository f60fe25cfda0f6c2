"""Paddle fixtures copied into tests/data/paddle: programs, inputs and Paddle's own gradients."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import ClassVar

import numpy as np

import gradc

DATA = Path(__file__).parent / "data" / "paddle"


def data_files(*suffixes: str, under: Path = DATA) -> list[Path]:
    """The files below `under` whose names end with one of the suffixes, in pathlib's order: what sorting the globs
    under.glob("**/*<suffix>") gives, in one walk of the tree (half the CPU of two globs and their Path sort)."""
    found = []
    for folder, _, names in os.walk(under):
        if kept := [name for name in names if name.endswith(suffixes)]:
            parts = Path(folder).relative_to(under).parts
            found.extend((*parts, name) for name in kept)
    return [under.joinpath(*parts) for parts in sorted(found)]


class NpzGroup(Mapping):
    """The arrays of an .npz whose names start with `prefix`, named without it, read at the first look: a test
    parametrized with them costs collection (in every xdist worker) nothing, and reads only in the worker that
    runs it."""

    def __init__(self, path: Path, prefix: str):
        self._path, self._prefix, self._arrays = path, prefix, None

    def _read(self) -> dict[str, np.ndarray]:
        if self._arrays is None:
            with np.load(self._path) as archive:
                self._arrays = {name[len(self._prefix):]: archive[name] for name in archive.files
                                if name.startswith(self._prefix)}
        return self._arrays

    def __getitem__(self, name: str) -> np.ndarray:
        return self._read()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


class FixtureFiles:
    """A fixture directory's files: meta.json and named .npz / .npy files. Where ``optional_files`` is set, a
    missing file reads as empty (None for .npy); otherwise it is an error."""

    optional_files: ClassVar[bool] = False

    @property
    def dir(self) -> Path:
        raise NotImplementedError

    @cached_property
    def meta(self) -> dict:
        return json.loads((self.dir / "meta.json").read_text())

    def npz(self, name: str) -> dict[str, np.ndarray]:
        path = self.dir / f"{name}.npz"
        if self.optional_files and not path.exists():
            return {}
        with np.load(path) as archive:
            return {k: archive[k] for k in archive.files}

    def npy(self, name: str) -> np.ndarray | None:
        path = self.dir / f"{name}.npy"
        return None if self.optional_files and not path.exists() else np.load(path)


@dataclass
class Fixture(FixtureFiles):
    case: str

    @property
    def dir(self) -> Path:
        return DATA / self.case

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


def unpacked(week: Path, out: Path, folders: tuple[str, ...] = ()) -> Path:
    """A user week's files as the user has them: its gzipped programs unpacked into ``out`` beside its arrays, and
    those of each of its ``folders`` (a model each) into the same folder under ``out``."""
    for folder in (week, *(week / name for name in folders)):
        target = out / folder.relative_to(week)
        target.mkdir(exist_ok=True)
        for path in folder.iterdir():
            if path.suffix == ".gz":
                (target / path.stem).write_bytes(gzip.decompress(path.read_bytes()))
            elif path.is_file():
                shutil.copy(path, target / path.name)
    return out


def grad_vars(program: gradc.Program) -> set[str]:
    """Every gradient var of every block, renamed partial sums excluded."""
    return {name for block in program.blocks for name in block.vars
            if "@GRAD" in name and "@RENAME@" not in name}


def step_losses(run) -> list:
    """The per-step losses of a `gradc train --json --log-every 1` run, after asserting it succeeded."""
    assert run.returncode == 0, run.stderr
    return [next(iter(line["values"].values())) for line in map(json.loads, run.stdout.splitlines())
            if line["event"] == "step"]

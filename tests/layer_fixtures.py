"""The coverage rows of tests/data/paddle/layers (built by tools/paddle_coverage.py): one Paddle layer,
loss or model each. `check(row)` compiles a row with gradc, runs it and compares it with Paddle, and
says which op types stop it. tools/coverage_table.py and tests/test_layer_fixtures.py share it."""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

import gradc
from fixtures import FixtureFiles
from gradc import registry
from gradc.executor import KERNELS

LAYERS = Path(__file__).parent / "data" / "paddle" / "layers"
PENDING = LAYERS / "pending.txt"
RTOL, ATOL = 1e-5, 1e-6
FLOAT64_SLACK = 4   # gradc may be this many times further from float64 than Paddle's float32 run is


def row_ids() -> list[str]:
    return sorted(d.name for d in LAYERS.iterdir() if (d / "meta.json").exists())


def built_rows() -> list[str]:
    """Rows Paddle could build: they have a program and Paddle's gradients."""
    return [r for r in row_ids() if (LAYERS / r / "forward.pb").exists()]


def read_pending() -> dict[str, frozenset[str]]:
    """pending.txt: `<row> <op,op,...|none>  # comment`; `none` is a row that fails for another reason."""
    pending = {}
    for line in PENDING.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            row, ops = line.split()
            pending[row] = frozenset() if ops == "none" else frozenset(ops.split(","))
    return pending


@dataclass
class Row(FixtureFiles):
    id: str
    optional_files: ClassVar[bool] = True

    @property
    def dir(self) -> Path:
        return LAYERS / self.id


@dataclass
class Outcome:
    numbers: bool = True     # False for a program-only row: it matches when it compiles to Paddle's param grads
    compiles: bool = False
    runs: bool = False
    matches: bool = False
    error: str = ""
    missing: dict[str, set[str]] = field(default_factory=dict)   # kind -> op types (definition, kernel, grad maker)

    @property
    def missing_ops(self) -> frozenset[str]:
        return frozenset().union(*self.missing.values())


def op_types(program: gradc.Program) -> set[str]:
    return {op.type for block in program.blocks for op in block.ops}


def check(row: Row) -> Outcome:
    """Compile, run and compare one row; on failure, the first error and the op types to blame."""
    outcome = Outcome(numbers=not row.meta.get("program_only"))
    program = gradc.load(row.dir / "forward.pb")
    undefined = {t for t in op_types(program) if registry.get(t) is None}
    try:
        pairs = gradc.append_backward(program, loss=row.meta["loss"])
        outcome.compiles = True
    except gradc.GradcError as error:
        outcome.error = f"compile: {error}"
        offenders = set(re.findall(r"op \d+ \(([\w.]+)\)", str(error))) if "no grad maker" in str(error) else set()
        outcome.missing = {"definition": offenders & undefined, "grad maker": offenders - undefined}
    if outcome.numbers:  # running needs every op defined, and a kernel for every op of the compiled program
        outcome.missing["definition"] = undefined
        outcome.missing["kernel"] = {t for t in op_types(program) if t not in KERNELS} - undefined
    outcome.missing = {kind: types for kind, types in outcome.missing.items() if types}
    if not outcome.compiles:
        return outcome
    if not outcome.numbers:
        outcome.matches = sorted(pairs) == sorted(map(tuple, row.meta["params_grads"]))
        outcome.error = "" if outcome.matches else "compile: not the parameter gradients Paddle's backward computes"
        return outcome
    try:
        results = run(row, program)
        outcome.runs = True
    except gradc.GradcError as error:
        outcome.error = f"run: {error}"
        return outcome
    mismatch = compare(row, results)
    outcome.matches = not mismatch
    outcome.error = f"match: {mismatch}" if mismatch else ""
    return outcome


def run(row: Row, program: gradc.Program) -> dict[str, np.ndarray]:
    scope = gradc.Scope()
    for name, value in row.npz("params").items():
        scope[name] = value
    names = [row.meta["loss"], *row.npz("grads")]
    recorded = row.npz("random")
    random_types = {op.type for op in program.global_block.ops if set(op.output_names()) & set(recorded)}
    with replayed(recorded, random_types):
        values = gradc.Executor().run(program, feed=feed(row), fetch_list=names, scope=scope)
    return dict(zip(names, values))


def feed(row: Row) -> dict:
    """The row's inputs; a LoD input (meta.json "lods") as a LoDTensor."""
    lods = row.meta.get("lods", {})
    return {name: gradc.LoDTensor(value, lods[name]) if name in lods else value
            for name, value in row.npz("feed").items()}


@contextmanager
def replayed(recorded: dict[str, np.ndarray], op_types: set[str]):
    """Random ops (dropout in training) give the outputs Paddle drew, so the rest can be compared."""
    originals = {t: KERNELS[t] for t in op_types if t in KERNELS}

    def replay(kernel):
        def run(k):
            outputs = {slot: names for slot, names in k.op.outputs.items() if names}
            if not all(name in recorded for names in outputs.values() for name in names):
                return kernel(k)
            return {slot: [recorded[n] for n in names] if len(names) > 1 else recorded[names[0]]
                    for slot, names in outputs.items()}
        return run

    KERNELS.update({t: replay(kernel) for t, kernel in originals.items()})
    try:
        yield
    finally:
        KERNELS.update(originals)


def agrees(ours: np.ndarray, paddle32: np.ndarray, paddle64: np.ndarray | None) -> bool:
    """Paddle's float32 answer within rtol/atol, or, where Paddle's float64 run is kept (float32
    rounding too large), no more than FLOAT64_SLACK times further from it than Paddle's float32 is."""
    if ours.shape != paddle32.shape:
        return False
    if np.allclose(ours, paddle32, rtol=RTOL, atol=ATOL):
        return True
    if paddle64 is None:
        return False
    return np.abs(ours - paddle64).max() <= FLOAT64_SLACK * np.abs(paddle32 - paddle64).max()


def compare(row: Row, results: dict[str, np.ndarray]) -> str:
    """'' when the loss and every gradient agree with Paddle; else the first that does not. Where
    Paddle's gradient is wrong (grads_reference.npz: float64 central differences), with the reference."""
    grads64, loss64, reference = row.npz("grads64"), row.npy("loss64"), row.npz("grads_reference")
    expected = [(row.meta["loss"], row.npy("loss"), loss64),
                *((name, reference.get(name, grad), None if name in reference else grads64.get(name))
                  for name, grad in row.npz("grads").items())]
    for name, paddle32, paddle64 in expected:
        ours = np.asarray(results[name])
        if not agrees(ours, paddle32, paddle64):
            worst = np.abs(ours - paddle32).max() if ours.shape == paddle32.shape else f"shape {ours.shape}"
            whose = "the central-difference reference" if name in reference else "Paddle's"
            return f"{name} differs from {whose} (max abs diff {worst})"
    return ""

"""Coverage of paddle.nn, paddle.vision.models and the tensor API: build every row of tools/coverage/ in Paddle's
legacy static mode, differentiate it with Paddle's append_backward, run it, and write its fixture
to tests/data/paddle/layers/<row>/ (a row Paddle cannot build gets a meta.json with Paddle's error).
Not part of the package: it needs paddlepaddle 3.3.1.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_coverage.py [ROW_PATTERN ...]
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import paddle
from coverage import execute, fixture_io, known_issues, op_protos, paddle_run
from coverage.catalogue import ROWS
from coverage.spec import Row

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "layers"
PIR_ONLY = "must be Value, but got"  # a 3.3.1 API that builds only PIR ops
NUMERIC_SUSPICIOUS = 1e-4   # |analytic - numeric| / (1 + |numeric|) in float64 that flags Paddle's gradient


def one_line(error: BaseException) -> str:
    """Paddle's own summary line (`InvalidArgumentError: ...`) when it has one, else the first line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    summaries = [line for line in lines if re.match(r"\w+Error: ", line)]
    text = summaries[-1] if summaries else f"{type(error).__name__}: {lines[0] if lines else ''}"
    return text[:300]


def output_shapes(built: paddle_run.Built, feed: dict, seed: int) -> list[tuple[int, ...]]:
    """The static shapes of the outputs that get loss weights, run where one has an unknown dim."""
    if built.loss in built.outputs:
        return []
    block = built.forward.global_block()
    static = [tuple(block.var(name).shape) for name in built.outputs]
    if all(d >= 0 for shape in static for d in shape):
        return static
    return list(execute.output_shapes(built, feed, seed).values())


def close(a: np.ndarray, b: np.ndarray) -> bool:
    return np.allclose(a, b, rtol=1e-5, atol=1e-6)


def build_row(row: Row, out: Path) -> str:
    seed = paddle_run.seed_of(row)
    meta = {"row": row.id, "family": row.family, "code": row.code, "seed": seed}
    if row.id in known_issues.LEGACY_CRASHES:
        fixture_io.write_failure(out, {**meta, "paddle_error": f"FatalError: {known_issues.LEGACY_CRASHES[row.id]}"})
        return f"paddle cannot: {known_issues.LEGACY_CRASHES[row.id]}"
    feed = paddle_run.make_feed(row)
    shim = None
    try:
        try:
            built = paddle_run.build(row, "float32")
        except (TypeError, ValueError) as error:
            if PIR_ONLY not in str(error):
                raise
            meta["paddle_legacy_error"], shim = one_line(error), set()
            built = paddle_run.build(row, "float32", shim)
            meta["legacy_shim"] = sorted(shim)
        if not row.numbers:
            fixture_io.write_program_only(out, built, meta)
            return f"program only: {len(built.forward_ops)} forward ops, {len(built.params_grads)} params"
        feed |= paddle_run.loss_weights(output_shapes(built, feed, seed), seed)
        values = execute.run(built, feed, seed)
    except Exception as error:  # noqa: BLE001 - Paddle's own failure is the row's result
        fixture_io.write_failure(out, {**meta, "paddle_error": one_line(error)})
        return f"paddle cannot: {one_line(error)}"
    float64 = reference = None
    if not built.random_outputs:
        float64, meta["float64"], reference = float64_run(row, feed, values, seed, shim)
    fixture_io.write_fixture(out, built, feed, values, meta, float64, reference)
    flagged = meta.get("float64", {}).get("suspicious")
    return (f"loss {float(values.loss):.6f}, {len(values.grads)} grads, ops {sorted(set(built.forward_ops))}"
            + (f"; Paddle's gradient of {flagged} disagrees with central differences" if flagged else ""))


def float64_run(row: Row, feed: dict, values: execute.Values, seed: int, shim: set | None):
    """Paddle's float64 run of the same case: kept when float32 rounding exceeds the tolerance; its
    gradients are also checked against central differences (Paddle's own gradient can be wrong).
    Returns the run to keep (or None), the report for meta.json, and for a row where Paddle is known
    wrong the reference gradients (central differences of every element of each flagged gradient)."""
    try:
        built = paddle_run.build(row, "float64", None if shim is None else set())
        feed64, params64 = execute.cast_floats(feed, "float64"), execute.cast_floats(values.params, "float64")
        run64 = execute.run(built, feed64, seed, params=params64)
        numeric = execute.central_differences(built, feed64, params64, run64.grads, seed=seed)
    except Exception as error:  # noqa: BLE001
        return None, {"error": one_line(error)}, None
    f32_error = {name: float(np.abs(values.grads[name] - g).max(initial=0)) for name, g in run64.grads.items()}
    f32_error["loss"] = float(np.abs(values.loss - run64.loss).max())
    matters = not close(values.loss, run64.loss) or any(not close(values.grads[n], g) for n, g in run64.grads.items())
    suspicious = sorted(n for n, e in numeric.items() if e > NUMERIC_SUSPICIOUS)
    report = {"stored": matters, "paddle_f32_error": f32_error, "numeric_error": numeric, "suspicious": suspicious}
    reference = None
    if row.id in known_issues.PADDLE_WRONG:
        report["paddle_wrong"] = known_issues.PADDLE_WRONG[row.id]
        # none flagged: Paddle's legacy gradient is right and its PIR one wrong, which the PIR fixture checks against
        reference = {g: execute.numeric_gradient(built, feed64, params64, g) for g in suspicious or sorted(numeric)}
    elif row.id in known_issues.PADDLE_BY_DESIGN:
        report["by_design"] = known_issues.PADDLE_BY_DESIGN[row.id]
    return (run64 if matters else None), report, reference


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":  # Paddle's While orders its inputs by a set: fix string hashing
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("patterns", nargs="*", help="row ids or glob patterns (default: every row)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    paddle.enable_static()
    rows = [r for r in ROWS if not args.patterns or any(fnmatch.fnmatch(r.id, p) for p in args.patterns)]
    if not args.patterns:  # a full run drops the fixtures of rows no table has any more
        known = {r.id for r in ROWS}
        for stale in [d for d in args.out.glob("*") if d.is_dir() and d.name not in known]:
            shutil.rmtree(stale)
    for row in rows:
        print(f"{row.id}: {build_row(row, args.out / row.id)}", flush=True)
    op_protos.write(args.out)


if __name__ == "__main__":
    sys.exit(main())

"""Coverage of paddle.nn, paddle.vision.models and the tensor API in PIR mode: build every row of
tools/coverage/ (the rows of docs/coverage.md) in Paddle 3.3.1's default PIR mode, differentiate it with
Paddle's own backward, and record the PIR op names each row emits, forward and backward, in
tests/data/paddle/pir_coverage.json.
With --fixtures, also write PIR fixtures for a set of rows that together use every op gradc's PIR table
maps (tests/data/paddle/pir_layers/<row>/: forward.json, Paddle's training program backward.json.gz,
feed.npz, params.npz, loss.npy, grads.npz, meta.json; grads_reference.npz where Paddle's gradient is
wrong). Not part of the package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_pir_coverage.py [--fixtures | --fixtures-of] [ROW_PATTERN ...]
"""

from __future__ import annotations

import argparse
import fnmatch
import gzip
import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import paddle
from coverage import known_issues, pir_build
from coverage.catalogue import ROWS
from coverage.paddle_run import seed_of
from paddle.base import core

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "tests" / "data" / "paddle" / "pir_coverage.json"
FIXTURES = ROOT / "tests" / "data" / "paddle" / "pir_layers"
LEGACY_FIXTURES = ROOT / "tests" / "data" / "paddle" / "layers"
sys.path.insert(0, str(ROOT / "src"))
from gradc.pir.table.rows import TABLE  # noqa: E402


def one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return (f"{type(error).__name__}: {lines[-1] if lines else ''}")[:300]


def record(rows) -> dict:
    """Row id -> its PIR op names (or Paddle's error building it), and whether it has Paddle's numbers."""
    result = {}
    for row in rows:
        if row.id in known_issues.PIR_CRASHES:
            result[row.id] = {"family": row.family, "paddle_error": f"FatalError: {known_issues.PIR_CRASHES[row.id]}"}
            print(f"{row.id}: {result[row.id]}", flush=True)
            continue
        try:
            built, _, values = pir_build.build_and_run(row)
        except Exception as error:  # noqa: BLE001 - Paddle's own failure is the row's result
            result[row.id] = {"family": row.family, "paddle_error": one_line(error)}
        else:
            result[row.id] = {"family": row.family, "forward": built.forward_ops, "backward": built.backward_ops,
                              "numbers": values is not None}
        print(f"{row.id}: {result[row.id]}", flush=True)
    return result


def choose(recorded: dict) -> list[str]:
    """Rows with numbers, every forward op mapped and a PIR forward that holds their gradient, that together use
    every mapped op once (greedy set cover, smaller programs first on ties)."""
    usable = {rid: set(r["forward"]) | set(r["backward"]) for rid, r in recorded.items()
              if r.get("numbers") and set(r["forward"]) <= set(TABLE)
              and rid not in known_issues.PIR_FORWARD_NOT_DIFFERENTIABLE}
    covered = set()   # ops the fixtures of tools/paddle_pir_fixtures.py already use
    for meta in (ROOT / "tests" / "data" / "paddle" / "pir").glob("*/meta.json"):
        covered |= {*json.loads(meta.read_text())["pir_ops"], *json.loads(meta.read_text()).get("pir_backward_ops", [])}
    wanted = set().union(*usable.values()) & set(TABLE) - covered
    chosen = []
    while wanted:
        best = max(sorted(usable), key=lambda rid: (len(usable[rid] & wanted), -len(usable[rid])))
        if not usable[best] & wanted:
            break
        chosen.append(best)
        wanted -= usable[best]
    return sorted(chosen)


def write_fixture(row, out: Path) -> str:
    built, feed, values = pir_build.build_and_run(row)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    core.serialize_pir_program(built.forward, str(out / "forward.json"), True, False, True)
    raw = out / "backward.json"
    core.serialize_pir_program(built.training, str(raw), True, False, True)
    (out / "backward.json.gz").write_bytes(gzip.compress(raw.read_bytes(), mtime=0))
    raw.unlink()
    np.savez_compressed(out / "feed.npz", **feed)
    np.savez_compressed(out / "params.npz", **values.params)
    np.savez_compressed(out / "grads.npz", **values.grads)
    np.save(out / "loss.npy", values.loss)
    if row.id in known_issues.PADDLE_WRONG:
        copy_reference(row.id, feed, values, out)
    meta = {"row": row.id, "family": row.family, "code": row.code, "seed": seed_of(row),
            "paddle_version": paddle.__version__, "loss": pir_build.LOSS_NAME,
            "params_grads": [[name, f"{name}@GRAD"] for name, _ in built.wrt],
            "pir_ops": built.forward_ops, "pir_backward_ops": built.backward_ops}
    if row.id in known_issues.PADDLE_WRONG:
        meta["paddle_wrong"] = known_issues.PADDLE_WRONG[row.id]
        meta["paddle_program_wrong"] = row.id in known_issues.PIR_PROGRAM_WRONG
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"loss {float(values.loss):.6f}, {len(values.grads)} grads"


def copy_reference(row_id: str, feed: dict, values, out: Path) -> None:
    """Where Paddle's gradient is wrong, the legacy coverage fixture of the same row holds central
    differences of Paddle's float64 forward (grads_reference.npz); they apply when the inputs and
    parameters are the same, which the same seeds make them."""
    legacy = LEGACY_FIXTURES / row_id
    for name, here in (("feed", feed), ("params", values.params)):
        if not here and not (legacy / f"{name}.npz").exists():   # the legacy writer leaves an empty archive out
            continue
        with np.load(legacy / f"{name}.npz") as archive:
            if sorted(archive.files) != sorted(here) or any(not np.array_equal(archive[k], here[k]) for k in here):
                raise ValueError(f"{row_id}: {name} differ from the legacy fixture's; its reference does not apply")
    shutil.copy(legacy / "grads_reference.npz", out / "grads_reference.npz")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("patterns", nargs="*", help="row ids or glob patterns (default: every row)")
    parser.add_argument("--fixtures", action="store_true", help="also write the fixtures of a covering set of rows")
    parser.add_argument("--fixtures-of", action="store_true",
                        help="also write the fixtures of exactly the rows named (no covering set, nothing deleted)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    paddle.set_flags({"FLAGS_save_cf_stack_op": True})   # else 3.3.1 aborts writing a control-flow backward
    rows = [r for r in ROWS if not args.patterns or any(fnmatch.fnmatch(r.id, p) for p in args.patterns)]
    recorded = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    recorded.update(record(rows))
    RECORD.write_text(json.dumps({rid: recorded[rid] for rid in sorted(recorded)}, indent=0) + "\n")
    if args.fixtures_of:
        for row in rows:
            print(f"fixture {row.id}: {write_fixture(row, FIXTURES / row.id)}", flush=True)
    elif args.fixtures:
        chosen = choose(recorded)
        for stale in [d for d in FIXTURES.glob("*") if d.is_dir() and d.name not in chosen]:
            shutil.rmtree(stale)
        by_id = {row.id: row for row in ROWS}
        for rid in chosen:
            print(f"fixture {rid}: {write_fixture(by_id[rid], FIXTURES / rid)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

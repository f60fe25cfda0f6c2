"""How often the registry gradcheck catches a wrong gradient, compared at every element and along k random directions.

Runs every registry case once, recording for each checked var its analytic gradient, its central differences at
every element and along three random unit directions; then makes wrong gradients up from the right ones (one
element off by a fraction of the largest, the largest or the last nonzero element zeroed, a sign flipped, every
element scaled or shifted) and counts, per kind, the vars each check flags. A var of k elements or fewer is compared
element by element in both (as gradc.gradcheck does).

    PYTHONPATH=src:tests .venv/bin/python tools/gradcheck_mutations.py [--jobs 2]
"""

from __future__ import annotations

import argparse
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

DIRECTIONS = (1, 2, 3)


def record(part: int, parts: int, out: Path) -> None:
    """Run every ``parts``-th case from ``part``, keeping what each element-wise comparison saw."""
    import gradc.gradcheck as gradcheck
    import gradc.gradcheck_op as gradcheck_op
    from gradc.central_differences import directional_derivatives, numeric_grad, random_directions
    from gradcheck_cases import all_cases

    records, seen = [], {}

    def numeric_and_directional(f, value, eps, indices=None):
        units = random_directions(np.random.default_rng(len(records) + 7), value, max(DIRECTIONS))
        seen["last"] = (directional_derivatives(f, value, eps, units), units)
        return numeric_grad(f, value, eps, indices)

    compare = gradcheck_op.element_mismatch

    def recording_compare(name, analytic, numeric, rtol, atol):
        dirs, units = seen.pop("last")
        records.append({"var": name, "analytic": np.array(analytic).reshape(-1), "numeric": np.reshape(numeric, -1),
                        "units": units, "dirs": dirs, "rtol": rtol, "atol": atol})
        return compare(name, analytic, numeric, rtol, atol)

    gradcheck_op.numeric_grad, gradcheck_op.element_mismatch = numeric_and_directional, recording_compare
    for case in all_cases()[part::parts]:
        try:
            if case.program is not None:
                gradcheck.check_program(**case.program(), eps=case.eps, rtol=case.rtol, atol=case.atol)
            else:
                gradcheck.check_op(case.op, case.inputs, case.attrs, outputs=case.outputs, wrt=case.wrt,
                                   eps=case.eps, rtol=case.rtol, atol=case.atol)
        except gradcheck.GradcheckError:
            pass
    out.write_bytes(pickle.dumps(records))


def flagged_by_elements(r: dict, grad: np.ndarray) -> bool:
    from gradc.gradcheck_verdicts import element_mismatch
    return element_mismatch(r["var"], grad, r["numeric"], r["rtol"], r["atol"]) is not None


def flagged_along(r: dict, grad: np.ndarray, k: int) -> bool:
    from gradc.gradcheck_verdicts import directional_verdict
    if grad.size <= k:
        return flagged_by_elements(r, grad)
    return directional_verdict(r["var"], grad, r["units"][:k], r["dirs"][:k], r["rtol"], r["atol"])[1] is not None


def wrong_gradients(grad: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    scale = np.abs(grad).max() or 1.0
    one = rng.integers(grad.size)
    wrong = {}
    for fraction in (1e-3, 1e-2, 1e-1):
        wrong[f"one element + {fraction:g} x largest"] = grad.copy()
        wrong[f"one element + {fraction:g} x largest"][one] += fraction * scale
    wrong["largest element zeroed"] = grad.copy()
    wrong["largest element zeroed"][np.argmax(np.abs(grad))] = 0
    nonzero = np.flatnonzero(np.abs(grad) > 1e-3 * scale)
    if nonzero.size:
        flipped = grad.copy()
        flipped[nonzero[rng.integers(nonzero.size)]] *= -1
        wrong["one element's sign flipped"] = flipped
        wrong["last nonzero element zeroed"] = grad.copy()
        wrong["last nonzero element zeroed"][nonzero[-1]] = 0
    wrong["every element x 1.001"] = grad * 1.001
    wrong["every element + 1e-4 x largest"] = grad + 1e-4 * scale
    return wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--part", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part is not None:
        record(args.part, args.jobs, args.out)
        return
    with tempfile.TemporaryDirectory() as tmp:
        outs = [Path(tmp) / f"part{i}.pkl" for i in range(args.jobs)]
        for job in [subprocess.Popen([sys.executable, __file__, "--jobs", str(args.jobs), "--part", str(i),
                                      "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    for i, out in enumerate(outs)]:
            if job.wait():
                sys.exit("a recording job failed")
        records = [r for out in outs for r in pickle.loads(out.read_bytes()) if r["analytic"].size]
    rng = np.random.default_rng(0)
    false_alarms = {k: sum(flagged_along(r, r["analytic"], k) for r in records) for k in DIRECTIONS}
    counts: dict[str, list[int]] = {}
    for r in records:
        grad = r["analytic"].astype(np.result_type(r["analytic"], r["numeric"]))
        for kind, wrong in wrong_gradients(grad, rng).items():
            row = counts.setdefault(kind, [0] * (2 + len(DIRECTIONS)))
            row[0] += 1
            row[1] += flagged_by_elements(r, wrong)
            for i, k in enumerate(DIRECTIONS):
                row[2 + i] += flagged_along(r, wrong, k)
    print(f"{len(records)} checked vars; right gradients flagged along k directions: {false_alarms} "
          f"(cases marked by_element are among them)")
    print("| wrong gradient | vars | every element | " + " | ".join(f"{k} direction(s)" for k in DIRECTIONS) + " |")
    print("|---|---|---|" + "---|" * len(DIRECTIONS))
    for kind, (n, *flagged) in counts.items():
        print(f"| {kind} | {n} | " + " | ".join(f"{f / n:.1%}" for f in flagged) + " |")


if __name__ == "__main__":
    main()

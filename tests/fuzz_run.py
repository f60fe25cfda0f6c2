"""`make fuzz`: many hostile inputs through the CLI (tests/fuzzing.py), counted by verdict and cause.

    .venv/bin/python tests/fuzz_run.py --count 10000 --seed 0 --out fuzz-results.txt
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).parent))

import fuzzing  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("fuzz-results.txt"))
    args = parser.parse_args()
    verdicts, causes, bad = collections.Counter(), collections.Counter(), []
    start = time.monotonic()
    for seed in range(args.seed, args.seed + args.count):
        case = fuzzing.random_case(seed)
        outcome = fuzzing.run_case(case)
        verdict = fuzzing.verdict(case, outcome)
        verdicts[verdict] += 1
        causes[(verdict, fuzzing.cause(outcome))] += 1
        if verdict in fuzzing.BAD:
            bad.append(f"seed {seed} {verdict} ({case.label}): {outcome.stderr.strip()[-300:]}")
        if (seed - args.seed + 1) % 500 == 0:
            print(f"{seed - args.seed + 1} inputs, {dict(verdicts)}", flush=True)
    lines = [f"gradc fuzz: {args.count} inputs from seed {args.seed} in {time.monotonic() - start:.0f} s",
             "verdicts: " + ", ".join(f"{k} {v}" for k, v in verdicts.most_common()),
             f"distinct error causes: {sum(1 for (v, _) in causes if v == 'error')}", "", "contract breaches:",
             *(bad or ["none"]), "", "most common clean errors:",
             *[f"{n:6d}  {c}" for (v, c), n in causes.most_common() if v == "error"][:40]]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:4]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

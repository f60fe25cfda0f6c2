"""gradc's own training programs for the optimizer fixtures: each case of tests/data/paddle/optim set up with
gradc.optimizers as its meta.json says (tests/optim_cases.py), compiled from the case's forward program, written
as OUT/<case>/train.pb and startup.pb for tools/run_in_paddle.py --optim to run in a real Paddle.

    .venv/bin/python tools/gradc_optim_programs.py /tmp/gradc_optim [case ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import gradc  # noqa: E402
from optim_cases import CASES, OptimCase, gradc_program  # noqa: E402

if __name__ == "__main__":
    target = Path(sys.argv[1])
    for name in sys.argv[2:] or CASES:
        program, startup = gradc_program(OptimCase(name))
        (target / name).mkdir(parents=True, exist_ok=True)
        gradc.save(program, target / name / "train.pb")
        gradc.save(startup, target / name / "startup.pb")
    print(f"wrote {len(sys.argv[2:] or CASES)} cases to {target}")

"""Training programs whose learning-rate schedule is ops (gradc compile --lr-schedule cosine|step), for
tests/data/paddle/schedule_ops: the mlp fixture (tests/data/paddle/mlp) compiled with each schedule.
tools/run_schedule_ops_in_paddle.py runs them in Paddle 3.3.1 and records the rate and loss of every step.

    .venv/bin/python tools/gradc_schedule_programs.py tests/data/paddle/schedule_ops
"""

from __future__ import annotations

import sys
from pathlib import Path

import gradc
from gradc.optimizers import Adam, Momentum, ProgramSchedule

MLP = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "mlp"
CASES = {
    "cosine": lambda: Adam(learning_rate=ProgramSchedule("cosine", 0.01, decay_steps=5, warmup_steps=2)),
    "step": lambda: Momentum(learning_rate=ProgramSchedule("step", 0.1, decay_steps=2, gamma=0.5, warmup_steps=1),
                             momentum=0.8),
}
STEPS = 9


def main(out: Path) -> None:
    for case, make in CASES.items():
        program = gradc.load(MLP / "forward.pb")
        startup = make().minimize(program, "mean_0.tmp_0")
        target = out / case
        target.mkdir(parents=True, exist_ok=True)
        gradc.save(program, target / "train.pb")
        gradc.save(startup, target / "startup.pb")
    print(f"wrote {out}: {', '.join(CASES)}, {STEPS} steps each")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/schedule_ops"))

"""tools/real_models.py's gradc step (the Paddle step needs Paddle): on two shipped inference models it verifies,
runs, and writes the fine-tuning program and gradients that Paddle then runs (docs/real-models.md)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import gradc
from fixtures import DATA

TOOL = Path(__file__).parent.parent / "tools" / "real_models.py"


def test_gradc_step_runs_and_compiles_each_model(tmp_path):
    for case in ("inference", "inference_finetune"):
        shutil.copy(DATA / case / "model.pdmodel", tmp_path / f"{case}.pdmodel")
    result = subprocess.run([sys.executable, str(TOOL), "gradc", str(tmp_path)], capture_output=True, text=True,
                            env={"PYTHONPATH": str(Path(gradc.__file__).parent.parent), "DIM": "6"})
    assert result.returncode == 0, result.stderr
    reports = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert sorted(reports) == ["inference.pdmodel", "inference_finetune.pdmodel"]
    for name, report in reports.items():
        report = json.loads(report)
        assert report["problems"] == [] and report["grads"] > 0, (name, report)
        check = tmp_path / f"{name}.check"
        program = gradc.load(check / "train.pb")
        with np.load(check / "grads.npz") as grads:
            assert len(grads.files) == report["grads"] + 1 and np.isfinite(grads["loss"])
        assert any(op.type.endswith("_grad") for op in program.global_block.ops)

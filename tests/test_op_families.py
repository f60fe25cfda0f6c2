"""The op table imports an op family when one of its ops is first read (gradc.optable): the index it reads is
current, a type read alone is the whole definition, a compile imports only its program's families and writes
the same bytes, and a registration from outside the families sees every built-in op. Each runs in a new
interpreter, where no family has been imported yet."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINEAR = ROOT / "tests" / "data" / "paddle" / "layers" / "linear" / "forward.pb"


def run_python(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_index_of_families_is_current():
    run_python(str(ROOT / "tools" / "op_families.py"), "--check")


def test_each_op_type_read_alone_is_its_whole_definition():
    report = json.loads(run_python(str(ROOT / "tests" / "families_alone.py")))
    assert report["types"] > 300
    assert report["differ"] == []


COMPILE = """
import sys
from gradc.cli import main
from gradc.registry import OPS
if sys.argv[1] == "all":
    OPS.load_all()
sys.argv = ["gradc", "compile", sys.argv[2], "-o", sys.argv[3]]
try:
    main()
except SystemExit as done:
    assert not done.code, done.code
print(" ".join(sorted(m.removeprefix("gradc.ops.") for m in sys.modules if m.startswith("gradc.ops."))))
"""


def test_a_compile_imports_only_its_programs_families_and_writes_the_same_bytes(tmp_path):
    lazy = run_python("-c", COMPILE, "lazy", str(LINEAR), str(tmp_path / "lazy.pb")).split()
    every = run_python("-c", COMPILE, "all", str(LINEAR), str(tmp_path / "all.pb")).split()
    assert (tmp_path / "lazy.pb").read_bytes() == (tmp_path / "all.pb").read_bytes()
    assert {"math", "reduce"} <= set(lazy)   # matmul_v2, elementwise_add/mul, reduce_mean
    assert not {"rnn", "tensor_array", "optimizer", "sequence_loss", "vision"} & set(lazy)
    assert len(lazy) < len(every) / 2


OUTSIDE = """
from gradc import registry
from gradc.registry import NO_GRAD, OPS
try:
    registry.defop("relu", ["X"], ["Out"])
except ValueError as exc:
    print("refused:", exc)
registry.defop("tanh_grad", ["X"], ["Out"], grad=NO_GRAD, replace=True)
OPS.load_all()
print("kept:", OPS["tanh_grad"].grad is NO_GRAD, OPS["tanh_grad"].inputs)
"""


def test_a_registration_from_outside_sees_every_built_in_op():
    """relu's family is not imported yet: registering relu again is refused all the same, and a replacement of
    tanh_grad (which a second family extends) is not undone when that family is imported later."""
    lines = run_python("-c", OUTSIDE).splitlines()
    assert lines == ["refused: op 'relu' is already registered", "kept: True ('X',)"]


WALK = """
from gradc.registry import OPS
names = list(OPS)   # the table's first use in this interpreter
print(len(names) == dict.__len__(OPS), not OPS.pending, {"rnn", "adam", "conv2d_grad"} <= set(names))
"""
COPY = "from gradc.registry import OPS; print(len(OPS.copy()) == len(OPS), type(OPS.copy()).__name__)"


def test_walking_the_table_imports_every_family_first():
    assert run_python("-c", WALK).split() == ["True", "True", "True"]
    assert run_python("-c", COPY).split() == ["True", "dict"]

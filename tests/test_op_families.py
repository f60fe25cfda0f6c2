"""The op tables import an op or kernel family when one of its ops is first read (gradc.optable): the indexes they
read are current, a type read alone is the whole definition and kernel, a compile and a run import only their
program's families and give the same bytes and values, and a registration from outside the families sees every
built-in op. Each runs in a new interpreter, where no family has been imported yet."""

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
    # math_double's makers (mul_grad's, read when the output is verified) take helpers, not the complex and product
    # families' registrations, which pulled in fft, cumprod and the select and index ops
    assert not {"complex_fft", "complex_fft_double", "product_directions", "cumprod", "select", "index"} & set(lazy)
    assert len(lazy) < len(every) / 2


RUN = """
import sys
import numpy as np
from gradc.executor import KERNELS, Executor, Scope
from gradc.layers import ProgramBuilder
from gradc.registry import OPS
import gradc
if sys.argv[1] == "all":
    OPS.load_all()
    KERNELS.load_all()
net = ProgramBuilder()
label = net.data("label", [-1, 1], "int64")
net.loss = net.cross_entropy_loss(net.fc(net.fc(net.data("x", [-1, 8]), 16, act="tanh"), 3), label)
gradc.append_backward(net.program, net.loss)
scope, rng = Scope(), np.random.default_rng(0)
Executor().run(net.startup, scope=scope)
feed = {"x": rng.standard_normal((4, 8)).astype(np.float32), "label": np.array([[0], [2], [1], [2]])}
values = Executor().run(net.program, feed, [net.loss, "fc_0.w_0@GRAD"], scope)
print(" ".join(v.tobytes().hex() for v in values))
print(" ".join(sorted(m.rpartition(".")[2] for m in sys.modules if m.startswith("gradc.executor.kernels."))))
"""


def test_a_run_imports_only_its_programs_kernels_and_gives_the_same_values():
    lazy_values, lazy = run_python("-c", RUN, "lazy").splitlines()
    every_values, every = run_python("-c", RUN, "all").splitlines()
    assert lazy_values == every_values
    assert {"activation", "math", "loss"} <= set(lazy.split())   # tanh, mul and elementwise_add, the loss
    assert not {"conv", "rnn", "pool", "tensor_array", "optimizer", "vision"} & set(lazy.split())
    assert len(lazy.split()) < len(every.split()) / 2


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
from gradc.executor import KERNELS, kernel
try:
    kernel("conv2d")(print)
except ValueError as exc:
    print("refused:", exc)
kernel("pool2d", replace=True)(print)
KERNELS.load_all()
print("kept:", KERNELS["pool2d"] is print)
"""


def test_a_registration_from_outside_sees_every_built_in_op():
    """relu's family is not imported yet: registering relu again is refused all the same, and a replacement of
    tanh_grad (which a second family extends) is not undone when that family is imported later; the same for the
    kernels of conv2d and pool2d."""
    lines = run_python("-c", OUTSIDE).splitlines()
    assert lines == ["refused: op 'relu' is already registered: give yours another name, or pass replace=True to "
                     "override the registered one", "kept: True ('X',)",
                     "refused: op 'conv2d' already has a kernel: register yours under another op name, or pass "
                     "replace=True to override it", "kept: True"]


WALK = """
from gradc.registry import OPS
names = list(OPS)   # the table's first use in this interpreter
print(len(names) == dict.__len__(OPS), not OPS.pending, {"rnn", "adam", "conv2d_grad"} <= set(names))
"""
COPY = "from gradc.registry import OPS; print(len(OPS.copy()) == len(OPS), type(OPS.copy()).__name__)"


def test_walking_the_table_imports_every_family_first():
    assert run_python("-c", WALK).split() == ["True", "True", "True"]
    assert run_python("-c", COPY).split() == ["True", "dict"]


KNOWS = """
import json, sys
from gradc.executor.kernels import KERNELS
from gradc.registry import OPS
types = sorted(dict.fromkeys([*OPS, "no_such_op"]))
answers = {t: KERNELS.knows(t) for t in types}
imported = sorted(m for m in sys.modules if m.startswith("gradc.executor.kernels.") or m == "numpy")
KERNELS.load_all()
print(json.dumps({"imported": imported, "differ": [t for t in types if answers[t] != (t in KERNELS)]}))
"""


def test_which_types_have_kernels_is_known_without_importing_them():
    """`gradc ops` and the viewer ask; the answer is the one the loaded table gives, for all types and an unknown."""
    report = json.loads(run_python("-c", KNOWS))
    assert report["imported"] == ["gradc.executor.kernels.families"]
    assert report["differ"] == []

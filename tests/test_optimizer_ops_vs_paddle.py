"""Each optimizer and clipping op against PaddlePaddle 3.3.1 in float64 (tests/data/paddle/ops/optimizer, made by
tools/paddle_optimizer_ops.py): one raw op per setting of its attributes (Nesterov, L2, centered, amsgrad,
tensor hyper-parameters, SkipUpdate, global beta pows, decoupled decay, Lamb's trust ratio, RAdam's two regimes,
Rprop's sign rules, merged lists), every output it writes in place, and squared_l2_norm's gradient."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from fixtures import NpzGroup
from gradc.backward import append_grad_ops
from gradc.ir import to_var_type

DATA = Path(__file__).parent / "data" / "paddle" / "ops" / "optimizer"
CASES = json.loads((DATA / "cases.json").read_text())["cases"]
VALUES = NpzGroup(DATA / "values.npz", "")   # read at a test's first look, in the worker that runs it
# Paddle's CPU momentum kernel ignores rescale_grad (its GPU kernels and lars_momentum apply it, as the
# attribute documents); gradc applies it
CPU_IGNORES_RESCALE = {"momentum_rescale"}


def stored(value):
    """An attribute as a program file holds it (and Paddle's kernels read it): floats in float32."""
    if isinstance(value, list):
        return [stored(v) for v in value]
    return float(np.float32(value)) if isinstance(value, float) else value


def run(case: dict, attrs: dict | None = None) -> dict[str, np.ndarray]:
    """gradc's values of the case's outputs (written in place, as Paddle's were) and, for squared_l2_norm, X@GRAD."""
    name, program = case["name"], gradc.Program()
    block = program.global_block
    names, feed = {}, {}
    for slot, count in case["inputs"].items():
        names[slot] = [f"{slot}.{i}" for i in range(max(count, 1))]
        for var in names[slot]:
            feed[var] = VALUES[f"{name}/{var}"]
            block.create_var(var, list(feed[var].shape), to_var_type(feed[var].dtype))
    outputs, dtype = {}, next(iter(block.vars.values())).dtype
    for slot in case["outputs"]:
        outputs[slot] = names.get(slot.removesuffix("Out").removesuffix("_out")) or [f"{slot}.0"]
        for var in outputs[slot]:
            if block.find_var(var) is None:   # clip ops write a new var
                block.create_var(var, list(VALUES[f"{name}/{var}"].shape), dtype)
    attrs = case["attrs"] if attrs is None else attrs
    block.append_op(case["op"], names, outputs, {key: stored(value) for key, value in attrs.items()})
    fetch = {f"{slot}.{i}": var for slot, args in outputs.items() for i, var in enumerate(args)}
    if case["op"] == "squared_l2_norm":
        append_grad_ops(program, ["Out.0"])
        feed["Out.0@GRAD"] = VALUES[f"{name}/weight"]
        fetch["X.0@GRAD"] = "X.0@GRAD"
    values = gradc.Executor().run(program, feed, list(fetch.values()), gradc.Scope())
    return dict(zip(fetch, values))


def assert_like_paddle(case: dict, ours: dict) -> None:
    for key, value in ours.items():
        expected = VALUES[f"{case['name']}/{key}"]
        assert value.dtype == expected.dtype, f"{key}: {value.dtype}, Paddle {expected.dtype}"
        tight = expected.dtype == np.float64
        np.testing.assert_allclose(value, expected.reshape(value.shape), rtol=1e-10 if tight else 1e-6,
                                   atol=1e-12 if tight else 1e-7, err_msg=f"{case['name']}: {key}")


@pytest.mark.parametrize("case", [c for c in CASES if c["name"] not in CPU_IGNORES_RESCALE], ids=lambda c: c["name"])
def test_matches_paddle(case):
    assert_like_paddle(case, run(case))


def test_momentum_rescales_the_gradient_where_paddles_cpu_kernel_does_not():
    case = next(c for c in CASES if c["name"] == "momentum_rescale")
    assert_like_paddle(case, run(case, {**case["attrs"], "rescale_grad": 1.0}))   # what Paddle's CPU computed
    velocity, grad = VALUES["momentum_rescale/Velocity.0"], VALUES["momentum_rescale/Grad.0"]
    np.testing.assert_allclose(run(case)["VelocityOut.0"], stored(0.9) * velocity + 0.5 * grad, rtol=1e-12)

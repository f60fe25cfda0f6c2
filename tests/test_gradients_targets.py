"""gradients() of several targets: the gradient of sum_i <target_i, seed_i> (seeds ones or target_gradients), as
paddle.static.gradients; checked against float64 central differences and Paddle's numbers (tests/data/paddle/targets,
tools/paddle_gradients_targets.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.central_differences import numeric_grad
from gradc.layers import ProgramBuilder

DATA = Path(__file__).parent / "data" / "paddle" / "targets"
F64 = gradc.VarType.FP64


def _run(program, feed: dict, params: dict, fetch: list[str]) -> list[np.ndarray]:
    scope = gradc.Scope()
    for name, value in params.items():
        scope[name] = value
    return gradc.Executor().run(program, feed, fetch, scope)


def _numeric(forward, feed: dict, params: dict, targets: list[str], given: list[str | None],
             inputs: list[str]) -> list[np.ndarray]:
    """Central differences of sum_i sum(target_i * seed_i) run by ``forward``, a seed None being ones."""
    def objective() -> float:
        values = _run(forward, feed, params, targets)
        return sum(float(np.sum(value * (1.0 if seed is None else feed[seed]))) for value, seed in zip(values, given))

    return [numeric_grad(objective, feed[name] if name in feed else params[name], 1e-6).reshape(
        np.shape(feed[name] if name in feed else params[name])) for name in inputs]


def _net():
    """x [3, 4] and w [4, 2] in float64, h = tanh(x @ w): what the targets below are computed from."""
    net = ProgramBuilder()
    x = net.data("x", [3, 4], "float64", stop_gradient=False)
    w = net.parameter("w", [4, 2], "float64")
    h = net.op("tanh", {"X": net.op("matmul_v2", {"X": x, "Y": w})[0]}, names=["h"])[0]
    rng = np.random.default_rng(3)
    return net, h, {"x": rng.standard_normal((3, 4))}, {"w": rng.standard_normal((4, 2))}


@pytest.mark.parametrize("case", ["independent", "dependent", "weighted"])
def test_several_targets_give_paddles_gradients_and_central_differences(case):
    """Paddle 3 (PIR) sums each target's seed and what flows back to it from the targets computed from it; its
    legacy gradients drop one of the two where targets depend on each other, which gradc does not follow."""
    meta = json.loads((DATA / case / "meta.json").read_text())
    program = gradc.load(DATA / case / "program.pb")
    with np.load(DATA / case / "feed.npz") as f, np.load(DATA / case / "params.npz") as p:
        feed, params = {k: f[k].copy() for k in f.files}, {k: p[k].copy() for k in p.files}
    forward = program.clone()
    grads = gradc.gradients(program, meta["targets"], meta["inputs"], target_gradients=meta["target_gradients"])
    computed = dict(zip(meta["inputs"], _run(program, feed, params, grads)))
    with np.load(DATA / case / "grads.npz") as paddle, np.load(DATA / case / "legacy.npz") as legacy:
        for name in meta["inputs"]:
            np.testing.assert_allclose(computed[name], paddle[name], rtol=1e-12, atol=1e-14, err_msg=name)
        apart = max(np.abs(legacy[name] - paddle[name]).max() for name in meta["inputs"])
    assert (apart > 1.0) == (case != "independent")
    numeric = _numeric(forward, feed, params, meta["targets"], meta["target_gradients"], meta["inputs"])
    for name, value in zip(meta["inputs"], numeric):
        np.testing.assert_allclose(computed[name], value, rtol=1e-7, atol=1e-8, err_msg=name)


def test_a_target_overwritten_after_another_read_it_seeds_its_last_value():
    """t = h * h; u = 2 t; then t = t + h in place: t's seed is its last value's, u's flows back to t's first."""
    net, h, feed, params = _net()
    t = net.op("elementwise_mul", {"X": h, "Y": h})[0]
    u = net.op("scale", {"X": t}, {"scale": 2.0})[0]
    net.block.append_op("elementwise_add", {"X": [t], "Y": [h]}, {"Out": [t]}, {"axis": -1})
    forward = net.program.clone()
    grads = gradc.gradients(net.program, [t, u], ["x", "w"])
    numeric = _numeric(forward, feed, params, [t, u], [None, None], ["x", "w"])
    for value, expected in zip(_run(net.program, feed, params, grads), numeric):
        np.testing.assert_allclose(value, expected, rtol=1e-7, atol=1e-8)


def test_gradients_of_several_first_gradients_are_second_derivatives():
    """targets [h@GRAD, x@GRAD, w@GRAD] of a first gradients() (x@GRAD computed from h@GRAD), one with a target
    gradient, and h itself: the second pass's grads are x@GRAD@2, w@GRAD@2, and match central differences."""
    net, h, feed, params = _net()
    loss = net.op("reduce_sum", {"X": net.op("sin", {"X": h})[0]}, {"reduce_all": True})[0]
    first = gradc.gradients(net.program, loss, [h, "x", "w"])
    net.block.create_var("u", [3, 4], F64, need_check_feed=True)
    feed["u"] = np.random.default_rng(4).standard_normal((3, 4))
    forward = net.program.clone()
    targets, given = [*first, h], [None, "u", None, None]   # h's grad is h@GRAD@2: h@GRAD is the first pass's
    second = gradc.gradients(net.program, targets, ["x", "w"], target_gradients=given)
    assert second == ["x@GRAD@2", "w@GRAD@2"]
    numeric = _numeric(forward, feed, params, targets, given, ["x", "w"])
    for value, expected in zip(_run(net.program, feed, params, second), numeric):
        np.testing.assert_allclose(value, expected, rtol=1e-7, atol=1e-8)


def test_one_target_in_a_list_or_alone_gives_the_same_program():
    programs = []
    for target in ("h", ["h"], ("h",)):
        net = _net()[0]
        gradc.gradients(net.program, target, ["x"])
        programs.append([(op.type, op.inputs, op.outputs) for op in net.program.global_block.ops])
    assert programs[0] == programs[1] == programs[2]


@pytest.mark.parametrize(("targets", "given", "message"), [
    ([], None, r"gradients\(\) needs a target: none given"),
    (["h", "s"], ["v"], r"1 target gradient\(s\) for 2 target\(s\) \(h, s\): give one per target, None where"),
    (["h", "s", "h"], None, r"target\(s\) given twice: h: give each target once .* Paddle seeds it once and keeps"),
    (["h", "s"], [None, "nope"], r"target gradient 'nope' must be declared with the shape and dtype of 's', "
                                 r"float64\[3, 4\]: it is not declared in block 0"),
    (["h", "s"], ["v", None], r"target gradient 'v' must be declared with the shape and dtype of 'h', "
                              r"float64\[3, 2\]: it is float64\[3, 4\]"),
    (["h", "s"], [None, "v32"], r"target gradient 'v32' must be declared .* of 's', float64\[3, 4\]: it is "
                                r"float32\[3, 4\]"),
    (["h", "n"], None, r"target 'n' must be a float var \(block 0, written by op 3\)"),
    (["h", "x"], None, r"target 'x' is not written by any op of block 0"),
])
def test_targets_and_their_gradients_are_checked(targets, given, message):
    net, h, _, _ = _net()
    net.op("sin", {"X": "x"}, names=["s"])
    net.op("cast", {"X": "x"}, {"in_dtype": int(F64), "out_dtype": int(gradc.VarType.INT64)}, names=["n"])
    net.block.create_var("v", [3, 4], F64)
    net.block.create_var("v32", [3, 4], gradc.VarType.FP32)
    with pytest.raises(gradc.GradError, match=message):
        gradc.gradients(net.program, targets, ["x"], target_gradients=given)

"""Activation, math, reduce and logic layers against what PaddlePaddle 3.3.1 computed for them
(tests/data/paddle/ops/<family>, written by tools/paddle_activation_math_fixtures.py): gradc loads Paddle's
forward program, compiles its backward, runs it, and gives Paddle's outputs, loss and gradients.

Where Paddle is wrong, the test says so and checks gradc against the right value: Paddle's
gumbel_softmax_grad omits the 1/temperature factor, and its scale grad adds a BiasTensor to the gradient.
Random ops (rrelu in training, gumbel_softmax) draw Paddle's noise when seeded as the tool seeded Paddle; their
grad ops are also compared on Paddle's draw, their forward on the properties of any draw.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from fixtures import NpzGroup
from gradc.executor import randomness
from gradc.io import parse_program

DATA = Path(__file__).parent / "data" / "paddle" / "ops"
FAMILIES = ("activation", "math", "reduce", "logic")


def _load(family):
    cases = json.loads((DATA / family / "cases.json").read_text())["cases"]
    return [dict(case, family=family, values=NpzGroup(DATA / family / "values.npz", case["name"] + "/"))
            for case in cases]


CASES = [case for family in FAMILIES for case in _load(family)]
RANDOM = {"rrelu_train", "gumbel_softmax", "gumbel_softmax_axis0", "gumbel_softmax_hard"}
PADDLE_SEED = 2026   # tools/paddle_activation_math_fixtures.py's paddle.seed before each case
PADDLE_WRONG = {"scale_bias_tensor"}


def _arrays(case, kind):
    prefix = kind + "/"
    return {name[len(prefix):]: value for name, value in case["values"].items() if name.startswith(prefix)}


# Float64 runs agree to 1e-9 except where Paddle does arithmetic on its float32 attributes in float32
FLOAT32_ATTRIBUTE_ARITHMETIC = {
    "rrelu_eval": "the mean slope (lower + upper) / 2",
    "selu_default": "scale * alpha, added to Out in selu_grad",
    "pairwise_distance": "p_norm's 1 / porder",
}


def _tolerance(case):
    if case["dtype"] == "float32" or case["name"] in FLOAT32_ATTRIBUTE_ARITHMETIC:
        return {"rtol": 1e-5, "atol": 1e-6}
    return {"rtol": 1e-9, "atol": 1e-12}


def run_gradc(case):
    """gradc's out, loss and grads for the case's Paddle program, its feeds and parameters."""
    program = parse_program(case["values"]["program"].tobytes())
    fetch = [case["out"]]
    if case["loss"]:
        gradc.append_backward(program, case["loss"])
        fetch += [case["loss"], *case["grads"]]
    scope = gradc.Scope()
    for name, value in _arrays(case, "param").items():
        scope[name] = value
    return dict(zip(fetch, gradc.Executor().run(program, _arrays(case, "feed"), fetch, scope)))


@pytest.mark.parametrize("case", [c for c in CASES if c["name"] not in RANDOM | PADDLE_WRONG],
                         ids=lambda c: f"{c['family']}/{c['name']}")
def test_matches_paddle(case):
    ours = run_gradc(case)
    expected = case["values"]["out"]
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(ours[case["out"]], expected)
        assert ours[case["out"]].dtype == expected.dtype
        return
    tolerance = _tolerance(case)
    np.testing.assert_allclose(ours[case["out"]], expected, **tolerance, err_msg="out")
    if case["loss"]:
        np.testing.assert_allclose(ours[case["loss"]], case["values"]["loss"], **tolerance, err_msg="loss")
    for grad, value in _arrays(case, "grad").items():
        assert ours[grad].dtype == value.dtype, grad
        np.testing.assert_allclose(ours[grad], value, **tolerance, err_msg=grad)


def _case(name):
    return next(c for c in CASES if c["name"] == name)


def test_scale_grad_does_not_add_the_bias_tensor_as_paddle_does():
    """out = 3 x + 10 (ScaleTensor 3, BiasTensor 10): d(out)/dx = 3; Paddle's grad op adds 10 to it."""
    case = _case("scale_bias_tensor")
    ours, paddle = run_gradc(case), _arrays(case, "grad")
    feed = _arrays(case, "feed")
    np.testing.assert_allclose(ours[case["out"]], case["values"]["out"], rtol=1e-12)
    right = 3.0 * feed["w"] / feed["w"].size
    np.testing.assert_allclose(ours["x@GRAD"], right, rtol=1e-12)
    np.testing.assert_allclose(paddle["x@GRAD"], right + 10.0, rtol=1e-12)


def _grad_op(op_type, inputs, attrs, wants="X@GRAD"):
    """Run one grad op on given arrays."""
    program = gradc.Program()
    block = program.global_block
    for slot, value in inputs.items():
        block.create_var(slot, list(value.shape), gradc.VarType.FP64)
    block.create_var(wants, None, gradc.VarType.FP64)
    block.append_op(op_type, {slot: [slot] for slot in inputs}, {wants: [wants]}, attrs)
    return gradc.Executor().run(program, inputs, [wants], gradc.Scope())[0]


def _random_op(case):
    program = parse_program(case["values"]["program"].tobytes())
    return next(op for op in program.global_block.ops if op.type == case["random_op"])


@pytest.mark.parametrize("name", sorted(RANDOM))
def test_seeded_as_paddle_the_random_ops_draw_paddles_noise(name):
    """rrelu's slopes and gumbel_softmax's noise are Paddle's (gumbel's logs Eigen's, an ulp away); Paddle's
    gumbel_softmax grad leaves out 1/temperature."""
    case = _case(name)
    randomness.seed(PADDLE_SEED)
    try:
        ours = run_gradc(case)
    finally:
        randomness.seed(None)
    np.testing.assert_allclose(ours[case["out"]], case["values"]["out"], rtol=1e-14, atol=1e-16)
    scale = 1.0 if name == "rrelu_train" else _random_op(case).attrs["temperature"]
    for grad, value in _arrays(case, "grad").items():
        np.testing.assert_allclose(ours[grad] * scale, value, rtol=1e-12, atol=1e-16, err_msg=grad)
    if name == "rrelu_train":
        np.testing.assert_array_equal(ours[case["out"]], case["values"]["out"])


def test_rrelu_grad_on_paddles_noise_and_a_training_draw():
    case = _case("rrelu_train")
    op, extra = _random_op(case), _arrays(case, "extra")
    noise, x = extra[case["extra"]["Noise"][0]], extra["x"]
    dout = extra[case["extra"]["Out"][0] + "@GRAD"]
    ours = _grad_op("rrelu_grad", {"X": x, "Noise": noise, "Out@GRAD": dout}, dict(op.attrs))
    np.testing.assert_allclose(ours, _arrays(case, "grad")["x@GRAD"], rtol=1e-12)

    results = run_gradc(dict(case, out=case["extra"]["Noise"][0]))
    ours_noise, grad = results[case["extra"]["Noise"][0]], results["x@GRAD"]
    lower, upper = op.attrs["lower"], op.attrs["upper"]
    assert np.all(ours_noise[x >= 0] == 1)
    assert np.all((ours_noise[x < 0] >= lower) & (ours_noise[x < 0] <= upper))
    assert len(np.unique(ours_noise[x < 0])) == np.sum(x < 0)   # a slope per element
    np.testing.assert_allclose(grad, _arrays(case, "feed")["w"] / x.size * ours_noise, rtol=1e-12)


@pytest.mark.parametrize("name", ["gumbel_softmax", "gumbel_softmax_axis0", "gumbel_softmax_hard"])
def test_gumbel_softmax_grad_has_the_temperature_paddle_leaves_out(name):
    """On Paddle's draw, gradc's grad is Paddle's divided by the temperature (0.5, 2.0; hard: both 0)."""
    case = _case(name)
    op, extra = _random_op(case), _arrays(case, "extra")
    out = extra[case["extra"]["Out"][0]]
    dout = extra[case["extra"]["Out"][0] + "@GRAD"]
    ours = _grad_op("gumbel_softmax_grad", {"Out": out, "Out@GRAD": dout}, dict(op.attrs))
    paddle = _arrays(case, "grad")["x@GRAD"]
    np.testing.assert_allclose(ours, paddle / op.attrs["temperature"], rtol=1e-12, atol=1e-15)
    if op.attrs["hard"]:
        assert not ours.any()
        one_hot = run_gradc(case)[case["out"]]
        assert set(np.unique(one_hot)) == {0.0, 1.0} and np.all(one_hot.sum(op.attrs["axis"]) == 1)
    else:
        assert op.attrs["temperature"] != 1.0 and not np.allclose(ours, paddle)
        probs = run_gradc(case)[case["out"]]
        np.testing.assert_allclose(probs.sum(op.attrs["axis"]), 1.0, rtol=1e-12)

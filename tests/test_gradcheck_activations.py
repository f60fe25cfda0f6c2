"""gradc check with respect to intermediate vars (activations): each is fed, perturbed, to the program without the op
writing it (tests/test_user_week28.py checks a CRF's emissions so)."""

import numpy as np

import gradc
from gradc.gradcheck import compare_program
from gradc.layers import ProgramBuilder


def test_an_activation_and_one_computed_from_it_are_each_checked_through_the_rest():
    """The tanh's output and the matmul's output computed from it, checked together: each by its own cut (fed the
    one, the loss still depends on the other through it), every element agreeing."""
    net = ProgramBuilder()
    x = net.data("x", [4, 3], "float64")
    hidden = net.op("tanh", {"X": x})[0]
    w = net.parameter("w", [3, 2], "float64")
    out = net.op("matmul_v2", {"X": hidden, "Y": w})[0]
    loss = net.mean(net.op("square", {"X": out})[0])
    rng = np.random.default_rng(0)
    analytic, checks = compare_program(net.program, {"x": rng.standard_normal((4, 3))}, [hidden, out, "w"], loss,
                                       {"w": rng.standard_normal((3, 2))})
    assert [(check.var, check.checked, check.mismatch) for check in checks] == [(hidden, 12, None), (out, 8, None),
                                                                                  ("w", 6, None)]
    assert np.abs(analytic[hidden]).min() > 0


def test_an_activation_whose_writer_feeds_the_rest_otherwise_is_checked_with_that_output_held():
    """split's first output, checked, while the loss also reads the second: its writer's other output is held at its
    value (before, refused: 'split (block 0, op 0) also writes vars the rest reads'), the partial derivative its
    gradient is: d mean(s0 * s1) / d s0 = s1 / 4."""
    net = ProgramBuilder()
    x = net.data("x", [2, 4], "float64")
    op = net.block.append_op("split", {"X": [x]}, {"Out": ["s0", "s1"]}, {"axis": 1, "num": 2})
    for name in op.output("Out"):
        net.block.create_var(name, [2, 2], gradc.VarType.FP64)
    loss = net.mean(net.op("elementwise_mul", {"X": "s0", "Y": "s1"})[0])
    x_value = np.arange(8.0).reshape(2, 4)
    analytic, checks = compare_program(net.program, {"x": x_value}, ["s0"], loss)
    assert [(check.var, check.checked, check.mismatch) for check in checks] == [("s0", 4, None)]
    np.testing.assert_allclose(analytic["s0"], x_value[:, 2:] / 4)

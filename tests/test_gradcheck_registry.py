"""Every registered differentiable op is checked against central differences in float64."""

import os

import numpy as np
import pytest

from gradc import registry
from gradc.errors import GradError
from gradc.executor import KERNELS
from gradc.gradcheck import GradcheckError, check_op, check_program
from gradcheck_cases import Case, all_cases, refused

CASES = all_cases()
REFUSED = refused()
# make test compares each var's gradient along 3 random directions (6 runs, whatever its size: a wrong element
# anywhere moves them); `make gradcheck` (GRADC_GRADCHECK=every-element) compares it at every element (2 runs each)
DIRECTIONS = 3
EVERY_ELEMENT = os.environ.get("GRADC_GRADCHECK") == "every-element"


def test_every_differentiable_op_has_a_case():
    """Or, for a grad op whose maker always refuses a second derivative, a case that refuses (test_refused)."""
    assert not {case.op for case in REFUSED} & {case.op for case in CASES}, "an op both checked and refused"
    covered = {case.op for case in CASES + REFUSED}
    missing = sorted(t for t, d in registry.OPS.items() if d.differentiable and t not in covered)
    assert not missing, f"differentiable ops without a gradcheck case: {missing}"


@pytest.mark.parametrize("case", REFUSED, ids=[c.id for c in REFUSED])
def test_refused(case: Case):
    """A grad op listed as refused does refuse, naming itself, rather than passing unchecked."""
    with pytest.raises(GradError, match=case.op):
        check_program(**case.program(), eps=case.eps, rtol=case.rtol, atol=case.atol)


def test_every_op_has_a_kernel():
    missing = sorted(t for t in registry.OPS if t not in KERNELS)
    assert not missing, f"registered ops without a kernel: {missing}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gradcheck(case: Case):
    directions = None if case.by_element or EVERY_ELEMENT else DIRECTIONS
    if case.program is not None:   # a whole program around the op, checked end to end
        assert check_program(**case.program(), eps=case.eps, rtol=case.rtol, atol=case.atol, directions=directions)
        return
    grads = check_op(case.op, case.inputs, case.attrs, outputs=case.outputs, wrt=case.wrt,
                     eps=case.eps, rtol=case.rtol, atol=case.atol, directions=directions)
    assert grads, f"{case.op}: no input was checked"


def test_a_broken_grad_kernel_is_caught():
    """The check can fail: a relu_grad that forgets the mask is reported with the offending var."""
    correct = KERNELS["relu_grad"]
    KERNELS["relu_grad"] = lambda k: {"X@GRAD": k.x("Out@GRAD")}
    try:
        with pytest.raises(GradcheckError, match="(?s)relu: gradient mismatch.*X0"):
            check_op("relu", {"X": np.random.default_rng(0).standard_normal((3, 4))})
    finally:
        KERNELS["relu_grad"] = correct


def test_a_broken_grad_maker_is_caught():
    """A maker that wires the wrong forward var (X instead of Y) is caught."""
    opdef = registry.get("elementwise_mul")
    correct = opdef.grad

    def swapped(g):
        return [g.op("elementwise_mul_grad", {"X": g.I("Y"), "Y": g.I("X"), "Out@GRAD": g.OG("Out")},
                     {"X@GRAD": g.IG("X"), "Y@GRAD": g.IG("Y")}, forward_attrs=True)]

    opdef.grad = swapped
    try:
        rng = np.random.default_rng(0)
        with pytest.raises(GradcheckError, match="mismatch"):
            check_op("elementwise_mul", {"X": rng.standard_normal((2, 3)), "Y": rng.standard_normal((2, 3))})
    finally:
        opdef.grad = correct



def test_a_nan_gradient_is_a_mismatch():
    """NaN never passes as agreement: a grad kernel that returns NaN is reported."""
    correct = KERNELS["tanh_grad"]
    KERNELS["tanh_grad"] = lambda k: {"X@GRAD": k.x("Out@GRAD") * np.nan}
    try:
        with pytest.raises(GradcheckError, match="tanh: gradient mismatch"):
            check_op("tanh", {"X": np.random.default_rng(0).standard_normal((2, 3))})
    finally:
        KERNELS["tanh_grad"] = correct

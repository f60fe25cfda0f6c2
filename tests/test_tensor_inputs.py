"""Tensor inputs that override attributes, beyond tests/test_optional_inputs.py: for every case of the shape,
index and tensor-creating families (tests/slot_cases/shape.py, select_creation.py), the slot decides the result
(without it the op gives another shape or other values), and shape inference agrees with what the kernel
produces (a dim a tensor decides at run time is inferred unknown, never wrong)."""

import numpy as np
import pytest

from gradc import registry
from slot_cases import select_creation, shape
from test_optional_inputs import _run
from test_shape_ops import run

CASES = shape.CASES + select_creation.CASES
IDS = [c.id for c in CASES]
NOT_READ = {"assign.X", "assign_value.ValuesTensor"}   # no attribute to override (assign) or Paddle ignores it


def _differs(without: dict, expected: dict) -> bool:
    for slot, want in expected.items():
        got = without[slot] if isinstance(want, list) else [without[slot]]
        for a, b in zip(got, want if isinstance(want, list) else [want]):
            if np.shape(a) != np.shape(b) or not np.allclose(a, b):
                return True
    return False


@pytest.mark.parametrize("case", [c for c in CASES if c.id not in NOT_READ], ids=[i for i in IDS if i not in NOT_READ])
def test_without_the_slot_the_attribute_gives_another_result(case):
    try:
        without = _run(case, with_slot=False)
    except Exception:  # noqa: BLE001 - the attribute alone is invalid here (a ragged split): also another result
        return
    assert _differs(without, case.expected), f"{case.id}: the case cannot tell whether the slot is read"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_inference_agrees_with_the_kernel(case):
    """test_shape_ops.run declares every output from the op's inference and checks the kernel's values fit."""
    outputs = run(case.op, case.inputs, case.attrs)
    for slot, expected in case.expected.items():
        got = outputs[slot] if isinstance(expected, list) else [outputs[slot]]
        for a, b in zip(got, expected if isinstance(expected, list) else [expected]):
            np.testing.assert_allclose(a, b, err_msg=case.id)


def test_assign_without_x_leaves_out_alone():
    """Paddle's assign with an empty X writes nothing; gradc's kernel returns no Out either."""
    from gradc.executor.kernels import KERNELS

    class NoX:
        def optional(self, slot):
            return None

    assert KERNELS["assign"](NoX()) == {}
    assert registry.get("assign").slots["X"].dispensable

"""The optimizer ops' kernels beyond the fixtures: the master weight (multi_precision) gets the update."""

import numpy as np
import pytest

import gradc
from gradc.ir import to_var_type
from slot_cases import all_cases
from slot_cases.optimizer import MASTER_OUT

MASTER_CASES = [c for c in all_cases() if c.slot in ("MasterParam", "master_param")]


def run_op(op_type: str, inputs: dict, attrs: dict, fetch_slot: str, count: int) -> list:
    program = gradc.Program()
    block = program.global_block
    feed, names = {}, {}
    for slot, value in inputs.items():
        arrays = value if isinstance(value, list) else [value]
        names[slot] = [f"{slot}{i}" for i in range(len(arrays))]
        for name, array in zip(names[slot], arrays):
            block.create_var(name, list(np.shape(array)), to_var_type(np.asarray(array).dtype))
            feed[name] = array
    outs = [f"out{i}" for i in range(count)]
    for name in outs:
        block.create_var(name, None, None)
    block.append_op(op_type, names, {fetch_slot: outs}, attrs)
    return gradc.Executor().run(program, feed, outs, gradc.Scope())


@pytest.mark.parametrize("case", MASTER_CASES, ids=[c.op for c in MASTER_CASES])
def test_the_master_weight_gets_the_update(case):
    slot, expected = MASTER_OUT[case.op]
    values = expected if isinstance(expected, list) else [expected]
    got = run_op(case.op, case.inputs, case.attrs, slot, len(values))
    for actual, want in zip(got, values):
        assert actual.dtype == np.float32
        np.testing.assert_allclose(actual, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("max_norm", [1.0, 100.0])
def test_clip_by_norm_on_the_way_to_a_loss_has_its_gradient(max_norm):
    """Paddle has no clip_by_norm gradient and its append_backward silently stops there; gradc differentiates
    Out = X c / max(||X||, c): dX = s dOut - [||X|| > c] c / ||X||^3 (X . dOut) X, s = c / max(||X||, c)."""
    program = gradc.Program()
    block = program.global_block
    block.create_var("w", [2, 3], gradc.VarType.FP64, is_parameter=True, persistable=True)
    block.create_var("c", [2, 3], gradc.VarType.FP64)
    block.create_var("loss", [], gradc.VarType.FP64)
    block.append_op("clip_by_norm", {"X": ["w"]}, {"Out": ["c"]}, {"max_norm": max_norm})
    block.append_op("mean", {"X": ["c"]}, {"Out": ["loss"]})
    gradc.append_backward(program, "loss")
    w = np.arange(1.0, 7.0).reshape(2, 3)
    scope = gradc.Scope()
    scope["w"] = w
    (grad,) = gradc.Executor().run(program, fetch_list=["w@GRAD"], scope=scope)
    norm, dout = np.linalg.norm(w), np.full_like(w, 1 / 6)
    scale = max_norm / max(norm, max_norm)
    want = scale * dout - (norm > max_norm) * max_norm / norm**3 * np.sum(w * dout) * w
    np.testing.assert_allclose(grad, want, rtol=1e-12)
    assert (norm > max_norm) == (max_norm == 1.0)

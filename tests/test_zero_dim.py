"""0-d tensors: each op's shape inference agrees with what its kernel computes, and an axis out of
range fails at run time with a message naming it, not a numpy error."""

import numpy as np
import pytest

from gradc import registry
from gradc.errors import GradcError
from gradc.executor import Executor, Scope
from gradc.ir import Program, to_var_type
from gradc.ops.infer import InferContext
from gradcheck_cases import Case
from gradcheck_cases.zero_dim import CASES, X0

NO_GRAD_CASES = [
    Case("arg_max", {"X": X0}, {"axis": -1}),
    Case("arg_min", {"X": X0}, {"axis": 0, "keepdims": True}),
    Case("reduce_sum", {"X": X0}, {"dim": [0], "keep_dim": True}),
    Case("cumsum", {"X": X0}, {"exclusive": True}),
]


def _program(case: Case):
    """The case's op with declared inputs and undeclared outputs, plus the feed."""
    program = Program()
    block = program.global_block
    feed, ins = {}, {}
    for slot, value in case.inputs.items():
        arrays = value if isinstance(value, list) else [value]
        ins[slot] = [f"{slot}{i}" for i in range(len(arrays))]
        for name, array in zip(ins[slot], arrays):
            feed[name] = np.asarray(array)
            block.create_var(name, list(feed[name].shape), to_var_type(feed[name].dtype))
    outs = {slot: [f"{slot}.out"] for slot in registry.get(case.op).outputs}
    for (name,) in outs.values():
        block.create_var(name, None, None)
    op = block.append_op(case.op, ins, outs, dict(case.attrs))
    return program, op, feed


@pytest.mark.parametrize("case", CASES + NO_GRAD_CASES, ids=lambda c: c.id)
def test_inferred_shapes_match_the_kernels(case):
    program, op, feed = _program(case)
    inferred = registry.get(case.op).infer(InferContext(op, program.global_block, 0))
    names = [name for slot in inferred for name in op.output(slot)]
    values = Executor().run(program, feed, names, Scope())
    for (slot, (shape, _)), value in zip(inferred.items(), values):
        assert list(np.shape(value)) == shape, slot


@pytest.mark.parametrize("op, attrs", [("reduce_sum", {"dim": [1]}), ("cumsum", {"axis": -2}),
                                       ("p_norm", {"axis": 1}), ("arg_max", {"axis": 2}),
                                       ("top_k_v2", {"axis": -2})])
def test_an_axis_past_a_0d_tensor_is_named_at_run_time(op, attrs):
    program, _, feed = _program(Case(op, {"X": X0}, attrs))
    with pytest.raises(GradcError, match=rf"\({op}\).*axis -?\d is out of range for rank 0"):
        Executor().run(program, feed, ["Out.out"], Scope())

"""float32 stays float32 through the shape, indexing, padding and rearranging ops: every gradcheck case of the
family, run in float32 forward and backward, gives float32 outputs and input grads."""

import numpy as np
import pytest

import gradc
from gradc import registry
from gradc.backward import append_grad_ops
from gradc.ir import VarType, to_var_type
from gradcheck_cases import select_rearrange, shape_ops

CASES = [c for c in shape_ops.SHAPE + shape_ops.PAD3D + shape_ops.INDEX + select_rearrange.CASES
         if c.program is None]


def _float32(value):
    value = np.asarray(value)
    return value.astype(np.float32) if value.dtype == np.float64 else value


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_float32_in_float32_out(case):
    program = gradc.Program()
    block = program.global_block
    opdef = registry.get(case.op)
    feed, slots = {}, {}
    for slot, value in case.inputs.items():
        arrays = value if isinstance(value, list) else [value]
        slots[slot] = [f"{slot}{i}" for i in range(len(arrays))]
        for name, array in zip(slots[slot], arrays):
            feed[name] = _float32(array)
            block.create_var(name, list(feed[name].shape), to_var_type(feed[name].dtype))
    outputs = {slot: [f"{slot}{i}.out" for i in range((case.outputs or {}).get(slot, 1))]
               for slot in opdef.outputs if case.outputs is None or slot in case.outputs}
    for names in outputs.values():
        for name in names:
            block.create_var(name, None, None)
    block.append_op(case.op, slots, outputs, dict(case.attrs))
    forward = dict(zip([n for ns in outputs.values() for n in ns],
                       gradc.Executor().run(program, feed, [n for ns in outputs.values() for n in ns], gradc.Scope())))
    floats = [n for slot, ns in outputs.items() if slot not in opdef.no_grad_outputs for n in ns
              if forward[n].dtype.kind == "f"]
    assert all(forward[n].dtype == np.float32 for n in floats), {n: forward[n].dtype for n in floats}
    for name in floats:
        block.var(name).shape, block.var(name).dtype = list(forward[name].shape), VarType.FP32
    got = append_grad_ops(program, floats)
    grads = [n + "@GRAD" for slot, ns in slots.items() if slot not in opdef.no_grad_inputs for n in ns
             if n in got and feed[n].dtype == np.float32]
    seeds = {n + "@GRAD": np.ones(forward[n].shape, np.float32) for n in floats}
    values = gradc.Executor().run(program, {**feed, **seeds}, grads, gradc.Scope())
    assert all(v.dtype == np.float32 for v in values), dict(zip(grads, [v.dtype for v in values]))

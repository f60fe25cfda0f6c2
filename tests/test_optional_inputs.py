"""Every optional input slot gradc declares is honoured: feeding it gives the result Paddle's semantics
say (tests/slot_cases). Slots without a case yet are listed in optional_inputs_pending.txt; the walk fails
for a new slot without a case and for a listed one that has a case, so the list only shrinks."""

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc import registry
from gradc.executor import KERNELS
from gradc.executor.selected_rows import as_dense
from gradc.executor.sparse_value import SparseCoo
from gradc.executor.tensor_array import TensorArray
from gradc.ir import VarType, to_var_type
from slot_cases import SlotCase, all_cases

CASES = all_cases()
PENDING_FILE = DATA / "optional_inputs_pending.txt"


def _pending() -> set[str]:
    return {line.split()[0] for line in PENDING_FILE.read_text().splitlines() if line and not line.startswith("#")}


def test_every_optional_input_has_a_case():
    slots = {f"{t}.{s}" for t, d in registry.OPS.items() if t in KERNELS and not d.grad_op_of
             for s in d.inputs if d.slots[s].dispensable}
    covered, pending = {c.id for c in CASES}, _pending()
    missing, stale = sorted(slots - covered - pending), sorted(pending & covered)
    assert not missing, f"optional inputs without a case: {missing}"
    assert not stale, f"have a case now, remove from {PENDING_FILE.name}: {stale}"


def _coo_input(block, feed: dict, name: str, value: SparseCoo) -> None:
    """A COO tensor ``name`` made of fed values and indices (a SPARSE_COO var cannot be fed)."""
    for part in ("values", "indices"):
        array = getattr(value, part)
        block.create_var(f"{name}.{part}", list(array.shape), to_var_type(array.dtype))
        feed[f"{name}.{part}"] = array
    block.create_var(name, list(value.shape), to_var_type(value.dtype), type=VarType.SPARSE_COO)
    block.append_op("sparse_sparse_coo_tensor", {"values": [f"{name}.values"], "indices": [f"{name}.indices"]},
                    {"out": [name]}, {"shape": list(value.shape)})


def _run(case: SlotCase, with_slot: bool) -> dict:
    program = gradc.Program()
    block = program.global_block
    opdef = registry.get(case.op)
    inputs, feed, scope = {}, {}, gradc.Scope()
    for slot, value in case.inputs.items():
        if slot == case.slot and not with_slot:
            continue
        if isinstance(value, TensorArray):   # no feed: the array is put into the scope
            inputs[slot] = [slot]
            block.create_var(slot, None, None, type=VarType.DENSE_TENSOR_ARRAY)
            scope[slot] = value
            continue
        if isinstance(value, SparseCoo):
            inputs[slot] = [slot]
            _coo_input(block, feed, slot, value)
            continue
        arrays = value if isinstance(value, list) else [value]
        inputs[slot] = [f"{slot}{i}" for i in range(len(arrays))]
        for name, array in zip(inputs[slot], arrays):
            values = array.array if isinstance(array, gradc.LoDTensor) else np.asarray(array)
            block.create_var(name, list(values.shape), case.dtypes.get(slot, to_var_type(values.dtype)))
            feed[name] = array if isinstance(array, gradc.LoDTensor) else values   # a LoDTensor keeps its LoD
    outputs = {slot: [f"{slot}.out{i}" for i in range(len(v) if isinstance(v, list) else 1)]
               for slot, v in case.expected.items()}
    for names in outputs.values():
        for name in names:
            block.create_var(name, None, None)
    feed.update({outputs[slot][0]: value for slot, value in case.fed.items()})
    block.append_op(case.op, inputs, outputs, dict(case.attrs))
    fetch = [name for slot in opdef.outputs if slot in outputs for name in outputs[slot]]
    values = dict(zip(fetch, map(as_dense, gradc.Executor().run(program, feed, fetch, scope))))
    return {slot: [values[n] for n in names] if isinstance(case.expected[slot], list) else values[names[0]]
            for slot, names in outputs.items()}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_an_optional_input_is_honoured(case: SlotCase):
    got = _run(case, with_slot=True)
    for slot, expected in case.expected.items():
        np.testing.assert_allclose(got[slot], expected, rtol=1e-6, atol=1e-7, err_msg=f"{case.id} -> {slot}")
    if case.overrides:
        without = _run(case, with_slot=False)
        assert any(np.shape(without[slot]) != np.shape(got[slot]) or not np.allclose(without[slot], got[slot])
                   for slot in case.expected), \
            f"{case.id}: the result does not depend on the slot (the case cannot tell whether it is read)"

"""Forward ops of programs Paddle saved for inference, or with an older version, made ready for their grad ops as
Paddle 3 would need them: the extra outputs a saved inference program dropped are given back, and an int given
for a bool attribute (Paddle 1.x's is_test) becomes a bool, which Paddle's grad kernels require. A test-mode rnn
runs in training mode without dropout, which computes the same and writes the Reserve Paddle's rnn_grad reads; a
test-mode while runs in training mode, which keeps the step scopes while_grad reads."""

from __future__ import annotations

from typing import NamedTuple

from ..ir import EMPTY_VAR, AttrType, Block, OpDesc
from ..makers import GradOp
from ..ops.infer import InferContext


class _TypeNeeds(NamedTuple):
    opdef: object
    grad: object                   # the maker they were read from: one registered later reads its own
    extra_reads: tuple[str, ...]   # the extra output slots (OpDef slots marked "!") its default grad op reads
    bools: tuple[str, ...]         # its BOOLEAN attributes


_NEEDS: dict[str, _TypeNeeds] = {}   # op type -> what its grad op needs of the forward op

# test-mode ops whose Paddle grad kernel reads what only training mode writes (a test-mode while keeps no step
# scopes), and the attributes under which training mode computes what test mode does
_TRAINING_MODE = {"rnn": {"is_test": False, "dropout_prob": 0.0}, "while": {"is_test": False}}


def _type_needs(type: str, opdef) -> _TypeNeeds:
    needs = _NEEDS.get(type)
    if needs is None or needs.opdef is not opdef or needs.grad is not opdef.grad:
        uses = opdef.grad.uses if isinstance(opdef.grad, GradOp) else ()
        needs = _NEEDS[type] = _TypeNeeds(
            opdef, opdef.grad, tuple(s for s in uses if s in opdef.outputs and opdef.slots[s].extra),
            tuple(name for name, kind in opdef.attr_types.items() if kind == AttrType.BOOLEAN))
    return needs


def may_need_preparing(type: str, opdef) -> bool:
    """Whether prepare_forward may change an op of this type: most types never need it, and the backward, asking
    once a type, skips the call."""
    needs = _type_needs(type, opdef)
    return bool(needs.bools or needs.extra_reads) or type in _TRAINING_MODE


def prepare_forward(block: Block, idx: int, op: OpDesc, opdef) -> None:
    """Make the forward op ``op`` (block ``block``, index ``idx``) what its grad op reads."""
    needs = _type_needs(op.type, opdef)
    for name in needs.bools:
        if op.attr_types.get(name) == AttrType.INT:
            op.set_attr(name, bool(op.attrs[name]), AttrType.BOOLEAN)
    if op.attrs.get("is_test") and op.type in _TRAINING_MODE:
        for name, value in _TRAINING_MODE[op.type].items():
            op.set_attr(name, value)
    if needs.extra_reads:   # most types read none: no list to build
        missing = [slot for slot in needs.extra_reads if not op.outputs.get(slot)]
        if missing:
            _restore_outputs(block, idx, op, opdef, missing)


def _restore_outputs(block: Block, idx: int, op: OpDesc, opdef, slots: list[str]) -> None:
    """Paddle's save_inference_model drops extra outputs (XShape of transpose2 and squeeze2, dropout's Mask, ...),
    which fine-tuning such a file needs again: the forward kernel writes them, declared as inference says. (Other
    outputs are required.)"""
    try:
        inferred = opdef.infer(InferContext(op, block, idx))
    except Exception:  # noqa: BLE001 - shapes the rule cannot read: the vars are declared without them
        inferred = {}
    stem = next((name for args in op.outputs.values() for name in args if name != EMPTY_VAR), op.type)
    for slot in slots:
        name, count = f"{stem}.{slot.lower()}", 0
        while block.find_var(name) is not None:
            count += 1
            name = f"{stem}.{slot.lower()}_{count}"
        result = inferred.get(slot)
        shape, dtype = result if isinstance(result, tuple) else (None, None)
        block.create_var(name, shape, dtype if dtype is not None else _input_dtype(block, op))
        op.outputs[slot] = [name]


def _input_dtype(block: Block, op: OpDesc):
    """The dtype of the op's first declared input: Paddle's layers declare an extra output whose dtype inference
    leaves open (batch norm's ReserveSpace) with it, and a PIR file needs one."""
    for name in op.input_names():
        var = block.find_var(name)
        if var is not None and var.dtype is not None:
            return var.dtype
    return None

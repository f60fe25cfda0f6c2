"""Which backward vars hold a SelectedRows (a sparse gradient), as Paddle's var-type inference decides: the
table gradient of a lookup, nce or hierarchical_sigmoid with is_sparse, and a sum whose addends are all
SelectedRows."""

from __future__ import annotations

from ..ir import Block, OpDesc, VarType

# op -> its output slot that is sparse when the op has is_sparse
SPARSE_TABLE_GRADS = {"lookup_table_v2_grad": "W@GRAD", "lookup_table_grad": "W@GRAD", "nce_grad": "Weight@GRAD",
                      "hierarchical_sigmoid_grad": "W@GRAD"}


def mark_sparse_grads(block: Block, ops: list[OpDesc]) -> None:
    """Declare SELECTED_ROWS the vars the ``ops`` (in order) write sparse."""
    types = {op.type for op in ops}   # most backwards have no op that may write one: no test per op
    if types.isdisjoint(SPARSE_TABLE_GRADS) and "sum" not in types:
        return
    for op in ops:
        if op.type in SPARSE_TABLE_GRADS and op.attrs.get("is_sparse"):
            names = op.outputs.get(SPARSE_TABLE_GRADS[op.type], [])
        elif op.type == "sum" and all(_is_sparse(block, name) for name in op.inputs.get("X", ["?"])):
            names = op.outputs.get("Out", [])
        else:
            continue
        for name in names:
            var = block.find_var(name)
            if var is not None:
                var.type = VarType.SELECTED_ROWS


def _is_sparse(block: Block, name: str) -> bool:
    var = block.find_var(name)
    return var is not None and var.type == VarType.SELECTED_ROWS

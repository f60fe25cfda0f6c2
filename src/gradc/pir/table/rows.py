"""TABLE: PIR op name -> Row, assembled from the row modules."""

from __future__ import annotations

from .. import control_flow, rnn
from . import math_rows, nn_rows, plumbing, shape_rows, special

SPECIAL = [
    special("builtin.parameter", plumbing.parameter),
    special("pd_op.data", plumbing.data),
    special("pd_op.fetch", plumbing.fetch, "fetch"),
    special("builtin.combine", plumbing.combine),
    special("builtin.split", plumbing.split),
    special("pd_op.coalesce_tensor", plumbing.coalesce),
    special("pd_op.full", plumbing.full, "fill_constant"),
    special("pd_op.full_int_array", plumbing.full_int_array),
    special("cf.yield", plumbing.unexpected_yield),
    special("pd_op.if", control_flow.translate_if),
    special("pd_op.while", control_flow.translate_while),
    special("pd_op.rnn", rnn.translate_rnn),
]


def _table(rows) -> dict:
    table = {}
    for entry in rows:
        if entry.pir in table:
            raise ValueError(f"two rows for {entry.pir}")
        table[entry.pir] = entry
    return table


TABLE = _table(math_rows.ROWS + shape_rows.ROWS + nn_rows.ROWS + SPECIAL)

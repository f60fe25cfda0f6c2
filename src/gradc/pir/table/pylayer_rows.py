"""Rows: paddle.static.nn.static_pylayer's pd_op.pylayer (gradc.ops.pylayer), a region op translated by code
(gradc.pir.control_flow.translate_pylayer), in its forward and in Paddle's PIR backward alike."""

from __future__ import annotations

from .. import control_flow
from . import special

ROWS = [
    special("pd_op.pylayer", control_flow.translate_pylayer, None, None),
]

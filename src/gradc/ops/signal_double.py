"""Second derivatives of gradc.ops.signal's grad ops. frame_grad is overlap_add of dOut and overlap_add_grad is frame
of dOut: linear in dOut and flat in X, so d/d(dOut) is the forward op applied to ddX (composite.linear)."""

from __future__ import annotations

from ..registry import defgrad
from . import signal  # noqa: F401  (registers frame_grad and overlap_add_grad)
from .composite import linear

for _name in ("frame", "overlap_add"):
    defgrad(f"{_name}_grad", grad=linear(_name), no_grad_inputs=["X"])

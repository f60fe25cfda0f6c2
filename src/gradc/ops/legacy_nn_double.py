"""Second derivatives of gradc.ops.legacy_nn's grad ops, composite (gradc.ops.composite) so third derivatives
follow. The v1 resizes' grads are their adjoints (linear in dOut, flat in all else: d/d(dOut) is the resize of
ddX); hinge_loss_grad is piecewise linear in Logits; l1_norm_grad spreads the 0-d dOut over sign(X)."""

from __future__ import annotations

from ..registry import defgrad
from . import legacy_nn
from .activation_double import unary_double
from .composite import linear
from .interp import SIZE_SLOTS
from .loss_double import reducing

for _name in legacy_nn.V1_RESIZES:
    defgrad(f"{_name}_grad", grad=linear(_name, passed=SIZE_SLOTS), no_grad_inputs=["X", *SIZE_SLOTS])
unary_double("hinge_loss_grad", flat=("Logits", "Labels"), x="Logits", out="Loss")
defgrad("l1_norm_grad", grad=reducing("Out@GRAD", lambda g, rank: None), no_grad_inputs=["X"])

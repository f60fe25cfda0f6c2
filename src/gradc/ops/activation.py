"""Activations. Grads that only need the output read Out, so X can be freed early."""

from __future__ import annotations

from ..registry import defop, grad_op
from .infer import same_as


def activation(name: str, uses: str = "X", attrs: dict | None = None) -> None:
    defop(name, ["X"], attrs=attrs, infer=same_as("X"), grad=grad_op(uses))


activation("relu", uses="Out")
activation("sigmoid", uses="Out")
activation("tanh", uses="Out")
activation("softmax", uses="Out", attrs={"axis": -1})

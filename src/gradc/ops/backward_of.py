"""Paddle's higher-order grad ops as the backward of the op they differentiate: a grad op H of an op G gives the grads
of G's inputs at the grads of G's outputs (H's cotangents). Where G's outputs have a formula written with
differentiable ops (G's own composite maker's, or a second-derivative op's), H's expansion is that formula and its
backward (``differentiate``), so H needs no formula of its own and the next order follows.
"""

from __future__ import annotations

from ..errors import GradError
from .composite import differentiate, first


class AsDifferentiated:
    """H's context read as G's, for G's formula: G's input slots from H's (``inputs``: G slot -> H slot), and each
    output of G (``outputs``: G slot -> H's cotangent slot) present where H is given its grad, shaped like it."""

    def __init__(self, g, inputs: dict[str, str], outputs: dict[str, str]):
        self.g, self.inputs, self.outputs = g, inputs, outputs

    def I(self, slot: str) -> list[str]:  # noqa: E743  (GradContext's name)
        return self.g.I(self.inputs[slot]) if slot in self.inputs else []

    def O(self, slot: str) -> list[str]:  # noqa: E743
        return self.g.I(self.outputs[slot]) if slot in self.outputs else []

    def __getattr__(self, name: str):
        return getattr(self.g, name)


def backward_of(formula, cotangents: dict[str, str], wrt: dict[str, str]):
    """The expansion (``expand(f, g)``) of H: ``formula(f, g)`` -> {key: var} writes G's outputs; H's ``cotangents``
    ({key: H's input slot}, any absent) seed their backward to H's inputs ``wrt`` ({H input slot: H output slot}),
    zeros where it does not reach."""

    def expand(f, g):
        start = len(f.ops)
        outputs = formula(f, g)
        seeds = {outputs[key]: first(g.I(slot)) for key, slot in cotangents.items()
                 if key in outputs and g.I(slot)}
        given = {slot: out for slot, out in wrt.items() if g.I(slot)}   # an absent one has no grad
        values = {first(g.I(slot)): out for slot, out in given.items()}
        if len(values) < len(given):   # the backward would sum the two slots' grads, which the op gives apart
            shared = [slot for slot in given if [first(g.I(other)) for other in given].count(first(g.I(slot))) > 1]
            raise GradError(f"op '{g.fwd.type}': slots {', '.join(shared)} hold one var "
                            f"'{first(g.I(shared[0]))}'; the op's grads of them cannot be told apart")
        grads = {var: g.tmp(var) for var in values}
        f.ops += differentiate(g, f.ops[start:], seeds, grads)
        written = {name for op in f.ops[start:] for name in op.output_names()}
        return {out: grads[var] if grads[var] in written else f.fill_like(var, 0.0) for var, out in values.items()}

    return expand

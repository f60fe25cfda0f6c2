"""Weight decay as Paddle's regularizers write it: the decay term of a parameter is added to its gradient in
place, ``sum([p@GRAD, term]) -> p@GRAD``, before the update (and after clipping). Momentum folds L2Decay into
its op instead (its regularization_method attribute); AdamW and Lamb have decoupled decays of their own."""

from __future__ import annotations

from ..ir import VarType
from .emit import Emitter


class WeightDecay:
    def __init__(self, coeff: float = 0.0):
        self.coeff = float(coeff)

    def term(self, emit: Emitter, param: str) -> str:
        """Append the ops computing the decay term of ``param``; return its var."""
        raise NotImplementedError

    def append(self, emit: Emitter, param: str, grad: str) -> str:
        """grad += term(param), in place on the gradient var (as Paddle does); returns the gradient var. A sparse
        gradient (SELECTED_ROWS) cannot hold the sum: it goes to a new tensor ``<grad>@NEWGRAD@``, as in Paddle."""
        out = grad
        if emit.block.var(grad).type == VarType.SELECTED_ROWS:
            source = emit.block.var(param)
            out = grad + "@NEWGRAD@"
            emit.block.create_var(out, source.shape, source.dtype)
        emit.op("sum", {"X": [grad, self.term(emit, param)]}, {"Out": [out]})
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.coeff})"


class L2Decay(WeightDecay):
    """coeff * param (the gradient of coeff / 2 * |param|^2)."""

    def term(self, emit, param):
        out = emit.like("_generated_var_{}", param)
        emit.scale(param, out, self.coeff)
        return out


class L1Decay(WeightDecay):
    """coeff * sign(param)."""

    def term(self, emit, param):
        sign = emit.like("_generated_var_{}", param)
        emit.op("sign", {"X": [param]}, {"Out": [sign]})
        out = emit.like("_generated_var_{}", param)
        emit.scale(sign, out, self.coeff)
        return out


def as_regularizer(weight_decay) -> WeightDecay | None:
    """Paddle's weight_decay argument: a number means L2Decay(number)."""
    if weight_decay is None or isinstance(weight_decay, WeightDecay):
        return weight_decay
    return L2Decay(float(weight_decay))

"""Cases for grad ops that have a grad maker of their own (second-order gradients). A grad op's inputs
are its forward values and output grads; the check differentiates the grad op itself."""

import numpy as np

from . import Case, rng

r = rng(11)


def away_from_zero(*shape):
    x = r.standard_normal(shape)
    return np.where(np.abs(x) < 0.1, 0.2 * np.sign(x) + 0.1, x)


CASES = [
    # relu_grad(Out, dOut) = dOut * (Out > 0): linear in dOut, flat in Out
    Case("relu_grad", {"Out": away_from_zero(3, 4), "Out@GRAD": r.standard_normal((3, 4))}),
    Case("relu_grad", {"Out": away_from_zero(2, 3, 2), "Out@GRAD": r.standard_normal((2, 3, 2))}),
    # relu_grad_grad(Out, grad_x@GRAD) = grad_x@GRAD * (Out > 0): the same mask again (third derivatives)
    Case("relu_grad_grad", {"Out": away_from_zero(3, 4), "grad_x@GRAD": r.standard_normal((3, 4))}),
]

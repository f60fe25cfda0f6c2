"""Fifth derivatives of cumprod and reduce_prod of a real X along dims of unknown size: the second is <op>_grad_grad
along one direction, and every later one that op along one more (gradc.ops.directional_double); zeros in X, where a
product's grad must not divide."""

from __future__ import annotations

from . import Case, rng
from .lod_rnn import third_order
from .second_order import second_order


def fifth_order(op: str, inputs: dict, attrs: dict) -> Case:
    """``op``'s fifth derivative with X's dim 0 of unknown size, the grads of every order weighted in X's shape."""
    case = second_order(op, inputs, attrs, unknown={"X": [0]})
    for order in (3, 4, 5):
        case = third_order(case, f"{op}_grad_grad", True, by_element=True, order=order)
    return Case(f"{op}_grad_grad", {}, attrs, program=case.program, rtol=1e-4, atol=1e-6, by_element=True)


def with_zeros(seed: int, n: int):
    """X [n, 2]: two zeros in a row along dim 0 in one column, none in the other (n >= 5, so that the products, of
    degree up to n, have a fourth derivative along three directions and the fifth one's grad: nonzero terms)."""
    x = rng(seed).normal(size=(n, 2))
    x[1:3, 0] = 0.0
    return x


CASES = [fifth_order("cumprod", {"X": with_zeros(5, 6)}, {"dim": 0, "exclusive": True}),
         fifth_order("reduce_prod", {"X": with_zeros(6, 5)}, {"dim": [0], "keep_dim": True})]

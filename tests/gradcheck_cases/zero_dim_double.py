"""Second derivatives of zero_dim.py's cases: a grad op's maker that reads an axis or a reduced dim takes the 0-d
tensor too (reduce_prod_grad's and top_k_v2_grad's divided by its rank of 0)."""

from gradc import registry

from .second_order import second_order
from .zero_dim import CASES as FIRST_ORDER

CASES = [second_order(case.op, case.inputs, case.attrs, counts=case.outputs)
         for case in FIRST_ORDER if hasattr(registry.get(case.op).grad, "type_for")]

"""Cases for print (gradc.ops.debug), which passes its input through both ways, printing it in the phases its
print_phase names: each phase, and first_n 0 (printing nothing). check_numerics has no gradient."""

from . import Case, rng
from .second_order import second_order

r = rng(53)
X = r.standard_normal((2, 3))

CASES = [
    *(Case("print", {"In": X}, {"print_phase": phase, "summarize": 2}) for phase in ("FORWARD", "BACKWARD", "BOTH")),
    Case("print", {"In": X}, {"first_n": 0, "message": "never shown"}),
    second_order("print", {"In": X}, {"print_phase": "BACKWARD"}, grad_type="print"),
]

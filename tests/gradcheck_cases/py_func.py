"""Cases for py_func (gradc.ops.py_func): functions registered under ids of this module's own (900 and up, clear of
the small ids a Paddle program numbers from 0). Two inputs and two outputs, its backward reading all of X, Out and
Out@GRAD; and one whose backward skips its input (backward_skip_vars), reading only the output and its grad."""

import numpy as np

from gradc import register_py_func

from . import Case, rng

r = rng(61)
A, B = r.standard_normal((2, 3)), r.standard_normal((2, 3))
PRODUCT, PRODUCT_GRAD, TANH, TANH_GRAD = 900, 901, 902, 903

register_py_func(PRODUCT, lambda a, b: (a * b, np.sin(a) + b))
register_py_func(PRODUCT_GRAD, lambda a, b, prod, total, dprod, dtotal: (dprod * b + dtotal * np.cos(a),
                                                                         dprod * a + dtotal))
register_py_func(TANH, np.tanh)
register_py_func(TANH_GRAD, lambda y, dy: dy * (1 - y * y))

CASES = [
    Case("py_func", {"X": [A, B]}, {"forward_callable_id": PRODUCT, "backward_callable_id": PRODUCT_GRAD},
         outputs={"Out": 2}),
    Case("py_func", {"X": [A]}, {"forward_callable_id": TANH, "backward_callable_id": TANH_GRAD,
                                 "backward_skip_vars": ["X0"]}),
]

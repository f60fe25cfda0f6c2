"""Second derivative of gradc.ops.tensor_fill's fill_diagonal_grad: dOut with the filled positions zeroed is
fill_diagonal's linear part (value 0), its own adjoint, so d/d(dOut) is fill_diagonal of ddX with value 0
(``linear``). The zero grads of fill_any, gaussian_inplace and uniform_random_inplace get theirs beside them."""

from __future__ import annotations

from ..registry import defgrad
from . import tensor_fill  # noqa: F401  (registers the grad op given a maker here)
from .composite import linear

defgrad("fill_diagonal_grad", grad=linear("fill_diagonal", fixed={"value": 0.0}))

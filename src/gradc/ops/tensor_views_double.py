"""Second derivatives of gradc.ops.tensor_views' grad ops: view_shape_grad and as_strided_grad put dOut back
where the forward read it, the adjoints of view_shape and as_strided, so d/d(dOut) is the forward op on ddInput
(``linear``); they read input for its shape only."""

from __future__ import annotations

from ..registry import defgrad
from . import tensor_views  # noqa: F401  (registers the grad ops given makers here)
from .composite import linear

defgrad("view_shape_grad", grad=linear("view_shape", x="input", out="out"), no_grad_inputs=["input"])
defgrad("as_strided_grad", grad=linear("as_strided", x="input", out="out"), no_grad_inputs=["input"])

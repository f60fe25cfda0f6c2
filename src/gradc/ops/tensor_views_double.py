"""Second derivatives of gradc.ops.tensor_views' grad ops: view_shape_grad, as_strided_grad and
index_select_strided_grad put dOut back where the forward read it, the adjoints of their forward ops, so
d/d(dOut) is the forward op on ddInput (``linear``); they read the input for its shape only."""

from __future__ import annotations

from ..registry import defgrad
from . import tensor_views  # noqa: F401  (registers the grad ops given makers here)
from .composite import linear

defgrad("view_shape_grad", grad=linear("view_shape", x="input", out="out"), no_grad_inputs=["input"])
defgrad("as_strided_grad", grad=linear("as_strided", x="input", out="out"), no_grad_inputs=["input"])
defgrad("index_select_strided_grad", grad=linear("index_select_strided", x="x", out="out"), no_grad_inputs=["x"])

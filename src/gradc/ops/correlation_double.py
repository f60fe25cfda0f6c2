"""Second derivative of correlation_grad: correlation is linear in each input (``bilinear``)."""

from __future__ import annotations

from ..registry import defgrad
from . import correlation  # noqa: F401  (registers correlation_grad)
from .composite import bilinear

defgrad("correlation_grad", grad=bilinear("correlation", "Input1", "Input2", "Output"))

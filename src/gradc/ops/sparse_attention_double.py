"""Second derivative of gradc.ops.sparse_attention: sparse_attention_grad attends over a CSR layout known only at run
time (Offset, Columns) that plain ops of known shapes cannot gather, so gradc refuses it by name."""

from __future__ import annotations

from ..errors import GradError
from ..registry import defgrad
from . import sparse_attention  # noqa: F401  (register the grad op given a maker here)


def _refused(g):
    raise GradError(f"{g.fwd.type}: no second derivative in gradc (its CSR layout is a run-time value that plain ops "
                    "of known shapes cannot gather)")


defgrad("sparse_attention_grad", grad=_refused)

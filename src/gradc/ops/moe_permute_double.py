"""Second derivatives of gradc.ops.moe_permute: moe_unpermute_grad (gradc's own grad op) is refused by name;
moe_permute's and batched_gemm's grads are moe_unpermute and batched_gemm, differentiated as themselves."""

from __future__ import annotations

from ..errors import GradError
from ..registry import defgrad


def _refused(g):
    raise GradError(f"{g.fwd.type}: gradc does not differentiate it (a second derivative of moe_unpermute): no maker "
                    "of second derivatives of the unpermutation yet")


defgrad("moe_unpermute_grad", grad=_refused)

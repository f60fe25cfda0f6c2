"""Second derivatives of gradc.ops.lod_rnn's grad ops. gradc differentiates a recurrence twice by unrolling it into
differentiable ops (gradc.ops.rnn_double), which needs its steps at compile time; lstm_grad and gru_grad walk the
sequences of Input's LoD, known only when the program runs, so their makers say so (a GradError) instead of
differentiating them."""

from __future__ import annotations

from ..errors import GradError
from ..registry import defgrad
from . import lod_rnn  # noqa: F401  (registers the grad ops)


def _over_lod(g):
    raise GradError(f"{g.fwd.type}: gradc does not differentiate the {g.fwd.type.removesuffix('_grad')} op twice: "
                    f"its steps follow the LoD of Input '{g.I('Input')[0]}', known only at run time, so they cannot be "
                    f"unrolled into differentiable ops")


defgrad("lstm_grad", grad=_over_lod)
defgrad("gru_grad", grad=_over_lod)

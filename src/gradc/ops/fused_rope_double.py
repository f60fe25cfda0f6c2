"""Second derivatives of gradc.ops.fused_rope: fused_rotary_position_embedding_grad is linear in the outs' grads
(the rotation's transpose), so its gradient at the grads of q@GRAD, k@GRAD, v@GRAD is the forward rotation of them,
one fused_rotary_position_embedding each (with the same sin, cos and position_ids), and so on to any order."""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from .composite import first
from .fused_rope import PAIRS, TABLES, _grad_infer


def _rotate_again(g):
    ops = []
    tables = {slot: g.I(slot) for slot in TABLES if first(g.I(slot))}
    for slot, out in PAIRS:
        wanted, seed = first(g.IG(f"{out}@GRAD")), first(g.OG(f"{slot}@GRAD"))
        if wanted in (None, EMPTY_VAR) or seed in (None, EMPTY_VAR):
            continue
        ops.append(g.op("fused_rotary_position_embedding", {"q": [seed], **tables}, {"out_q": [wanted]},
                        {name: g.attr(name) for name in ("use_neox_rotary_style", "time_major", "rotary_emb_base")}))
    return ops


defgrad("fused_rotary_position_embedding_grad", grad=_rotate_again, infer=_grad_infer, no_grad_inputs=TABLES)

"""Second derivatives of gradc.ops.lod_rnn's grad ops.

- gru_unit_grad: composite (gradc.ops.composite), so third derivatives follow. As rnn_grad's (gradc.ops.rnn_double),
  the gru_unit step is written again with differentiable ops, its backward seeded with Hidden@GRAD recomputes
  gru_unit_grad's outputs, and both are differentiated again. The recomputation reads Input, HiddenPrev, Weight and
  Bias, not Gate or ResetHiddenPrev (which the grad kernel does not read either: they get no gradient).
- lstm_grad, gru_grad: gradc differentiates a recurrence twice by unrolling it into differentiable ops, which needs
  its steps at compile time; these walk the sequences of Input's LoD, known only when the program runs, so their
  makers say so (a GradError) instead of differentiating them.
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import EMPTY_VAR
from ..makers import GradContext
from ..registry import defgrad
from .composite import Formula, differentiate, expansion, first
from .lod_rnn import GRU_UNIT_ACTIVATIONS

GRU_UNIT_GRADS = (("Input@GRAD", "Input"), ("HiddenPrev@GRAD", "HiddenPrev"), ("Weight@GRAD", "Weight"),
                  ("Bias@GRAD", "Bias"))


def _activation(f: Formula, code: int, z: str) -> str:
    name = GRU_UNIT_ACTIVATIONS[code] if code in range(len(GRU_UNIT_ACTIVATIONS)) else None
    if name is None:
        raise GradError(f"gru_unit_grad: activation code {code} is not one of 0, 1, 2, 3")
    return z if name == "identity" else f.unary(name, z)


def _matrix(f: Formula, flat: str, start: int, rows: int, cols: int) -> str:
    """Values ``start`` to ``start + rows * cols`` of a flat var, as a [rows, cols] matrix."""
    part = f.slice(flat, 0, start, start + rows * cols)
    return f.op("reshape2", {"X": part}, part, {"shape": [rows, cols]}, more={"XShape": f.xshape(part)},
                dims=lambda _: [rows, cols])


def _gru_unit_step(f: Formula, g: GradContext) -> str:
    """Hidden of the gru_unit op, from Input, HiddenPrev, Weight and Bias."""
    x, h_prev, w, bias = (first(g.I(slot)) for slot in ("Input", "HiddenPrev", "Weight", "Bias"))
    d = (g.shape(w) or [-1])[0]
    if d < 0:
        raise GradError(f"gru_unit_grad: the hidden size (dim 0 of Weight '{w}') must be known, got {g.shape(w)}")
    flat = f.op("reshape2", {"X": w}, w, {"shape": [3 * d * d]}, more={"XShape": f.xshape(w)},
                dims=lambda _: [3 * d * d])
    w_ur, w_c = _matrix(f, flat, 0, d, 2 * d), _matrix(f, flat, 2 * d * d, d, d)
    z = x if bias is None else f.add(x, bias, x)
    z_u, z_r, z_c = (f.slice(z, 1, k * d, (k + 1) * d) for k in range(3))
    recurrent = f.op("matmul_v2", {"X": h_prev, "Y": w_ur}, z, {"trans_x": False, "trans_y": False},
                     dims=lambda s: [s[0], 2 * d])
    gate = g.attr("gate_activation")
    u = _activation(f, gate, f.add(z_u, f.slice(recurrent, 1, 0, d), z_u))
    r = _activation(f, gate, f.add(z_r, f.slice(recurrent, 1, d, 2 * d), z_r))
    reset = f.mul(r, h_prev, h_prev)
    candidate = f.op("matmul_v2", {"X": reset, "Y": w_c}, reset, {"trans_x": False, "trans_y": False})
    c = _activation(f, g.attr("activation"), f.add(z_c, candidate, z_c))
    if g.attr("origin_mode"):   # c + u (h_prev - c)
        return f.add(c, f.mul(u, f.sub(h_prev, c, c), c), c)
    return f.add(h_prev, f.mul(u, f.sub(c, h_prev, c), c), c)   # h_prev + u (c - h_prev)


def _gru_unit_grads(f: Formula, g: GradContext) -> dict[str, str]:
    """{gru_unit_grad output slot: the var recomputing it}: the step's backward, seeded with Hidden@GRAD."""
    hidden = _gru_unit_step(f, g)
    targets, recomputed = {}, {}
    for grad_slot, slot in GRU_UNIT_GRADS:
        for var, name in zip(g.I(slot), g.O(grad_slot)):
            if name != EMPTY_VAR:
                targets[var] = recomputed[grad_slot] = g.tmp(var)
    f.ops.extend(differentiate(g, list(f.ops), {hidden: first(g.I("Hidden@GRAD"))}, targets))
    return recomputed


def _over_lod(g):
    raise GradError(f"{g.fwd.type}: gradc does not differentiate the {g.fwd.type.removesuffix('_grad')} op twice: "
                    f"its steps follow the LoD of Input '{g.I('Input')[0]}', known only at run time, so they cannot be "
                    f"unrolled into differentiable ops")


defgrad("gru_unit_grad", grad=expansion(_gru_unit_grads), no_grad_inputs=["Gate", "ResetHiddenPrev"])
defgrad("lstm_grad", grad=_over_lod)
defgrad("gru_grad", grad=_over_lod)

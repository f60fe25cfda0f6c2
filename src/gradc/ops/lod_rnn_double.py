"""Second derivatives of gradc.ops.lod_rnn's grad ops.

- gru_unit_grad: composite (gradc.ops.composite), so third derivatives follow. As rnn_grad's (gradc.ops.rnn_double),
  the gru_unit step is written again with differentiable ops, its backward seeded with Hidden@GRAD recomputes
  gru_unit_grad's outputs, and both are differentiated again. The recomputation reads Input, HiddenPrev, Weight and
  Bias, not Gate or ResetHiddenPrev (which the grad kernel does not read either: they get no gradient).
- lstm_grad, gru_grad: their steps follow the sequences of Input's LoD, known only when the program runs, so they
  cannot be unrolled into differentiable ops; their makers emit ops of their own, lstm_grad_grad and gru_grad_grad,
  the grad along directions of the params (gradc.ops.directional_double), whose kernels run the first-order
  kernels on duals nested once per direction (gradc.executor.kernels.lod_rnn_double), and whose makers emit them
  again with one more direction: every order. The grad ops recompute the forward from Input, H0, C0, Weight and
  Bias, so the saved Hidden, Cell and batch-layout outputs they also read are constants.
"""

from __future__ import annotations

from .. import registry
from ..errors import GradError
from ..ir import EMPTY_VAR, VarType
from ..makers import GradContext
from ..registry import defgrad, grads_like_inputs
from .composite import Formula, differentiate, expansion, first
from .directional_double import one_more_direction
from .lod_rnn import GRU_ATTRS, GRU_UNIT_ACTIVATIONS, LSTM_ATTRS

GRU_UNIT_GRADS = (("Input@GRAD", "Input"), ("HiddenPrev@GRAD", "HiddenPrev"), ("Weight@GRAD", "Weight"),
                  ("Bias@GRAD", "Bias"))


def _activation(f: Formula, code: int, z: str) -> str:
    name = GRU_UNIT_ACTIVATIONS[code] if code in range(len(GRU_UNIT_ACTIVATIONS)) else None
    if name is None:
        raise GradError(f"gru_unit_grad: activation code {code} is not one of 0, 1, 2, 3")
    return z if name == "identity" else f.unary(name, z)


def _parts(f: Formula, x: str, count: int, axis: int, size: int) -> list[str]:
    """``x`` split in ``count`` equal parts along ``axis`` (of ``size`` parts each, or -1 when known at run time)."""
    parts = [f.g.tmp(x, lambda s: [size if i == axis else n for i, n in enumerate(s)]) for _ in range(count)]
    f.emit("split", {"X": x}, {"Out": parts}, {"axis": axis, "num": count, "sections": []})
    return parts


def _rows_of(f: Formula, flat: str, d: int, w: str) -> str:
    """``flat`` reshaped to ``d`` rows (Weight's dim 0, read at run time when unknown)."""
    if d >= 0:
        return f.op("reshape2", {"X": flat}, flat, {"shape": [d, -1]}, more={"XShape": f.xshape(flat)},
                    dims=lambda s: [d, s[0] * s[1] // d if min(s) >= 0 else -1])
    dims = f.op("shape", {"Input": w}, w, dims=lambda _: [2], dtype=VarType.INT32)
    rest = f.op("fill_constant", {}, dims, {"shape": [1], "value": -1.0, "dtype": int(VarType.INT32)},
                dims=lambda _: [1])
    shape = f.op("concat", {"X": [f.slice(dims, 0, 0, 1), rest]}, dims, {"axis": 0})
    return f.op("reshape2", {"X": flat, "Shape": shape}, flat, {"shape": [-1, -1]},
                more={"XShape": f.xshape(flat)}, dims=lambda _: [-1, -1])


def _gru_unit_step(f: Formula, g: GradContext) -> str:
    """Hidden of the gru_unit op, from Input, HiddenPrev, Weight and Bias; the hidden size may be known at run time
    only (Weight [D, 3D] holds W_ur [D, 2D] and then W_c [D, D] in its memory)."""
    x, h_prev, w, bias = (first(g.I(slot)) for slot in ("Input", "HiddenPrev", "Weight", "Bias"))
    d = (g.shape(w) or [-1])[0]
    thirds = f.op("reshape2", {"X": w}, w, {"shape": [3, -1]}, more={"XShape": f.xshape(w)},
                  dims=lambda _: [3, d * d if d >= 0 else -1])
    w_ur, w_c = (f.g.tmp(thirds, lambda s, n=n: [n, s[1]]) for n in (2, 1))
    f.emit("split", {"X": thirds}, {"Out": [w_ur, w_c]}, {"axis": 0, "num": 0, "sections": [2, 1]})
    w_ur, w_c = _rows_of(f, w_ur, d, w), _rows_of(f, w_c, d, w)
    z = x if bias is None else f.add(x, bias, x)
    z_u, z_r, z_c = _parts(f, z, 3, 1, d)
    recurrent = f.op("matmul_v2", {"X": h_prev, "Y": w_ur}, z, {"trans_x": False, "trans_y": False},
                     dims=lambda s: [s[0], 2 * d if d >= 0 else -1])
    gate = g.attr("gate_activation")
    recurrent_u, recurrent_r = _parts(f, recurrent, 2, 1, d)
    u = _activation(f, gate, f.add(z_u, recurrent_u, z_u))
    r = _activation(f, gate, f.add(z_r, recurrent_r, z_r))
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


# the grad ops' differentiable inputs: the forward's (recomputed from) and the Hidden grad they are seeded with
LSTM_PARAMS = ("Input", "H0", "C0", "Weight", "Bias")
GRU_PARAMS = ("Input", "H0", "Weight", "Bias")


def _directional(forward: str, params: tuple[str, ...]):
    """The maker of <forward>_grad and <forward>_grad_grad: <forward>_grad_grad along one more direction of the
    params (gradc.ops.directional_double)."""
    return lambda g: one_more_direction(g, f"{forward}_grad_grad", params, ("Hidden@GRAD",))


def _grad_grad_op(forward: str, params: tuple[str, ...], attrs: dict) -> None:
    grad = registry.get(f"{forward}_grad")
    values = [*(f"{slot}?" if grad.slots[slot].dispensable else slot for slot in params), "Hidden@GRAD"]
    defgrad(f"{forward}_grad_grad", inputs=[*values, *(f"{slot}@GRAD@GRAD[]?" for slot in params)],
            outputs=[f"{slot}@GRAD?" for slot in (*params, "Hidden@GRAD")], attrs=attrs, infer=grads_like_inputs,
            grad=_directional(forward, params), of=f"{forward}_grad")
    defgrad(f"{forward}_grad", grad=_directional(forward, params), no_grad_inputs=[
        slot for slot in grad.inputs if slot not in (*params, "Hidden@GRAD")])


defgrad("gru_unit_grad", grad=expansion(_gru_unit_grads), no_grad_inputs=["Gate", "ResetHiddenPrev"])
_grad_grad_op("lstm", LSTM_PARAMS, LSTM_ATTRS)
_grad_grad_op("gru", GRU_PARAMS, GRU_ATTRS)

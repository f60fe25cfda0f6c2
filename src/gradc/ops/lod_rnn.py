"""Paddle 1.x/2.x's recurrent layers over LoD sequences (fluid.layers.dynamic_lstm, dynamic_gru, gru_unit): the ops
``lstm``, ``gru`` and ``gru_unit``. Input is already projected (x W_x, done by an fc before the op); the op adds the
bias and the recurrent projection. D is the hidden size.

- lstm: Input [rows, 4D], Weight [D, 4D], Bias [1, 4D] (the gate biases) or [1, 7D] with ``use_peepholes`` (then
  also the peephole weights w_ic, w_fc, w_oc). Gate order in Input, Weight and Bias: candidate, input, forget,
  output. Per step: cand = act_cand(z_c), i = act_gate(z_i + c_prev w_ic), f = act_gate(z_f + c_prev w_fc),
  c = cand i + c_prev f, o = act_gate(z_o + c w_oc), h = o act_cell(c). Hidden and Cell [rows, D].
- gru: Input [rows, 3D], Weight [D, 3D] read as Paddle stores it: its first 2 D^2 values are the [D, 2D] update and
  reset weights, the last D^2 the [D, D] candidate weight; Bias [1, 3D]. Gates u, r, c: u, r = act_gate(x_ur +
  h_prev W_ur), c = act(x_c + (r h_prev) W_c); h = (1 - u) h_prev + u c, or with ``origin_mode`` u h_prev + (1 - u) c.
- gru_unit: one such GRU step over a batch: HiddenPrev [N, D]; activations as ints (0 identity, 1 sigmoid, 2 tanh,
  3 relu). Gate holds the activated u, r, c and ResetHiddenPrev r h_prev.

lstm and gru run each sequence of Input's (single) LoD level on its own, from H0 (and C0; lstm takes H0 only with
C0) row i for sequence i (zeros without), backwards in time with ``is_reverse``. Their Batch* outputs are Paddle's
batch-major layout (the rows of time step 0 of every sequence, longest sequence first, then step 1, ...): activated
gates, the activated cell (BatchCellPreAct), r h_prev, h. The grads recompute the forward instead of reading them.

Paddle's ``sigmoid`` activation here clamps its input to [-40, 13]; its grad kernels still give y (1 - y) past the
clamp, where the forward is flat: gradc gives 0 there. Paddle's lstm_grad has no Cell@GRAD slot: Paddle silently
drops the gradient of a loss that reads Cell; gradc refuses to differentiate through Cell (a GradError naming it).
With an empty sequence and H0/C0, Paddle's lstm_grad gives that sequence's H0 (and C0) row a nonzero gradient and
Weight@GRAD a wrong one; gradc's are zero there and agree with finite differences.
"""

from __future__ import annotations

from ..registry import defop, grad_op
from .infer import check_float, one_dtype

ACTIVATIONS = ("sigmoid", "sigmoid_v2", "tanh", "tanh_v2", "relu", "identity", "")
GRU_UNIT_ACTIVATIONS = ("identity", "sigmoid", "tanh", "relu")   # by the int code of gru_unit's attributes


def _check_activations(ctx, *names: str) -> None:
    for name in names:
        if ctx.attr(name) not in ACTIVATIONS:
            ctx.fail(f"{name} {ctx.attr(name)!r} is not one of {list(ACTIVATIONS[:-1])}")


def _matrix(ctx, slot: str, rows, cols) -> None:
    """Fails unless ``slot`` is 2-D [rows, cols] where both are known (None: any)."""
    shape = ctx.shape(slot)
    if shape is None:
        return
    if len(shape) != 2 or any(want is not None and want >= 0 and have >= 0 and have != want
                              for have, want in zip(shape, (rows, cols))):
        want = [-1 if d is None else d for d in (rows, cols)]
        ctx.fail(f"{slot} '{ctx.op.input(slot)[0]}' must have shape {want}, got {shape}")


def _hidden_size(ctx, gates: int) -> int:
    """D from Weight [D, gates * D], checked against Input [rows, gates * D]."""
    weight, x = ctx.shape("Weight"), ctx.shape("Input")
    if weight is None or len(weight) != 2 or (min(weight) >= 0 and weight[1] != gates * weight[0]):
        ctx.fail(f"Weight '{ctx.op.input('Weight')[0]}' must have shape [D, {gates} * D], got {weight}")
    if x is None or len(x) != 2:
        ctx.fail(f"Input '{ctx.op.input('Input')[0]}' must be 2-D [rows, {gates} * D], got {x}")
    _matrix(ctx, "Input", None, weight[1])
    for slot in ("Input", "Weight", "Bias", "H0", "C0", "HiddenPrev"):
        if ctx.has(slot):
            check_float(ctx, slot)
    return weight[0]


def _lstm_infer(ctx):
    _check_activations(ctx, "gate_activation", "cell_activation", "candidate_activation")
    hidden = _hidden_size(ctx, 4)
    _matrix(ctx, "Bias", 1, (7 if ctx.attr("use_peepholes") else 4) * hidden if hidden >= 0 else -1)
    if ctx.has("H0") and not ctx.has("C0"):
        ctx.fail("H0 needs C0: Paddle's lstm takes an initial hidden state only with an initial cell")
    for slot in ("H0", "C0"):
        if ctx.has(slot):
            _matrix(ctx, slot, None, hidden)
    dtype = one_dtype(ctx, "Input", "Weight", "Bias")
    rows = ctx.shape("Input")[0]
    return {"Hidden": ([rows, hidden], dtype), "Cell": ([rows, hidden], dtype),
            "BatchGate": ([rows, 4 * hidden if hidden >= 0 else -1], dtype), "BatchCellPreAct": ([rows, hidden], dtype)}


def _sequences_out(*slots: str):
    """Output lod levels: ``slots`` share Input's (the sequences), the batch-layout outputs have none."""
    return lambda ctx: {slot: ctx.lod_level("Input") if slot in slots else 0 for slot in ctx.op.outputs}


# The batch-layout outputs Paddle's grad kernels read (gradc's recompute the forward): passed on, so that Paddle
# runs gradc's backward.
PADDLE_KERNEL_READS = {"lstm": ("BatchGate", "BatchCellPreAct"),
                       "gru": ("BatchGate", "BatchHidden", "BatchResetHiddenPrev")}

LSTM_ATTRS = {"use_peepholes": True, "is_reverse": False, "is_test": False, "gate_activation": "sigmoid",
              "cell_activation": "tanh", "candidate_activation": "tanh"}

defop("lstm", ["Input", "H0?", "C0?", "Weight", "Bias"], ["Hidden", "Cell", "BatchGate!", "BatchCellPreAct!"],
      attrs=LSTM_ATTRS, infer=_lstm_infer, no_grad_outputs=["Cell", "BatchGate", "BatchCellPreAct"],
      grad=grad_op("Input", "H0", "C0", "Weight", "Bias", "Hidden", "Cell", *PADDLE_KERNEL_READS["lstm"]),
      lod_levels=_sequences_out("Hidden", "Cell"))


def _gru_infer(ctx):
    _check_activations(ctx, "gate_activation", "activation")
    hidden = _hidden_size(ctx, 3)
    if ctx.has("Bias"):
        _matrix(ctx, "Bias", 1, 3 * hidden if hidden >= 0 else -1)
    if ctx.has("H0"):
        _matrix(ctx, "H0", None, hidden)
    dtype = one_dtype(ctx, "Input", "Weight")
    rows = ctx.shape("Input")[0]
    return {"BatchGate": ([rows, 3 * hidden if hidden >= 0 else -1], dtype),
            "BatchResetHiddenPrev": ([rows, hidden], dtype), "BatchHidden": ([rows, hidden], dtype),
            "Hidden": ([rows, hidden], dtype)}


GRU_ATTRS = {"activation": "tanh", "gate_activation": "sigmoid", "is_reverse": False, "origin_mode": False,
             "is_test": False}

defop("gru", ["Input", "H0?", "Weight", "Bias?"], ["BatchGate!", "BatchResetHiddenPrev!", "BatchHidden!", "Hidden"],
      attrs=GRU_ATTRS, infer=_gru_infer, no_grad_outputs=["BatchGate", "BatchResetHiddenPrev", "BatchHidden"],
      grad=grad_op("Input", "H0", "Weight", "Bias", "Hidden", *PADDLE_KERNEL_READS["gru"]),
      lod_levels=_sequences_out("Hidden"))


def _gru_unit_infer(ctx):
    for name in ("activation", "gate_activation"):
        if ctx.attr(name) not in range(len(GRU_UNIT_ACTIVATIONS)):
            ctx.fail(f"{name} {ctx.attr(name)} is not one of 0 (identity), 1 (sigmoid), 2 (tanh), 3 (relu)")
    hidden = _hidden_size(ctx, 3)
    batch = ctx.shape("Input")[0]
    _matrix(ctx, "HiddenPrev", batch, hidden)
    if ctx.has("Bias"):
        _matrix(ctx, "Bias", 1, 3 * hidden if hidden >= 0 else -1)
    dtype = one_dtype(ctx, "Input", "HiddenPrev", "Weight")
    return {"Gate": ([batch, 3 * hidden if hidden >= 0 else -1], dtype), "ResetHiddenPrev": ([batch, hidden], dtype),
            "Hidden": ([batch, hidden], dtype)}


defop("gru_unit", ["Input", "HiddenPrev", "Weight", "Bias?"], ["Gate", "ResetHiddenPrev", "Hidden"],
      attrs={"activation": 2, "gate_activation": 1, "origin_mode": False}, infer=_gru_unit_infer,
      no_grad_outputs=["Gate", "ResetHiddenPrev"],
      grad=grad_op("Input", "HiddenPrev", "Weight", "Bias", "Gate", "ResetHiddenPrev"))

"""fusion_gru and fusion_lstm: the recurrent ops Paddle Inference's fc_gru_fuse_pass / mul_gru_fuse_pass and
mul_lstm_fuse_pass (fc_lstm_fuse_pass outside the CPU list) write for an fc (or mul) feeding a gru or lstm op.

Each is its gradc.ops.lod_rnn op on XX = X WeightX over X's one LoD level: WeightX [M, gates * D] holds the input
projection in the recurrent op's gate order (gru: update, reset, candidate; lstm: candidate, input, forget, output),
WeightH [D, gates * D] is the recurrent op's Weight (gru's in its [D, 2D] + [D, D] storage), Bias its Bias (the
passes add the fc's bias into it). Hidden (and lstm's Cell) [rows, D] keep X's LoD.

The other outputs are Paddle's scratch (its use_seq kernel leaves the Batched* ones unwritten): gradc writes XX,
and for the rest the batch-layout arrays they are named after (ReorderedH0/C0 the initial states in sequence
order, zeros without). mul_lstm_fuse_pass also writes BatchedGate and BatchedCellPreAct slots, which
fusion_lstm's proto lacks: gradc, as Paddle's kernel, leaves them unwritten. Paddle defines no grad for either op:
registered forward-only.

fused_embedding_fc_lstm (embedding_fc_lstm_fuse_pass: lookup_table + fc + lstm) is the lstm op on XX = Embeddings[Ids]
(the pass folds the fc's weight and bias into the table, [vocab, 4D]), Ids [rows, 1] int64 with the LoD: Paddle's
kernel adds no Bias to the gates, whose first 4D values the pass has folded; with use_peepholes Bias[4D:] holds the
peephole weights. Forward-only too.

attention_lstm (attention_lstm_fuse_pass) steps an lstm over each sequence of X [rows, M] whose input at a step is
the sequence's rows pooled by attention: scores relu(X W_x + AttentionBias + c_prev W_c) (AttentionWeight
[M + D, 1] stacks W_x over W_c), with AttentionScalar relu(scores * scalar + AttentionScalarBias), softmax over the
sequence, then the weighted sum of its rows. LSTMWeight [D + M, 4D] stacks the hidden weights over the input ones,
gates in the order forget, input, output, candidate; LSTMBias [1, 4D]. C0 is required, H0 optional (none: no hidden
term at the first step). AttentionedX is X W_x + AttentionBias; AttentionFCOut, LSTMX and LSTMOUT are Paddle's
per-step scratch, left unwritten. Forward-only.

multi_gru (multi_gru_fuse_pass, oneDNN): `layers` bidirectional layers over X's sequences, each a forward and a
reverse fusion_gru (WeightX, WeightH, Bias listed layer by layer, the forward direction first; no H0), the two
hiddens concatenated [rows, 2D] as the next layer's X. Scale_weights and the int8 attributes are oneDNN
quantization's: a Scale_weights is refused, the attributes unread. Forward-only.
"""

from __future__ import annotations

from ..registry import defop
from .infer import check_float, one_dtype
from .lod_rnn import ACTIVATIONS, GRU_ATTRS, LSTM_ATTRS

GRU_SCRATCH = ["ReorderedH0", "XX", "BatchedInput", "BatchedOut"]
LSTM_SCRATCH = ["XX", "BatchedInput", "BatchedHidden", "BatchedCell", "ReorderedH0", "ReorderedC0", "CheckedCell"]
FUSED_ATTRS = {"use_seq": True, "force_fp32_output": False, "Scale_data": 1.0, "Shift_data": 0.0,
               "Scale_weights": [1.0]}


def _check_activations(ctx, names: tuple[str, ...]) -> None:
    for name in names:
        if ctx.attr(name) not in ACTIVATIONS:
            ctx.fail(f"{name} {ctx.attr(name)!r} is not one of {list(ACTIVATIONS[:-1])}")


def _sequences(source: str, slots: tuple[str, ...]):
    """lod_levels: ``slots`` are sequences of ``source``'s LoD, the other outputs plain tensors."""
    return lambda ctx: {slot: ctx.lod_level(source) if slot in slots else 0 for slot in ctx.op.outputs}


def _hidden(ctx, gates: int, activations: tuple[str, ...]) -> tuple[int, int]:
    """(rows, D), checking X [rows, M], WeightX [M, gates D], WeightH [D, gates D]."""
    _check_activations(ctx, activations)
    for slot in ("X", "WeightX", "WeightH"):
        check_float(ctx, slot)
    x, wx, wh = ctx.shape("X"), ctx.shape("WeightX"), ctx.shape("WeightH")
    if x is None or len(x) != 2:
        ctx.fail(f"X must be 2-D [rows, M], got {x}")
    if wh is None or len(wh) != 2 or (min(wh) >= 0 and wh[1] != gates * wh[0]):
        ctx.fail(f"WeightH must have shape [D, {gates} * D], got {wh}")
    if wx is None or len(wx) != 2 or (min(wx[1], wh[1]) >= 0 and wx[1] != wh[1]) or \
            (min(wx[0], x[1]) >= 0 and wx[0] != x[1]):
        ctx.fail(f"WeightX must have shape [M = {x[1]}, {gates} * D = {wh[1]}], got {wx}")
    return x[0], wh[0]


def _gru_infer(ctx):
    rows, d = _hidden(ctx, 3, ("gate_activation", "activation"))
    dtype = one_dtype(ctx, "X", "WeightX", "WeightH")
    return {"Hidden": ([rows, d], dtype)}   # the scratch left as declared: Paddle's PIR program says []


defop("fusion_gru", ["X", "H0?", "WeightX", "WeightH", "Bias?"], [*GRU_SCRATCH, "Hidden"],
      attrs={k: v for k, v in {**GRU_ATTRS, **FUSED_ATTRS}.items() if k != "is_test"}, infer=_gru_infer,
      lod_levels=_sequences("X", ("Hidden",)))


def _lstm_infer(ctx):
    rows, d = _hidden(ctx, 4, ("gate_activation", "cell_activation", "candidate_activation"))
    dtype = one_dtype(ctx, "X", "WeightX", "WeightH", "Bias")
    return {"Hidden": ([rows, d], dtype), "Cell": ([rows, d], dtype)}


defop("fusion_lstm", ["X", "WeightX", "WeightH", "Bias", "H0?", "C0?"], ["Hidden", "Cell", *LSTM_SCRATCH],
      attrs={k: v for k, v in {**LSTM_ATTRS, **FUSED_ATTRS}.items() if k != "is_test"}, infer=_lstm_infer,
      lod_levels=_sequences("X", ("Hidden", "Cell")))


def _embedding_lstm_infer(ctx):
    _check_activations(ctx, ("gate_activation", "cell_activation", "candidate_activation"))
    check_float(ctx, "Embeddings")
    ids, table, wh = ctx.shape("Ids"), ctx.shape("Embeddings"), ctx.shape("WeightH")
    if wh is None or len(wh) != 2 or (min(wh) >= 0 and wh[1] != 4 * wh[0]):
        ctx.fail(f"WeightH must have shape [D, 4 * D], got {wh}")
    if table is None or len(table) != 2 or (min(table[1], wh[1]) >= 0 and table[1] != wh[1]):
        ctx.fail(f"Embeddings must have shape [vocab, 4 * D = {wh[1]}], got {table}")
    dtype = one_dtype(ctx, "Embeddings", "WeightH", "Bias")
    return {"Hidden": ([ids[0] if ids else -1, wh[0]], dtype), "Cell": ([ids[0] if ids else -1, wh[0]], dtype)}


defop("fused_embedding_fc_lstm", ["Ids", "Embeddings", "WeightH", "Bias", "H0?", "C0?"],
      ["Hidden", "Cell", *(slot for slot in LSTM_SCRATCH if slot != "CheckedCell")],
      attrs={k: v for k, v in LSTM_ATTRS.items() if k != "is_test"} | {"use_seq": True}, infer=_embedding_lstm_infer,
      lod_levels=_sequences("Ids", ("Hidden", "Cell")))


def _attention_lstm_infer(ctx):
    _check_activations(ctx, ("gate_activation", "cell_activation", "candidate_activation"))
    check_float(ctx, "X")
    x, w, att = ctx.shape("X"), ctx.shape("LSTMWeight"), ctx.shape("AttentionWeight")
    if x is None or len(x) != 2:
        ctx.fail(f"X must be 2-D [rows, M], got {x}")
    if w is None or len(w) != 2 or (min(w) >= 0 and x[1] >= 0 and w[0] != w[1] // 4 + x[1]):
        ctx.fail(f"LSTMWeight must have shape [D + M, 4 * D] for X {x}, got {w}")
    if att is not None and w is not None and min(w) >= 0 and x[1] >= 0 and att != [w[1] // 4 + x[1], 1]:
        ctx.fail(f"AttentionWeight must have shape [M + D = {w[1] // 4 + x[1]}, 1], got {att}")
    dtype, d = one_dtype(ctx, "X", "LSTMWeight", "LSTMBias", "AttentionWeight"), w[1] // 4
    return {"Hidden": ([x[0], d], dtype), "Cell": ([x[0], d], dtype), "AttentionedX": ([x[0], 1], dtype)}


defop("attention_lstm", ["X", "C0", "H0?", "AttentionWeight", "AttentionBias?", "AttentionScalar?",
                         "AttentionScalarBias?", "LSTMWeight", "LSTMBias"],
      ["Hidden", "Cell", "AttentionedX", "AttentionFCOut", "LSTMX", "LSTMOUT"],
      attrs={"gate_activation": "sigmoid", "cell_activation": "tanh", "candidate_activation": "tanh"},
      infer=_attention_lstm_infer,
      lod_levels=_sequences("X", ("Hidden", "Cell")))


def _multi_gru_infer(ctx):
    _check_activations(ctx, ("gate_activation", "activation"))
    check_float(ctx, "X")
    layers, weights = ctx.attr("layers"), ctx.shapes("WeightH")
    if layers < 1 or len(ctx.op.input("WeightX")) != 2 * layers or len(weights) != 2 * layers:
        ctx.fail(f"needs a forward and a reverse WeightX and WeightH per layer: {2 * layers} each for layers "
                 f"{layers}, got {len(ctx.op.input('WeightX'))} and {len(weights)}")
    if ctx.op.input("Bias") and len(ctx.op.input("Bias")) != 2 * layers:
        ctx.fail(f"needs no Bias or one per WeightX ({2 * layers}), got {len(ctx.op.input('Bias'))}")
    if ctx.op.input("Scale_weights"):
        ctx.fail("Scale_weights belongs to oneDNN's int8 multi_gru, which gradc does not run")
    x, last = ctx.shape("X"), weights[-1]
    return {"Hidden": ([x[0] if x else -1, 2 * last[0] if last else -1], ctx.dtype("X"))}


defop("multi_gru", ["X", "WeightX[]", "WeightH[]", "Bias[]?", "Scale_weights[]?"], ["Hidden"],
      attrs={"activation": "tanh", "gate_activation": "sigmoid", "layers": 1, "origin_mode": False,
             "mkldnn_data_type": "float32", "Scale_data": 1.0, "Shift_data": 0.0, "force_fp32_output": False},
      infer=_multi_gru_infer, lod_levels=lambda ctx: {"Hidden": ctx.lod_level("X")})

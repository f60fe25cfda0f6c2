"""Numpy math of Paddle's fused ``rnn`` op (modes LSTM, GRU, RNN_TANH, RNN_RELU): forward and backward of a
multi-layer, optionally bidirectional stack with per-sequence lengths and inter-layer dropout.
Pure functions of arrays; docs/rnn.md has the semantics, the WeightList order and the Reserve layout,
gradc.rnn_shape the shapes (Reserve [L, D, T, B, width]: per-step values in processing order).
"""

from __future__ import annotations

import numpy as np

from ...rnn_shape import RnnShape, shape_problems
from .rnn_cells import CELLS

__all__ = ["RnnShape", "layer_weights", "rnn_backward", "rnn_forward", "sequence_length_problem",
           "shape_problems"]


def layer_weights(shape: RnnShape, weights, layer: int):
    """(W_ih, W_hh, b_ih, b_hh) of one layer, each stacked over directions."""
    return tuple(np.stack([weights[shape.weight_index(layer, d, k)] for d in range(shape.directions)])
                 for k in range(4))


def sequence_length_problem(sequence_length, steps: int, batch: int | None = None) -> str | None:
    """Why SequenceLength cannot be used with ``steps`` time steps (and ``batch`` sequences), or None."""
    lengths = np.asarray(sequence_length)
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu" or batch not in (None, lengths.size):
        expected = "B" if batch is None else f"B={batch}"
        return f"must be an integer vector [{expected}], got {lengths.dtype} {list(lengths.shape)}"
    bad = lengths[(lengths < 0) | (lengths > steps)]
    return f"lengths must lie in [0, {steps}] (the time steps), got {bad.tolist()}" if bad.size else None


def _processing_order(a):
    """[D, T, ...] in time order <-> processing order: direction 1 runs backwards in time (an involution)."""
    if a.shape[0] == 1:
        return a
    ordered = np.empty_like(a)
    ordered[0], ordered[1] = a[0], a[1, ::-1]
    return ordered


def _step_masks(sequence_length, steps: int, directions: int, dtype):
    if sequence_length is None:
        return None
    valid = (np.arange(steps)[:, None] < np.asarray(sequence_length)[None, :]).astype(dtype)  # [T, B]
    return _processing_order(np.broadcast_to(valid[None, :, :, None], (directions,) + valid.shape + (1,)))


def _dropout(x, mask, prob: float):
    if mask is None:
        return x
    keep = np.float32(1) - np.float32(prob)  # Paddle's 1.0f - p, in float32 whatever the dtype
    return np.zeros_like(x) if prob == 1 else x * mask.astype(x.dtype) / x.dtype.type(keep)


def _layer_output(h_steps, m):
    """Out of a layer, [T, B, D * H], from its per-step states [D, S, B, H]: zero at padded steps."""
    out = _processing_order(h_steps if m is None else h_steps * m)
    return np.concatenate(list(out), axis=-1)


def _input_projection(x, w_ih, bias):
    """x @ W_ih^T + bias for every direction, [D, S, B, G] in processing order."""
    steps, batch = x.shape[:2]
    proj = np.matmul(x.reshape(steps * batch, -1), w_ih.transpose(0, 2, 1)).reshape(
        (w_ih.shape[0], steps, batch, w_ih.shape[1]))
    proj += bias[:, None, None, :]
    return _processing_order(proj)


def _folded_bias(shape: RnnShape, b_ih, b_hh):
    """The biases added before the loop: both, except GRU's b_hn, which sits inside the reset product."""
    if shape.mode != "GRU":
        return b_ih + b_hh
    folded = b_ih.copy()
    folded[:, :2 * shape.hidden_size] += b_hh[:, :2 * shape.hidden_size]
    return folded


def _layer_states(pre_states, layer: int, directions: int):
    return [s[layer * directions:(layer + 1) * directions] for s in pre_states]


def rnn_forward(shape: RnnShape, x, pre_states, weights, sequence_length=None, dropout_mask=None,
                dropout_prob: float = 0.0):
    """Returns Out [T, B, D * H], State (list like PreState) and Reserve (see the module docstring).

    dropout_mask: None (no dropout), or a 0/1 array of Out's shape applied, scaled by 1 / (1 - p), to
    the input of every layer after the first (one mask for every layer, as Paddle does)."""
    steps, batch = x.shape[:2]
    masks = _step_masks(sequence_length, steps, shape.directions, x.dtype)
    reserve = np.empty_like(x, shape=shape.reserve_shape(steps, batch))
    finals = [[] for _ in pre_states]
    layer_in = x
    with np.errstate(over="ignore"):  # exp overflow in the sigmoid gives the right limit, 0
        for layer in range(shape.num_layers):
            w_ih, w_hh, b_ih, b_hh = layer_weights(shape, weights, layer)
            xp = _input_projection(layer_in, w_ih, _folded_bias(shape, b_ih, b_hh))
            h0, *c0 = _layer_states(pre_states, layer, shape.directions)
            whh_t = w_hh.transpose(0, 2, 1).copy()
            cell = CELLS[shape.mode]
            h, c = cell.forward(xp, h0, c0[0] if c0 else None, whh_t, b_hh[:, None, :], masks, reserve[layer])
            for final, value in zip(finals, (h, c)):
                final.append(value)
            out = _layer_output(reserve[layer, ..., -shape.hidden_size:], masks)
            layer_in = _dropout(out, dropout_mask, dropout_prob)
    return out, [np.concatenate(f) for f in finals], reserve


def _previous_steps(h0, h_steps):
    """The state each step started from: h0, then the state after every step but the last."""
    return np.concatenate([h0[:, None], h_steps[:, :-1]], axis=1)


def rnn_backward(shape: RnnShape, x, pre_states, weights, reserve, out_grad=None, state_grads=None,
                 sequence_length=None, dropout_mask=None, dropout_prob: float = 0.0):
    """Grads of Input, of each PreState and of each WeightList tensor (Paddle's order), given the forward's
    Reserve and the grads of Out and of each State (None where there is none: zeros)."""
    steps, batch = x.shape[:2]
    hidden, directions = shape.hidden_size, shape.directions
    masks = _step_masks(sequence_length, steps, directions, x.dtype)
    if out_grad is None:
        out_grad = np.zeros_like(x, shape=(steps, batch, directions * hidden))
    state_grads = [np.zeros_like(p) if g is None else g for p, g in zip(pre_states, state_grads or [None] * 2)]
    weight_grads = [None] * len(weights)
    pre_state_grads = [np.empty_like(p) for p in pre_states]
    for layer in reversed(range(shape.num_layers)):
        res = reserve[layer]
        layer_in = x if layer == 0 else _dropout(_layer_output(reserve[layer - 1, ..., -hidden:], masks),
                                                 dropout_mask, dropout_prob)
        w_ih, w_hh, _, _ = layer_weights(shape, weights, layer)
        h0, *c0 = _layer_states(pre_states, layer, directions)
        h_prev = _previous_steps(h0, res[..., -hidden:])
        dout = _processing_order(out_grad.reshape(steps, batch, directions, hidden).transpose(2, 0, 1, 3))
        if masks is not None:
            dout = dout * masks
        finals = _layer_states(state_grads, layer, directions)
        c_init = c0[0] if c0 else None
        dgates_x, dgates_h, dh0, dc0 = CELLS[shape.mode].backward(res, h_prev, c_init, w_hh, masks, dout, finals)
        for grad, value in zip(pre_state_grads, (dh0, dc0)):
            grad[layer * directions:(layer + 1) * directions] = value
        dgates_x = _processing_order(dgates_x).reshape(directions, steps * batch, -1)
        flat_in = layer_in.reshape(steps * batch, -1)
        grads = (np.matmul(dgates_x.transpose(0, 2, 1), flat_in),
                 np.matmul(dgates_h.reshape(directions, steps * batch, -1).transpose(0, 2, 1),
                           h_prev.reshape(directions, steps * batch, hidden)),
                 dgates_x.sum(axis=1), dgates_h.sum(axis=(1, 2)))
        for d in range(directions):
            for k, grad in enumerate(grads):
                weight_grads[shape.weight_index(layer, d, k)] = grad[d]
        in_grad = np.matmul(dgates_x, w_ih).sum(axis=0).reshape(layer_in.shape)
        out_grad = _dropout(in_grad, dropout_mask, dropout_prob) if layer else in_grad
    return out_grad, pre_state_grads, weight_grads

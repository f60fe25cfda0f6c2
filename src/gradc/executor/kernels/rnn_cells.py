"""Time loops of the fused ``rnn`` op's cells (LSTM, GRU, simple RNN), numpy only; rnn_math stacks them.

All directions of a layer run in one loop: arrays are [D, S, B, ...] in *processing order* (step s of
direction 0 is time s, of direction 1 time T-1-s), so each step is one batched matmul for every direction.
``xp`` holds the input projection with the biases the cell folds in; ``res`` is the layer's slice of
Reserve, [D, S, B, width]; ``m`` is the [D, S, B, 1] sequence mask (None: every step valid). At a masked
step the state is carried unchanged. The backward folds the mask into per-step coefficients computed
for all steps at once, so its loop is a few elementwise ops and one matmul per step.

Reserve columns per step (activated gates, in Paddle's gate order):
  LSTM: i f g o | c | h      GRU: r z n | hn | h  (hn = h_prev W_hn^T + b_hn)      RNN: h
"""

from __future__ import annotations

import numpy as np


def sigmoid(x, out):
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


def _carry(new, old, m):
    """new = m * new + (1 - m) * old, in place: the backward's coefficients of a masked step."""
    new -= old
    new *= m
    new += old


def _padded(xp, m):
    """Where a step is padding, for np.copyto; None for dual numbers (numpy cannot copy into them: they blend)."""
    return m == 0 if m is not None and type(xp) is np.ndarray else None


def _hold(new, old, m, padded, s):
    """A padded step keeps the old state: copied where ``padded`` (exactly the old values), else blended by m."""
    if padded is None:
        _carry(new, old, m)
    else:
        np.copyto(new, old, where=padded[:, s])


def _mask_coefficients(m, *arrays):
    for a in arrays:
        a *= m[..., None, :] if a.ndim == m.ndim + 1 else m


def _complement(m):
    """1 - m: how much of a step's state grad passes straight to the previous step (None: nothing)."""
    return None if m is None else 1 - m


class LSTM:
    gates = 4
    extra = 2  # c, h

    @staticmethod
    def forward(xp, h0, c0, whh_t, bhh, m, res):
        hidden = h0.shape[-1]
        h, c = h0, c0
        pre = np.empty_like(xp[:, 0])
        tmp = np.empty_like(h0)
        padded = _padded(xp, m)
        for s in range(xp.shape[1]):
            np.matmul(h, whh_t, out=pre)
            pre += xp[:, s]
            step = res[:, s]
            act, c_new, h_new = step[..., :4 * hidden], step[..., 4 * hidden:5 * hidden], step[..., 5 * hidden:]
            sigmoid(pre, act)   # all four gates in one pass: g's is replaced by its tanh next
            np.tanh(pre[..., 2 * hidden:3 * hidden], out=act[..., 2 * hidden:3 * hidden])
            i, f, g, o = (act[..., k * hidden:(k + 1) * hidden] for k in range(4))
            np.multiply(f, c, out=c_new)
            np.multiply(i, g, out=tmp)
            c_new += tmp
            np.tanh(c_new, out=h_new)
            h_new *= o
            if m is not None:
                _hold(c_new, c, m[:, s], padded, s)
                _hold(h_new, h, m[:, s], padded, s)
            h, c = h_new, c_new
        return h.copy(), c.copy()

    @staticmethod
    def backward(res, h_prev, c0, whh, m, dout, state_grads):
        """dout: [D, S, B, H] grads of the (masked) outputs; returns the gate grads of the input side and
        of the hidden side per step, [D, S, B, G], and the grads of the initial states."""
        hidden = h_prev.shape[-1]
        gates = res[..., :4 * hidden].reshape(res.shape[:-1] + (4, hidden))
        i, f, g, o = (gates[..., k, :] for k in range(4))
        c = res[..., 4 * hidden:5 * hidden]
        c_prev = np.concatenate([c0[:, None], c[:, :-1]], axis=1)
        tanh_c = np.tanh(c)
        dc_from_dh = o * (1 - tanh_c * tanh_c)
        do_from_dh = tanh_c * o * (1 - o)
        ifg_from_dc = np.stack([g * i * (1 - i), c_prev * f * (1 - f), i * (1 - g * g)], axis=-2)
        keep_c = f.copy()
        if m is not None:
            _mask_coefficients(m, dc_from_dh, do_from_dh, ifg_from_dc)
            _carry(keep_c, np.ones_like(keep_c[:1]), m)
        dgates = np.empty_like(gates)
        dh, dc = (g.copy() for g in state_grads)
        tmp, through = np.empty_like(dh), _complement(m)
        for s in reversed(range(dout.shape[1])):
            dh += dout[:, s]
            np.multiply(dh, dc_from_dh[:, s], out=tmp)
            dc += tmp
            np.multiply(dc[..., None, :], ifg_from_dc[:, s], out=dgates[:, s, :, :3])
            np.multiply(dh, do_from_dh[:, s], out=dgates[:, s, :, 3])
            dc *= keep_c[:, s]
            carried = None if through is None else dh * through[:, s]
            np.matmul(dgates[:, s].reshape(dh.shape[:-1] + (4 * hidden,)), whh, out=dh)
            if carried is not None:
                dh += carried
        dgates = dgates.reshape(res.shape[:-1] + (4 * hidden,))
        return dgates, dgates, dh, dc


class GRU:
    gates = 3
    extra = 2  # hn, h

    @staticmethod
    def forward(xp, h0, c0, whh_t, bhh, m, res):
        hidden = h0.shape[-1]
        h = h0
        hproj = np.empty_like(xp[:, 0])
        padded = _padded(xp, m)
        for s in range(xp.shape[1]):
            np.matmul(h, whh_t, out=hproj)
            step = res[:, s]
            act, hn, h_new = step[..., :3 * hidden], step[..., 3 * hidden:4 * hidden], step[..., 4 * hidden:]
            rz = act[..., :2 * hidden]
            np.add(xp[:, s, :, :2 * hidden], hproj[..., :2 * hidden], out=rz)
            sigmoid(rz, rz)
            r, z, n = act[..., :hidden], act[..., hidden:2 * hidden], act[..., 2 * hidden:]
            np.add(hproj[..., 2 * hidden:], bhh[..., 2 * hidden:], out=hn)  # b_hr, b_hz are in xp
            np.multiply(r, hn, out=n)
            n += xp[:, s, :, 2 * hidden:]
            np.tanh(n, out=n)
            np.subtract(h, n, out=h_new)  # h' = z * h + (1 - z) * n = n + z * (h - n)
            h_new *= z
            h_new += n
            if m is not None:
                _hold(h_new, h, m[:, s], padded, s)
            h = h_new
        return h.copy(), None

    @staticmethod
    def backward(res, h_prev, c0, whh, m, dout, state_grads):
        hidden = h_prev.shape[-1]
        r, z, n, hn = (res[..., k * hidden:(k + 1) * hidden] for k in range(4))
        dn_from_dh = (1 - z) * (1 - n * n)  # d(pre-activation of n) / dh
        h_side = np.stack([dn_from_dh * hn * r * (1 - r), (h_prev - n) * z * (1 - z), dn_from_dh * r], axis=-2)
        keep_h = z.copy()
        if m is not None:
            _mask_coefficients(m, dn_from_dh, h_side)
            _carry(keep_h, np.ones_like(keep_h[:1]), m)
        dgates_h = np.empty_like(res, shape=res.shape[:-1] + (3, hidden))
        dh_steps = np.empty_like(h_prev)
        dh = state_grads[0].copy()
        for s in reversed(range(dout.shape[1])):
            dh += dout[:, s]
            dh_steps[:, s] = dh
            np.multiply(dh[..., None, :], h_side[:, s], out=dgates_h[:, s])
            dh *= keep_h[:, s]
            dh += np.matmul(dgates_h[:, s].reshape(dh.shape[:-1] + (3 * hidden,)), whh)
        dgates_x = dgates_h.copy()
        np.multiply(dh_steps, dn_from_dh, out=dgates_x[..., 2, :])
        shape = res.shape[:-1] + (3 * hidden,)
        return dgates_x.reshape(shape), dgates_h.reshape(shape), dh, None


class SimpleRNN:
    gates = 1
    extra = 0  # h is the activated gate itself

    def __init__(self, activation: str):
        self.relu = activation == "relu"

    def forward(self, xp, h0, c0, whh_t, bhh, m, res):
        h = h0
        padded = _padded(xp, m)
        for s in range(xp.shape[1]):
            h_new = res[:, s]
            np.matmul(h, whh_t, out=h_new)
            h_new += xp[:, s]
            if self.relu:
                np.maximum(h_new, 0, out=h_new)
            else:
                np.tanh(h_new, out=h_new)
            if m is not None:
                _hold(h_new, h, m[:, s], padded, s)
            h = h_new
        return h.copy(), None

    def backward(self, res, h_prev, c0, whh, m, dout, state_grads):
        dz_from_dh = (res > 0).astype(res.dtype) if self.relu else 1 - res * res
        if m is not None:
            dz_from_dh *= m
        dz = np.empty_like(res)
        dh, through = state_grads[0].copy(), _complement(m)
        for s in reversed(range(dout.shape[1])):
            dh += dout[:, s]
            np.multiply(dh, dz_from_dh[:, s], out=dz[:, s])
            carried = None if through is None else dh * through[:, s]
            np.matmul(dz[:, s], whh, out=dh)
            if carried is not None:
                dh += carried
        return dz, dz, dh, None


CELLS = {"LSTM": LSTM(), "GRU": GRU(), "RNN_TANH": SimpleRNN("tanh"), "RNN_RELU": SimpleRNN("relu")}

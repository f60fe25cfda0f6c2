"""The fused ``rnn`` op's forward written again with differentiable ops, one cell per layer, direction and time
step, so rnn_grad's maker (gradc.ops.rnn_double) can differentiate it. The math is docs/rnn.md's and the
kernel's (gradc.executor.kernels.rnn_math), mostly in its order of operations (Out agrees to a few ulps): LSTM
gates (i, f, g, o), GRU gates (r, z, n) with the reset gate on the hidden projection including its bias;
direction 1 walks time backwards; past a sequence's length the state is carried and Out is zero; the dropout
mask scales every layer's input but the first's.
"""

from __future__ import annotations

from ..ir import VarType, as_float32
from ..rnn_shape import RnnShape
from .composite import Formula


class Unrolled:
    """Emits the unrolled forward into ``f``: ``T`` steps, batch ``B`` (-1 when known at run time only)."""

    def __init__(self, f: Formula, shape: RnnShape, steps: int, batch: int):
        self.f, self.shape, self.steps, self.batch = f, shape, steps, batch
        self.hidden = shape.hidden_size

    def op(self, type: str, inputs: dict, like: str, dims: list[int], attrs: dict | None = None) -> str:
        """An op writing one new var of ``dims``, declared like ``like`` (its dtype)."""
        return self.f.op(type, inputs, like, attrs, dims=lambda _: list(dims))

    def pieces(self, type: str, x: str, slot: str, count: int, dims: list[int], attrs: dict) -> list[str]:
        """The ``count`` outputs (each of ``dims``) of an op splitting ``x`` (split, unstack)."""
        names = [self.f.g.tmp(x, lambda _: list(dims)) for _ in range(count)]
        self.f.emit(type, {"X": x}, {slot: names}, attrs)
        return names

    def matmul_t(self, x: str, w: str, dims: list[int]) -> str:
        """x @ w^T."""
        return self.op("matmul_v2", {"X": x, "Y": w}, x, dims, {"trans_x": False, "trans_y": True})

    def binary(self, type: str, x: str, y: str) -> str:
        """An elementwise op whose result has ``x``'s shape (``y`` broadcasts: a bias, a step mask)."""
        return self.f.op(type, {"X": x, "Y": y}, x, {"axis": -1})

    def add(self, x: str, y: str) -> str:
        return self.binary("elementwise_add", x, y)

    def mul(self, x: str, y: str) -> str:
        return self.binary("elementwise_mul", x, y)

    def sub(self, x: str, y: str) -> str:
        return self.binary("elementwise_sub", x, y)

    def gates(self, z: str, count: int) -> list[str]:
        return self.pieces("split", z, "Out", count, [self.batch, self.hidden], {"axis": 1, "num": count})

    # the cells: (step's input projection, carried states, W_hh, b_hh) -> new carried states
    def lstm(self, xp: str, h: str, c: str, w_hh: str, b_hh: str) -> tuple[str, str]:
        z = self.add(self.matmul_t(h, w_hh, [self.batch, 4 * self.hidden]), xp)
        i, f, g, o = (self.f.unary(act, gate) for act, gate in zip(("sigmoid", "sigmoid", "tanh", "sigmoid"),
                                                                    self.gates(z, 4)))
        c_new = self.add(self.mul(f, c), self.mul(i, g))
        return self.mul(self.f.unary("tanh", c_new), o), c_new

    def gru(self, xp: str, h: str, c: None, w_hh: str, b_hh: str) -> tuple[str, None]:
        hp = self.add(self.matmul_t(h, w_hh, [self.batch, 3 * self.hidden]), b_hh)
        (xr, xz, xn), (hr, hz, hn) = self.gates(xp, 3), self.gates(hp, 3)
        r, u = self.f.unary("sigmoid", self.add(xr, hr)), self.f.unary("sigmoid", self.add(xz, hz))
        n = self.f.unary("tanh", self.add(self.mul(r, hn), xn))
        return self.add(self.mul(self.sub(h, n), u), n), None   # u * h + (1 - u) * n, as the kernel has it

    def simple(self, xp: str, h: str, c: None, w_hh: str, b_hh: str) -> tuple[str, None]:
        pre = self.add(self.matmul_t(h, w_hh, [self.batch, self.hidden]), xp)
        return self.f.unary("relu" if self.shape.mode == "RNN_RELU" else "tanh", pre), None

    def carried(self, new: str | None, old: str | None, m: str | None) -> str | None:
        """m * new + (1 - m) * old, as (new - old) * m + old: a padded step keeps the old state."""
        return new if m is None or new is None else self.add(self.mul(self.sub(new, old), m), old)

    def input_projection(self, layer_in: str, w_ih: str, b_ih: str, b_hh: str) -> list[str]:
        """x @ W_ih^T plus the biases the kernel folds in (both but GRU's b_hh), per time step [B, G * H]."""
        gates = self.shape.gate_size
        bias = b_ih if self.shape.mode == "GRU" else self.f.op("elementwise_add", {"X": b_ih, "Y": b_hh}, b_ih)
        xp = self.matmul_t(layer_in, w_ih, [self.steps, self.batch, gates])
        xp = self.add(xp, bias)
        return self.pieces("unstack", xp, "Y", self.steps, [self.batch, gates], {"axis": 0, "num": self.steps})

    def direction(self, layer_in: str, weights: list[str], starts: list[str], masks: list | None,
                  backwards: bool) -> tuple[list[str], list[str]]:
        """One direction of one layer: its h at every time step (zero where padded) and its final states."""
        w_ih, w_hh, b_ih, b_hh = weights
        cell = {"LSTM": self.lstm, "GRU": self.gru}.get(self.shape.mode, self.simple)
        xps = self.input_projection(layer_in, w_ih, b_ih, b_hh)
        h, c = starts[0], (starts[1] if len(starts) > 1 else None)
        outs = [""] * self.steps
        for t in (reversed(range(self.steps)) if backwards else range(self.steps)):
            m = masks[t] if masks else None
            h_new, c_new = cell(xps[t], h, c, w_hh, b_hh)
            h, c = self.carried(h_new, h, m), self.carried(c_new, c, m)
            outs[t] = h if m is None else self.mul(h, m)
        return outs, [h] if c is None else [h, c]

    def step_masks(self, lengths: str, like: str) -> list[str]:
        """[B, 1] per time step: 1 where t < SequenceLength[b] (in ``like``'s dtype)."""
        dtype = self.f.g.block.var(like).dtype
        valid = self.f.op("sequence_mask", {"X": lengths}, like, {"maxlen": self.steps, "out_dtype": int(dtype)},
                          slot="Y", dims=lambda _: [self.batch, self.steps])
        return self.pieces("split", valid, "Out", self.steps, [self.batch, 1], {"axis": 1, "num": self.steps})

    def forward(self, x: str, pre_states: list[str], weights: list[str], lengths: str | None = None,
                dropout=None) -> tuple[str, list[str]]:
        """Out [T, B, D * H] and State (like PreState) of the rnn op. ``dropout(layer_out) -> next layer's input``
        applies the inter-layer dropout (None: none)."""
        shape, hidden, batch = self.shape, self.hidden, self.batch
        masks = self.step_masks(lengths, x) if lengths is not None else None
        slots = shape.num_layers * shape.directions
        starts = [self.pieces("unstack", s, "Y", slots, [batch, hidden], {"axis": 0, "num": slots})
                  for s in pre_states]
        finals: list[list[str]] = [[] for _ in pre_states]
        layer_in = x
        for layer in range(shape.num_layers):
            per_direction = []
            for d in range(shape.directions):
                index = layer * shape.directions + d
                outs, states = self.direction(layer_in, [weights[shape.weight_index(layer, d, k)] for k in range(4)],
                                              [s[index] for s in starts], masks, backwards=d == 1)
                per_direction.append(outs)
                for final, state in zip(finals, states):
                    final.append(state)
            per_step = [self.op("concat", {"X": list(outs)}, outs[0], [batch, shape.directions * hidden], {"axis": 1})
                        if shape.directions > 1 else outs[0] for outs in zip(*per_direction)]
            out = self.f.op("stack", {"X": per_step}, per_step[0], {"axis": 0}, slot="Y",
                            dims=lambda _: [self.steps, batch, shape.directions * hidden])
            layer_in = dropout(out) if dropout is not None and layer + 1 < shape.num_layers else out
        states = [self.f.op("stack", {"X": final}, final[0], {"axis": 0}, slot="Y",
                            dims=lambda _: [slots, batch, hidden]) for final in finals]
        return out, states


def dropped(f: Formula, mask: str, prob: float):
    """The inter-layer dropout with the forward's mask: out * mask / (1 - p), 1 - p in float32 as Paddle's
    kernel computes it (zeros for p = 1)."""
    keep = as_float32(1.0 - as_float32(prob))

    def apply(out: str) -> str:
        if keep == 0:
            return f.scale(out, 0.0)
        dtype = f.g.block.var(out).dtype
        kept = f.op("cast", {"X": mask}, out, {"in_dtype": int(VarType.UINT8), "out_dtype": int(dtype)})
        scale = f.op("fill_constant", {}, out, {"shape": [1], "dtype": int(dtype), "value": keep}, dims=lambda _: [1])
        return f.op("elementwise_div", {"X": f.mul(out, kept, out), "Y": scale}, out, {"axis": -1})

    return apply

"""pd_op.rnn (nn.LSTM) -> the LSTM unrolled over its (static) time steps into legacy ops gradc has:

    gates_t = x_t W_ih^T + b_ih + h W_hh^T + b_hh;  i, f, g, o = split(gates_t, 4)
    c = sigmoid(f) c + sigmoid(i) tanh(g);          h = sigmoid(o) tanh(c)

The weight list is Paddle's cudnn layout: every cell's (W_ih, W_hh), then every cell's (b_ih, b_hh),
cells ordered layer by layer, forward before backward. The backward pass then differentiates the
unrolled graph like any other.
"""

from __future__ import annotations

from ..ir import VarDesc


def translate_rnn(op, ctx) -> None:
    x_value, states_value, weights_value, lengths, _ = op.operands
    mode = ctx.attr(op, "mode", str)
    if mode != "LSTM":
        raise ctx.fail(op, f"pd_op.rnn mode '{mode}': gradc unrolls LSTM only")
    if lengths is not None:
        raise ctx.fail(op, "pd_op.rnn with sequence lengths (padded batches) is not supported")
    layers = ctx.attr(op, "num_layers", int)
    directions = 2 if ctx.attr(op, "is_bidirec", bool) else 1
    if layers > 1 and ctx.attr(op, "dropout_prob", float) > 0 and not ctx.attr(op, "is_test", bool):
        raise ctx.fail(op, "pd_op.rnn with dropout between layers draws random masks gradc cannot reproduce")
    x = ctx.args(x_value, op, 0)[0]
    h0, c0 = ctx.args(states_value, op, 1)
    weights = ctx.args(weights_value, op, 2)
    cells = layers * directions
    if len(weights) != 4 * cells:
        raise ctx.fail(op, f"expects {4 * cells} weights for {layers} layer(s) x {directions} direction(s), "
                           f"got {len(weights)}")
    unroll = _Unroll(ctx, ctx.attr(op, "hidden_size", int))
    shape = ctx.block.find_var(x).shape
    if not shape or len(shape) != 3 or shape[0] < 1:
        raise ctx.fail(op, f"pd_op.rnn needs x of shape [time, batch, features] with known time steps to unroll, "
                           f"x has shape {shape}")
    steps = shape[0]
    layer_input, last_h, last_c = x, [], []
    for layer in range(layers):
        outputs = []
        for direction in range(directions):
            k = layer * directions + direction
            w_ih, w_hh = weights[2 * k], weights[2 * k + 1]
            b_ih, b_hh = weights[2 * cells + 2 * k], weights[2 * cells + 2 * k + 1]
            hs, h, c = unroll.cell_over_time(layer_input, steps, (w_ih, w_hh, b_ih, b_hh),
                                             unroll.take(h0, k), unroll.take(c0, k), reverse=direction == 1)
            outputs.append(unroll.op("stack", {"X": hs}, "Y", {"axis": 0}, [steps, *unroll.shape(hs[0])]))
            last_h.append(h)
            last_c.append(c)
        layer_input = outputs[0] if directions == 1 else unroll.op(
            "concat", {"X": outputs}, "Out", {"axis": 2}, [steps, *unroll.shape(h)[:1], directions * unroll.hidden])
    ctx.bind(op.results[0], layer_input)
    ctx.bind(op.results[2], [unroll.op("stack", {"X": last_h}, "Y", {"axis": 0}, [cells, *unroll.shape(h)]),
                             unroll.op("stack", {"X": last_c}, "Y", {"axis": 0}, [cells, *unroll.shape(c)])])


class _Unroll:
    def __init__(self, ctx, hidden: int):
        self.ctx, self.hidden = ctx, hidden

    def shape(self, name: str) -> list[int]:
        return list(self.ctx.block.find_var(name).shape)

    def op(self, type: str, inputs: dict, out_slot: str, attrs: dict, shape: list[int], like: str | None = None):
        like = like or next(iter(inputs.values()))[0]
        name = self.ctx.namer.fresh(type)
        self.ctx.block.add_var(VarDesc(name, shape, self.ctx.block.find_var(like).dtype))
        self.ctx.emit(type, inputs, {out_slot: [name]}, attrs)
        return name

    def take(self, stacked: str, index: int) -> str:
        """stacked[index]: one step of the time axis, or one cell's initial state."""
        return self.op("slice", {"Input": [stacked]}, "Out",
                       {"axes": [0], "starts": [index], "ends": [index + 1], "decrease_axis": [0],
                        "infer_flags": [1]}, self.shape(stacked)[1:])

    def linear(self, x: str, weight: str, *biases: str) -> str:
        out = self.op("matmul_v2", {"X": [x], "Y": [weight]}, "Out", {"trans_x": False, "trans_y": True},
                      self.shape(x)[:-1] + [4 * self.hidden])
        for bias in biases:
            out = self.binary("elementwise_add", out, bias)
        return out

    def binary(self, type: str, x: str, y: str) -> str:
        return self.op(type, {"X": [x], "Y": [y]}, "Out", {"axis": -1}, self.shape(x))

    def unary(self, type: str, x: str) -> str:
        return self.op(type, {"X": [x]}, "Out", {}, self.shape(x))

    def cell_over_time(self, x: str, steps: int, weights, h: str, c: str, reverse: bool):
        w_ih, w_hh, b_ih, b_hh = weights
        projected = self.linear(x, w_ih, b_ih, b_hh)   # all steps at once: [T, B, 4H]
        hs: list[str | None] = [None] * steps
        for t in (reversed(range(steps)) if reverse else range(steps)):
            gates = self.binary("elementwise_add", self.take(projected, t), self.linear(h, w_hh))
            i, f, g, o = self.split4(gates)
            c = self.binary("elementwise_add", self.binary("elementwise_mul", self.unary("sigmoid", f), c),
                            self.binary("elementwise_mul", self.unary("sigmoid", i), self.unary("tanh", g)))
            h = self.binary("elementwise_mul", self.unary("sigmoid", o), self.unary("tanh", c))
            hs[t] = h
        return hs, h, c

    def split4(self, gates: str) -> list[str]:
        shape = self.shape(gates)
        names = [self.ctx.namer.fresh("split") for _ in range(4)]
        for name in names:
            self.ctx.block.add_var(VarDesc(name, shape[:-1] + [self.hidden], self.ctx.block.find_var(gates).dtype))
        self.ctx.emit("split", {"X": [gates]}, {"Out": names}, {"num": 4, "axis": len(shape) - 1, "sections": []})
        return names

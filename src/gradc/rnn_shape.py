"""Dims of Paddle's fused ``rnn`` op, shared by its shape inference (gradc.ops.rnn) and its numpy math
(gradc.executor.kernels.rnn_math), so the two cannot disagree; no numpy here (the compiler side uses it).
docs/rnn.md has the semantics: WeightList order, gate orders, the Reserve layout.

Shapes: Input [T, B, I] (time major); PreState / State: [h] or [h, c], each [L * D, B, H] with index
l * D + d; Out [T, B, D * H]; WeightList: every layer's and direction's W_ih [G * H, in], W_hh [G * H, H],
then every b_ih [G * H], b_hh [G * H] (G gates). Reserve [L, D, T, B, width] per-step values.
"""

from __future__ import annotations

from dataclasses import dataclass

# gates per step, and the extra per-step columns Reserve keeps besides them (LSTM: c, h; GRU: hn, h;
# a simple RNN's activated gate is h itself)
GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
EXTRA_COLUMNS = {"LSTM": 2, "GRU": 2, "RNN_TANH": 0, "RNN_RELU": 0}
MODES = tuple(GATES)


@dataclass(frozen=True)
class RnnShape:
    mode: str
    num_layers: int
    directions: int
    input_size: int
    hidden_size: int

    @property
    def gate_size(self) -> int:
        return GATES[self.mode] * self.hidden_size

    @property
    def states(self) -> int:
        return 2 if self.mode == "LSTM" else 1

    def layer_input_size(self, layer: int) -> int:
        return self.input_size if layer == 0 else self.directions * self.hidden_size

    def weight_shapes(self) -> list[tuple[int, ...]]:
        """Shapes of WeightList, in Paddle's order."""
        layers = range(self.num_layers)
        weights = [shape for layer in layers for _ in range(self.directions)
                   for shape in ((self.gate_size, self.layer_input_size(layer)), (self.gate_size, self.hidden_size))]
        return weights + [(self.gate_size,)] * (2 * self.num_layers * self.directions)

    def reserve_shape(self, steps: int, batch: int) -> tuple[int, ...]:
        width = (GATES[self.mode] + EXTRA_COLUMNS[self.mode]) * self.hidden_size
        return (self.num_layers, self.directions, steps, batch, width)

    def weight_index(self, layer: int, direction: int, k: int) -> int:
        """Position in WeightList of W_ih (k=0), W_hh (1), b_ih (2), b_hh (3) of one layer and direction."""
        first_bias = 2 * self.num_layers * self.directions if k >= 2 else 0
        return first_bias + 2 * (layer * self.directions + direction) + k % 2


def _fits(dims, expected) -> bool:
    """Same rank, and every dim known on both sides (not -1, not None) agrees."""
    return len(dims) == len(expected) and all(d < 0 or e is None or d == e for d, e in zip(dims, expected))


def shape_problems(shape: RnnShape, input_dims, pre_state_dims: list, weight_dims: list) -> list[tuple[str, str]]:
    """(slot, message) for every way the slots' shapes contradict the attributes; -1 dims are not checked.
    A slot is named ``WeightList[k]`` when one var of a list slot is wrong."""
    problems = []
    if not _fits(input_dims, [None, None, shape.input_size]):
        problems.append(("Input", f"must be [T, B, input_size={shape.input_size}], got {list(input_dims)}"))
    if len(pre_state_dims) != shape.states:
        problems.append(("PreState", f"{shape.mode} takes {shape.states} initial states, got {len(pre_state_dims)}"))
    layers_directions = shape.num_layers * shape.directions
    batch = input_dims[1] if len(input_dims) == 3 else None
    problems += [(f"PreState[{k}]", f"must be [num_layers * directions, B, hidden_size] = "
                                    f"[{layers_directions}, {'B' if batch is None or batch < 0 else batch}, "
                                    f"{shape.hidden_size}], got {list(dims)}")
                 for k, dims in enumerate(pre_state_dims)
                 if not _fits(dims, [layers_directions, batch, shape.hidden_size])]
    expected = shape.weight_shapes()
    if len(weight_dims) != len(expected):
        problems.append(("WeightList", f"{shape.mode} with {shape.num_layers} layers and {shape.directions} "
                                       f"direction(s) takes {len(expected)} tensors, got {len(weight_dims)}"))
    else:
        problems += [(f"WeightList[{k}]", f"must be {list(e)}, got {list(d)}")
                     for k, (d, e) in enumerate(zip(weight_dims, expected)) if not _fits(d, e)]
    return problems


def named(op, slot: str) -> str:
    """``WeightList[3]`` -> ``WeightList[3] (lstm_cell_1.w_1)``: the slot with the var it names."""
    name, _, index = slot.partition("[")
    args = op.input(name)
    k = int(index.rstrip("]")) if index else 0
    return f"{slot} ({args[k]})" if k < len(args) and (index or len(args) == 1) else slot

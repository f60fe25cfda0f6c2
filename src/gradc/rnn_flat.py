"""The flat weight buffer of Paddle's recurrent layers (`lstm_0.w_0`, `gru_0.w_0`): nn.LSTM / nn.GRU / nn.SimpleRNN
create one parameter of all their cells' weights and biases, and their startup's coalesce_tensor makes every cell
tensor a view into it. No op of the main program reads it: in Paddle it holds the cells' values because it shares
their memory, so after training it holds the trained ones (and paddle.static.load refuses a .pdparams without it,
while a stale one, set after the cells, overwrites them). gradc keeps values apart, so it gives the buffer no gradient
and rebuilds it from the cells where the values leave gradc (docs/rnn.md). No numpy here (the compiler side uses it).
"""

from __future__ import annotations

from .ir import Block, Program
from .shapes import numel

DROPOUT_STATE_SUFFIX = ".dropout_state__non_persistable"   # the layer names the rnn op's DropoutState by itself


def flat_buffers(block: Block) -> dict[str, list[str]]:
    """buffer -> the cell tensors it holds, in its order (the rnn op's WeightList: every weight, then every bias, as
    coalesce_tensor lays them out): for each rnn op whose layer's `<layer>.w_0` is a parameter no op reads, of their
    total size. A PIR program names the DropoutState without its layer: the one such buffer of that size."""
    rnns = [op for op in block.ops if op.type == "rnn" and op.output("DropoutState")]
    if not rnns:   # most programs: no walk of every name read
        return {}
    read = {name for op in block.ops for name in op.input_names()}
    unread = {var.name: numel(var.shape) for var in block.vars.values()
              if var.is_parameter and var.name.endswith(".w_0") and var.name not in read and var.shape is not None}
    buffers = {}
    for op in rnns:
        cells, state = op.input("WeightList"), op.output("DropoutState")[0]
        sizes = [numel(block.var(cell).shape) for cell in cells]
        if -1 in sizes:
            continue
        if state.endswith(DROPOUT_STATE_SUFFIX):
            named = [f"{state.removesuffix(DROPOUT_STATE_SUFFIX)}.w_0"]
        else:
            named = [name for name, size in unread.items() if name not in buffers]
        fits = [name for name in named if unread.get(name) == sum(sizes)]
        if len(fits) == 1:
            buffers[fits[0]] = cells
    return buffers


def program_flat_buffers(program: Program) -> dict[str, list[str]]:
    """flat_buffers of every block of ``program``."""
    return {buffer: cells for block in program.blocks for buffer, cells in flat_buffers(block).items()}

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
    total size."""
    read = {name for op in block.ops for name in op.input_names()}
    buffers = {}
    for op in block.ops:
        if op.type != "rnn" or not op.output("DropoutState"):
            continue
        layer = op.output("DropoutState")[0].removesuffix(DROPOUT_STATE_SUFFIX)
        buffer, cells = block.find_var(f"{layer}.w_0"), op.input("WeightList")
        if buffer is None or not buffer.is_parameter or buffer.name in read:   # read: the cells, if it were one
            continue
        sizes = [numel(block.var(cell).shape) for cell in cells]
        if -1 not in sizes and numel(buffer.shape) == sum(sizes):
            buffers[buffer.name] = cells
    return buffers


def program_flat_buffers(program: Program) -> dict[str, list[str]]:
    """flat_buffers of every block of ``program``."""
    return {buffer: cells for block in program.blocks for buffer, cells in flat_buffers(block).items()}

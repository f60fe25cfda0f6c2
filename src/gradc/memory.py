"""A static estimate of one step's peak memory (`gradc show --memory`), per block, from a liveness analysis
over the op order that follows the executor's own rule: a value lives from the op that writes it (a fed
input from the start) until the last op that names it (or the last that reads more than its shape: a shape
stub takes its place), unless it is persistable or fetched. At each op its outputs are new arrays while
everything it reads is still alive; the peak is the largest such moment.

Parameters and optimizer state (the other persistable vars) live throughout. Activations kept for the
backward are forward values some backward op reads: they are what training costs over inference. A batch's
feed shapes fix the dims they and the ops' inference from them give (memory_shapes); other unknown dims (-1) take
the batch size; vars of unknown shape or of no array type (tensor arrays, scopes) count nothing. A sub-block is
estimated as if it ran once, on its own."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .bfloat16 import STORAGE
from .executor.liveness import deaths, referenced_names
from .ir import EMPTY_VAR, Block, Program, VarType, grad_name
from .ir.types import FLOAT8_DTYPES, NUMPY_DTYPE_NAMES
from .memory_graph import graph_workspace
from .memory_shapes import fed_shapes, rnn_buffer_shapes
from .pairing import BACKWARD, op_kinds
from .verify_shapes import carried_shapes

ARRAY_TYPES = (VarType.DENSE_TENSOR, VarType.SELECTED_ROWS)
# A kernel's own temporaries at their peak, in units of what it writes, for gradc's numpy kernels that make
# more than about one output's worth (gelu's erf series runs in float64). Measured with tracemalloc on the
# MLP, CNN and transformer fixtures: benchmarks/memory_estimate.py prints them.
SCRATCH = {"gelu": 13, "gelu_grad": 12, "pool2d": 8, "pool2d_grad": 4.3, "batch_norm_grad": 4,
           "layer_norm_grad": 3.8, "softmax_with_cross_entropy": 3, "softmax_with_cross_entropy_grad": 3.5,
           "softmax": 2.5, "layer_norm": 2, "matmul_v2_grad": 1.9}
# The fused rnn kernels' temporaries (input projections, gate grads) in units of one layer's Reserve: measured with
# tracemalloc on a 2-layer LSTM and a GRU at T=500, B=32 (docs/tools.md, a sequence modeller's week); the larger kept.
RESERVE_SCRATCH = {"rnn": 1.3, "rnn_grad": 3.4}


@dataclass
class BlockMemory:
    block: int
    ops: int
    parameters: int = 0
    optimizer_state: int = 0
    inputs: int = 0                  # fed: read, never written in the block, not persistable
    activations: int = 0             # forward values a backward op reads
    peak_temporaries: int = 0        # the most the values ops write take at once
    peak_op: int = -1
    unknown: list[str] = field(default_factory=list)   # vars whose size cannot be told
    timeline: list[tuple[int, int]] = field(default_factory=list)   # per op: values alive before it, its peak

    @property
    def peak(self) -> int:
        return self.parameters + self.optimizer_state + self.inputs + self.peak_temporaries


def var_bytes(block: Block, name: str, batch_size: int, shapes: dict | None = None) -> int | None:
    """The size of a var's value, by ``shapes`` (memory_shapes) else its declaration, unknown dims taking
    ``batch_size``; None when it cannot be told."""
    var = block.visible_var(name)
    if var is None or var.type not in ARRAY_TYPES or var.shape is None:
        return None
    if var.dtype == VarType.BF16 or var.dtype in FLOAT8_DTYPES:   # held as float32 (gradc.bfloat16, gradc.float8)
        itemsize = STORAGE.itemsize
    elif var.dtype in NUMPY_DTYPE_NAMES:
        itemsize = np.dtype(NUMPY_DTYPE_NAMES[var.dtype]).itemsize
    else:
        return None
    count = 1
    for dim in shapes.get(name, var.shape) if shapes else var.shape:
        count *= batch_size if dim < 0 else dim
    return count * itemsize


def estimate_block(block: Block, batch_size: int, keep: frozenset[str] = frozenset(),
                   feed: dict[str, tuple[int, ...]] | None = None) -> BlockMemory:
    program = block.program
    result = BlockMemory(block.idx, len(block.ops))
    sizes: dict[str, int] = {}
    # a declaration Paddle made up (affine_grid's 5-D grid of a 2-D one), and its gradient's copy of it, sized by the
    # shape the value has
    carried, fed = carried_shapes(block), fed_shapes(block, feed) if feed else {}
    shapes = {**{grad_name(name): shape for name, shape in {**carried, **fed}.items()}, **carried, **fed}
    shapes.update(rnn_buffer_shapes(block, shapes, batch_size))

    def size(name: str) -> int:
        if name not in sizes:
            found = var_bytes(block, name, batch_size, shapes)
            if found is None and name not in result.unknown and name != EMPTY_VAR:
                result.unknown.append(name)
            sizes[name] = found or 0
        return sizes[name]

    last_use: dict[str, int] = {}
    written: set[str] = set()
    for idx, op in enumerate(block.ops):
        for name in referenced_names(program, op):
            last_use[name] = idx
        written.update(op.output_names())
    for idx, names in enumerate(deaths(block, keep)[1]):   # only their shape is read later: stubs from here on
        for name in names:
            last_use[name] = idx
    persistent = {name for name in last_use if (var := block.visible_var(name)) is not None and var.persistable}
    for name in sorted(persistent):
        var = block.visible_var(name)
        if var.type in ARRAY_TYPES:
            if var.is_parameter:
                result.parameters += size(name)
            else:
                result.optimizer_state += size(name)
    fed = {name for op in block.ops for name in op.input_names()} - written - persistent - {EMPTY_VAR}
    fed |= {name for op in block.ops if op.type == "feed" for name in op.output_names()}   # a saved model's inputs
    result.inputs = sum(size(name) for name in fed)   # the caller holds its feed for the whole run
    last_users: dict[int, list[str]] = {}   # op index -> the names it is the last to use
    for name, idx in last_use.items():
        last_users.setdefault(idx, []).append(name)
    live: dict[str, int] = {}
    current = 0
    for idx, op in enumerate(block.ops):
        outputs = [n for n in dict.fromkeys(op.output_names()) if n != EMPTY_VAR]
        made = sum(size(n) for n in outputs)
        moment = current + made + _workspace(block, op, made, batch_size, shapes)   # the replaced arrays not yet freed
        result.timeline.append((current, moment))
        if moment > result.peak_temporaries:
            result.peak_temporaries, result.peak_op = moment, idx
        for name in outputs:
            if name not in persistent and name not in fed:
                current += size(name) - live.get(name, 0)
                live[name] = size(name)
        for name in [*last_users.get(idx, ()), *outputs]:   # what this op uses last; an output no op reads dies now
            if name in live and last_use.get(name, -1) <= idx and name not in keep:
                current -= live.pop(name)
    result.activations = _kept_for_backward(block, size)
    return result


def _dims(block: Block, name: str, batch_size: int, shapes: dict) -> list[int] | None:
    var = block.visible_var(name)
    if var is None or var.shape is None:
        return None
    return [batch_size if d < 0 else d for d in shapes.get(name, var.shape)]


def _workspace(block: Block, op, made: int, batch_size: int, shapes: dict) -> int:
    """A kernel's own temporaries. A convolution (a Filter input) copies its padded input's windows into
    columns, [C * prod(kernel), N * prod(out)], and its grad also lays dOut out for the matmul; other
    kernels make SCRATCH times what they write (their own measured factor, else 1); the rnn kernels, whose grad
    writes little, RESERVE_SCRATCH times one layer's Reserve; the graph kernels, by their edges (memory_graph)."""
    graph = graph_workspace(op, lambda name: _dims(block, name, batch_size, shapes),
                            lambda name: var_bytes(block, name, batch_size, shapes))
    if graph is not None:
        return graph
    reserve = (op.output if op.type == "rnn" else op.input)("Reserve") if op.type in RESERVE_SCRATCH else None
    if reserve:
        layer = (var_bytes(block, reserve[0], batch_size, shapes) or 0) // max(int(op.attrs.get("num_layers", 1)), 1)
        return int(layer * RESERVE_SCRATCH[op.type])
    filters, outputs = op.input("Filter"), op.output("Output") or op.input("Output@GRAD")
    if filters and outputs:
        kernel, out = _dims(block, filters[0], batch_size, shapes), _dims(block, outputs[0], batch_size, shapes)
        source = op.input("Input")
        if kernel and out and len(kernel) == len(out) >= 3 and source:
            itemsize = (var_bytes(block, filters[0], batch_size, shapes) or 0) // max(math.prod(kernel), 1)
            cols = out[0] * math.prod(out[2:]) * kernel[1] * int(op.attrs.get("groups", 1)) * math.prod(kernel[2:])
            padded = var_bytes(block, source[0], batch_size, shapes) or 0
            grad_layout = (var_bytes(block, outputs[0], batch_size, shapes) or 0) if op.input("Output@GRAD") else 0
            return cols * itemsize + padded + grad_layout
    return int(made * SCRATCH.get(op.type, 1.0))


def _kept_for_backward(block: Block, size) -> int:
    """Bytes of the non-persistable values forward ops write and backward ops read."""
    kinds = op_kinds(block)
    forward_values, kept = set(), set()
    for idx, op in enumerate(block.ops):
        if kinds[idx] == BACKWARD:
            kept.update(n for n in op.input_names() if n in forward_values)
        else:
            forward_values.update(op.output_names())
    return sum(size(name) for name in kept if not (var := block.visible_var(name)) or not var.persistable)


def estimate(program: Program, batch_size: int = 1, fetch: frozenset[str] = frozenset(),
             feed: dict[str, tuple[int, ...]] | None = None) -> list[BlockMemory]:
    """Per block; ``feed`` (name -> shape, a batch's) fixes block 0's fed dims and what follows from them."""
    return [estimate_block(block, batch_size, *((fetch, feed) if block.idx == 0 else (frozenset(), None)))
            for block in program.blocks]


def human(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return str(count)


def memory_report(blocks: list[BlockMemory], batch_size: int, program: Program, fed_from: str | None = None) -> str:
    dims = f"the feed's dims from {fed_from}, other" if fed_from else "unknown"
    lines = [f"static peak-memory estimate of one step, {dims} dims = batch size {batch_size}"]
    for mem in blocks:
        at = (f" at op {mem.peak_op} ({program.blocks[mem.block].ops[mem.peak_op].type})"
              if mem.peak_op >= 0 else "")
        lines += [f"block {mem.block} ({mem.ops} ops):",
                  f"  parameters             {human(mem.parameters):>10}",
                  f"  optimizer state        {human(mem.optimizer_state):>10}",
                  f"  fed inputs             {human(mem.inputs):>10}",
                  f"  kept for the backward  {human(mem.activations):>10}",
                  f"  peak of values written {human(mem.peak_temporaries):>10}{at}",
                  f"  peak                   {human(mem.peak):>10}"]
        if mem.unknown:
            shown = ", ".join(mem.unknown[:5]) + (f" and {len(mem.unknown) - 5} more" if len(mem.unknown) > 5 else "")
            lines.append(f"  (size unknown, counted as 0: {shown})")
    return "\n".join(lines)

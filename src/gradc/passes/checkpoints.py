"""Where to cut a training program's forward ops for recomputation (gradc.passes.recompute).

The forward ops of block 0 (those before the first backward op) are cut into segments after chosen ops.
A var a later segment reads is kept (a checkpoint); the vars a segment makes that only the backward reads
are dropped after the forward and recomputed from the checkpoints just before the backward needs them. So
the peak holds the checkpoints and one segment's activations instead of every activation.

``auto_cuts`` picks the cuts: for a bound B on a segment's activation bytes it cuts greedily (each segment
as long as it stays under B) and keeps the bound that gives the smallest checkpoints + B, the sqrt(N) rule
of Chen et al. (2016) on a chain of N equal layers; then, if recomputing every segment costs more than
``budget`` times the forward, it keeps the activations of the segments that save the least memory per
unit of recomputation instead.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass, field

from .. import registry
from ..ir import Block, OpDesc, roles
from ..ir.types import NUMPY_DTYPE_NAMES

# ops that draw random numbers: re-running one would not give the values the backward saw
RANDOM_OPS = {"rrelu", "gumbel_softmax", "randperm", "fractional_max_pool2d", "fractional_max_pool3d", "bernoulli",
              "multinomial", "poisson", "binomial", "standard_gamma", "dirichlet", "exponential",
              "graph_sample_neighbors", "weighted_sample_neighbors"}
# ops whose cost grows with a contraction, not just their output: output size times this
CONTRACTIONS = {"mul": ("Y", 0), "matmul_v2": ("Y", -2), "matmul": ("Y", -2), "bmm": ("Y", -2)}


def is_backward(op: OpDesc) -> bool:
    return roles.has_role(op, roles.BACKWARD)


# ops that update running statistics in place: their other outputs do not depend on the update (training
# normalises with the batch's statistics; the global modes leave the running ones unchanged)
STATISTICS_OPS = {"batch_norm"}


def recomputable(op: OpDesc) -> bool:
    """Whether running the op again gives the same values: no sub-block, no random draw (dropout is
    recomputed from its saved Mask), no input it overwrites."""
    opdef = registry.get(op.type)
    if opdef is None or op.block_refs() or op.type in RANDOM_OPS:
        return False
    if set(op.output_names()) & set(op.input_names()) and op.type not in STATISTICS_OPS:
        return False
    return "seed" not in opdef.attrs or op.type == "dropout"


@dataclass
class Forward:
    """The forward ops of a training program and what the backward reads of them."""

    block: Block
    ops: list[OpDesc]                      # block.ops[:first_backward]
    first_backward: int
    producer: dict[str, int] = field(default_factory=dict)        # var -> the forward op writing it
    last_forward_read: dict[str, int] = field(default_factory=dict)
    backward_reads: set[str] = field(default_factory=set)         # forward values the backward ops read
    always_kept: set[str] = field(default_factory=set)            # never recomputed

    def nbytes(self, name: str) -> int:
        """The declared size of a var (an unknown dim counts 1: sizes only compare with each other)."""
        var = self.block.find_var(name)
        if var is None or var.shape is None or var.dtype not in NUMPY_DTYPE_NAMES:
            return 0
        itemsize = {"float64": 8, "int64": 8, "float16": 2, "bfloat16": 2, "uint8": 1, "int8": 1,
                    "bool": 1}.get(NUMPY_DTYPE_NAMES[var.dtype], 4)
        return itemsize * math.prod(max(d, 1) for d in var.shape)

    def cost(self, idx: int) -> int:
        """About the arithmetic of forward op ``idx``: its output elements, times the contraction of products."""
        op = self.ops[idx]
        out = sum(self.nbytes(name) for name in op.output_names())
        slot, axis = CONTRACTIONS.get(op.type, (None, 0))
        if op.attrs.get("trans_y") or op.attrs.get("transpose_Y"):
            axis = -1
        var = self.block.find_var(op.input(slot)[0]) if slot and op.input(slot) else None
        if var is None or not var.shape:
            return out
        return out * abs(var.shape[max(axis, -len(var.shape))])   # a vector Y contracts over its only dim

    def produced_needed(self, idx: int) -> list[str]:
        """The outputs of forward op ``idx`` that the backward reads and that are not always kept."""
        return [n for n in self.ops[idx].output_names() if n in self.backward_reads and n not in self.always_kept
                and self.producer.get(n) == idx]


def analyse(block: Block) -> Forward:
    first = next((i for i, op in enumerate(block.ops) if is_backward(op)), len(block.ops))
    fwd = Forward(block, block.ops[:first], first)
    writes: dict[str, int] = {}
    for idx, op in enumerate(fwd.ops):
        for name in op.input_names():
            fwd.last_forward_read[name] = idx
        for name in op.output_names():
            writes[name] = writes.get(name, 0) + 1
            fwd.producer[name] = idx
    rewritten = {name for name, count in writes.items() if count > 1}
    for op in fwd.ops:   # an op reading a var written twice may have seen the other value
        if not recomputable(op) or rewritten & set(op.input_names()):
            fwd.always_kept.update(op.output_names())
        elif op.type == "dropout":
            fwd.always_kept.update(op.output("Mask"))
    for op in block.ops[first:]:
        fwd.backward_reads.update(op.input_names())
        for _, sub in op.block_refs():   # a backward block reads forward values by name: keep those
            fwd.always_kept.update(_names_in(block.program, sub))
    fwd.always_kept |= rewritten
    fwd.always_kept.update(name for name in fwd.producer if _persistable(block, name))
    return fwd


def _names_in(program, block_idx: int) -> set[str]:
    names = set()
    for op in program.blocks[block_idx].ops:
        names.update(op.input_names())
        for _, sub in op.block_refs():
            names |= _names_in(program, sub)
    return names


def _persistable(block: Block, name: str) -> bool:
    var = block.find_var(name)
    return var is not None and bool(var.persistable)


def crossing(fwd: Forward, cuts: list[int]) -> set[str]:
    """Vars made by the ops up to a cut that a forward op after it reads: the cuts must keep them. One sweep for
    all cuts: a var crosses one when the first cut at or after its producer comes before its last reader."""
    cuts = sorted(cuts)
    kept = set()
    for name, idx in fwd.producer.items():
        at = bisect.bisect_left(cuts, idx)
        if at < len(cuts) and cuts[at] < fwd.last_forward_read.get(name, -1) and name not in fwd.always_kept:
            kept.add(name)
    return kept


def segments(fwd: Forward, cuts: list[int]) -> list[range]:
    bounds = [-1, *sorted(set(cuts)), len(fwd.ops) - 1]
    return [range(a + 1, b + 1) for a, b in zip(bounds, bounds[1:]) if b > a]


def auto_plan(fwd: Forward, budget: float) -> tuple[list[int], set[int]]:
    """The cuts that give the smallest peak of checkpoints + one segment, and the segments to recompute
    within the budget."""
    n = len(fwd.ops)
    sizes = [sum(fwd.nbytes(name) for name in fwd.produced_needed(i)) for i in range(n)]
    total = sum(sizes)
    if total == 0:
        return [], set()
    kept = _crossing_bytes(fwd)
    best: tuple[int, list[int]] | None = None
    prefix = [0, *itertools.accumulate(sizes)]
    counts = {round(1.1 ** e) for e in range(int(math.log(n, 1.1)) + 2)}   # segment counts to try
    for bound in sorted({max(total // k, max(sizes)) for k in counts if k >= 1}):
        cuts, start = [], 0
        for i in range(1, len(sizes)):
            if prefix[i + 1] - prefix[start] > bound:   # cut where the fewest bytes cross (a block boundary)
                cut = min(range(start, i), key=lambda p: (kept[p], -p))
                cuts.append(cut)
                start = cut + 1
        peak = sum(kept[c] for c in cuts) + max(prefix[r.stop] - prefix[r.start] for r in segments(fwd, cuts))
        if best is None or peak < best[0]:
            best = (peak, cuts)
    cuts = best[1]
    return cuts, _within_budget(fwd, segments(fwd, cuts), sizes, budget)


def _crossing_bytes(fwd: Forward) -> list[int]:
    """The bytes a cut after each forward op keeps (crossing(), summed for every cut in one sweep)."""
    delta = [0] * (len(fwd.ops) + 1)
    for name, idx in fwd.producer.items():
        last = fwd.last_forward_read.get(name, -1)
        if last > idx and name not in fwd.always_kept:
            delta[idx] += fwd.nbytes(name)
            delta[last] -= fwd.nbytes(name)
    return list(itertools.accumulate(delta))[:len(fwd.ops)]


def _within_budget(fwd: Forward, parts: list[range], sizes: list[int], budget: float) -> set[int]:
    """The segments to recompute: all but the last (its backward runs first, right after the forward),
    less those that recompute the most per byte they save, until the recomputation costs at most ``budget``
    times the forward."""
    forward_cost = sum(fwd.cost(i) for i in range(len(fwd.ops))) or 1
    chosen = set(range(len(parts) - 1))
    spent = sum(fwd.cost(i) for k in chosen for i in parts[k])
    for k in sorted(chosen, key=lambda k: sum(sizes[i] for i in parts[k]) / max(sum(fwd.cost(i) for i in parts[k]), 1)):
        if spent <= budget * forward_cost:
            break
        spent -= sum(fwd.cost(i) for i in parts[k])
        chosen.discard(k)
    return chosen

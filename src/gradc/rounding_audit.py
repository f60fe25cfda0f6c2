"""Where a float32, float16 or bfloat16 program loses precision (`gradc precision`): the program runs as written and
widened to float64 (passes.Float64Pass) on the same values, and every op's outputs are compared between the two.
An op's error is its outputs' distance from the float64 run, relative to the largest float64 value; its inputs'
error is the largest of the ops that wrote them; so an op whose error is far above its inputs' is where rounding
grew. Whether that op's kernel rounds badly or the op amplifies what it was given (a variance of a few values, a
difference of near values) is told by running it alone in float64 on the values it was given: its own error."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .errors import GradcError
from .executor import Executor, Scope
from .executor.randomness import seed as seed_draws
from .executor.selected_rows import as_dense
from .float64_copies import float64_copy, widened
from .ir import Program, VarType
from .passes import Float64Pass

LOW_PRECISION = {VarType.FP32: np.finfo(np.float32).eps, VarType.FP16: np.finfo(np.float16).eps,
                 VarType.BF16: 2.0 ** -7}
DTYPE_NAMES = {VarType.FP32: "float32", VarType.FP16: "float16", VarType.BF16: "bfloat16"}


@dataclass
class OpRounding:
    index: int              # in block 0
    type: str
    var: str                # its output with the largest error
    error: float            # that output's distance from the float64 run, relative to its largest value
    inputs: float           # the largest error of the values it read (0 for feeds and parameters)
    own: float | None = None   # the op alone in float64 on the values it read: its kernel's own rounding
    eps: float = 0.0        # the output's machine epsilon
    dtype: str = ""         # the output's: an AMP program mixes float16 (or bfloat16) ops with float32 ones

    @property
    def growth(self) -> float:
        """How much the op raised the error, in units of the larger of its inputs' error and eps."""
        return self.error / max(self.inputs, self.eps)


def _relative(low, wide, dtype: int) -> float | None:
    # a sparse table gradient (SelectedRows) compared as the table it stands for
    low, wide = np.asarray(as_dense(widened(low, dtype == VarType.BF16))), np.asarray(as_dense(wide))
    if low.shape != wide.shape or wide.dtype.kind != "f" or wide.size == 0:
        return None
    agree = (low == wide) | (np.isnan(low) & np.isnan(wide))   # the same infinity too: a causal mask's -inf
    with np.errstate(invalid="ignore"):
        distance = np.abs(np.where(agree, 0.0, low - wide))
    if not np.isfinite(distance).all():
        return float("inf")
    finite = np.abs(wide[np.isfinite(wide)])
    scale = finite.max() if finite.size else 0.0
    return float(distance.max() / scale) if scale else float(distance.max())


def _low_outputs(program: Program) -> dict[str, tuple[list[int], int]]:
    """Each low-precision var ops of block 0 write: the ops writing it, in order, and its dtype."""
    block, written = program.global_block, {}
    for index, op in enumerate(block.ops):
        for name in op.output_names():
            var = block.find_var(name)
            if var is not None and var.dtype in LOW_PRECISION:
                written.setdefault(name, ([], var.dtype))[0].append(index)
    return written


def _reads(op, index: int, written: Mapping, fetched: Mapping) -> list[str] | None:
    """The vars an op read that an earlier op wrote (the others it read as fed or given: a parameter its optimizer
    updates later, say), or None where the value it read of one is not the one fetched (written again: an in-place
    clip of a gradient, say) or none was (a branch's output)."""
    reads = []
    for name in op.input_names():
        writers = [i for i in written.get(name, ((), None))[0] if i != index]
        if any(i < index for i in writers):
            if len(writers) > 1 or name not in fetched:
                return None
            reads.append(name)
    return reads


def _run(program: Program, feed: Mapping, params: Mapping, names: list[str], seed: int) -> dict:
    scope = Scope()
    for name, value in params.items():
        scope[name] = value
    seed_draws(seed)   # random ops draw alike in both runs where the draw does not hang on the dtype
    return dict(zip(names, Executor().run(program, feed=dict(feed), fetch_list=names, scope=scope)))


def audit(program: Program, feed: Mapping, params: Mapping, top: int = 15, seed: int = 0) -> list[OpRounding]:
    """The ``top`` ops of block 0 where the error grew most, the largest growth first, each with its own error. An
    op whose output another op overwrites, or that read a value overwritten later, is left out: only the last
    value of a var is fetched."""
    written, ops = _low_outputs(program), program.global_block.ops
    # a branch's outputs may have no value (the branch not taken): their error shows in the ops that read them
    names = [name for name, (writers, _) in written.items() if len(writers) == 1 and not ops[writers[0]].block_refs()]
    low = _run(program, feed, params, names, seed)
    wide_program, wide_feed, wide_params = float64_copy(program, feed, params)
    wide = _run(wide_program, wide_feed, wide_params, names, seed)
    error = {name: e for name in names if (e := _relative(low[name], wide[name], written[name][1])) is not None}
    rows: dict[int, OpRounding] = {}
    for name, e in error.items():
        (index,), dtype = written[name]
        op = ops[index]
        reads = _reads(op, index, written, low)
        if reads is not None and (index not in rows or e > rows[index].error):
            given = max((error.get(n, 0.0) for n in reads), default=0.0)
            rows[index] = OpRounding(index, op.type, name, e, given, eps=float(LOW_PRECISION[dtype]),
                                       dtype=DTYPE_NAMES[dtype])
    worst = sorted(rows.values(), key=lambda row: -row.growth)[:top]
    for row in worst:
        row.own = _own_error(program, row.index, low, feed, params, written)
    return worst


def _own_error(program: Program, index: int, low: Mapping, feed: Mapping, params: Mapping,
               written: Mapping[str, tuple[int, int]]) -> float | None:
    """The op alone, widened, on the low run's values of what it read: its outputs' distance from the low run's."""
    op = program.global_block.ops[index]
    if op.block_refs():
        return None   # control flow runs blocks of its own: its error is its ops'
    alone = program.clone()
    alone.global_block.ops = [alone.global_block.ops[index]]
    alone.mark_changed()
    Float64Pass()(alone)
    values = {**params, **feed, **{name: low[name] for name in _reads(op, index, written, low)}}
    given = {name: widened(values[name]) for name in op.input_names() if name in values}
    outputs = [name for name in op.output_names() if name in low]
    try:
        again = _run(alone, {}, given, outputs, 0)
        if _draws(again, _run(alone, {}, given, outputs, 1)):
            return None   # a random op alone draws afresh: its outputs' distance would be the draws', not rounding
    except GradcError:   # an op that cannot run alone (one reading a tensor array, say) has no figure
        return None
    errors = [e for name in outputs if (e := _relative(low[name], again[name], written[name][1])) is not None]
    return max(errors, default=None)


def _draws(first: Mapping, second: Mapping) -> bool:
    """Whether two runs of an op seeded differently gave different outputs: it draws randomness (dropout's mask, a
    sampler's noise) the low run drew at another point of the stream."""
    return any(not np.array_equal(*(np.asarray(as_dense(run[name])) for run in (first, second)),
                                  equal_nan=np.asarray(as_dense(first[name])).dtype.kind in "fc")
               for name in first)

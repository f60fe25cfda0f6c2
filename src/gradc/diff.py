"""A structural diff of two programs (`gradc diff`), block by block: vars matched by name, ops aligned by
their order and type (difflib over the op types; a large block anchored first, align_ops), then each matched
pair compared slot by slot and attribute by attribute. Attributes can be left out by name or glob
(``--ignore-attr 'op_*'``).

What the comparison counts as the same: an attribute one op leaves out and the other sets to the value the
op's definition (or FALLBACK_DEFAULTS: the op's role, Paddle's extra attributes) gives by default (a kernel reads
the same), an unset lod_level and 0 (the wire default), and, unless asked for, Paddle's bookkeeping attributes
(BOOKKEEPING: where the op was built, backend switches)."""

from __future__ import annotations

import bisect
import difflib
import fnmatch
import itertools
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

from . import registry
from .ir import Block, OpDesc, Program, VarDesc, VarType, dtype_name
from .listing import BOOKKEEPING, attr_text

VAR_FIELDS = ("type", "dtype", "shape", "lod_level", "persistable", "is_parameter", "stop_gradient",
              "need_check_feed")


def _field_text(field: str, value) -> str:
    if value is None:
        return "unset"
    if field == "dtype":
        return dtype_name(value)
    if field == "type":
        return VarType(value).name if value in VarType._value2member_map_ else str(value)
    return str(value)


def _var_text(var: VarDesc) -> str:
    return f"{dtype_name(var.dtype) if var.dtype is not None else VarType(var.type).name}{var.shape or ''}"


def op_text(op: OpDesc) -> str:
    ins = ", ".join(f"{slot}={args}" for slot, args in op.inputs.items() if args)
    outs = ", ".join(f"{slot}={args}" for slot, args in op.outputs.items() if args)
    return f"{op.type}({ins}) -> {outs}"


class Difference(NamedTuple):
    """One difference: what `gradc diff` prints as a line, and where (`gradc diff --json` gives the fields)."""
    block: int
    kind: str                     # "block", "var" or "op"
    change: str                   # "added", "removed" or "changed"
    line: str                     # as gradc diff prints it
    var: str | None = None
    op: int | None = None         # the op's index in the first program (removed or changed)
    op_second: int | None = None  # ... in the second (added or changed)
    op_type: str | None = None    # the first program's op type (the second's for an added op)


_ABSENT = object()
# the defaults of attributes an op's definition does not give: an op without a role reads as a forward op with no
# role vars (how Paddle reads one, and how PIR files keep none); Paddle's extra attributes (op_compat.yaml), which
# its legacy optimizers' ops carry and gradc's leave out: oneDNN's int8 scales of an elementwise op, cuDNN's switch
# (ClipGradByGlobalNorm's multiplies and sqrt)
FALLBACK_DEFAULTS = {"op_role": 0, "op_role_var": [],
                     "Scale_x": 1.0, "Scale_y": 1.0, "Scale_out": 1.0, "use_cudnn": False}


class Differ:
    def __init__(self, ignore_attrs: Iterable[str] = (), bookkeeping: bool = False):
        self.ignore = list(ignore_attrs) + ([] if bookkeeping else list(BOOKKEEPING))

    def ignored(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.ignore)

    def var_changes(self, a: VarDesc, b: VarDesc) -> list[str]:
        """Fields that differ; an unset flag or lod_level reads as its wire default (False, 0)."""
        def value(var: VarDesc, field: str):
            raw = getattr(var, field)
            return (raw or 0) if field == "lod_level" else bool(raw) if field in VAR_FIELDS[4:] else raw

        return [f"{field} {_field_text(field, getattr(a, field))} -> {_field_text(field, getattr(b, field))}"
                for field in VAR_FIELDS if value(a, field) != value(b, field)]

    def op_changes(self, a: OpDesc, b: OpDesc) -> list[str]:
        changes = []
        for kind, slots_a, slots_b in (("input", a.inputs, b.inputs), ("output", a.outputs, b.outputs)):
            for slot in dict.fromkeys([*slots_a, *slots_b]):
                args_a, args_b = slots_a.get(slot, []), slots_b.get(slot, [])
                if args_a != args_b:
                    changes.append(f"{kind} {slot}: {args_a} -> {args_b}")
        defaults = registry.OPS[a.type].attrs if a.type == b.type and a.type in registry.OPS else {}
        for name in dict.fromkeys([*a.attrs, *b.attrs]):
            if self.ignored(name):
                continue
            default = defaults.get(name, FALLBACK_DEFAULTS.get(name, _ABSENT))
            if a.attrs.get(name, default) == b.attrs.get(name, default):
                continue
            text_a = attr_text(a.attrs[name], a.attr_types[name]) if name in a.attrs else "absent"
            text_b = attr_text(b.attrs[name], b.attr_types[name]) if name in b.attrs else "absent"
            changes.append(f"attr {name}: {text_a} -> {text_b}")
        return changes

    def block_differences(self, idx: int, a: Block, b: Block) -> list[Difference]:
        found = []
        for name in sorted(a.vars.keys() - b.vars.keys()):
            found.append(Difference(idx, "var", "removed", f"  - var {name} : {_var_text(a.vars[name])}", name))
        for name in sorted(b.vars.keys() - a.vars.keys()):
            found.append(Difference(idx, "var", "added", f"  + var {name} : {_var_text(b.vars[name])}", name))
        for name in sorted(a.vars.keys() & b.vars.keys()):
            changes = self.var_changes(a.vars[name], b.vars[name])
            if changes:
                found.append(Difference(idx, "var", "changed", f"  ~ var {name}: {'; '.join(changes)}", name))
        for tag, i0, i1, j0, j1 in align_ops(a.ops, b.ops):
            if tag == "equal" or (tag == "replace" and i1 - i0 == j1 - j0):
                for i, j in zip(range(i0, i1), range(j0, j1)):
                    op_a, op_b = a.ops[i], b.ops[j]
                    changes = self.op_changes(op_a, op_b) if op_a.type == op_b.type else [
                        f"type {op_a.type} -> {op_b.type}", *self.op_changes(op_a, op_b)]
                    if changes:
                        found.append(Difference(idx, "op", "changed", f"  ~ op {_where(i, j)} {op_a.type}: "
                                                + "; ".join(changes), op=i, op_second=j, op_type=op_a.type))
                continue
            found += [Difference(idx, "op", "removed", f"  - op {i} {op_text(a.ops[i])}", op=i, op_type=a.ops[i].type)
                      for i in range(i0, i1)]
            found += [Difference(idx, "op", "added", f"  + op {j} {op_text(b.ops[j])}", op_second=j,
                                 op_type=b.ops[j].type) for j in range(j0, j1)]
        return found


# difflib aligns by type in time quadratic in the ops compared, as it has few distinct elements to go by: up to this
# many pairs of ops (about 0.05 s) in a gap between anchors (align_ops).
MAX_PAIRS = 1 << 20


def align_ops(a: list[OpDesc], b: list[OpDesc]) -> list[tuple[str, int, int, int, int]]:
    """difflib-style opcodes aligning two op lists by type, first anchored on ops equal in type and slots, the same
    op in all but attributes (by type alone, a LoRA layer's bias add paired with its adapter's add after it; and
    difflib took 5-7 s for a 9,000-op MLP and its training program):
    the runs of them common to both ends, then those found once on each side (the longest run in the same order,
    as patience diff takes). Between anchors ops pair by type; a gap still too large shows as removed and added
    ops (paired up where both sides have as many)."""
    types_a, types_b = [op.type for op in a], [op.type for op in b]
    opcodes: list[tuple[str, int, int, int, int]] = []
    keys_a, keys_b = [_key(op) for op in a], [_key(op) for op in b]
    i0, i1, j0, j1, tail = _common_ends(keys_a, keys_b, 0, len(a), 0, len(b), opcodes)
    for i, j in [*_unique_anchors(keys_a, keys_b, i0, i1, j0, j1), (i1, j1)]:
        k0, k1, l0, l1, inner_tail = _common_ends(keys_a, keys_b, i0, i, j0, j, opcodes)
        _by_type(types_a, types_b, k0, k1, l0, l1, opcodes)
        opcodes += inner_tail
        if i < i1:
            opcodes.append(("equal", i, i + 1, j, j + 1))
        i0, j0 = i + 1, j + 1
    return opcodes + tail


def _key(op: OpDesc) -> str:
    return f"{op.type} {op.inputs!r} {op.outputs!r}"   # a str: built by C code, its hash kept


def _common_ends(a: list, b: list, i0: int, i1: int, j0: int, j1: int, opcodes: list) -> tuple:
    """Appends the common run at the start as 'equal'; returns the range left and the common run at the end."""
    start = 0
    while i0 + start < i1 and j0 + start < j1 and a[i0 + start] == b[j0 + start]:
        start += 1
    if start:
        opcodes.append(("equal", i0, i0 + start, j0, j0 + start))
    i0, j0 = i0 + start, j0 + start
    end = 0
    while i1 - end > i0 and j1 - end > j0 and a[i1 - end - 1] == b[j1 - end - 1]:
        end += 1
    return i0, i1 - end, j0, j1 - end, [("equal", i1 - end, i1, j1 - end, j1)] if end else []


def _unique_anchors(a: list, b: list, i0: int, i1: int, j0: int, j1: int) -> list[tuple[int, int]]:
    """(i, j) of the keys found once in a[i0:i1] and once in b[j0:j1], the longest run increasing in both."""
    count_a, count_b = Counter(a[i0:i1]), Counter(b[j0:j1])
    at_b = {key: j for j, key in enumerate(b[j0:j1], j0) if count_b[key] == 1}
    pairs = [(i, at_b[key]) for i, key in enumerate(a[i0:i1], i0) if count_a[key] == 1 and key in at_b]
    ends, ends_at, back = [], [], []   # patience sorting: ends[k], the least j ending an increasing run of k + 1
    for at, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(ends, j)
        back.append(ends_at[k - 1] if k else -1)
        ends[k:k + 1], ends_at[k:k + 1] = [j], [at]
    run, at = [], ends_at[-1] if ends_at else -1
    while at >= 0:
        run.append(pairs[at])
        at = back[at]
    return run[::-1]


def _by_type(a: list[str], b: list[str], i0: int, i1: int, j0: int, j1: int, opcodes: list) -> None:
    tail = []
    if (i1 - i0) * (j1 - j0) > MAX_PAIRS:   # too many for difflib: first the ends whose types agree pair up
        i0, i1, j0, j1, tail = _common_ends(a, b, i0, i1, j0, j1, opcodes)
    if (i1 - i0) * (j1 - j0) > MAX_PAIRS:
        opcodes.append(("replace", i0, i1, j0, j1))
    elif i1 > i0 or j1 > j0:
        matcher = difflib.SequenceMatcher(None, a[i0:i1], b[j0:j1], autojunk=False)
        opcodes += [(tag, i0 + k0, i0 + k1, j0 + l0, j0 + l1) for tag, k0, k1, l0, l1 in matcher.get_opcodes()]
    opcodes += tail


def _where(i: int, j: int) -> str:
    return str(i) if i == j else f"{i}/{j}"


def differences(a: Program, b: Program, ignore_attrs: Iterable[str] = (),
                bookkeeping: bool = False) -> list[Difference]:
    """Every difference, block by block (a block's own first); empty when the programs are the same.
    ``bookkeeping`` compares Paddle's bookkeeping attributes too."""
    differ = Differ(ignore_attrs, bookkeeping)
    found = []
    for idx in range(max(len(a.blocks), len(b.blocks))):
        if idx >= len(b.blocks):
            found.append(Difference(idx, "block", "removed",
                                    f"block {idx}: only in the first program ({len(a.blocks[idx].ops)} ops)"))
            continue
        if idx >= len(a.blocks):
            found.append(Difference(idx, "block", "added",
                                    f"block {idx}: only in the second program ({len(b.blocks[idx].ops)} ops)"))
            continue
        block_a, block_b = a.blocks[idx], b.blocks[idx]
        header = [f"{field} {getattr(block_a, field)} -> {getattr(block_b, field)}"
                  for field in ("parent_idx", "forward_block_idx")
                  if getattr(block_a, field) != getattr(block_b, field)]
        if header:
            found.append(Difference(idx, "block", "changed", f"block {idx}: " + "; ".join(header)))
        found += differ.block_differences(idx, block_a, block_b)
    return found


def diff_programs(a: Program, b: Program, ignore_attrs: Iterable[str] = (), bookkeeping: bool = False) -> list[str]:
    """The differences, one line each under a header per block; empty when the programs are the same.
    ``bookkeeping`` compares Paddle's bookkeeping attributes too."""
    lines = []
    for idx, group in itertools.groupby(differences(a, b, ignore_attrs, bookkeeping), key=lambda d: d.block):
        group = list(group)
        if group[0].kind != "block":   # a block's changed fields head it; else a count of what changed
            lines.append(f"block {idx}: {_summary(group)}")
        lines += [difference.line for difference in group]
    return lines


_SIGNS = {"added": "+", "removed": "-", "changed": "~"}


def _summary(group: list[Difference]) -> str:
    counts = Counter((difference.kind, _SIGNS[difference.change], difference.change) for difference in group)
    return ", ".join(f"{n} {kind}{'s' if n > 1 else ''} {change}" for (kind, _, change), n in sorted(counts.items()))

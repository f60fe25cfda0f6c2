"""The one table of op mappings between PIR ops and the legacy ops gradc registers.

A row is data, written in a small notation (most rows one line):

    row("pd_op.matmul", "matmul_v2", "x:X y:Y", "out:Out", "transpose_x=trans_x:bool transpose_y=trans_y:bool")

operands, in PIR order:  ``name:Slot``   the operand is the legacy input slot; ``name:Slot*`` a list (t_vec)
                         ``name?:Slot``  may be Paddle's null value (then the slot stays empty)
                         ``name>attr:k`` a constant folded into legacy attribute ``attr`` (k: ints, int, long,
                                         float, double, bool, or value: a number of the op's dtype); export
                                         makes it with pd_op.full_int_array / pd_op.full
                         ``name>attr:k@T,L`` the same, but a value computed in the program goes to legacy input
                                         slot T (a tensor) or L (a list, from builtin.combine)
                         ``name:-``      no legacy counterpart (null)
                         ``~Slot``       a legacy input PIR does not take (dropped on export)
results, in PIR order:   ``name:Slot``, ``name:Slot*`` (a list), ``name:Slot&operand`` (in place: the operand's
                         var), ``name:-`` (none); ``+Slot`` a legacy-only output (XShape) with a fresh var
attributes:              ``name[=legacy]:kind[=default]``; legacy ``-`` means PIR-only (dropped on import,
                         written with its default on export, or with the value ``back`` sets under its name).
                         kinds: bool i32 i64 f32 f64 str dtype place intarray i32s i64s f32s f64s strs
``fixed`` sets legacy attributes to constants; ``hook`` adjusts the imported legacy op for semantics the
notation cannot say (PIR's empty axis list meaning "all", ...); ``back`` does the same on export, and
``when`` picks among rows of one legacy type on export; ``special`` replaces the generic translation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache


@dataclass(frozen=True)
class Operand:
    name: str
    slot: str | None = None
    attr: str | None = None      # folded into this legacy attribute
    fold: str | None = None      # its kind: "ints", "int" (int32), "long" (int64), "float" or "double" (float64)
    optional: bool = False
    is_list: bool = False
    tensor_slots: tuple[str, ...] = ()   # where a computed (not constant) value goes: (tensor slot, list slot)


@dataclass(frozen=True)
class Result:
    name: str
    slot: str | None
    inplace: str | None = None   # the operand whose var this result is
    is_list: bool = False


@dataclass(frozen=True)
class AttrSpec:
    name: str
    legacy: str | None
    kind: str
    default: object = None


@dataclass(frozen=True)
class Row:
    pir: str
    legacy: str
    operands: tuple[Operand, ...] = ()
    results: tuple[Result, ...] = ()
    attrs: tuple[AttrSpec, ...] = ()
    extra_outputs: tuple[str, ...] = ()
    dropped_inputs: tuple[str, ...] = ()
    fixed: dict = field(default_factory=dict)
    hook: object = None          # hook(legacy_op, pir_op, translator)
    back: object = None          # back(legacy_op, exporter) -> {legacy attr: value} used instead on export
    when: object = None          # when(legacy_op, exporter) -> whether export uses this row for it
    special: object = None       # special(pir_op, translator): the whole translation
    arity: tuple = (None, None)  # a special row's operand and result counts (None: any)

    def operand(self, name: str) -> Operand:
        return next(o for o in self.operands if o.name == name)


_DEFAULTS = {"bool": False, "i32": 0, "i64": 0, "f32": 0.0, "f64": 0.0, "str": "", "place": [0, 0, ""],
             "i32s": [], "i64s": [], "f32s": [], "f64s": [], "strs": [], "intarray": [], "dtype": "float32"}


def _slot(text: str) -> tuple[str | None, bool]:
    return (None, False) if text in ("", "-") else (text.rstrip("*"), text.endswith("*"))


# a token's parse is cached: the rows repeat most (x:X, out:Out), 1,857 tokens of which 418 distinct
@cache
def _operand(token: str) -> Operand:
    if ">" in token:
        name, _, rest = token.partition(">")
        attr, _, fold = rest.partition(":")
        fold, _, slots = fold.partition("@")
        return Operand(name.rstrip("?"), attr=attr, fold=fold or "ints", optional=name.endswith("?"),
                       tensor_slots=tuple(slots.split(",")) if slots else ())
    name, _, slot = token.partition(":")
    slot, is_list = _slot(slot)
    return Operand(name.rstrip("?"), slot, optional=name.endswith("?"), is_list=is_list)


@cache
def _result(token: str) -> Result:
    name, _, slot = token.partition(":")
    slot, _, inplace = slot.partition("&")
    slot, is_list = _slot(slot)
    return Result(name, slot, inplace or None, is_list)


@cache
def _attr(token: str) -> AttrSpec:
    head, _, tail = token.partition(":")
    kind, _, default = tail.partition("=")
    name, _, legacy = head.partition("=")
    value = _DEFAULTS.get(kind) if not default else _parse_default(kind, default)
    return AttrSpec(name, None if legacy == "-" else (legacy or name), kind, value)


def _parse_default(kind: str, text: str):
    if kind == "bool":
        return text == "true"
    if kind in ("i32", "i64"):
        return int(text)
    if kind in ("f32", "f64"):
        return float(text)
    if kind in ("i32s", "i64s", "intarray"):
        return [int(v) for v in text.split(",")] if text else []
    return text


def row(pir: str, legacy: str, operands: str = "", results: str = "out:Out", attrs: str = "", **options) -> Row:
    operand_tokens, result_tokens = operands.split(), results.split()
    return Row(pir, legacy,
               tuple(_operand(t) for t in operand_tokens if not t.startswith("~")),
               tuple(_result(t) for t in result_tokens if not t.startswith("+")),
               tuple(_attr(t) for t in attrs.split()),
               tuple(t[1:] for t in result_tokens if t.startswith("+")),
               tuple(t[1:] for t in operand_tokens if t.startswith("~")), **options)


def import_only(legacy, exporter) -> bool:
    """The ``when`` of a row gradc reads but never writes: export leaves it out (the legacy op keeps its own)."""
    return False


def special(pir: str, handler, operands: int | None = None, results: int | None = None) -> Row:
    """A row translated by code: plumbing (builtin.combine), constants, control flow, unrolled ops."""
    return Row(pir, "", special=handler, arity=(operands, results))

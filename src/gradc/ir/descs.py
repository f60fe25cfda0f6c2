"""VarDesc and OpDesc: a program's vars and ops as plain Python objects (gradc.ir.program holds them in blocks).

Optional wire fields that may be absent are kept as ``None`` so a load/save round trip
reproduces exactly what the file said (proto2 distinguishes "unset" from "set to default").
"""

from __future__ import annotations

from collections.abc import Iterable

from .types import AttrType, VarType, dtype_name, stored_attr_value

GRAD_SUFFIX = "@GRAD"
EMPTY_VAR = "@EMPTY@"
_BLOCK_KINDS = frozenset({AttrType.BLOCK, AttrType.BLOCKS})
VAR_KINDS = frozenset({AttrType.VAR, AttrType.VARS})   # a tensor-valued attribute: the name(s) of its var(s)
_edits = 0   # edits through OpDesc's mutators after it was made, to ops of any program: op_edits


def op_edits() -> int:
    """How many edits OpDesc.set_attr and rename_reads made to ops already made. An op knows no program, so these do
    not move Program.revision: what a program's revision keys (gradc.passed_checks) reads this count beside it."""
    return _edits


def grad_name(var: str) -> str:
    return var + GRAD_SUFFIX


def _enum_name(enum, value) -> str:
    try:
        return enum(value).name
    except ValueError:
        return str(value)


class VarDesc:
    __slots__ = (
        "name", "type", "dtype", "shape", "lod_level",
        "persistable", "need_check_feed", "is_parameter", "stop_gradient",
        "attrs", "raw_type", "dist",
    )

    def __init__(self, name: str, shape: Iterable[int] | None = None, dtype: int | None = VarType.FP32,
                 type: int = VarType.DENSE_TENSOR, *, persistable: bool | None = None,
                 is_parameter: bool | None = None, stop_gradient: bool | None = None,
                 need_check_feed: bool | None = None, lod_level: int | None = None):
        self.name = name
        self.type = type
        self.dtype = dtype            # element type of a tensor-like var, else None
        self.shape = list(shape) if shape is not None else None
        self.lod_level = lod_level
        self.persistable = persistable
        self.need_check_feed = need_check_feed
        self.is_parameter = is_parameter
        self.stop_gradient = stop_gradient
        self.attrs: tuple[bytes, ...] = ()  # VarDesc.Attr messages, carried through untouched (immutable: shared)
        self.raw_type: bytes | None = None  # a VarType we do not model (reader, tuple, ...), kept verbatim
        self.dist: tuple = ()   # a PIR auto-parallel value's (global dims, tensor_dist JSON): gradc.pir.dist

    def copy(self, name: str | None = None) -> VarDesc:
        new = VarDesc.__new__(VarDesc)
        new.name = self.name if name is None else name
        new.type, new.dtype, new.lod_level, new.raw_type = self.type, self.dtype, self.lod_level, self.raw_type
        new.shape = list(self.shape) if self.shape is not None else None
        new.persistable, new.need_check_feed = self.persistable, self.need_check_feed
        new.is_parameter, new.stop_gradient = self.is_parameter, self.stop_gradient
        new.attrs, new.dist = self.attrs, self.dist
        return new

    def __repr__(self) -> str:
        kind = "" if self.type == VarType.DENSE_TENSOR else f", type={_enum_name(VarType, self.type)}"
        return f"VarDesc({self.name!r}, shape={self.shape}, dtype={dtype_name(self.dtype)}{kind})"


class OpDesc:
    """One op: its type, slots of var names, and attributes. Attribute values are values, shared where copying them
    would cost (a grad op holds its forward op's list-valued attributes, op_callstack among them): change one with
    set_attr or by assigning a new value, never by editing its list in place."""

    __slots__ = ("type", "inputs", "outputs", "attrs", "attr_types", "is_target", "repeated_attrs", "var_attrs")

    def __init__(self, type: str, inputs: dict[str, list[str]] | None = None,
                 outputs: dict[str, list[str]] | None = None, attrs: dict | None = None,
                 attr_types: dict[str, int] | None = None):
        self.type = type
        self.inputs: dict[str, list[str]] = {k: list(v) for k, v in (inputs or {}).items()}
        self.outputs: dict[str, list[str]] = {k: list(v) for k, v in (outputs or {}).items()}
        self.attrs: dict[str, object] = {}
        self.attr_types: dict[str, int] = {}
        self.is_target: bool | None = None
        # Paddle writes some attrs twice (reshape2's mkldnn_data_type): (wire position, Attr bytes); immutable, so
        # that the ops without any (almost all) share one empty tuple
        self.repeated_attrs: tuple[tuple[int, bytes], ...] = ()
        # the attributes of wire type VAR/VARS (kept with attr_types: most ops have none, and input_names asks)
        self.var_attrs: tuple[str, ...] = ()
        for name, value in (attrs or {}).items():
            self._store_attr(name, value, (attr_types or {}).get(name))

    def input(self, slot: str) -> list[str]:
        return self.inputs.get(slot, [])

    def output(self, slot: str) -> list[str]:
        return self.outputs.get(slot, [])

    def input_names(self) -> list[str]:
        """Every var the op reads: its inputs, then the vars its tensor-valued attributes name."""
        names: list[str] = []   # a list, not a generator: the passes call these on every op, often
        for args in self.inputs.values():
            names += args
        if self.var_attrs:
            names += self.attr_var_names()
        return names

    def attr_var_names(self) -> list[str]:
        """The vars the op's tensor-valued attributes (wire types VAR, VARS) name: read at run time."""
        return [name for names in self.attr_reads().values() for name in names]

    def attr_reads(self) -> dict[str, list[str]]:
        """Each tensor-valued attribute's vars, by attribute."""
        return {name: [value] if isinstance(value := self.attrs.get(name), str) else list(value or ())
                for name in self.var_attrs}

    def rename_reads(self, renamed: dict[str, str]) -> None:
        """Rename the vars the op reads, in its inputs and its tensor-valued attributes."""
        global _edits
        _edits += 1
        for slot, args in self.inputs.items():
            self.inputs[slot] = [renamed.get(a, a) for a in args]
        for name in self.var_attrs:
            value = self.attrs[name]
            self.attrs[name] = (renamed.get(value, value) if isinstance(value, str)
                                else [renamed.get(v, v) for v in value])

    def output_names(self) -> list[str]:
        names: list[str] = []
        for args in self.outputs.values():
            names += args
        return names

    def attr(self, name: str, default=None):
        return self.attrs.get(name, default)

    def block_refs(self) -> list[tuple[str, int]]:
        """(attribute, block index) of every block the op's attributes name (wire types BLOCK, BLOCKS)."""
        kinds = self.attr_types
        if _BLOCK_KINDS.isdisjoint(kinds.values()):   # most ops: a set test, no walk over the attributes
            return []
        refs = []
        for name, value in self.attrs.items():
            kind = kinds.get(name)
            if kind == AttrType.BLOCK and value is not None:
                refs.append((name, value))
            elif kind == AttrType.BLOCKS:
                refs += [(name, idx) for idx in value]
        return refs

    def set_attr(self, name: str, value, type: int | None = None) -> None:
        """Set an attribute; its wire type is kept, given, or inferred from the Python value. A FLOAT attribute
        holds its value's float32, as Paddle's kernels read it."""
        global _edits
        _edits += 1
        self._store_attr(name, value, type)

    def _store_attr(self, name: str, value, type: int | None) -> None:
        if type is None:
            type = self.attr_types.get(name)
        if type is None:
            type = infer_attr_type(value)
        self.attrs[name] = stored_attr_value(type, value)
        self.attr_types[name] = type
        if (type in VAR_KINDS) != (name in self.var_attrs):
            self.var_attrs = var_attrs_of(self.attr_types)

    def copy(self) -> OpDesc:
        new = OpDesc.__new__(OpDesc)
        new.type = self.type
        new.inputs = {k: list(v) for k, v in self.inputs.items()}
        new.outputs = {k: list(v) for k, v in self.outputs.items()}
        new.attrs = {k: list(v) if isinstance(v, list) else v for k, v in self.attrs.items()}
        new.attr_types = dict(self.attr_types)
        new.is_target = self.is_target
        new.repeated_attrs = self.repeated_attrs
        new.var_attrs = self.var_attrs
        return new

    def __repr__(self) -> str:
        return f"OpDesc({self.type!r}, inputs={self.inputs}, outputs={self.outputs})"


def var_attrs_of(attr_types: dict) -> tuple[str, ...]:
    """The names of the attributes of wire type VAR or VARS."""
    return tuple(name for name, kind in attr_types.items() if kind in VAR_KINDS)


def infer_attr_type(value) -> int:
    if isinstance(value, bool):
        return AttrType.BOOLEAN
    if isinstance(value, int):
        return AttrType.INT if -(2**31) <= value < 2**31 else AttrType.LONG
    if isinstance(value, float):
        return AttrType.FLOAT
    if isinstance(value, str):
        return AttrType.STRING
    if isinstance(value, (list, tuple)):
        if not value:
            return AttrType.INTS
        first = value[0]
        if isinstance(first, bool):
            return AttrType.BOOLEANS
        if isinstance(first, int):
            return AttrType.INTS if all(-(2**31) <= v < 2**31 for v in value) else AttrType.LONGS
        if isinstance(first, float):
            return AttrType.FLOATS
        if isinstance(first, str):
            return AttrType.STRINGS
    raise TypeError(f"cannot infer the attribute type of {value!r}")

"""A persistable value against the var a program declares for it: shape (-1 fits any size) and dtype, with bfloat16
and float8 values converted to how the executor holds them. One rule for a parameter file (gradc.load_params, the
CLI's --params) and for a value a user puts into a Scope and runs with (checked by Executor.run)."""

from __future__ import annotations

from weakref import WeakKeyDictionary

import numpy as np

from .. import registry
from ..bfloat16 import as_bfloat16
from ..errors import ExecutionError, FormatError
from ..float8 import FORMATS as FLOAT8_FORMATS
from ..float8 import as_float8
from ..ir import Block, VarDesc, VarType
from ..ir.types import NUMPY_DTYPE_NAMES

PYTHON_VALUES = (int, float, bool, complex, list, tuple)   # converted to the declared dtype, as a feed converts them


def fitted_value(var: VarDesc, value, where: str, error=FormatError, hint: bool = False, shape: bool = True,
                 int8: bool = False):
    """``value`` as the executor holds ``var``'s, or ``error`` saying how it differs; ``where`` starts the message
    ("params 'p.npz': 'fc_0.w_0'"); ``hint`` adds the numpy call that converts an array of another dtype;
    ``shape``: whether the declared shape binds too; ``int8``: whether an int8 value fits too (int8_stored)."""
    expected = NUMPY_DTYPE_NAMES.get(var.dtype)
    if isinstance(value, PYTHON_VALUES) and expected is not None:
        value = np.asarray(value, expected)
    if var.shape is None:
        return value
    if shape and (len(value.shape) != len(var.shape) or any(d >= 0 and d != s for d, s in zip(var.shape, value.shape))):
        raise error(f"{where} has shape {list(value.shape)}, but the program declares {var.shape}")
    if var.dtype == VarType.BF16:
        if value.dtype not in (np.float32, np.uint16):
            raise error(f"{where} is {value.dtype}, but the program declares bfloat16 (give float32 values or uint16 "
                        f"bfloat16 bits)")
        return as_bfloat16(value)
    if var.dtype in FLOAT8_FORMATS:
        if value.dtype not in (np.float32, np.uint8, np.int8):
            raise error(f"{where} is {value.dtype}, but the program declares {FLOAT8_FORMATS[var.dtype]} (give "
                        f"float32 values or uint8 / int8 float8 bits)")
        return as_float8(value, var.dtype)
    if expected is not None and value.dtype.name != expected and not (int8 and value.dtype == np.int8):
        convert = f" (convert it, e.g. with .astype('{expected}'))" if hint else ""
        raise error(f"{where} is {value.dtype}, but the program declares {expected}{convert}")
    return value


def check_scope_values(block: Block, scope) -> None:
    """The values put into ``scope`` or its parents with ``scope[name] = value`` since their last check, for the
    persistable dense vars ``block`` reads before writing them: refused where they do not fit the declared var,
    as a parameter file's would be (Python numbers and lists are converted). The shape binds a parameter only:
    Paddle's kernels leave the declared shapes of other persistable vars stale (auc's statistics, a quantization
    scale of shape [] declared [1]), and Paddle's executor does not check them; nor does it bind a parameter an op
    reads through a slot whose declared shape Paddle leaves stale (stale_shapes). A name the block does not read
    stays unchecked (a startup program writes what a user may have put there); ``scope.vars[name] = value`` puts a
    value in unchecked."""
    scopes = []
    while scope is not None:
        if scope.unchecked:
            scopes.append(scope)
        scope = scope.parent
    if not scopes:
        return
    reads, stale, int8 = scope_reads(block), stale_shapes(block), int8_stored(block)
    for scope in scopes:
        for name in [name for name in scope.unchecked if name in reads]:
            value = scope.vars.get(name)
            if isinstance(value, np.generic):
                value = np.asarray(value)
            var = block.find_var(name)
            if isinstance(value, (np.ndarray, *PYTHON_VALUES)) and var.type == VarType.DENSE_TENSOR:
                scope.vars[name] = fitted_value(var, value, f"scope value {read_by(block, name)}", ExecutionError,
                                                hint=True, shape=var.is_parameter and name not in stale,
                                                int8=name in int8)
            scope.unchecked.discard(name)


_READS: WeakKeyDictionary[Block, tuple[int, dict[str, None], frozenset[str], dict[str, int], frozenset[str]]] = \
    WeakKeyDictionary()


def read_by(block: Block, name: str) -> str:
    """'NAME', with the first op of ``block`` (else of a block nested in it) that reads it: how an error about a
    value names where it is used ("'fc_0.w_0', read first by block 0, op 0 (mul),")."""
    for inner in _nested(block):
        index = _reads(inner)[3].get(name)
        if index is not None:
            return f"'{name}', read first by block {inner.idx}, op {index} ({inner.ops[index].type}),"
    return f"'{name}'"


def _nested(block: Block):
    yield block
    for inner in block.program.blocks:
        if inner.idx != block.idx and inner.parent_idx >= 0 and _inside(inner, block):
            yield inner


def _inside(inner: Block, outer: Block) -> bool:
    blocks, parent = inner.program.blocks, inner.parent_idx
    for _ in blocks:   # bounded: a hostile file may link its blocks in a cycle
        if parent == outer.idx:
            return True
        if not 0 <= parent < len(blocks):
            return False
        parent = blocks[parent].parent_idx
    return False


def scope_reads(block: Block) -> dict[str, None]:
    """The persistable tensors (dense, selected rows) ``block`` reads before any of its ops writes them, in the order
    first read: what a run takes from the scope."""
    return _reads(block)[1]


def stale_shapes(block: Block) -> frozenset[str]:
    """The vars ``block`` reads through an input slot whose declared shape Paddle's passes leave stale
    (OpDef.stale_shape_inputs): a value of another shape fits them."""
    return _reads(block)[2]


def int8_stored(block: Block) -> frozenset[str]:
    """The vars ``block`` reads only through input slots Paddle's converts fill with int8 under a float declaration
    (OpDef.int8_stored_inputs): an int8 value fits them."""
    return _reads(block)[4]


def _reads(block: Block) -> tuple[int, dict[str, None], frozenset[str], dict[str, int], frozenset[str]]:
    revision = block.program.revision
    cached = _READS.get(block)
    if cached is not None and cached[0] == revision:
        return cached
    written, reads, stale, first_reader, int8, other_reads = set(), {}, set(), {}, set(), set()
    for index, op in enumerate(block.ops):
        for name in op.input_names():
            first_reader.setdefault(name, index)
            var = block.find_var(name)
            if (name not in written and var is not None and var.persistable
                    and var.type in (VarType.DENSE_TENSOR, VarType.SELECTED_ROWS)):
                reads[name] = None
        opdef = registry.get(op.type)
        if opdef is not None and opdef.stale_shape_inputs:
            stale.update(name for slot in opdef.stale_shape_inputs for name in op.input(slot))
        int8_slots = opdef.int8_stored_inputs if opdef is not None else frozenset()
        for slot, names in op.inputs.items():
            (int8 if slot in int8_slots else other_reads).update(names)
        written.update(op.output_names())
    _READS[block] = (revision, reads, frozenset(stale), first_reader, frozenset(int8 - other_reads))
    return _READS[block]

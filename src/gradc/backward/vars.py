"""Declares the variables the backward ops write, shaped and typed like the forward var."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..errors import GradError
from ..ir import EMPTY_VAR, GRAD_SUFFIX, Block, OpDesc, VarDesc
from .sparse import mark_sparse_grads

_SUFFIX_LEN = len(GRAD_SUFFIX)


def forward_name(grad: str) -> str:
    """x@GRAD@RENAME@block0@1 -> x; x@GRAD -> x; x@GRAD@GRAD (a second-order grad) -> x@GRAD."""
    if grad.endswith(GRAD_SUFFIX):   # most grads: a slice, not rsplit's list
        return grad[:-len(GRAD_SUFFIX)]
    return grad.rsplit(GRAD_SUFFIX, 1)[0]


def lookup(block: Block, name: str) -> VarDesc | None:
    """The var ``name`` as a backward block sees it (Block.visible_var)."""
    return block.visible_var(name)


def derived_var(source: VarDesc, name: str) -> VarDesc:
    """A var the backward adds (a grad, a temporary, a saved copy): typed and shaped like ``source``,
    but none of its flags: it is not a parameter, not persistable, not fed."""
    var = VarDesc.__new__(VarDesc)   # VarDesc.copy's fields, the flags set once: a backward declares thousands
    var.name, var.type, var.dtype = name, source.type, source.dtype
    var.lod_level, var.raw_type = source.lod_level, source.raw_type
    shape = source.shape   # a list, as gradc makes them, unless a user assigned a tuple: either copied as a list
    var.shape = None if shape is None else [*shape]
    var.persistable, var.is_parameter, var.need_check_feed, var.stop_gradient = False, None, None, False
    var.attrs, var.dist = source.attrs, source.dist
    return var


def declare_grad_vars(block: Block, ops: list[OpDesc], sources: Mapping[str, str] = MappingProxyType({})
                      ) -> dict[str, OpDesc]:
    """Declare every var the ops write that is not declared yet, typed like the var it is the grad of (``sources``:
    grad name -> var, GradNames.sources, else found from the name); returns the last of the ops writing each name
    (roles.tag_param_grads reads it: found in this walk, not another)."""
    created = False
    last_writer: dict[str, OpDesc] = {}
    new_var = VarDesc.__new__
    declared = own = block.vars   # most grads' vars are the block's own: a dict lookup before the walk up
    for op in ops:
        for args in op.outputs.values():
            for name in args:
                last_writer[name] = op
                if name in declared or name == EMPTY_VAR:
                    continue
                base = sources.get(name) or (name[:-_SUFFIX_LEN] if name.endswith(GRAD_SUFFIX) else forward_name(name))
                source = own.get(base) or lookup(block, base)
                if source is None:
                    continue
                var = declared[name] = new_var(VarDesc)   # derived_var's fields, inlined: its call per grad cost 1.3%
                var.name, var.type, var.dtype = name, source.type, source.dtype
                var.lod_level, var.raw_type = source.lod_level, source.raw_type
                shape = source.shape
                var.shape = None if shape is None else [*shape]
                var.persistable, var.is_parameter, var.need_check_feed, var.stop_gradient = False, None, None, False
                var.attrs, var.dist = source.attrs, source.dist
                created = True
    if created:
        block.program.mark_changed()
    mark_sparse_grads(block, ops)
    return last_writer


class TmpVars:
    """Fresh intermediate vars that composite grad makers ask for, declared in ``block`` like ``like``."""

    def __init__(self, block: Block):
        self.block = block
        self.count = 0

    def __call__(self, like: str, dims=None, dtype=None) -> str:
        name = f"{like}@GRAD@TMP@{self.block.idx}@{self.count}"
        while name in self.block.vars:   # an earlier backward of the program made temporaries too
            self.count += 1
            name = f"{like}@GRAD@TMP@{self.block.idx}@{self.count}"
        self.count += 1
        source = lookup(self.block, like)
        if source is None:   # a maker's temporary is shaped like a var the op reads: a program that never declared it
            raise GradError(f"var '{like}' is not declared in block {self.block.idx} or its ancestors")
        declare_like(self.block, source, name, dims, dtype)
        return name


def declare_like(block: Block, source: VarDesc, name: str, dims=None, dtype=None) -> VarDesc:
    """A temporary ``name`` in ``block``, typed and shaped like ``source``, or with ``dims(shape)`` and ``dtype`` where
    given."""
    var = block.add_var(derived_var(source, name))
    if dims is not None and var.shape is not None:
        var.shape = list(dims(var.shape))
    if dtype is not None:
        var.dtype = dtype
    return var

"""Auto-parallel values of a PIR program (Paddle's 4.t_dist_dtensor): a global tensor spread over a process mesh.

A value's tensor_dist says, for each of its dims, which mesh axis splits it (dims_mapping: -1 for none) and which
mesh axes hold partial sums; a rank holds the block at its coordinates in the mesh (Paddle splits a dim of n over an
axis of k ranks into chunks of ceil(n / k)). gradc reads it (gradc.pir.codec) into a VarDesc's ``dist``: (global
dims, the tensor_dist's JSON text), and writes it back when it saves the program as PIR.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import GradcError
from ..ir import AttrType
from .graph import Attr


@dataclass(frozen=True)
class Spread:
    global_dims: tuple[int, ...]
    mesh_shape: tuple[int, ...]
    process_ids: tuple[int, ...]
    dim_names: tuple[str, ...]
    dims_mapping: tuple[int, ...]    # per tensor dim: the mesh axis splitting it, -1 for none
    partial_axes: tuple[int, ...]    # mesh axes along which the ranks hold partial sums

    def coordinates(self, rank: int) -> tuple[int, ...]:
        """Where ``rank`` sits in the mesh."""
        import numpy as np  # here: reading a program (gradc compile, convert) starts without numpy
        if rank not in self.process_ids:
            raise GradcError(f"rank {rank} is not in the process mesh {list(self.process_ids)}")
        return tuple(int(c) for c in np.unravel_index(self.process_ids.index(rank), self.mesh_shape))

    def local_part(self, array, rank: int):
        """The block of the global ``array`` that ``rank`` holds."""
        import numpy as np
        array = np.asarray(array)
        if tuple(array.shape) != self.global_dims:
            raise GradcError(f"a value of global dims {list(self.global_dims)} cannot be split from an array of "
                             f"shape {list(array.shape)}")
        where = self.coordinates(rank)
        index = []
        for size, axis in zip(array.shape, self.dims_mapping):
            if axis < 0:
                index.append(slice(None))
            else:
                chunk = -(-size // self.mesh_shape[axis])
                index.append(slice(where[axis] * chunk, (where[axis] + 1) * chunk))
        return array[tuple(index)]


def spread(dist: tuple) -> Spread:
    """A VarDesc's ``dist`` (global dims, tensor_dist JSON text) as a Spread."""
    global_dims, text = dist
    mesh, mapping, partial = json.loads(text)["D"]
    shape, ids, names = mesh["D"]
    axes = tuple(entry[0] if isinstance(entry, list) else entry for entry in partial)
    return Spread(tuple(global_dims), tuple(shape), tuple(ids), tuple(names), tuple(mapping), axes)


OP_DIST_ATTR = "op_dist_attr"   # the PIR attribute (a_op_dist) and the legacy op's string attribute holding it


def carry_op_dist(op, legacy_ops) -> None:
    """Keep a PIR op's op_dist_attr (its mesh and its operands' and results' placements) on the legacy ops it
    became, as JSON text, so that saving the program as PIR writes it back (op_dist_attr_of)."""
    attr = op.attrs.get(OP_DIST_ATTR)
    if attr is not None and attr.kind == "a_op_dist":
        text = json.dumps({"#": "4.a_op_dist", "D": attr.value}, sort_keys=True)
        for legacy in legacy_ops:
            legacy.attrs[OP_DIST_ATTR] = text
            legacy.attr_types[OP_DIST_ATTR] = AttrType.STRING


def carry_op_role(op, legacy_ops) -> None:
    """Keep a PIR op's op_role (auto-parallel writes it: forward 0, backward 1, optimize 2) on the legacy ops it
    became, where the translation gave them none, so that a pipeline stage runs over micro-batches by it."""
    attr = op.attrs.get("op_role")
    if attr is not None and attr.kind == "a_i32":
        for legacy in legacy_ops:
            if "op_role" not in legacy.attrs:
                legacy.attrs["op_role"] = attr.value
                legacy.attr_types["op_role"] = AttrType.INT


def op_dist_attr_of(legacy) -> dict:
    """{"op_dist_attr": its a_op_dist} for a legacy op that carries one, else {}."""
    text = legacy.attrs.get(OP_DIST_ATTR)
    return {OP_DIST_ATTR: Attr("a_op_dist", json.loads(text)["D"])} if isinstance(text, str) else {}


def localize_reshapes(program) -> None:
    """A reshape of dist values states the global dims it makes: each rank reshapes its block to the block's dims
    (its result's local dims), as Paddle's dist-to-dense pass rewrites the shape before running the program."""
    for block in program.blocks:
        for op in block.ops:
            if op.type == "reshape2" and not op.inputs.get("ShapeTensor") and not op.inputs.get("Shape"):
                out = block.find_var(op.outputs["Out"][0])
                if out is not None and out.dist and out.shape and len(out.shape) == len(op.attrs.get("shape", ())):
                    op.attrs["shape"] = list(out.shape)


def rank_values(program, values, rank: int) -> dict:
    """``values`` (name -> array) as rank ``rank`` of ``program`` holds them: a global value of a var the program
    spreads over its mesh becomes this rank's block of it, one split over a mesh without the rank is left out (a
    pipeline's other stage); other values are kept as they are."""
    import numpy as np

    held = {}
    for name, value in values.items():
        var = program.global_block.vars.get(name)
        if var is not None and var.dist and tuple(np.shape(value)) == tuple(var.dist[0]) != tuple(var.shape or ()):
            where = spread(var.dist)
            if rank not in where.process_ids:
                continue
            value = where.local_part(value, rank)
        held[name] = value
    return held

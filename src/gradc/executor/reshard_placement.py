"""A reshard's placements: a tensor_dist's mesh (shape, process ids), dims_mapping (per tensor dim the mesh axis
splitting it, -1 for none) and partial axes (mesh axis -> reduce type), read from an op_dist_attr."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

REDUCE_NAMES = {0: "sum", 1: "max", 2: "min", 3: "prod", 4: "avg"}   # Paddle's ReduceType


@dataclass(frozen=True)
class Placement:
    mesh_shape: tuple[int, ...]
    process_ids: tuple[int, ...]
    dims_mapping: tuple[int, ...]
    partial: tuple[tuple[int, int], ...]   # (mesh axis, reduce type), by axis

    def coordinates(self, rank: int) -> tuple[int, ...]:
        return tuple(int(c) for c in np.unravel_index(self.process_ids.index(rank), self.mesh_shape))

    def group(self, rank: int, axis: int) -> list[int]:
        """The ranks along mesh ``axis`` through ``rank``, in the axis's order."""
        grid = np.asarray(self.process_ids).reshape(self.mesh_shape)
        where = list(self.coordinates(rank))
        where[axis] = slice(None)
        return [int(r) for r in grid[tuple(where)]]

    def same_mesh(self, other: Placement) -> bool:
        return (self.mesh_shape, self.process_ids) == (other.mesh_shape, other.process_ids)

    def text(self) -> str:
        partial = "".join(f", Partial({REDUCE_NAMES.get(kind, kind)}) on axis {axis}" for axis, kind in self.partial)
        return f"mesh {list(self.process_ids)} {list(self.mesh_shape)}, dims_mapping {list(self.dims_mapping)}{partial}"


def _placement(tensor_dist: dict) -> Placement:
    mesh, mapping, partial = tensor_dist["D"]
    shape, ids, _ = mesh["D"]
    pairs = sorted((entry[0], entry[1]) if isinstance(entry, list) else (entry, 0) for entry in partial)
    return Placement(tuple(shape), tuple(ids), tuple(mapping), tuple(pairs))


def placements(op_dist_attr: str) -> tuple[Placement, Placement]:
    """(src, dst) of a reshard op's op_dist_attr (its operand's and its result's tensor_dist)."""
    try:
        _, operands, results, *_ = json.loads(op_dist_attr)["D"]
        return _placement(operands[0]), _placement(results[0])
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ValueError(f"op_dist_attr is not a reshard's (mesh, [operand tensor_dist], [result tensor_dist]): "
                         f"{exc}") from None

"""Auto-parallel values of a PIR program (Paddle's 4.t_dist_dtensor): a global tensor spread over a process mesh.

A value's tensor_dist says, for each of its dims, which mesh axis splits it (dims_mapping: -1 for none) and which
mesh axes hold partial sums; a rank holds the block at its coordinates in the mesh (Paddle splits a dim of n over an
axis of k ranks into chunks of ceil(n / k)). gradc reads it (gradc.pir.codec) into a VarDesc's ``dist``: (global
dims, the tensor_dist's JSON text), and writes it back when it saves the program as PIR.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..errors import GradcError


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
        if rank not in self.process_ids:
            raise GradcError(f"rank {rank} is not in the process mesh {list(self.process_ids)}")
        return tuple(int(c) for c in np.unravel_index(self.process_ids.index(rank), self.mesh_shape))

    def local_part(self, array, rank: int) -> np.ndarray:
        """The block of the global ``array`` that ``rank`` holds."""
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

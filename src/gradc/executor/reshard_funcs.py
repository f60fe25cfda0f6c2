"""Which of Paddle 3.3.1's reshard functions its reshard pass lowers a dist_op.reshard with: the first, in the order
paddle/distributed/auto_parallel/static/reshard_funcs/reshard_func_register.py registers them, whose is_suitable
holds for (src, dst). gradc lowers a reshard between meshes of different shapes only where Paddle has a function
(global_to_sub, sub_to_global) and on one 1-D mesh moves shards by all_to_all where Paddle picks s_to_s. Before
choosing, the pass splits a reshard across meshes of one ndim that changes the placements in two (decomposed).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .reshard_placement import Placement


def _partial(p: Placement) -> bool:
    return bool(p.partial)


def _shard(p: Placement) -> bool:
    return any(axis != -1 for axis in p.dims_mapping)


def _replicated(p: Placement) -> bool:
    return not p.partial and not _shard(p)


def split_mesh(shape: tuple[int, ...], ids: tuple[int, ...], axis: int) -> list[tuple[tuple[int, ...], tuple]]:
    """The layers of a mesh along ``axis`` (shape 1 there), as Paddle's SplitMesh: (shape, process ids) each."""
    grid = np.asarray(ids).reshape(shape)
    layer_shape = tuple(1 if a == axis else size for a, size in enumerate(shape))
    return [(layer_shape, tuple(int(r) for r in np.take(grid, [i], axis=axis).ravel())) for i in range(shape[axis])]


def sub_mesh_axis(whole: Placement, part: Placement) -> int | None:
    """The axis of ``whole``'s mesh of which ``part``'s mesh is one layer, as Paddle's SubMeshDim for meshes of one
    ndim (the first axis where their shapes differ); None where it is none. (SubMeshDim also matches a mesh of one
    dim less, but sub_to_global then compares placements of different lengths and never takes it.)"""
    if not set(part.process_ids) <= set(whole.process_ids) or len(part.mesh_shape) != len(whole.mesh_shape):
        return None
    differ = [a for a, (p, w) in enumerate(zip(part.mesh_shape, whole.mesh_shape)) if p != w]
    if not differ:
        return None
    layers = split_mesh(whole.mesh_shape, whole.process_ids, differ[0])
    return differ[0] if (part.mesh_shape, part.process_ids) in layers else None


def axis_placements(p: Placement) -> list:
    """Per mesh axis: ("shard", dim), ("partial", reduce type) or ("replicate",), as Paddle's placements."""
    partial = dict(p.partial)
    out = []
    for axis in range(len(p.mesh_shape)):
        dims = [d for d, a in enumerate(p.dims_mapping) if a == axis]
        out.append(("shard", dims[0]) if dims else ("partial", partial[axis]) if axis in partial else ("replicate",))
    return out


def _global_to_sub(src: Placement, dst: Placement) -> bool:
    if not _replicated(dst) or len(src.mesh_shape) > len(dst.mesh_shape) + 1:
        return False
    if len(src.mesh_shape) == len(dst.mesh_shape):
        return set(dst.process_ids) < set(src.process_ids)
    if len(src.mesh_shape) == 1:   # Paddle's get_sub_meshes of a 1-D mesh fails
        raise ValueError("Paddle's reshard pass fails on this pair: global_to_sub_mesh_func.py asks get_sub_meshes "
                         "of the 1-D src mesh, which throws \"(InvalidArgument) The size of this process mesh must "
                         "be equal to the size of its process ids\"")
    squeezed = [(tuple(s for a, s in enumerate(shape) if a != 0), ids)
                for shape, ids in split_mesh(src.mesh_shape, src.process_ids, 0)]
    return (dst.mesh_shape, dst.process_ids) in squeezed


def _sub_to_global(src: Placement, dst: Placement) -> bool:
    axis = sub_mesh_axis(dst, src)
    if axis is None:
        return False
    local = axis_placements(dst)
    local[axis] = ("replicate",)
    return axis_placements(src) == local


def paddle_function(src: Placement, dst: Placement) -> str | None:
    """The name of the reshard function Paddle's pass picks for src -> dst, None where it has none; a ValueError
    where Paddle's choosing itself fails."""
    same, one_dim = src.same_mesh(dst), len(src.mesh_shape) == 1 and len(dst.mesh_shape) == 1
    same_shape = src.mesh_shape == dst.mesh_shape
    candidates = (
        ("p_to_r", _partial(src) and _replicated(dst) and one_dim and same),
        ("p_to_r_cross_mesh", _partial(src) and _replicated(dst) and one_dim and same_shape and not same),
        ("p_to_s", _partial(src) and _shard(dst) and one_dim and same),
        ("r_to_s", _replicated(src) and _shard(dst) and one_dim and same),
        ("r_to_s_cross_mesh", _replicated(src) and _shard(dst) and one_dim and same_shape and not same),
        ("r_to_p", _replicated(src) and _partial(dst) and not _shard(dst) and one_dim and same),
        ("same_status", src.dims_mapping == dst.dims_mapping and {a for a, _ in src.partial} == {
            a for a, _ in dst.partial} and not same and same_shape),
        ("s_to_r", _shard(src) and _replicated(dst) and one_dim and same),
        ("s_to_r_cross_mesh", _shard(src) and _replicated(dst) and one_dim and same_shape and not same),
        ("nd_mesh", same and len(dst.mesh_shape) > 1 and src != dst),
        ("nd_mesh_cross_mesh", not same and same_shape and len(dst.mesh_shape) > 1),
    )
    for name, suitable in candidates:
        if suitable:
            return name
    if _global_to_sub(src, dst):
        return "global_to_sub"
    if _sub_to_global(src, dst):
        return "sub_to_global"
    if _shard(src) and _shard(dst) and one_dim and same:
        return "s_to_s"
    return None


def decomposed(src: Placement, dst: Placement) -> list[tuple[Placement, Placement]]:
    """The steps of Paddle's decompose_reshard_pass (auto_parallel/static/pir_pass.py): across meshes of one ndim
    with other placements, first to dst's mesh as src places it, then to dst's placements on that mesh."""
    if not src.same_mesh(dst) and len(src.mesh_shape) == len(dst.mesh_shape) and \
            (src.dims_mapping, src.partial) != (dst.dims_mapping, dst.partial):
        middle = replace(dst, dims_mapping=src.dims_mapping, partial=src.partial)
        return [(src, middle), (middle, dst)]
    return [(src, dst)]


def paddle_steps(src: Placement, dst: Placement) -> list[str | None]:
    """Paddle's function for each step of the decomposed reshard (None: it has none)."""
    return [paddle_function(a, b) for a, b in decomposed(src, dst)]

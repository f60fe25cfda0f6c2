"""Kernel of gradc.ops.voxelize (Paddle3D's hard_voxelize), vectorised: the cells of all points at once, voxels
numbered by their first point, each point's place in its voxel by a stable sort."""

from __future__ import annotations

import numpy as np

from . import kernel


@kernel("hard_voxelize")
def hard_voxelize(k):
    points = k.x("POINTS")
    sizes = np.array(k.attr("voxel_size"), np.float32)
    bounds = np.array(k.attr("point_cloud_range"), np.float32)
    voxels, per_voxel = k.attr("max_voxels"), k.attr("max_num_points_in_voxel")
    grid = np.round((bounds[3:] - bounds[:3]) / sizes).astype(np.int64)   # x, y, z
    cells = np.floor((points[:, :3].astype(np.float32) - bounds[:3]) / sizes).astype(np.int64)
    inside = np.flatnonzero(((cells >= 0) & (cells < grid)).all(axis=1))
    flat = (cells[inside, 2] * grid[1] + cells[inside, 1]) * grid[0] + cells[inside, 0]
    _, first, voxel_of = np.unique(flat, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))   # voxels in the order of their first point
    voxel = rank[voxel_of.reshape(-1)]
    order = np.argsort(voxel, kind="stable")
    place = np.empty(len(voxel), np.int64)
    starts = np.searchsorted(voxel[order], voxel[order])
    place[order] = np.arange(len(voxel)) - starts
    kept = (voxel < voxels) & (place < per_voxel)
    out = np.zeros((voxels, per_voxel, points.shape[1]), np.float32)
    out[voxel[kept], place[kept]] = points[inside[kept]]
    count = min(len(first), voxels)
    coords = np.zeros((voxels, 3), np.int32)
    firsts = inside[np.sort(first)[:count]]
    coords[:count] = cells[firsts][:, ::-1]
    per = np.zeros(voxels, np.int32)
    np.add.at(per, voxel[kept], 1)
    return {"VOXELS": out, "COORS": coords, "NUM_POINTS_PER_VOXEL": per, "num_voxels": np.array([count], np.int32)}

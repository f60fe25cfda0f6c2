"""Kernels of gradc.ops.pointnet2 (Paddle3D's PointNet++ ops), in float32 arithmetic as the suite's kernels: squared
distances summed x, y, z in that order. Indices are checked against the points they pick from (the CUDA kernels
read past the tensor instead)."""

from __future__ import annotations

import numpy as np

from . import kernel


def _squared(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b|^2 summed over the last axis of 3 in order x, y, z (a and b broadcast)."""
    d = a - b
    return d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1] + d[..., 2] * d[..., 2]


@kernel("farthest_point_sample")
def farthest_point_sample(k):
    points, count = k.x("points_tensor"), k.attr("npoints")
    if points.shape[1] == 0:
        raise ValueError(f"points_tensor {list(points.shape)} has no points to sample {count} from")
    idx = np.zeros((points.shape[0], count), np.int32)
    for b, cloud in enumerate(points):
        nearest, chosen = np.full(len(cloud), 1e10, cloud.dtype), 0
        for j in range(1, count):
            nearest = np.minimum(_squared(cloud, cloud[chosen]), nearest)
            chosen = idx[b, j] = int(np.argmax(nearest))
    return {"idx_tensor": idx}


def _first_hits(hits: np.ndarray, candidates: np.ndarray, nsample: int, empty: list[int]) -> np.ndarray:
    """[..., nsample] of the first nsample candidates [..., K] that hit, in order, padded with the first; ``empty``
    fills a row without hits."""
    order = np.argsort(~hits, axis=-1, kind="stable")[..., :nsample]
    if order.shape[-1] < nsample:   # fewer candidates than samples: the first one pads
        order = np.concatenate([order, np.repeat(order[..., :1], nsample - order.shape[-1], -1)], -1)
    picked = np.take_along_axis(candidates, order, -1).astype(np.int32)
    found = hits.sum(-1)[..., None]
    idx = np.where(np.arange(nsample) < found, picked, picked[..., :1])
    return np.where(found > 0, idx, np.array((empty + [0] * nsample)[:nsample], np.int32))


def _balls(centers: np.ndarray, points: np.ndarray, radius: float, nsample: int, empty: list[int]) -> np.ndarray:
    """[..., M, nsample] indices of the first nsample points inside each ball (squared distance < radius^2)."""
    radius = np.float32(radius)
    inside = _squared(centers[..., :, None, :], points[..., None, :, :]) < radius * radius
    return _first_hits(inside, np.broadcast_to(np.arange(points.shape[-2]), inside.shape), nsample, empty)


@kernel("ball_query_batch")
def ball_query_batch(k):
    return {"idx": _balls(k.x("new_xyz_tensor"), k.x("xyz_tensor"), k.attr("radius"), k.attr("nsample"), [0])}


def _starts(counts: np.ndarray, rows: int, what: str) -> np.ndarray:
    counts = np.asarray(counts).astype(np.int64)
    if (counts < 0).any() or counts.sum() != rows:
        raise ValueError(f"{what}'s counts {counts.tolist()} do not add up to its {rows} rows")
    return np.concatenate([[0], np.cumsum(counts)])


@kernel("ball_query_stack")
def ball_query_stack(k):
    centers, points, nsample = k.x("new_xyz_tensor"), k.x("xyz_tensor"), k.attr("nsample")
    center_starts = _starts(k.x("new_xyz_batch_cnt_tensor"), len(centers), "new_xyz_tensor")
    point_starts = _starts(k.x("xyz_batch_cnt_tensor"), len(points), "xyz_tensor")
    if len(center_starts) != len(point_starts):
        raise ValueError(f"new_xyz_tensor has {len(center_starts) - 1} batches, xyz_tensor {len(point_starts) - 1}")
    idx = np.zeros((len(centers), nsample), np.int32)
    for b in range(len(center_starts) - 1):
        rows = slice(center_starts[b], center_starts[b + 1])
        idx[rows] = _balls(centers[rows], points[point_starts[b]:point_starts[b + 1]], k.attr("radius"), nsample,
                           [-1])
    return {"idx_tensor": idx}


def _checked(idx: np.ndarray, bound, what: str) -> np.ndarray:
    if idx.size and (idx.min() < 0 or (idx >= bound).any()):
        raise ValueError(f"{what} holds indices outside [0, {np.max(bound)}): {int(idx.min())} .. {int(idx.max())}")
    return idx.astype(np.int64)


@kernel("gather_operation", "grouping_operation_batch")
def gather_points(k):
    points_slot, idx_slot, out_slot = (("points", "idx", "out") if k.op.type == "gather_operation" else
                                       ("points_tensor", "idx_tensor", "out_tensor"))
    points = k.x(points_slot)
    idx = _checked(k.x(idx_slot), points.shape[2], idx_slot)
    return {out_slot: np.stack([cloud[:, rows] for cloud, rows in zip(points, idx)])}


@kernel("gather_operation_grad", "grouping_operation_batch_grad")
def gather_points_grad(k):
    points_slot, idx_slot, out_slot = (("points", "idx", "out") if k.op.type == "gather_operation_grad" else
                                       ("points_tensor", "idx_tensor", "out_tensor"))
    points, dout = k.x(points_slot), k.x(out_slot + "@GRAD")
    idx = _checked(k.x(idx_slot), points.shape[2], idx_slot)
    grad = np.zeros(points.shape, dout.dtype)
    for b in range(len(grad)):
        np.add.at(grad[b], (slice(None), idx[b]), dout[b])
    return {points_slot + "@GRAD": grad}


def _stack_rows(k, features: np.ndarray) -> np.ndarray:
    """[M, S] rows of features_tensor each index of idx_tensor picks (its batch's first row + the index)."""
    idx = k.x("idx_tensor")
    feature_starts = _starts(k.x("features_batch_cnt_tensor"), len(features), "features_tensor")
    idx_starts = _starts(k.x("idx_batch_cnt_tensor"), len(idx), "idx_tensor")
    if len(feature_starts) != len(idx_starts):
        raise ValueError(f"features_tensor has {len(feature_starts) - 1} batches, idx_tensor {len(idx_starts) - 1}")
    batch = np.repeat(np.arange(len(idx_starts) - 1), np.diff(idx_starts))
    _checked(idx, np.diff(feature_starts)[batch][:, None], "idx_tensor")
    return feature_starts[batch][:, None] + idx


@kernel("grouping_operation_stack")
def grouping_operation_stack(k):
    features = k.x("features_tensor")
    return {"out_tensor": features[_stack_rows(k, features)].transpose(0, 2, 1)}


@kernel("grouping_operation_stack_grad")
def grouping_operation_stack_grad(k):
    features, dout = k.x("features_tensor"), k.x("out_tensor@GRAD")
    grad = np.zeros(features.shape, dout.dtype)
    np.add.at(grad, _stack_rows(k, features), dout.transpose(0, 2, 1))
    return {"features_tensor@GRAD": grad}


@kernel("voxel_query_wrapper")
def voxel_query_wrapper(k):
    """Each centre's neighbours: the points point_indices holds in the voxels within (z, y, x)_range of its voxel
    (new_coords: batch, z, y, x), in z, y, x order, those within radius (squared distance <= radius^2)."""
    centers, points, coords = k.x("new_xyz_tensor"), k.x("xyz_tensor"), np.asarray(k.x("new_coords_tensor"))
    grid = np.asarray(k.x("point_indices_tensor"))
    ranges = [k.attr(f"{axis}_range") for axis in "zyx"]
    steps = np.stack(np.meshgrid(*[np.arange(-r, r + 1) for r in ranges], indexing="ij"), -1).reshape(-1, 3)
    if coords.size and ((coords[:, 0] < 0) | (coords[:, 0] >= grid.shape[0])).any():
        raise ValueError(f"new_coords_tensor holds batches outside [0, {grid.shape[0]})")
    cells = coords[:, None, 1:] + steps[None]
    valid = ((cells >= 0) & (cells < np.array(grid.shape[1:]))).all(-1)
    cells = np.where(valid[..., None], cells, 0)
    neighbours = np.where(valid, grid[coords[:, None, 0], cells[..., 0], cells[..., 1], cells[..., 2]], -1)
    if neighbours.size and neighbours.max() >= len(points):
        raise ValueError(f"point_indices_tensor holds points outside [0, {len(points)})")
    radius = np.float32(k.attr("radius"))
    near = (neighbours >= 0) & (_squared(points[np.maximum(neighbours, 0)], centers[:, None]) <= radius * radius)
    return {"idx_tensor": _first_hits(near, neighbours, k.attr("nsample"), [-1])}

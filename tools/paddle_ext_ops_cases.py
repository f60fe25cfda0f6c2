"""The cases of tools/paddle_ext_ops.py: each builds a static program (legacy or PIR: the same calls) around the
suites' custom ops, given paddle, the built extension module ``ops``, the feed to fill, a generator and whether the
program is legacy; it returns (the output, the loss, the vars whose gradients are fixtures, {name: var} of integer
results to check too). Where a case stands for a suite's layer, its docstring says which and how it is wired."""

from __future__ import annotations

import numpy as np


def _data(paddle, feed: dict, name: str, value: np.ndarray, grad: bool = True):
    feed[name] = value
    var = paddle.static.data(name, list(value.shape), str(value.dtype))
    var.stop_gradient = not grad
    return var


def _levels():
    return np.array([[3, 4], [2, 3]], np.int64), np.array([0, 12], np.int64)


def _msda_inputs(paddle, feed: dict, rng, int_grads: bool = False):
    shapes, starts = _levels()
    value = _data(paddle, feed, "value", rng.standard_normal((2, 18, 2, 3)).astype("float32"))
    loc = _data(paddle, feed, "loc", rng.uniform(-0.1, 1.1, (2, 4, 2, 2, 3, 2)).astype("float32"))
    attn = _data(paddle, feed, "attn", rng.uniform(0.1, 1.0, (2, 4, 2, 2, 3)).astype("float32"))
    return (value, loc, attn, _data(paddle, feed, "shapes", shapes, int_grads),
            _data(paddle, feed, "starts", starts, int_grads))


def _weighted_sum(paddle, feed: dict, rng, out):
    weight = _data(paddle, feed, "w_out", rng.standard_normal(out.shape).astype("float32"), grad=False)
    return paddle.sum(out * weight)


def msda_paddle3d(paddle, ops, feed, rng, legacy):
    """Paddle3D's ms_deform_attn (BEVFormer) with im2col_step 64: loss = sum(out * w)."""
    value, loc, attn, shapes, starts = _msda_inputs(paddle, feed, rng)
    out = ops.ms_deform_attn(value, loc, attn, shapes, starts, 64)
    return out, _weighted_sum(paddle, feed, rng, out), [value, loc, attn], {}


def msda_detection(paddle, ops, feed, rng, legacy):
    """PaddleDetection's ms_deformable_attn: loss = sum(out * w). Its grad op declares grads of the integer
    SpatialShapes and LevelIndex, which Paddle's legacy append_backward cannot build while they have no grad
    (InferShape reads an empty output): the legacy program marks them stop_gradient False."""
    value, loc, attn, shapes, starts = _msda_inputs(paddle, feed, rng, int_grads=legacy)
    out = ops.ms_deformable_attn(value, shapes, starts, loc, attn)
    return out, _weighted_sum(paddle, feed, rng, out), [value, loc, attn], {}


def msda_layer(paddle, ops, feed, rng, legacy):
    """The suites' MSDeformableAttention layer (PaddleDetection's, BEVFormer's spatial cross-attention core), as
    they wire it: value = value_proj(x) split into heads; sampling locations = reference points + sampling_offsets(
    query) / (W, H) of each level; attention weights = softmax over levels x points of attention_weights(query);
    output_proj of the op's output. loss = mean(out^2)."""
    shapes, starts = _levels()
    heads, levels, points, dim, queries = 2, 2, 3, 8, 5
    query = _data(paddle, feed, "query", rng.standard_normal((2, queries, dim)).astype("float32"))
    memory = _data(paddle, feed, "memory", rng.standard_normal((2, 18, dim)).astype("float32"))
    reference = _data(paddle, feed, "reference", rng.uniform(0.1, 0.9, (2, queries, levels, 2)).astype("float32"))
    spatial = _data(paddle, feed, "shapes", shapes, grad=False)
    level_start = _data(paddle, feed, "starts", starts, grad=False)
    value = paddle.reshape(paddle.nn.Linear(dim, dim)(memory), [2, 18, heads, dim // heads])
    offsets = paddle.reshape(paddle.nn.Linear(dim, heads * levels * points * 2)(query),
                             [2, queries, heads, levels, points, 2])
    logits = paddle.reshape(paddle.nn.Linear(dim, heads * levels * points)(query), [2, queries, heads, -1])
    weights = paddle.reshape(paddle.nn.functional.softmax(logits), [2, queries, heads, levels, points])
    normalizer = paddle.to_tensor(shapes[:, ::-1].astype("float32").copy()).reshape([1, 1, 1, levels, 1, 2])
    loc = paddle.reshape(reference, [2, queries, 1, levels, 1, 2]) + offsets / normalizer
    out = paddle.nn.Linear(dim, dim)(ops.ms_deform_attn(value, loc, weights, spatial, level_start, 64))
    return out, paddle.mean(out * out), [query, memory, reference], {}


def pointnet2_batch(paddle, ops, feed, rng, legacy):
    """A PointNet++ set abstraction as Paddle3D's PointnetSAModuleMSG (IA-SSD) wires the batch ops: farthest point
    sampling picks 6 of 16 centres, gather_operation their xyz, ball_query_batch 4 neighbours each (radius 0.45),
    grouping_operation_batch their xyz (relative, over the radius) and features; a 1x1 conv, relu and a max over
    the neighbours. loss = sum(out * w)."""
    radius = 0.45
    xyz = _data(paddle, feed, "xyz", rng.uniform(0, 1, (2, 16, 3)).astype("float32"))
    features = _data(paddle, feed, "features", rng.standard_normal((2, 4, 16)).astype("float32"))
    fps = ops.farthest_point_sample(xyz, 6)
    fps.stop_gradient = True   # an op without a grad op: Paddle's backward needs its output marked
    xyz_t = paddle.transpose(xyz, [0, 2, 1])
    centers_t = ops.gather_operation(xyz_t, fps)
    ball = ops.ball_query_batch(paddle.transpose(centers_t, [0, 2, 1]), xyz, radius, 4)
    ball.stop_gradient = True
    grouped_xyz = (ops.grouping_operation_batch(xyz_t, ball) - paddle.unsqueeze(centers_t, -1)) / radius
    grouped = paddle.concat([grouped_xyz, ops.grouping_operation_batch(features, ball)], axis=1)
    out = paddle.max(paddle.nn.functional.relu(paddle.nn.Conv2D(7, 8, 1)(grouped)), axis=-1)
    return out, _weighted_sum(paddle, feed, rng, out), [xyz, features], {"fps": fps, "ball": ball}


def pointnet2_stack(paddle, ops, feed, rng, legacy):
    """PV-RCNN's StackSAModuleMSG wiring of the stacked ops: two point clouds of 6 and 4 points in rows, 3 and 2
    centres; ball_query_stack 3 neighbours (radius 0.5), an empty ball's -1 set to 0 and its features zeroed (the
    suite's QueryAndGroup), grouping_operation_stack of xyz (relative) and features; max over the neighbours and a
    linear layer. loss = sum(out * w)."""
    xyz = _data(paddle, feed, "xyz", rng.uniform(0, 1, (10, 3)).astype("float32"))
    xyz_counts = _data(paddle, feed, "xyz_counts", np.array([6, 4], np.int32), grad=False)
    centers = _data(paddle, feed, "centers", rng.uniform(0, 1, (5, 3)).astype("float32"), grad=False)
    center_counts = _data(paddle, feed, "center_counts", np.array([3, 2], np.int32), grad=False)
    features = _data(paddle, feed, "features", rng.standard_normal((10, 4)).astype("float32"))
    ball = ops.ball_query_stack(centers, center_counts, xyz, xyz_counts, 0.5, 3)
    ball.stop_gradient = True
    found = paddle.cast(paddle.greater_equal(ball[:, :1], paddle.zeros([1], "int32")), "int32")
    idx = ball * found
    grouped_xyz = ops.grouping_operation_stack(xyz, xyz_counts, idx, center_counts) - paddle.unsqueeze(centers, -1)
    grouped = paddle.concat([grouped_xyz, ops.grouping_operation_stack(features, xyz_counts, idx, center_counts)], 1)
    grouped = grouped * paddle.unsqueeze(paddle.cast(found, "float32"), -1)
    out = paddle.nn.Linear(7, 6)(paddle.max(grouped, axis=-1))
    return out, _weighted_sum(paddle, feed, rng, out), [xyz, features], {"ball": ball}


def voxelize(paddle, ops, feed, rng, legacy):
    """Paddle3D's hard_voxelize (its own CPU kernel) on 40 points, some outside the range, into at most 10 voxels of
    3 points (so some points and voxels are dropped), then PointPillars' simplest pillar feature: the mean of each
    voxel's points through a linear layer. loss = sum(out * w)."""
    points = _data(paddle, feed, "points", rng.uniform(-0.3, 2.3, (40, 4)).astype("float32"), grad=False)
    voxels, coords, counts, total = ops.hard_voxelize(points, [0.5, 0.5, 1.0], [0.0, 0.0, -1.0, 2.0, 2.0, 1.0], 3, 10)
    for var in (voxels, coords, counts, total):
        var.stop_gradient = True
    divisor = paddle.clip(paddle.cast(paddle.unsqueeze(counts, -1), "float32"), min=1.0)
    out = paddle.nn.Linear(4, 6)(paddle.sum(voxels, axis=1) / divisor)
    return out, _weighted_sum(paddle, feed, rng, out), [], {"voxels": voxels, "coords": coords, "counts": counts,
                                                             "total": total}


def _frustum(rng, n=2, d=3, h=2, w=2, cells=9):
    """Paddle3D's voxel_pooling_prepare_v2 on a random frustum: each kept point's depth, pixel and BEV cell ranks,
    sorted by cell, with the intervals of one cell; and the same sorted by pixel (the suite's caller of
    bev_pool_v2_bkwd sorts so)."""
    points = n * d * h * w
    depth_rank = np.arange(points)
    pixel_rank = (depth_rank // (d * h * w)) * h * w + depth_rank % (h * w)
    bev_rank = rng.integers(0, cells, points)
    kept = rng.uniform(size=points) < 0.8
    ranks = [depth_rank[kept], pixel_rank[kept], bev_rank[kept]]
    orders = {}
    for key, by in (("bev", 2), ("feat", 1)):
        order = np.argsort(ranks[by], kind="stable")
        sorted_ranks = [r[order].astype(np.int32) for r in ranks]
        starts = np.flatnonzero(np.r_[True, sorted_ranks[by][1:] != sorted_ranks[by][:-1]]).astype(np.int32)
        lengths = np.diff(np.r_[starts, len(order)]).astype(np.int32)
        orders[key] = (*sorted_ranks, lengths, starts)
    return orders


def bev_pool(paddle, ops, feed, rng, legacy):
    """BEVDet4D's view transform core: bev_pool_v2 of a depth distribution [2 cameras, 3 bins, 2, 2] (softmax over
    bins) and features [2, 2, 2, 4] into a [1, 3, 3, 4] grid, loss = sum(out * w). Paddle has no grad op for it (the
    suite differentiates by hand): its bev_pool_v2_bkwd, run on w with the pixel-sorted intervals, gives the
    gradients the suite trains with, which gradc's bev_pool_v2_grad must equal."""
    depth = _data(paddle, feed, "depth", rng.uniform(0.1, 1.0, (2, 3, 2, 2)).astype("float32"), grad=False)
    feat = _data(paddle, feed, "feat", rng.standard_normal((2, 2, 2, 4)).astype("float32"), grad=False)
    ranks = _frustum(rng)
    names = ("ranks_depth", "ranks_feat", "ranks_bev", "lengths", "starts")
    by_bev = [_data(paddle, feed, f"bev_{n}", v, grad=False) for n, v in zip(names, ranks["bev"])]
    by_feat = [_data(paddle, feed, f"feat_{n}", v, grad=False) for n, v in zip(names, ranks["feat"])]
    out = ops.bev_pool_v2(depth, feat, *by_bev, [1, 3, 3, 4])
    weight = _data(paddle, feed, "w_out", rng.standard_normal((1, 3, 3, 4)).astype("float32"), grad=False)
    depth_grad, feat_grad = ops.bev_pool_v2_bkwd(weight, depth, feat, *by_feat)
    return out, paddle.sum(out * weight), [], {"depth_grad": depth_grad, "feat_grad": feat_grad}


def _rboxes(rng, count: int) -> np.ndarray:
    """(x, y, w, h, angle) boxes in a 4 x 4 field, sides 0.5 to 2, any angle: many overlap."""
    return np.concatenate([rng.uniform(0, 4, (count, 2)), rng.uniform(0.5, 2, (count, 2)),
                           rng.uniform(-np.pi, np.pi, (count, 1))], axis=1).astype("float32")


def rotated_boxes(paddle, ops, feed, rng, legacy):
    """PaddleDetection's rotated-box ops with their own CPU kernels: rbox_iou of 4 x 3 boxes (through a linear layer:
    the output), matched_rbox_iou of 4 pairs and nms_rotated of 8 scored boxes at IoU 0.2."""
    first = _data(paddle, feed, "rbox1", _rboxes(rng, 4), grad=False)
    second = _data(paddle, feed, "rbox2", _rboxes(rng, 3), grad=False)
    pairs = _data(paddle, feed, "rbox_pairs", _rboxes(rng, 4), grad=False)
    boxes = _data(paddle, feed, "nms_boxes", _rboxes(rng, 8), grad=False)
    scores = _data(paddle, feed, "nms_scores", rng.permutation(8).astype("float32") / 8, grad=False)
    ious, matched, kept = ops.rbox_iou(first, second), ops.matched_rbox_iou(first, pairs), ops.nms_rotated(
        boxes, scores, 0.2)
    for var in (ious, matched, kept):
        var.stop_gradient = True
    out = paddle.nn.Linear(3, 2)(ious)
    return out, _weighted_sum(paddle, feed, rng, out), [], {"ious": ious, "matched": matched, "kept": kept}


def assign_score(paddle, ops, feed, rng, legacy):
    """PAConv's ScoreNet and weight-bank mixing as Paddle3D wires assign_score_withk (its own CPU kernel): scores a
    softmax over 2 weight banks for each of 3 neighbours of 5 points (neighbours repeat), points and centers the
    banks' outputs [2, 5, 2, 4]. loss = sum(out * w)."""
    logits = _data(paddle, feed, "logits", rng.standard_normal((2, 5, 3, 2)).astype("float32"))
    points = _data(paddle, feed, "points", rng.standard_normal((2, 5, 2, 4)).astype("float32"))
    centers = _data(paddle, feed, "centers", rng.standard_normal((2, 5, 2, 4)).astype("float32"))
    knn = _data(paddle, feed, "knn", rng.integers(0, 5, (2, 5, 3)).astype("int64"), grad=False)
    out = ops.assign_score_withk(paddle.nn.functional.softmax(logits), points, centers, knn)
    return out, _weighted_sum(paddle, feed, rng, out), [logits, points, centers], {}


def voxel_query(paddle, ops, feed, rng, legacy):
    """Voxel R-CNN's VoxelQueryAndGrouping: 16 points in a 2 x 4 x 4 grid of 0.5 voxels (one point's index per voxel,
    -1 in empty ones), 5 centres queried in the 3 x 3 x 3 voxels around theirs within 0.8, 3 neighbours each; an
    empty query's -1 set to 0 and its features zeroed, the neighbours' features grouped (grouping_operation_stack),
    max over them and a linear layer. loss = sum(out * w)."""
    points = rng.uniform(0, 2, (16, 3)).astype("float32") * np.array([1, 1, 0.5], "float32")
    cells = np.floor(points / 0.5).astype(np.int32)[:, ::-1]   # z, y, x
    grid = np.full((1, 2, 4, 4), -1, np.int32)
    grid[0, cells[:, 0], cells[:, 1], cells[:, 2]] = np.arange(16, dtype=np.int32)
    centers_value = rng.uniform(0, 2, (5, 3)).astype("float32") * np.array([1, 1, 0.5], "float32")
    coords_value = np.concatenate([np.zeros((5, 1), np.int32), np.floor(centers_value / 0.5).astype(np.int32)[:, ::-1]],
                                  axis=1)
    xyz = _data(paddle, feed, "xyz", points, grad=False)
    centers = _data(paddle, feed, "centers", centers_value, grad=False)
    coords = _data(paddle, feed, "coords", coords_value, grad=False)
    indices = _data(paddle, feed, "point_indices", grid, grad=False)
    features = _data(paddle, feed, "features", rng.standard_normal((16, 4)).astype("float32"))
    counts = _data(paddle, feed, "counts", np.array([16], np.int32), grad=False)
    center_counts = _data(paddle, feed, "center_counts", np.array([5], np.int32), grad=False)
    idx = ops.voxel_query_wrapper(centers, xyz, coords, indices, 0.8, 3, 1, 1, 1)
    idx.stop_gradient = True
    found = paddle.cast(paddle.greater_equal(idx[:, :1], paddle.zeros([1], "int32")), "int32")
    grouped = ops.grouping_operation_stack(features, counts, idx * found, center_counts)
    grouped = grouped * paddle.unsqueeze(paddle.cast(found, "float32"), -1)
    out = paddle.nn.Linear(4, 3)(paddle.max(grouped, axis=-1))
    return out, _weighted_sum(paddle, feed, rng, out), [features], {"idx": idx}


def points_in_boxes(paddle, ops, feed, rng, legacy):
    """roiaware_pool3d's points_in_boxes_gpu: 24 points and 3 overlapping boxes turned by any heading; each point's
    box index (-1 outside) scales its x. loss = sum(out * w)."""
    pts = _data(paddle, feed, "pts", rng.uniform(-1, 3, (1, 24, 3)).astype("float32"))
    boxes_value = np.concatenate([rng.uniform(0.5, 1.5, (1, 3, 3)), rng.uniform(1, 2.5, (1, 3, 3)),
                                  rng.uniform(-np.pi, np.pi, (1, 3, 1))], axis=2).astype("float32")
    boxes = _data(paddle, feed, "boxes", boxes_value, grad=False)
    idx = ops.points_in_boxes_gpu(pts, boxes)
    idx.stop_gradient = True
    out = paddle.cast(idx, "float32") * pts[:, :, 0]
    return out, _weighted_sum(paddle, feed, rng, out), [pts], {"idx": idx}


CASES = {"msda_paddle3d": msda_paddle3d, "msda_detection": msda_detection, "msda_layer": msda_layer,
         "pointnet2_batch": pointnet2_batch, "pointnet2_stack": pointnet2_stack, "voxelize": voxelize,
         "bev_pool": bev_pool, "rotated_boxes": rotated_boxes,
         "assign_score": assign_score, "voxel_query": voxel_query, "points_in_boxes": points_in_boxes}

"""Paddle3D's assign_score_withk (paddle3d/ops/assign_score_withk: PAConv), the custom op that mixes a point's weight
bank outputs by its neighbours' scores, under the suite's names (its SUM aggregation, the one its kernels run):

    scores [B, N, K, M], points [B, N, M, O], centers [B, N, M, O], knn_idx [B, N, K] int64 ->
    output [B, O, N] = sum over k, m of (points[b, knn_idx[b, n, k], m, o] - centers[b, n, m, o]) * scores[b, n, k, m]

Its grad op (the suite's PD_BUILD_GRAD_OP, reading the forward output it does not use) gives the grads of scores,
points (added where neighbours repeat) and centers. gradc.ops.assign_score_double has the second derivative (the op
is bilinear in scores and (points, centers)). gradc computes in the inputs' float dtype; the suite's CPU kernel
makes a float32 output whatever they are (float64 inputs crash there).
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import defop, grad_op
from ..shapes import dims_match
from .infer import check_float, one_dtype


def _infer(ctx):
    scores, points, centers, knn = (ctx.shape(s) for s in ("scores", "points", "centers", "knn_idx"))
    dtype = one_dtype(ctx, "scores", "points", "centers")
    check_float(ctx, "scores")
    if ctx.dtype("knn_idx") not in (None, VarType.INT64):
        ctx.fail("assign_score_withk needs int64 knn_idx")
    if points is not None and (len(points) != 4 or (centers is not None and centers != points)):
        ctx.fail(f"assign_score_withk needs points and centers [B, N, M, O] of one shape, got {points} and {centers}")
    if scores is not None and points is not None and (
            len(scores) != 4 or not all(dims_match(a, b) for a, b in zip(
                (scores[0], scores[1], scores[3]), (points[0], points[1], points[2])))):
        ctx.fail(f"assign_score_withk needs scores [B, N, K, M] for points {points}, got {scores}")
    if knn is not None and scores is not None and (len(knn) != 3 or not all(
            dims_match(a, b) for a, b in zip(knn, scores[:3]))):
        ctx.fail(f"assign_score_withk needs knn_idx [B, N, K] = {scores[:3]}, got {knn}")
    return {"output": (None if points is None else [points[0], points[3], points[1]], dtype)}


defop("assign_score_withk", ["scores", "points", "centers", "knn_idx"], ["output"], infer=_infer,
      grad=grad_op("scores", "points", "centers", "knn_idx", "output"), no_grad_inputs=["knn_idx"])

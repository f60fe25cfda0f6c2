"""Kernels of gradc.ops.assign_score (Paddle3D's assign_score_withk): each point's neighbours' rows of points
gathered by knn_idx, less its centers, weighted by its scores (einsum); the points' grad scattered back with
np.add.at (neighbours repeat)."""

from __future__ import annotations

import numpy as np

from . import kernel


def _differences(k):
    """(scores, [B, N, K, M, O] points of each neighbour less the centers, the neighbour indices)."""
    scores, points, centers = k.x("scores"), k.x("points"), k.x("centers")
    knn = np.asarray(k.x("knn_idx")).astype(np.int64)
    if knn.size and (knn.min() < 0 or knn.max() >= points.shape[1]):
        raise ValueError(f"knn_idx holds indices outside [0, {points.shape[1]}): {int(knn.min())} .. {int(knn.max())}")
    batch = np.arange(points.shape[0])[:, None, None]
    return scores, points[batch, knn] - centers[:, :, None], knn


@kernel("assign_score_withk")
def assign_score_withk(k):
    scores, diff, _ = _differences(k)
    return {"output": np.einsum("bnkm,bnkmo->bon", scores, diff).astype(scores.dtype)}


@kernel("assign_score_withk_grad", shape_only=("output",))
def assign_score_withk_grad(k):
    scores, diff, knn = _differences(k)
    dout = k.x("output@GRAD")
    weighted = np.einsum("bnkm,bon->bnkmo", scores, dout)

    def points_grad():
        grad = np.zeros_like(k.x("points"))
        np.add.at(grad, (np.arange(len(grad))[:, None, None], knn), weighted)
        return grad

    return k.grads({"scores@GRAD": lambda: np.einsum("bnkmo,bon->bnkm", diff, dout).astype(scores.dtype),
                    "points@GRAD": points_grad, "centers@GRAD": lambda: -weighted.sum(2)})

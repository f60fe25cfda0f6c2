"""Cases for Paddle3D's bev_pool_v2 (gradc.ops.bev_pool): a frustum of 2 cameras, 3 depth bins and 2 x 2 pixels,
some points dropped, pooled into 3 x 3 cells (some empty, most shared); its grad op's maker (bilinear); and the
suite's hand-written backward op bev_pool_v2_bkwd, whose writes that stay are differentiated, overwritten ones too."""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(89)
SLOTS = ("_ranks_depth", "_ranks_feat", "_ranks_bev", "_interval_lengths", "_interval_starts")


def ranks(by: int = 2) -> dict:
    """The points' depth, pixel and cell ranks sorted by cell (``by`` 2) or pixel (1), with their intervals."""
    depth = np.arange(24)
    pixel = (depth // 12) * 4 + depth % 4
    kept = r.uniform(size=24) < 0.8
    columns = [depth[kept], pixel[kept], r.integers(0, 9, 24)[kept]]
    order = np.argsort(columns[by], kind="stable")
    columns = [c[order].astype(np.int32) for c in columns]
    starts = np.flatnonzero(np.r_[True, columns[by][1:] != columns[by][:-1]]).astype(np.int32)
    lengths = np.diff(np.r_[starts, len(order)]).astype(np.int32)
    return dict(zip(SLOTS, [*columns, lengths, starts]))


def inputs() -> dict:
    return {"_depth": r.uniform(0.1, 1.0, (2, 3, 2, 2)), "_feat": r.standard_normal((2, 2, 2, 4)), **ranks()}


SHAPE = {"_bev_feat_shape": [1, 3, 3, 4]}


def hand_written_backward(by: int, shared_depth: bool = False) -> dict:
    """bev_pool_v2_bkwd's inputs: dOut, the maps and ranks sorted by pixel (``by`` 1: the suite's use, one pixel per
    interval) or by cell (2: intervals starting at one pixel overwrite each other's feat grad); ``shared_depth``:
    pairs of points share a depth element, so depth grads are overwritten too."""
    values = {"_out_grad": r.standard_normal((1, 3, 3, 4)), **inputs(), **ranks(by)}
    if shared_depth:
        values["_ranks_depth"] = (values["_ranks_depth"] // 2).astype(np.int32)
    return values


CASES = [
    Case("bev_pool_v2", inputs(), SHAPE),
    second_order("bev_pool_v2", inputs(), SHAPE),
    Case("bev_pool_v2_bkwd", hand_written_backward(1)),
    Case("bev_pool_v2_bkwd", hand_written_backward(2, shared_depth=True)),
    second_order("bev_pool_v2_bkwd", hand_written_backward(2, shared_depth=True), wrt=["_out_grad"],
                 grad_type="bev_pool_v2_bkwd"),
]

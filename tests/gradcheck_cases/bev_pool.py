"""Cases for Paddle3D's bev_pool_v2 (gradc.ops.bev_pool): a frustum of 2 cameras, 3 depth bins and 2 x 2 pixels,
some points dropped, pooled into 3 x 3 cells (some empty, most shared); its grad op's maker (bilinear); and the
suite's hand-written backward op, whose differentiation gradc refuses."""

import numpy as np

from gradc.layers import ProgramBuilder

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


def _hand_written_backward() -> dict:
    """loss = sum(bev_pool_v2_bkwd(w, depth, feat, pixel-sorted ranks)'s depth grad): its maker refuses."""
    net = ProgramBuilder()
    values = {"_out_grad": r.standard_normal((1, 3, 3, 4)), **inputs(), **ranks(by=1)}
    names = {slot: net.data(slot.strip("_"), list(v.shape), "float64" if v.dtype == np.float64 else "int32",
                            stop_gradient=v.dtype != np.float64) for slot, v in values.items()}
    depth_grad = net.op("bev_pool_v2_bkwd", names, {}, outputs=["_depth_grad", "_feat_grad"])[0]
    loss = net.op("reduce_sum", {"X": depth_grad}, {"reduce_all": True})[0]
    return {"program": net.program, "feed": {names[s]: v for s, v in values.items()}, "loss": loss,
            "wrt": [names["_depth"]]}


CASES = [
    Case("bev_pool_v2", inputs(), SHAPE),
    second_order("bev_pool_v2", inputs(), SHAPE),
]
REFUSED = [Case("bev_pool_v2_bkwd", {}, program=_hand_written_backward)]

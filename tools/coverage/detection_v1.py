"""Rows: Paddle 1.x detection and vision ops still registered in 3.3.1 (anchor_generator, box_clip,
bipartite_match, generate_proposals, collect_fpn_proposals, multiclass_nms, affine_channel, shuffle_channel,
...)."""

from .spec import table

ROWS = table(
    "detection_v1",
)

"""Rows: the PIR ops of the detection_v1 family, as Paddle 3.3.1's legacy-to-PIR translator writes them (no PIR
API writes these ops). The translator has no PIR op for multiclass_nms (v1) and generate_proposals (v1)."""

from __future__ import annotations

from . import row

ANCHORS = "anchor_sizes:f32s aspect_ratios:f32s variances:f32s stride:f32s offset:f32"

ROWS = [
    row("pd_op.affine_channel", "affine_channel", "x:X scale:Scale bias:Bias", "out:Out", "data_layout:str"),
    row("pd_op.affine_channel_grad", "affine_channel_grad", "x:X scale:Scale bias:Bias out_grad:Out@GRAD",
        "x_grad:X@GRAD scale_grad:Scale@GRAD bias_grad:Bias@GRAD", "data_layout:str"),
    row("pd_op.shuffle_channel", "shuffle_channel", "x:X", "out:Out", "group:i32"),
    row("pd_op.shuffle_channel_grad", "shuffle_channel_grad", "out_grad:Out@GRAD", "x_grad:X@GRAD", "group:i32"),
    row("pd_op.add_position_encoding", "add_position_encoding", "x:X", "out:Out", "alpha:f32 beta:f32"),
    row("pd_op.add_position_encoding_grad", "add_position_encoding_grad", "x:X out_grad:Out@GRAD", "x_grad:X@GRAD",
        "alpha:f32 beta:f32"),
    row("pd_op.anchor_generator", "anchor_generator", "input:Input", "anchors:Anchors variances_out:Variances",
        ANCHORS),
    row("pd_op.box_clip", "box_clip", "input:Input im_info:ImInfo", "output:Output"),
    row("pd_op.bipartite_match", "bipartite_match", "dist_mat:DistMat",
        "col_to_row_match_indices:ColToRowMatchIndices col_to_row_match_dist:ColToRowMatchDist",
        "match_type:str dist_threshold:f32"),
    row("pd_op.collect_fpn_proposals", "collect_fpn_proposals",
        "multi_level_rois:MultiLevelRois* multi_level_scores:MultiLevelScores* "
        "multi_level_rois_num?:MultiLevelRoIsNum*", "fpn_rois:FpnRois rois_num:RoisNum",
        "post_nms_topn=post_nms_topN:i32"),
]

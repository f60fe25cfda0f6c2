"""Rows: the inference ops of detection models (gradc.ops.detection, gradc.ops.detection_nms); Paddle has no
grads of them. PIR types generate_proposals' rpn_rois_num like the scores; its kernels write int32."""

from __future__ import annotations

from . import row
from .hooks import int32_output

YOLO_BOX = ("anchors:i32s class_num:i32 conf_thresh:f32 downsample_ratio:i32 clip_bbox:bool scale_x_y:f32 "
            "iou_aware:bool iou_aware_factor:f32")
PRIOR_BOX = ("min_sizes:f32s max_sizes:f32s aspect_ratios:f32s variances:f32s flip:bool clip:bool step_w:f32 "
             "step_h:f32 offset:f32 min_max_aspect_ratios_order:bool")
MATRIX_NMS = ("score_threshold:f32 nms_top_k:i32 keep_top_k:i32 post_threshold:f32 use_gaussian:bool "
              "gaussian_sigma:f32 background_label:i32 normalized:bool")
MULTICLASS_NMS = ("score_threshold:f32 nms_top_k:i32 keep_top_k:i32 nms_threshold:f32 normalized:bool nms_eta:f32 "
                  "background_label:i32")
PROPOSALS = ("pre_nms_top_n=pre_nms_topN:i32 post_nms_top_n=post_nms_topN:i32 nms_thresh:f32 min_size:f32 eta:f32 "
             "pixel_offset:bool")

ROWS = [
    row("pd_op.yolo_box", "yolo_box", "x:X img_size:ImgSize", "boxes:Boxes scores:Scores", YOLO_BOX),
    row("pd_op.prior_box", "prior_box", "input:Input image:Image", "out:Boxes var:Variances", PRIOR_BOX),
    row("pd_op.box_coder", "box_coder", "prior_box:PriorBox prior_box_var?:PriorBoxVar target_box:TargetBox",
        "output_box:OutputBox", "code_type:str box_normalized:bool axis:i32 variance:f32s"),
    row("pd_op.nms", "nms", "x:Boxes", "out:KeepBoxesIdxs", "threshold=iou_threshold:f32"),
    row("pd_op.matrix_nms", "matrix_nms", "bboxes:BBoxes scores:Scores", "out:Out index:Index roisnum:RoisNum",
        MATRIX_NMS),
    row("pd_op.multiclass_nms3", "multiclass_nms3", "bboxes:BBoxes scores:Scores rois_num?:RoisNum",
        "out:Out index:Index nms_rois_num:NmsRoisNum", MULTICLASS_NMS),
    row("pd_op.generate_proposals", "generate_proposals_v2",
        "scores:Scores bbox_deltas:BboxDeltas im_shape:ImShape anchors:Anchors variances:Variances",
        "rpn_rois:RpnRois rpn_roi_probs:RpnRoiProbs rpn_rois_num:RpnRoisNum", PROPOSALS,
        hook=int32_output("RpnRoisNum")),
    row("pd_op.distribute_fpn_proposals", "distribute_fpn_proposals", "fpn_rois:FpnRois rois_num?:RoisNum",
        "multi_fpn_rois:MultiFpnRois* multi_level_rois_num:MultiLevelRoIsNum* restore_index:RestoreIndex",
        "min_level:i32 max_level:i32 refer_level:i32 refer_scale:i32 pixel_offset:bool"),
]

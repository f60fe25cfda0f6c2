"""The object-detection engineer's programs of docs/tools.md's 'An object-detection engineer's week': a small
single-stage detector built by Paddle 3.3.1's legacy static API (a conv backbone with batch norm, an FPN-like neck
with nearest and bilinear upsampling and concat, a YOLO head and a dense head), its losses from Paddle's detection ops
and plain ops (yolov3_loss, sigmoid focal loss, smooth L1 and GIoU by hand on box_coder-decoded prior boxes), trained
4 steps by Paddle's Momentum minimize; and its inference program with the post-processing inside (yolo_box,
multiclass_nms3 with per-image counts, roi_align of the detections), saved by save_inference_model.

Written: detector.pb (the losses and the post-processing in one program, no backward), startup.pb (Paddle's, seeded:
gradc draws Paddle's initial weights), data.npz (the 4 batches of 2 as examples), prior.npz (the prior boxes, the
same at every step), meta.json (Paddle's losses per step of Momentum(0.01, 0.9) minimize, batches in order; the
post-processing's outputs), infer_feed.npz, and Paddle's Predictor's outputs on it, of the model trained 4 steps and
saved by save_inference_model (predictor.npz; predictor_empty.npz: score threshold 0.999, no detection);
legacy_rois.pb / .npz, legacy_fpn, legacy_nms and small_box.npz: tools/paddle_user_week15_legacy.py's.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week15.py tests/data/paddle/user_week15
"""

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle import nn
from paddle.base.layer_helper import LayerHelper
from paddle_programs import predict, without_callstacks
from paddle_user_week15_legacy import legacy_fpn, legacy_rois, small_aligned_box

paddle_legacy_shim.install()
paddle.enable_static()
RNG = np.random.default_rng(15)
CLASSES, BATCH, STEPS = 3, 2, 4
ANCHORS = [4, 5, 8, 10, 12, 9]   # three anchors of the 4x4 level, in pixels of the 16x16 image
PRIORS = 4 * 4 * 2               # the dense head: 2 prior boxes per cell of the 4x4 level


def priors() -> np.ndarray:
    """Prior boxes [PRIORS, 4] (x1, y1, x2, y2 in pixels): two per cell of the 4x4 level, 6 and 10 pixels square."""
    out = []
    for i in range(4):
        for j in range(4):
            for size in (6, 10):
                cx, cy = 4 * j + 2, 4 * i + 2
                out.append([cx - size / 2, cy - size / 2, cx + size / 2, cy + size / 2])
    return np.array(out, np.float32)


def batch() -> dict:
    """Images, ground-truth boxes (normalised centre-size for yolov3_loss; one image with a padded row) and the dense
    head's targets (a class per prior, box targets in pixels, a foreground mask)."""
    gt_box = RNG.uniform(0.2, 0.8, (BATCH, 3, 4)).astype(np.float32)
    gt_box[..., 2:] = RNG.uniform(0.15, 0.5, (BATCH, 3, 2))
    gt_box[1, 2] = 0   # padding: no box
    labels = RNG.integers(0, CLASSES, (BATCH, 3)).astype(np.int32)
    fg = (RNG.random((BATCH, PRIORS, 1)) < 0.25).astype(np.float32)
    cls = np.zeros((BATCH, PRIORS, CLASSES), np.float32)
    cls[..., 0] = fg[..., 0]
    centre = RNG.uniform(2, 14, (BATCH, PRIORS, 2))
    half = RNG.uniform(1.5, 5, (BATCH, PRIORS, 2))
    target = np.concatenate([centre - half, centre + half], -1).astype(np.float32)
    return {"img": RNG.standard_normal((BATCH, 3, 16, 16)).astype(np.float32), "gt_box": gt_box,
            "gt_label": labels, "cls_target": cls, "box_target": target, "fg": fg}


def conv_bn(channels_in, channels_out, stride):
    return nn.Sequential(nn.Conv2D(channels_in, channels_out, 3, stride, 1, bias_attr=False),
                         nn.BatchNorm2D(channels_out), nn.ReLU())


def giou_loss(pred, target):
    """1 - GIoU of [..., 4] boxes (x1, y1, x2, y2), by hand as a detection engineer writes it."""
    px1, py1, px2, py2 = paddle.split(pred, 4, axis=-1)
    tx1, ty1, tx2, ty2 = paddle.split(target, 4, axis=-1)
    inter = F.relu(paddle.minimum(px2, tx2) - paddle.maximum(px1, tx1)) * \
        F.relu(paddle.minimum(py2, ty2) - paddle.maximum(py1, ty1))
    union = (px2 - px1) * (py2 - py1) + (tx2 - tx1) * (ty2 - ty1) - inter
    hull = (paddle.maximum(px2, tx2) - paddle.minimum(px1, tx1)) * (paddle.maximum(py2, ty2) - paddle.minimum(py1, ty1))
    return 1 - inter / union + (hull - union) / hull


def smooth_l1(diff):
    """Huber with delta 1 by hand: 0.5 min(|d|, 1)^2 + (|d| - min(|d|, 1))."""
    size = paddle.abs(diff)
    small = paddle.minimum(size, paddle.full_like(size, 1.0))
    return 0.5 * small * small + (size - small)


def build(main, startup):
    with paddle.static.program_guard(main, startup):
        img = paddle.static.data("img", [-1, 3, 16, 16], "float32")
        gt_box = paddle.static.data("gt_box", [-1, 3, 4], "float32")
        gt_label = paddle.static.data("gt_label", [-1, 3], "int32")
        cls_target = paddle.static.data("cls_target", [-1, PRIORS, CLASSES], "float32")
        box_target = paddle.static.data("box_target", [-1, PRIORS, 4], "float32")
        fg = paddle.static.data("fg", [-1, PRIORS, 1], "float32")
        prior = paddle.static.data("prior", [PRIORS, 4], "float32")
        c1 = conv_bn(3, 8, 1)(img)                   # 16x16
        c2 = conv_bn(8, 16, 2)(c1)                   # 8x8
        c3 = conv_bn(16, 16, 2)(c2)                  # 4x4
        up = F.interpolate(c3, scale_factor=2, mode="nearest")
        p2 = conv_bn(32, 16, 1)(paddle.concat([up, c2], axis=1))                       # 8x8
        down = F.interpolate(p2, size=[4, 4], mode="bilinear", align_corners=False)
        p3 = conv_bn(32, 16, 1)(paddle.concat([down, c3], axis=1))                     # 4x4
        yolo_out = nn.Conv2D(16, 3 * (5 + CLASSES), 1)(p3)
        dense = nn.Conv2D(16, 2 * (4 + CLASSES), 1)(p3)                               # [N, 2*(4+C), 4, 4]
        dense = paddle.reshape(paddle.transpose(dense, [0, 2, 3, 1]), [-1, PRIORS, 4 + CLASSES])
        deltas, logits = paddle.split(dense, [4, CLASSES], axis=-1)
        boxes = paddle.vision.ops.box_coder(prior, [0.1, 0.1, 0.2, 0.2], deltas, code_type="decode_center_size",
                                            box_normalized=False, axis=0)
        yolo = paddle.vision.ops.yolo_loss(yolo_out, gt_box, gt_label, ANCHORS, [0, 1, 2], CLASSES, 0.7, 4,
                                           use_label_smooth=False)
        focal = F.sigmoid_focal_loss(logits, cls_target, normalizer=paddle.sum(fg) + 1.0, reduction="sum")
        box_l1 = paddle.sum(smooth_l1((boxes - box_target) / 4.0) * fg) / (paddle.sum(fg) + 1.0)
        giou = paddle.sum(giou_loss(boxes, box_target) * fg) / (paddle.sum(fg) + 1.0)
        loss = paddle.mean(yolo) + focal + box_l1 + giou
    return {"yolo_out": yolo_out, "c2": c2, "loss": loss, "parts": [yolo, focal, box_l1, giou]}


def post_process(net, im_size, score_threshold):
    """yolo_box, multiclass_nms3 with per-image counts, roi_align of the kept boxes on the 8x8 map (stride 2)."""
    boxes, scores = paddle.vision.ops.yolo_box(net["yolo_out"], im_size, ANCHORS, CLASSES, 0.01, 4,
                                               clip_bbox=True)
    helper = LayerHelper("multiclass_nms3")
    kept, index, counts = (helper.create_variable_for_type_inference(dtype) for dtype in ("float32", "int32", "int32"))
    by_class = paddle.transpose(scores, [0, 2, 1])
    helper.append_op(type="multiclass_nms3", inputs={"BBoxes": [boxes], "Scores": [by_class]},
                     outputs={"Out": [kept], "Index": [index], "NmsRoisNum": [counts]},
                     attrs={"background_label": -1, "score_threshold": score_threshold, "nms_top_k": 20,
                            "nms_threshold": 0.45, "keep_top_k": 6, "normalized": False, "nms_eta": 1.0})
    rois = paddle.slice(kept, [1], [2], [6])
    pooled = paddle.vision.ops.roi_align(net["c2"], rois, counts, output_size=2, spatial_scale=0.5,
                                         sampling_ratio=2, aligned=True)
    return [kept, counts, pooled]


def save_inference(out: Path, exe, score_threshold: float, feed: dict) -> dict:
    """The trained net rebuilt in test mode with its post-processing, saved by save_inference_model and run by
    Paddle's Predictor."""
    infer, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard():
        net = build(infer, startup)
    with paddle.static.program_guard(infer, startup):
        im_size = paddle.static.data("im_size", [-1, 2], "int32")
        outputs = post_process(net, im_size, score_threshold)
    infer = infer.clone(for_test=True)
    img = infer.global_block().var("img")
    paddle.static.save_inference_model(str(out / "model"), [img, infer.global_block().var("im_size")],
                                       [infer.global_block().var(v.name) for v in outputs], exe, program=infer)
    return predict(str(out / "model.pdmodel"), str(out / "model.pdiparams"), feed)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    batches = [batch() for _ in range(STEPS)]
    main_prog, startup = paddle.static.Program(), paddle.static.Program()
    main_prog.random_seed = startup.random_seed = 15
    net = build(main_prog, startup)
    detector, unused_startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard():   # the same names: the losses and the post-processing in one program
        detector_net = build(detector, unused_startup)
    with paddle.static.program_guard(detector, unused_startup):
        outputs = post_process(detector_net, paddle.static.data("im_size", [-1, 2], "int32"), 0.3)
    with paddle.static.program_guard(main_prog, startup):
        paddle.optimizer.Momentum(0.01, 0.9).minimize(net["loss"])
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    losses = [float(exe.run(main_prog, feed={**feed, "prior": priors()}, fetch_list=[net["loss"]])[0])
              for feed in batches]
    (out / "detector.pb").write_bytes(without_callstacks(detector))
    (out / "startup.pb").write_bytes(without_callstacks(startup))
    examples = {key: np.concatenate([feed[key] for feed in batches]) for key in batches[0]}
    examples["im_size"] = np.full((BATCH * STEPS, 2), 16, np.int32)
    np.savez_compressed(out / "data.npz", **examples)
    np.savez_compressed(out / "prior.npz", prior=priors())
    infer_feed = {"img": RNG.standard_normal((3, 3, 16, 16)).astype(np.float32),
                  "im_size": np.array([[16, 16], [12, 16], [16, 10]], np.int32)}
    np.savez_compressed(out / "infer_feed.npz", **infer_feed)
    with tempfile.TemporaryDirectory() as saved:
        for name, threshold in (("predictor", 0.3), ("predictor_empty", 0.999)):
            np.savez_compressed(out / f"{name}.npz", **save_inference(Path(saved) / name, exe, threshold, infer_feed))
    legacy_rois(out, RNG)
    legacy_fpn(out, RNG, CLASSES)
    small_aligned_box(out, RNG)
    (out / "meta.json").write_text(json.dumps({"loss": net["loss"].name, "losses": losses,
                                               "outputs": [v.name for v in outputs]}, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

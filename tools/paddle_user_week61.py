"""The object-detection engineer's programs of docs/tools.md's 'An object-detection engineer's week (2026-12-05)': a
small single-stage detector on synthetic 32x32 images, each with 1 to 3 filled boxes of a class colour (red, green,
blue) on noise of three levels, built by Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0): three
stride-2 conv + BatchNorm2D + ReLU stages to a 4x4 map, a YOLO head (paddle.vision.ops.yolo_loss, three anchors) and
a centre head (F.sigmoid_focal_loss of each cell's classes, the cell a box's centre falls in); the inference program
decodes with paddle.vision.ops.yolo_box and keeps boxes with multiclass_nms3 (per-image counts).

Written: forward.pb, train.pb (Paddle's Momentum(0.01, 0.9) minimize), startup.pb (seeded: gradc draws Paddle's
initial weights), inference.pb (the net in test mode with its post-processing), detector.pb (the losses and the
post-processing in one program, the names of forward.pb's and inference.pb's); train.npz (48 images: img, gt_box
(normalised centre-size, padded with zeros), gt_label, cls_target, im_size, and boxes / labels, the same boxes as
pixel corners for the mAP, label -1 in padding), test.npz (24 such images); meta.json (Paddle's 4 Momentum losses,
batches of 8 in order; Adam(0.005)'s 120 losses over 20 epochs in order from the same start; the parameters; the
mAP@0.5 of Paddle's Predictor on the test set, computed here); grads.npz (Paddle's first-step gradients);
collision.npz (Paddle's gradient of yolo_out on the third batch from the initial weights: its image 7 has two boxes
in one cell with the same best anchor, where Paddle's yolov3_loss_grad is wrong); trained.npz (the weights after
Adam's 120 steps); predictor.npz (Paddle's Predictor's rows and counts on the test set, inference.pb saved by
save_inference_model with the trained weights); and the PIR half: pir_train.json / pir_startup.json (the same
detector in PIR mode, Momentum minimize) with its 4 losses in pir_meta.json.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week61.py tests/data/paddle/user_week61
"""

import io
import json
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn
from paddle_programs import minimized, pir_half, pir_minimized, predict, script_main, write_programs_gz

CLASSES, SIZE, GRID, STRIDE, MAX_BOXES = 3, 32, 4, 8, 3
ANCHORS, BATCH, STEPS, ADAM_EPOCHS, TRAIN, TEST = [6, 6, 10, 10, 16, 16], 8, 4, 20, 48, 24
COLOURS = np.array([[1.0, 0.1, 0.1], [0.1, 1.0, 0.1], [0.1, 0.1, 1.0]], np.float32)
NMS = {"background_label": -1, "score_threshold": 0.05, "nms_top_k": 48, "nms_threshold": 0.45, "keep_top_k": 10,
       "normalized": False, "nms_eta": 1.0}


def images(rng: np.random.Generator, count: int) -> dict:
    """Images with 1-3 boxes each; the boxes as yolo_loss takes them and as pixel corners, and the centre head's
    class targets."""
    img = rng.choice(np.array([-0.1, 0.0, 0.1], np.float32), (count, 3, SIZE, SIZE))   # few levels: a small file
    gt_box = np.zeros((count, MAX_BOXES, 4), np.float32)
    gt_label = np.zeros((count, MAX_BOXES), np.int32)
    corners = np.zeros((count, MAX_BOXES, 4), np.float32)
    labels = np.full((count, MAX_BOXES), -1, np.int32)
    cls_target = np.zeros((count, GRID * GRID, CLASSES), np.float32)
    for n in range(count):
        for b in range(rng.integers(1, MAX_BOXES + 1)):
            w, h = rng.integers(6, 15, 2)
            x1, y1 = rng.integers(0, SIZE - w + 1), rng.integers(0, SIZE - h + 1)
            c = rng.integers(0, CLASSES)
            img[n, :, y1:y1 + h, x1:x1 + w] = COLOURS[c][:, None, None]
            gt_box[n, b] = [(x1 + w / 2) / SIZE, (y1 + h / 2) / SIZE, w / SIZE, h / SIZE]
            gt_label[n, b], labels[n, b] = c, c
            corners[n, b] = [x1, y1, x1 + w, y1 + h]
            cell = int((y1 + h / 2) // STRIDE) * GRID + int((x1 + w / 2) // STRIDE)
            cls_target[n, cell, c] = 1.0
    return {"img": img, "gt_box": gt_box, "gt_label": gt_label, "cls_target": cls_target,
            "im_size": np.full((count, 2), SIZE, np.int32), "boxes": corners, "labels": labels}


def conv_bn(channels_in, channels_out):
    return nn.Sequential(nn.Conv2D(channels_in, channels_out, 3, 2, 1, bias_attr=False),
                         nn.BatchNorm2D(channels_out), nn.ReLU())


def network():
    """The backbone and both heads: (yolo_out [N, 3 * (5 + C), 4, 4], the centre head's logits [N, 16, C])."""
    img = paddle.static.data("img", [-1, 3, SIZE, SIZE], "float32")
    feature = conv_bn(16, 32)(conv_bn(8, 16)(conv_bn(3, 8)(img)))
    yolo_out = nn.Conv2D(32, 3 * (5 + CLASSES), 1)(feature)
    centre = paddle.transpose(nn.Conv2D(32, CLASSES, 1)(feature), [0, 2, 3, 1])
    return yolo_out, paddle.reshape(centre, [-1, GRID * GRID, CLASSES])


def detector():
    """The training loss: yolo_loss's mean plus the centre head's focal loss per box."""
    yolo_out, centre = network()
    gt_box = paddle.static.data("gt_box", [-1, MAX_BOXES, 4], "float32")
    gt_label = paddle.static.data("gt_label", [-1, MAX_BOXES], "int32")
    cls_target = paddle.static.data("cls_target", [-1, GRID * GRID, CLASSES], "float32")
    yolo = paddle.vision.ops.yolo_loss(yolo_out, gt_box, gt_label, ANCHORS, [0, 1, 2], CLASSES, 0.7, STRIDE,
                                       use_label_smooth=False)
    focal = F.sigmoid_focal_loss(centre, cls_target, normalizer=paddle.sum(cls_target) + 1.0, reduction="sum")
    return paddle.mean(yolo) + focal, yolo_out


def nms(boxes, scores):
    from paddle.base.layer_helper import LayerHelper
    helper = LayerHelper("multiclass_nms3")
    kept, index, counts = (helper.create_variable_for_type_inference(dtype) for dtype in ("float32", "int32", "int32"))
    helper.append_op(type="multiclass_nms3", inputs={"BBoxes": [boxes], "Scores": [scores]},
                     outputs={"Out": [kept], "Index": [index], "NmsRoisNum": [counts]}, attrs=NMS)
    return kept, counts


def post_process(yolo_out):
    """The YOLO head decoded by yolo_box, its boxes kept by multiclass_nms3: (rows [M, 6], counts [N])."""
    im_size = paddle.static.data("im_size", [-1, 2], "int32")
    boxes, scores = paddle.vision.ops.yolo_box(yolo_out, im_size, ANCHORS, CLASSES, 0.01, STRIDE, clip_bbox=True)
    return nms(boxes, paddle.transpose(scores, [0, 2, 1]))


def with_post_processing():
    """The training loss and the post-processing in one program (the loss first)."""
    loss, yolo_out = detector()
    return loss, *post_process(yolo_out)


def average_precision(recall: np.ndarray, precision: np.ndarray) -> float:
    """VOC's area under the precision envelope (each precision the highest at that recall or beyond)."""
    recall = np.concatenate([[0.0], recall, [1.0]])
    precision = np.concatenate([[0.0], precision, [0.0]])
    precision = np.maximum.accumulate(precision[::-1])[::-1]
    steps = np.nonzero(recall[1:] != recall[:-1])[0]
    return float(np.sum((recall[steps + 1] - recall[steps]) * precision[steps + 1]))


def box_iou(box, others):
    """IoU of one box with each of ``others`` (x1, y1, x2, y2, continuous: no +1)."""
    w = np.clip(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), 0, None)
    h = np.clip(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), 0, None)
    inter = w * h
    area = (box[2] - box[0]) * (box[3] - box[1]) + (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    return inter / (area - inter)


def mean_ap(rows, counts, boxes, labels, threshold=0.5) -> dict:
    """mAP at IoU ``threshold`` over the set, VOC's way: each class's detections by score, a true positive the first
    to match an unmatched box of its class at IoU >= threshold, AP the area under the precision envelope; the mean over
    the classes with a box."""
    images = np.repeat(np.arange(len(counts)), counts)
    aps = {}
    for c in range(CLASSES):
        truth = {n: boxes[n][labels[n] == c] for n in range(len(labels))}
        total = sum(len(t) for t in truth.values())
        if not total:
            continue
        mine = np.nonzero(rows[:, 0] == c)[0]
        mine = mine[np.argsort(-rows[mine, 1], kind="stable")]
        used = {n: np.zeros(len(t), bool) for n, t in truth.items()}
        hits = []
        for i in mine:
            n = images[i]
            ious = box_iou(rows[i, 2:], truth[n]) if len(truth[n]) else np.zeros(0)
            best = int(np.argmax(ious)) if ious.size else -1
            hit = best >= 0 and ious[best] >= threshold and not used[n][best]
            if hit:
                used[n][best] = True
            hits.append(hit)
        tp = np.cumsum(hits)
        fp = np.cumsum(np.logical_not(hits))
        aps[c] = average_precision(tp / total, tp / np.maximum(tp + fp, 1)) if len(hits) else 0.0
    return {"map": float(np.mean(list(aps.values()))), "class_ap": [aps.get(c) for c in range(CLASSES)]}


def deterministic_npz(path: Path, **arrays) -> None:
    """np.savez_compressed's content with fixed zip dates: the same arrays give the same bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in arrays.items():
            buffer = io.BytesIO()
            np.save(buffer, np.asarray(value), allow_pickle=False)
            archive.writestr(zipfile.ZipInfo(f"{name}.npy", (1980, 1, 1, 0, 0, 0)), buffer.getvalue(),
                             zipfile.ZIP_DEFLATED)


def persistables(program, scope) -> dict:
    names = sorted(v.name for v in program.list_vars() if v.persistable and v.name not in ("feed", "fetch"))
    return {name: np.array(scope.var(name).get_tensor()) for name in names}


TRAIN_KEYS = ("img", "gt_box", "gt_label", "cls_target")


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    rng = np.random.default_rng(61)
    train, test = images(rng, TRAIN), images(rng, TEST)
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.utils.unique_name.guard():
        main_prog, startup, forward, _, (loss, yolo_out) = minimized(
            detector, lambda: paddle.optimizer.Momentum(0.01, 0.9), seed=61)
    with paddle.utils.unique_name.guard():
        adam_prog, adam_startup, _, _, (adam_loss, _) = minimized(
            detector, lambda: paddle.optimizer.Adam(0.005), seed=61)
    params = [p.name for p in main_prog.all_parameters() if main_prog.global_block().has_var(f"{p.name}@GRAD")]
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        init = persistables(forward, scope)
        names = [f"{p}@GRAD" for p in params]
        third = {k: train[k][2 * BATCH:3 * BATCH] for k in TRAIN_KEYS}
        (collision,) = exe.run(main_prog, feed=third, fetch_list=[f"{yolo_out.name}@GRAD"])
        exe.run(startup)   # the first step's gradients from the initial weights too
        first = {k: train[k][:BATCH] for k in TRAIN_KEYS}
        fetched = exe.run(main_prog, feed=first, fetch_list=[loss.name, *names])
        grads = dict(zip(names, fetched[1:]))
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        losses = [float(exe.run(main_prog, feed={k: train[k][s * BATCH:(s + 1) * BATCH] for k in TRAIN_KEYS},
                                fetch_list=[loss.name])[0]) for s in range(STEPS)]
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(adam_startup)
        for name, value in init.items():   # the same initial weights as the Momentum run
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        adam_losses = [float(exe.run(adam_prog, feed={k: train[k][s * BATCH:(s + 1) * BATCH] for k in TRAIN_KEYS},
                                     fetch_list=[adam_loss.name])[0])
                       for _ in range(ADAM_EPOCHS) for s in range(TRAIN // BATCH)]
        trained = persistables(forward, scope)
        infer, infer_startup = paddle.static.Program(), paddle.static.Program()
        with paddle.utils.unique_name.guard(), paddle.static.program_guard(infer, infer_startup):
            rows, counts = post_process(network()[0])
        infer = infer.clone(for_test=True)
        with tempfile.TemporaryDirectory() as saved:
            block = infer.global_block()
            paddle.static.save_inference_model(f"{saved}/model", [block.var("img"), block.var("im_size")],
                                               [rows, counts], exe, program=infer)
            outputs = predict(f"{saved}/model.pdmodel", f"{saved}/model.pdiparams",
                              {"img": test["img"], "im_size": test["im_size"]})
    got_rows, got_counts = outputs[rows.name], outputs[counts.name]
    combined = paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(combined, paddle.static.Program()):
        with_post_processing()
    write_programs_gz(out, {"forward": forward, "train": main_prog, "startup": startup, "inference": infer,
                            "detector": combined})
    deterministic_npz(out / "train.npz", **train)
    deterministic_npz(out / "test.npz", **test)
    deterministic_npz(out / "collision.npz", **{"yolo_out@GRAD": collision})
    deterministic_npz(out / "trained.npz", **trained)
    deterministic_npz(out / "grads.npz", **grads)
    deterministic_npz(out / "predictor.npz", rows=got_rows, counts=got_counts)
    meta = {"loss": loss.name, "yolo_out": yolo_out.name, "losses": losses, "adam_losses": adam_losses,
            "params": params, "rows": rows.name, "counts": counts.name,
            "map50": mean_ap(got_rows, got_counts, test["boxes"], test["labels"])}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    rng = np.random.default_rng(61)
    train = images(rng, TRAIN)
    main_prog, startup, loss, _ = pir_minimized(out, "", lambda: detector()[0],
                                                lambda: paddle.optimizer.Momentum(0.01, 0.9), seed=61)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    losses = [float(exe.run(main_prog, feed={k: train[k][s * BATCH:(s + 1) * BATCH] for k in TRAIN_KEYS},
                            fetch_list=[loss])[0]) for s in range(STEPS)]
    (out / "pir_meta.json").write_text(json.dumps({"losses": losses}, indent=1) + "\n")


if __name__ == "__main__":
    script_main(main, main_pir)

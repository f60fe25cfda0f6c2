"""Kernels of gradc.ops.inference_gpu_extra, computed in float64 and returned in the input's dtype."""

from __future__ import annotations

import numpy as np

from . import kernel


@kernel("qkv_unpack_mha")
def qkv_unpack_mha(k):
    q, key, value = k.x("q"), k.x("k"), k.x("v")
    if q.ndim != 4 or q.shape[1] != 1 or key.ndim != 4 or key.shape != value.shape \
            or (key.shape[0], *key.shape[2:]) != (q.shape[0], *q.shape[2:]):
        raise ValueError(f"needs q [B, 1, N, H] and k, v [B, S, N, H], got {list(q.shape)}, {list(key.shape)} and "
                         f"{list(value.shape)}")
    heads_first = (a.astype(np.float64).transpose(0, 2, 1, 3) for a in (q, key, value))   # [B, N, S, H]
    q64, k64, v64 = heads_first
    scores = q64 @ np.swapaxes(k64, -1, -2) / np.sqrt(q.shape[3])
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True) + 1e-6   # the kernel's 1 / (sum + 1e-6)
    return {"out": (weights @ v64).transpose(0, 2, 1, 3).astype(q.dtype)}


@kernel("fused_token_prune")
def fused_token_prune(k):
    attn, x, mask, kept = k.x("Attn"), k.x("X"), k.x("Mask"), k.x("NewMask").shape[2]
    if attn.ndim != 4 or mask.shape != attn.shape or x.ndim != 3 or x.shape[:2] != (attn.shape[0], attn.shape[3]) \
            or kept > x.shape[1]:
        raise ValueError(f"needs Attn and Mask [B, heads, S, S], X [B, S, C] and NewMask [B, heads, L, L] with L <= S, "
                         f"got {list(attn.shape)}, {list(mask.shape)}, {list(x.shape)} and "
                         f"{list(k.x('NewMask').shape)}")
    scores = np.where(mask >= 0, attn, 0).sum(axis=(1, 2))
    if k.attr("keep_first_token"):
        scores[:, 0] = np.finfo(scores.dtype).max
    order = np.argsort(-scores, axis=1, kind="stable")[:, :kept]
    if k.attr("keep_order"):
        order = np.sort(order, axis=1)
    return {"SlimmedX": np.take_along_axis(x, order[:, :, None], axis=1), "CLSInds": order.astype(np.int64)}


def _head_boxes(boxes, anchors, ratio: int, classes: int, pic_h: float, pic_w: float, thresh: float) -> list:
    """One image's boxes of one head: rows [objectness, x1, y1, x2, y2, class scores...], anchor, row, column order."""
    count, grid = len(anchors) // 2, boxes.shape[1]
    cells = boxes.reshape(count, 5 + classes, grid, grid)
    rows = []
    for a in range(count):
        for row in range(grid):
            for col in range(grid):
                x, y, w, h, objectness, *scores = cells[a, :, row, col]
                if objectness < thresh:
                    continue
                cx, cy = (x + col) * pic_w / grid, (y + row) * pic_h / grid
                w, h = w * anchors[2 * a] * pic_w / (ratio * grid), h * anchors[2 * a + 1] * pic_h / (ratio * grid)
                rows.append([objectness, max(cx - w / 2, 0.0), max(cy - h / 2, 0.0), min(cx + w / 2, pic_w - 1),
                             min(cy + h / 2, pic_h - 1), *(s * objectness for s in scores)])
    return rows


def _centre_iou(a, b) -> float:
    """The kernel's IoU of boxes (x, y, w, h), (x, y) read as the centre."""
    w = min(a[0] + a[2] / 2, b[0] + b[2] / 2) - max(a[0] - a[2] / 2, b[0] - b[2] / 2)
    h = min(a[1] + a[3] / 2, b[1] + b[3] / 2) - max(a[1] - a[3] / 2, b[1] - b[3] / 2)
    inter = 0.0 if w < 0 or h < 0 else w * h
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def _suppressed(rows: list, thresh: float) -> list:
    """[class, objectness, x1, y1, x2, y2] rows after the kernel's sort and NMS."""
    dets = []
    for objectness, x1, y1, x2, y2, *scores in rows:
        best = max(range(len(scores)), key=lambda c: (scores[c], -c)) if scores else -1
        label = best if scores and scores[best] > 0 else -1
        dets.append([label, objectness, x1, y1, x2, y2, scores[label] if label >= 0 else objectness])
    dets.sort(key=lambda d: (d[1] == 0, d[0], -d[6]))   # zero objectness last, then by class and score
    for i, a in enumerate(dets):
        if a[1] == 0:
            continue
        for b in dets[i + 1:]:
            if b[1] == 0:
                continue
            if b[0] != a[0]:
                break
            if _centre_iou((a[2], a[3], a[4] - a[2], a[5] - a[3]), (b[2], b[3], b[4] - b[2], b[5] - b[3])) > thresh:
                b[1] = 0.0
    return [d[:6] for d in dets]


@kernel("yolo_box_post")
def yolo_box_post(k):
    heads = [k.x(f"Boxes{i}").astype(np.float32) for i in range(3)]
    shapes, scales, classes = k.x("ImageShape").astype(np.float32), k.x("ImageScale").astype(np.float32), \
        k.attr("class_num")
    out, counts = [], []
    for n in range(shapes.shape[0]):
        pic_h, pic_w = np.float32(shapes[n, 0] / scales[n, 0]), np.float32(shapes[n, 1] / scales[n, 1])
        rows = []
        for i, boxes in enumerate(heads):
            anchors = k.attr(f"anchors{i}")
            if boxes.ndim != 4 or boxes.shape[1] != len(anchors) // 2 * (5 + classes) or boxes.shape[0] <= n \
                    or boxes.shape[2] != boxes.shape[3]:
                raise ValueError(f"Boxes{i} {list(boxes.shape)} must be [N, {len(anchors) // 2 * (5 + classes)}, H, H] "
                                 f"for {shapes.shape[0]} images (the CUDA kernel takes the grid square)")
            rows += _head_boxes(boxes[n].astype(np.float64), anchors, k.attr(f"downsample_ratio{i}"), classes,
                                float(pic_h), float(pic_w), k.attr("conf_thresh"))
        kept = _suppressed(rows, k.attr("nms_threshold"))
        out += kept
        counts.append(len(kept))
    return {"Out": np.array(out, np.float32).reshape(-1, 6) if out else np.zeros((1, 6), np.float32),
            "NmsRoisNum": np.array(counts, np.int32)}

"""More cases of tools/paddle_gpu_inference_ops.py (added to its CASES): the GPU-pass ops of the second round (the
cuDNN and ResNet fusions from tools/paddle_gpu_resnet_cases.py), each with ``reference``, Paddle's CPU run of the
unfused layers the op replaces on the float64 feeds, and ``dtype``, the feeds' float dtype (the expected numbers are
rounded to it)."""

from __future__ import annotations

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle_gpu_resnet_cases import RESNET_CASES

F32 = "float32"


def _qkv_unpack_mha(dtype: str) -> dict:
    """One decoding step: q [2, 1, 2, 16] over k, v [2, 5, 2, 16]; the kernel never reads src_mask (fed here)."""
    feeds = {"q": ([2, 1, 2, 16], dtype), "k": ([2, 5, 2, 16], dtype), "v": ([2, 5, 2, 16], dtype),
             "mask": ([2, 1, 1, 5], dtype)}
    op = ("qkv_unpack_mha", {"q": ["q"], "k": ["k"], "v": ["v"], "src_mask": ["mask"]},
          {"out": ("out", [2, 1, 2, 16], dtype)}, {})

    def reference(t):
        q, k, v = (t[n].transpose([0, 2, 1, 3]) for n in "qkv")
        weights = F.softmax(paddle.matmul(q, k, transpose_y=True) / 4.0)
        return {"out": paddle.matmul(weights, v).transpose([0, 2, 1, 3])}

    return {"feeds": feeds, "ops": [op], "reference": reference, "dtype": dtype}


def _token_prune(keep_first: bool, keep_order: bool, dtype: str) -> dict:
    """Attn and Mask [2, 2, 6, 6], X [2, 6, 3], NewMask [2, 2, 4, 4]: four of six tokens kept."""
    feeds = {"attn": ([2, 2, 6, 6], dtype), "x": ([2, 6, 3], dtype), "mask": ([2, 2, 6, 6], dtype),
             "new_mask": ([2, 2, 4, 4], dtype)}
    ins = {"Attn": ["attn"], "X": ["x"], "Mask": ["mask"], "NewMask": ["new_mask"]}
    outs = {"SlimmedX": ("slimmed_x", [2, 4, 3], dtype), "CLSInds": ("cls_inds", [2, 4], "int64")}
    attrs = {"keep_first_token": keep_first, "keep_order": keep_order}

    def reference(t):
        scores = paddle.where(t["mask"] >= 0, t["attn"], paddle.zeros_like(t["attn"])).sum([1, 2])
        if keep_first:
            scores[:, 0] = paddle.finfo(paddle.float32 if dtype == "float32" else paddle.float64).max
        order = paddle.argsort(scores, axis=1, descending=True, stable=True)[:, :4]
        if keep_order:
            order = paddle.sort(order, axis=1)
        return {"slimmed_x": paddle.take_along_axis(t["x"], order.unsqueeze(-1), axis=1), "cls_inds": order}

    return {"feeds": feeds, "ops": [("fused_token_prune", ins, outs, attrs)], "reference": reference, "dtype": dtype}


YOLO_ANCHORS = ([30, 40, 50, 60], [12, 16, 20, 24], [4, 6, 8, 10])


def _yolo_box_post() -> dict:
    """yolo_box_fuse_pass's program: three yolo_box_head (grids 2, 4, 8, ratios 32, 16, 8, two anchors, two classes)
    and yolo_box_post over two images, nms_threshold 1 (no box is suppressed: the NMS is checked by hand in
    tests/test_gpu_inference.py). Expected: Paddle's CPU yolo_box of each head (the unfused decoding: the same boxes
    and class scores), its kept boxes [argmax class, objectness, x1, y1, x2, y2] sorted by class and score."""
    sizes, ratios = (2, 4, 8), (32, 16, 8)
    feeds = {f"x{i}": ([2, 14, size, size], F32) for i, size in enumerate(sizes)}
    feeds |= {"image_shape": ([2, 2], F32), "image_scale": ([2, 2], F32)}
    heads = [("yolo_box_head", {"X": [f"x{i}"]}, {"Out": (f"head{i}", [2, 14, size, size])},
              {"anchors": YOLO_ANCHORS[i], "class_num": 2}) for i, size in enumerate(sizes)]
    attrs = {f"anchors{i}": YOLO_ANCHORS[i] for i in range(3)} | {
        f"downsample_ratio{i}": ratio for i, ratio in enumerate(ratios)} | {
        "class_num": 2, "conf_thresh": 0.5, "clip_bbox": True, "scale_x_y": 1.0, "nms_threshold": 1.0}
    post = ("yolo_box_post", {"Boxes0": ["head0"], "Boxes1": ["head1"], "Boxes2": ["head2"],
                              "ImageShape": ["image_shape"], "ImageScale": ["image_scale"]},
            {"Out": ("out", [-1, 6]), "NmsRoisNum": ("rois_num", [2], "int32")}, attrs)

    def derive(feed):
        return {"image_shape": np.array([[320, 320], [256, 320]], np.float32), "image_scale": np.ones((2, 2),
                                                                                                     np.float32)}

    def reference(t):
        rows, counts = [], []
        for n in range(2):
            image = []
            for i, ratio in enumerate(ratios):
                x = t[f"x{i}"][n:n + 1]
                boxes, scores = paddle.vision.ops.yolo_box(
                    x, t["image_shape"][n:n + 1].astype("int32"), YOLO_ANCHORS[i], 2, 0.5, ratio, clip_bbox=True)
                objectness = F.sigmoid(x.reshape([2, 7, -1])[:, 4]).reshape([-1])
                keep = (objectness >= 0.5).numpy()
                best = scores[0].argmax(-1).astype(boxes.dtype)
                image.append(paddle.concat([best[:, None], objectness[:, None], boxes[0]], -1).numpy()[keep])
                image[-1] = np.concatenate([image[-1], scores[0].max(-1).numpy()[keep, None]], -1)
            image = np.concatenate(image)
            order = np.lexsort((-image[:, 6], image[:, 0]))
            rows.append(image[order, :6])
            counts.append(len(order))
        return {"out": paddle.to_tensor(np.concatenate(rows)), "rois_num": paddle.to_tensor(np.array(counts, np.int32))}

    return {"feeds": feeds, "ops": [*heads, post], "reference": reference, "derive": derive}


def _squeeze_excitation(acts: list[int], params: list[float], extras: bool, dtype: str) -> dict:
    """squeeze_excitation_fuse_pass's op over x [2, 8, 3, 3], reduction ratio 4 (two hidden channels): the int16 filter
    and its maxima 0.5 (W1) and 0.8 (W2) drawn, with bias and branch when ``extras``. Expected: Paddle's CPU adaptive
    average pool, 1x1 conv2d with the dequantized weights (+ bias) and activations, multiply (+ branch)."""
    feeds = {"x": ([2, 8, 3, 3], dtype), "filter": ([32], "int16"), "filter_max": ([12], "float32")}
    if extras:
        feeds |= {"bias": ([10], "float32"), "branch": ([2, 8, 3, 3], dtype)}
    op = ("squeeze_excitation_block", {name: [name] for name in feeds}, {"out": ("out", [2, 8, 3, 3], dtype)},
          {"act_type": acts, "act_param": params, "filter_dims": [4, 8]})
    activations = {0: lambda v, a: v, 1: lambda v, a: F.relu(v), 2: lambda v, a: F.sigmoid(v),
                   5: lambda v, a: F.leaky_relu(v, a), 14: lambda v, a: F.hardswish(v)}

    def derive(feed):
        rng = np.random.default_rng(len(acts) + extras)
        return {"filter": rng.integers(-32767, 32768, 32).astype(np.int16),
                "filter_max": np.repeat(np.float32([0.5, 0.8]), 6)}

    def reference(t):
        q = t["filter"].astype("float64")
        w1 = (q[:16].reshape([8, 2]) * 0.5 / 32767).transpose([1, 0]).reshape([2, 8, 1, 1])
        w2 = (q[16:].reshape([2, 8]) * float(np.float32(0.8)) / 32767).transpose([1, 0]).reshape([8, 2, 1, 1])
        b1, b2 = (t["bias"][:2].astype("float64"), t["bias"][2:].astype("float64")) if extras else (None, None)
        pooled = F.adaptive_avg_pool2d(t["x"], 1)
        h = activations[acts[0]](F.conv2d(pooled, w1.astype(t["x"].dtype), b1), params[0])
        s = activations[acts[1]](F.conv2d(h, w2.astype(t["x"].dtype), b2), params[1])
        out = t["x"] * s + (t["branch"] if extras else 0)
        return {"out": activations[acts[2]](out, params[2])}

    return {"feeds": feeds, "ops": [op], "reference": reference, "derive": derive, "dtype": dtype}


GPU_PASS_CASES = {   # in the order the fixtures were written: a case's seed is 500 + its place in the merged list
    "qkv_unpack_mha": _qkv_unpack_mha("float32"),
    "qkv_unpack_mha_float64": _qkv_unpack_mha("float64"),
    "token_prune_first": _token_prune(True, False, "float32"),
    "token_prune_ordered_float64": _token_prune(False, True, "float64"),
    **RESNET_CASES,
    "yolo_box_post": _yolo_box_post(),
    "squeeze_excitation": _squeeze_excitation([1, 2, 1], [0.0, 0.0, 0.0], True, "float32"),
    "squeeze_excitation_float64": _squeeze_excitation([5, 2, 14], [0.1, 0.0, 0.0], False, "float64"),
}

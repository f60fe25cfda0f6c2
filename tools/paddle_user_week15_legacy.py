"""The legacy-op fixtures of tools/paddle_user_week15.py, which calls them after the detector with its random
generator (so they draw what they drew there): legacy_rois.pb / .npz (roi_align and roi_pool of boxes given by a LoD,
as legacy programs give them, with Paddle's outputs and X@GRAD), legacy_fpn and legacy_nms (legacy_fpn's docstring)
and small_box.npz (small_aligned_box's)."""

from pathlib import Path

import numpy as np
import paddle
from paddle.base.layer_helper import LayerHelper
from paddle_programs import without_callstacks


def legacy_rois(out: Path, rng: np.random.Generator) -> None:
    """roi_align and roi_pool as a legacy program appends them (no RoisNum; the boxes a LoD tensor whose sequences
    are the images' boxes), two images, and the gradient of sum(out^2 / 2) by Paddle's backward: legacy_rois.pb
    (the forward and Paddle's backward) and legacy_rois.npz (the feed, the LoD, Paddle's outputs and X@GRAD)."""
    program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(program, startup):
        x = paddle.static.data("x", [2, 3, 6, 6], "float32")
        x.stop_gradient = False
        rois = paddle.static.data("rois", [-1, 4], "float32", lod_level=1)
        outs = []
        for op_type in ("roi_align", "roi_pool"):
            helper = LayerHelper(op_type)
            pooled = helper.create_variable_for_type_inference("float32")
            extra = {"Argmax": [helper.create_variable_for_type_inference("int64")]} if op_type == "roi_pool" else {}
            attrs = {"pooled_height": 2, "pooled_width": 2, "spatial_scale": 0.5,
                     **({"sampling_ratio": 2, "aligned": True} if op_type == "roi_align" else {})}
            helper.append_op(type=op_type, inputs={"X": [x], "ROIs": [rois]}, outputs={"Out": [pooled], **extra},
                             attrs=attrs)
            outs.append(pooled)
        loss = paddle.sum(outs[0] * outs[0] * 0.5) + paddle.sum(outs[1] * outs[1] * 0.5)
        (grad,) = paddle.static.gradients([loss], [x])
    boxes = np.array([[0, 0, 6, 6], [2, 1, 11, 9], [4, 4, 10, 12], [1, 3, 7, 5]], np.float32)
    lengths = [1, 3]
    tensor = paddle.base.core.LoDTensor()
    tensor.set(boxes, paddle.CPUPlace())
    tensor.set_recursive_sequence_lengths([lengths])
    images = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    exe = paddle.static.Executor(paddle.CPUPlace())
    align, pool, x_grad = exe.run(program, feed={"x": images, "rois": tensor}, fetch_list=[*outs, grad])
    (out / "legacy_rois.pb").write_bytes(without_callstacks(program))
    np.savez_compressed(out / "legacy_rois.npz", x=images, rois=boxes, lengths=np.array(lengths), align=align,
                        pool=pool, x_grad=x_grad, names=np.array([outs[0].name, outs[1].name, grad.name]))


def _lod_tensor(array: np.ndarray, lengths: list[int]):
    tensor = paddle.base.core.LoDTensor()
    tensor.set(array, paddle.CPUPlace())
    tensor.set_recursive_sequence_lengths([lengths])
    return tensor


def _legacy_op(op_type: str, inputs: dict, outputs: dict, attrs: dict) -> dict:
    """Append a legacy op; ``outputs`` maps each slot to the dtypes of its vars; returns the slots' vars."""
    helper = LayerHelper(op_type)
    made = {slot: [helper.create_variable_for_type_inference(dtype) for dtype in dtypes]
            for slot, dtypes in outputs.items()}
    helper.append_op(type=op_type, inputs=inputs, outputs=made, attrs=attrs)
    return made


def legacy_fpn(out: Path, rng: np.random.Generator, classes: int) -> None:
    """A legacy FPN head as fluid programs append it: proposals as a LoD tensor (the images' sequences, no RoisNum)
    distributed over two levels, roi_align of each level's boxes (their LoD), concatenated and restored to the
    proposals' order, with Paddle's gradients of sum(out^2 / 2) for both feature maps (legacy_fpn.pb / .npz); and
    multiclass_nms3 of per-class boxes [M, C, 4] and scores [M, C] whose images a LoD gives (legacy_nms.pb / .npz)."""
    program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(program, startup):
        maps = [paddle.static.data(f"p{level}", [2, 4, size, size], "float32") for level, size in ((2, 8), (3, 4))]
        for feature in maps:
            feature.stop_gradient = False
        rois = paddle.static.data("rois", [-1, 4], "float32", lod_level=1)
        split = _legacy_op("distribute_fpn_proposals", {"FpnRois": [rois]},
                           {"MultiFpnRois": ["float32", "float32"], "RestoreIndex": ["int32"]},
                           {"min_level": 2, "max_level": 3, "refer_level": 3, "refer_scale": 12, "pixel_offset": True})
        pooled = [_legacy_op("roi_align", {"X": [feature], "ROIs": [level_rois]}, {"Out": ["float32"]},
                             {"pooled_height": 2, "pooled_width": 2, "spatial_scale": 1.0 / 2 ** level,
                              "sampling_ratio": 2, "aligned": False})["Out"][0]
                  for level, feature, level_rois in zip((2, 3), maps, split["MultiFpnRois"])]
        restored = paddle.gather(paddle.concat(pooled, 0), split["RestoreIndex"][0])
        loss = paddle.sum(restored * restored * 0.5)
        grads = paddle.static.gradients([loss], maps)
    corners = rng.uniform(0, 24, (12, 2)).astype(np.float32)
    boxes = np.concatenate([corners, corners + rng.uniform(2, 20, (12, 2)).astype(np.float32)], 1)
    feed = {"p2": rng.standard_normal((2, 4, 8, 8)).astype(np.float32),
            "p3": rng.standard_normal((2, 4, 4, 4)).astype(np.float32)}
    exe = paddle.static.Executor(paddle.CPUPlace())
    fetched = exe.run(program, feed={**feed, "rois": _lod_tensor(boxes, [5, 7])},
                      fetch_list=[restored, *grads, *split["MultiFpnRois"]], return_numpy=False)
    restored_value, p2_grad, p3_grad, *levels = fetched
    (out / "legacy_fpn.pb").write_bytes(without_callstacks(program))
    np.savez_compressed(out / "legacy_fpn.npz", **feed, rois=boxes, lengths=np.array([5, 7]),
                        pooled=np.array(restored_value), p2_grad=np.array(p2_grad), p3_grad=np.array(p3_grad),
                        level_lods=np.array([level.lod()[0] for level in levels]),
                        names=np.array([restored.name, *(grad.name for grad in grads),
                                        *(v.name for v in split["MultiFpnRois"])]))
    program = paddle.static.Program()
    with paddle.static.program_guard(program, paddle.static.Program()):
        boxes_var = paddle.static.data("boxes", [-1, classes, 4], "float32", lod_level=1)
        scores_var = paddle.static.data("scores", [-1, classes], "float32", lod_level=1)
        kept = _legacy_op("multiclass_nms3", {"BBoxes": [boxes_var], "Scores": [scores_var]},
                          {"Out": ["float32"], "Index": ["int32"], "NmsRoisNum": ["int32"]},
                          {"background_label": 0, "score_threshold": 0.2, "nms_top_k": 8, "nms_threshold": 0.4,
                           "keep_top_k": 5, "normalized": False, "nms_eta": 1.0})
    corners = rng.uniform(0, 20, (10, 1, 2)).astype(np.float32)
    per_class = np.concatenate([corners + rng.uniform(-1, 1, (10, classes, 2)),
                                corners + rng.uniform(3, 10, (10, classes, 2))], -1).astype(np.float32)
    scores = rng.random((10, classes)).astype(np.float32)
    names = [kept[slot][0].name for slot in ("Out", "Index", "NmsRoisNum")]
    values = exe.run(program, feed={"boxes": _lod_tensor(per_class, [4, 6]), "scores": _lod_tensor(scores, [4, 6])},
                     fetch_list=names)
    (out / "legacy_nms.pb").write_bytes(without_callstacks(program))
    np.savez_compressed(out / "legacy_nms.npz", boxes=per_class, scores=scores, lengths=np.array([4, 6]),
                        out=values[0], index=values[1], counts=values[2], names=np.array(names))


def small_aligned_box(out: Path, rng: np.random.Generator) -> None:
    """Paddle's roi_align (aligned, sampling_ratio 2) of a box less than a pixel wide at its scale, and Paddle's
    X@GRAD of sum(out^2 / 2): its grad kernel widens such a box to a pixel, its forward does not (small_box.npz)."""
    program = paddle.static.Program()
    with paddle.static.program_guard(program, paddle.static.Program()):
        x = paddle.static.data("x", [1, 2, 8, 8], "float32")
        x.stop_gradient = False
        boxes = paddle.static.data("boxes", [1, 4], "float32")
        pooled = paddle.vision.ops.roi_align(x, boxes, paddle.full([1], 1, "int32"), output_size=2,
                                             spatial_scale=0.25, sampling_ratio=2, aligned=True)
        (grad,) = paddle.static.gradients([paddle.sum(pooled * pooled * 0.5)], [x])
    feed = {"x": rng.standard_normal((1, 2, 8, 8)).astype(np.float32),
            "boxes": np.array([[26.326262, 10.954319, 30.0, 24.0]], np.float32)}
    value, x_grad = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=feed, fetch_list=[pooled, grad])
    np.savez_compressed(out / "small_box.npz", **feed, out=value, x_grad=x_grad)

"""Paddle3D's bird's-eye-view IoU and NMS ops (gradc.ops.rotated_boxes), whose CPU source needs CUDA's headers, so no
Paddle run of them exists: checked on boxes whose overlaps are known in closed form (PaddleDetection's rotated ops,
the same geometry, are checked against Paddle's own CPU kernels in test_ext_ops.py)."""

import numpy as np
import pytest

import gradc
from gradc.ir import to_var_type

SQRT2 = np.sqrt(2.0)


def box(x, y, dx, dy, heading=0.0):
    return [x, y, 0.5, dx, dy, 1.0, heading]


def run(op_type: str, inputs: dict, outputs: list[str], attrs: dict | None = None) -> list[np.ndarray]:
    """Run one op through a saved and reloaded program (the suite's slot names, the space included, survive)."""
    program = gradc.Program()
    block, feed, slots = program.global_block, {}, {}
    for i, (slot, value) in enumerate(inputs.items()):
        name = f"in{i}"
        block.create_var(name, list(value.shape), to_var_type(value.dtype))
        feed[name], slots[slot] = value, [name]
    for slot in outputs:
        block.create_var(f"out_{slot}", None, None)
    block.append_op(op_type, slots, {slot: [f"out_{slot}"] for slot in outputs}, attrs or {})
    again = gradc.io.parse_program(gradc.io.serialize(program))
    assert again.global_block.ops[0].inputs.keys() == inputs.keys()
    return gradc.Executor().run(again, feed=feed, fetch_list=[f"out_{slot}" for slot in outputs])


# (box a, box b, overlap area): offset unit squares, a square and itself turned 45 degrees, disjoint boxes
PAIRS = [(box(0, 0, 2, 2), box(1, 1, 2, 2), 1.0),
         (box(0, 0, 2, 2), box(0, 0, 2, 2, np.pi / 4), 8 * (SQRT2 - 1)),
         (box(0, 0, 4, 1, np.pi / 2), box(0, 0, 4, 1), 1.0),
         (box(0, 0, 1, 1), box(3, 0, 1, 1, 0.3), 0.0)]


@pytest.mark.parametrize("op_type", ["boxes_iou_bev_cpu", "boxes_iou_bev_gpu"])
def test_bev_iou_is_the_overlap_over_the_union(op_type):
    a = np.array([p[0] for p in PAIRS], np.float32)
    b = np.array([p[1] for p in PAIRS], np.float32)
    (ious,) = run(op_type, {"boxes_a_tensor": a, " boxes_b_tensor": b}, ["ans_iou_tensor"])
    areas_a, areas_b = a[:, 3] * a[:, 4], b[:, 3] * b[:, 4]
    expected = [o / (sa + sb - o) for (_, _, o), sa, sb in zip(PAIRS, areas_a, areas_b)]
    assert ious.shape == (4, 4) and ious.dtype == np.float32
    np.testing.assert_allclose(np.diag(ious), expected, rtol=1e-6, atol=1e-7)


def test_bev_overlap_is_the_intersection_area():
    a = np.array([p[0] for p in PAIRS], np.float32)
    b = np.array([p[1] for p in PAIRS], np.float32)
    (overlaps,) = run("boxes_overlap_bev_gpu", {"boxes_a": a, " boxes_b": b}, ["ans_overlap"])
    np.testing.assert_allclose(np.diag(overlaps), [p[2] for p in PAIRS], rtol=1e-6, atol=1e-6)


# box 1 overlaps box 0 by IoU 1/7; box 2 is box 0 turned 45 degrees (IoU 0.707, 1 ignoring the heading); box 3 apart
NMS_BOXES = np.array([box(0, 0, 2, 2), box(1, 1, 2, 2), box(0, 0, 2, 2, np.pi / 4), box(5, 5, 1, 1)], np.float32)


@pytest.mark.parametrize("op_type, threshold, kept", [
    ("nms_gpu", 0.1, [0, 3]), ("nms_gpu", 0.2, [0, 1, 3]), ("nms_gpu", 0.8, [0, 1, 2, 3]),
    ("nms_normal_gpu", 0.8, [0, 1, 3]), ("nms_normal_gpu", 0.1, [0, 3])])
def test_nms_keeps_each_box_no_kept_box_overlaps_beyond_the_threshold(op_type, threshold, kept):
    keep, count = run(op_type, {"boxes": NMS_BOXES}, ["keep", "num_to_keep"], {"nms_overlap_thresh": threshold})
    assert count.tolist() == [len(kept)]
    assert keep.tolist() == kept + [0] * (len(NMS_BOXES) - len(kept))

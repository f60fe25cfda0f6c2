"""The graph ops (gradc.ops.graph) against values Paddle 3.3.1 computed: rows out_size leaves unreached are 0
(also for MAX and MIN), ties of MAX and MIN each get the whole dOut, and where gradc departs from Paddle on
purpose: a repeated (src, dst) edge carries one message for send_recv's MAX and MIN grads, and SUB and DIV
messages compute x - y and x / y (Paddle's kernels write zeros)."""

import numpy as np
import pytest

import gradc
import one_op
import test_family_float32 as float32_family
from gradc.ir import to_var_type
from gradc.limits import limited
from gradcheck_cases import graph as graph_cases

X = np.array([[1.0, 5.0], [3.0, 2.0], [3.0, 5.0], [0.0, 1.0]], np.float32)
EDGES = {"Src_index": np.array([0, 1, 2, 0, 0]), "Dst_index": np.array([1, 1, 1, 0, 0])}   # 0 -> 0 twice
DOUT = np.arange(1.0, 9.0, dtype=np.float32).reshape(4, 2)


def run(op_type: str, inputs: dict, outputs: list[str], attrs: dict | None = None) -> list[np.ndarray]:
    """One op of a program fed ``inputs`` ({slot: array}); the values of its output slots ``outputs``."""
    program = gradc.Program()
    block = program.global_block
    for slot, array in inputs.items():
        block.create_var(slot.lower(), list(array.shape), to_var_type(array.dtype))
    for slot in outputs:
        block.create_var(f"{slot.lower()}.out", None, None)
    block.append_op(op_type, {slot: [slot.lower()] for slot in inputs},
                    {slot: [f"{slot.lower()}.out"] for slot in outputs}, attrs or {})
    feed = {slot.lower(): array for slot, array in inputs.items()}
    return gradc.Executor().run(program, feed, [f"{slot.lower()}.out" for slot in outputs], gradc.Scope())


def send_recv(reduce_op: str, out_size: int = 0):
    """Out and X@GRAD of graph_send_recv on X along EDGES, with dOut = DOUT's leading rows."""
    attrs = {"reduce_op": reduce_op, "out_size": [out_size]}
    out, count = run("graph_send_recv", {"X": X, **EDGES}, ["Out", "Dst_count"], attrs)
    inputs = {"X": X, **EDGES, "Out": out, "Dst_count": count, "Out@GRAD": np.resize(DOUT, out.shape)}
    return out, count, run("graph_send_recv_grad", inputs, ["X@GRAD"], attrs)[0]


@pytest.mark.parametrize("reduce_op, out, dx", [
    ("SUM", [[2, 10], [7, 12], [0, 0], [0, 0]], [[5, 8], [3, 4], [3, 4], [0, 0]]),
    ("MEAN", [[1, 5], [7 / 3, 4], [0, 0], [0, 0]], [[2, 10 / 3], [1, 4 / 3], [1, 4 / 3], [0, 0]]),
    # Paddle: [[2, 8], ...] and [[5, 4], ...], the repeated edge 0 -> 0 sending dOut twice
    ("MAX", [[1, 5], [3, 5], [0, 0], [0, 0]], [[1, 6], [3, 0], [3, 4], [0, 0]]),
    ("MIN", [[1, 5], [1, 2], [0, 0], [0, 0]], [[4, 2], [0, 4], [0, 0], [0, 0]]),
])
def test_send_recv_matches_paddle_but_counts_a_repeated_edge_once(reduce_op, out, dx):
    got_out, count, got_dx = send_recv(reduce_op)
    np.testing.assert_allclose(got_out, out, rtol=1e-6)
    np.testing.assert_array_equal(count, [2, 3, 0, 0])
    np.testing.assert_allclose(got_dx, dx, rtol=1e-6)   # ties (3 and 3, 5 and 5) each get the whole dOut


def test_out_size_pads_unreached_rows_with_zeros_even_for_max():
    out, count, dx = send_recv("MAX", out_size=6)
    assert out.shape == (6, 2) and not out[2:].any()
    np.testing.assert_array_equal(count, [2, 3, 0, 0, 0, 0])
    np.testing.assert_allclose(dx, [[1, 6], [3, 0], [3, 4], [0, 0]])
    assert run("graph_send_recv", {"X": -X, **EDGES}, ["Out"], {"reduce_op": "MAX"})[0][3].tolist() == [0, 0]


@pytest.mark.parametrize("pooltype, out, dx", [
    ("MAX", [[3, 5], [0, 0], [7, 7]], [[0, 2], [1, 2], [1, 0], [5, 6], [0, 0]]),
    ("MIN", [[1, 2], [0, 0], [2, 2]], [[1, 0], [0, 0], [0, 2], [0, 0], [5, 6]]),
    ("MEAN", [[7 / 3, 4], [0, 0], [4.5, 4.5]], [[1 / 3, 2 / 3]] * 3 + [[2.5, 3]] * 2),
])
def test_segment_pool_matches_paddle(pooltype, out, dx):
    x = np.array([[1, 5], [3, 5], [3, 2], [7, 7], [2, 2]], np.float32)
    ids = np.array([0, 0, 0, 2, 2])
    got_out, summed = run("segment_pool", {"X": x, "SegmentIds": ids}, ["Out", "SummedIds"], {"pooltype": pooltype})
    np.testing.assert_allclose(got_out, out, rtol=1e-6)
    np.testing.assert_array_equal(summed.ravel(), [3, 0, 2])
    dout = np.arange(1.0, 7.0, dtype=np.float32).reshape(3, 2)
    inputs = {"X": x, "SegmentIds": ids, "Out": got_out, "SummedIds": summed, "Out@GRAD": dout}
    np.testing.assert_allclose(run("segment_pool_grad", inputs, ["X@GRAD"], {"pooltype": pooltype})[0], dx, rtol=1e-6)


@pytest.mark.parametrize("message_op, formula", [("ADD", np.add), ("SUB", np.subtract), ("MUL", np.multiply),
                                                 ("DIV", np.divide)])
def test_messages_are_what_their_names_say(message_op, formula):
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    y = np.array([[2.0], [4.0], [-1.0]], np.float32)
    src, dst = np.array([0, 1, 2, 0]), np.array([1, 2, 1, 0])
    uv = run("graph_send_uv", {"x": x, "y": y, "src_index": src, "dst_index": dst}, ["out"],
             {"message_op": message_op})[0]
    np.testing.assert_allclose(uv, formula(x[src], y[dst]), rtol=1e-6)
    edge = np.array([[1.0], [2.0], [4.0], [-2.0]], np.float32)
    out = run("graph_send_ue_recv", {"X": x, "Y": edge, "Src_index": src, "Dst_index": dst}, ["Out"],
              {"message_op": message_op, "reduce_op": "SUM"})[0]
    messages = formula(x[src], edge)
    np.testing.assert_allclose(out, [messages[3], messages[0] + messages[2], messages[1]], rtol=1e-6)


def test_features_broadcast_from_the_right_past_the_first_dim():
    """As Paddle's send_uv: x [3] rows against y [3, 2] rows give [E, 2]; y [E, 2, 1] against x [N, 3] [E, 2, 3]."""
    x, y = np.arange(3.0, dtype=np.float32), np.arange(6.0, dtype=np.float32).reshape(3, 2)
    src, dst = np.array([0, 1, 2, 0]), np.array([1, 2, 1, 0])
    out = run("graph_send_uv", {"x": x, "y": y, "src_index": src, "dst_index": dst}, ["out"])[0]
    np.testing.assert_array_equal(out, x[src][:, None] + y[dst])
    edge = np.ones((4, 2, 1), np.float32)
    out = run("graph_send_ue_recv", {"X": y.T.copy(), "Y": edge, "Src_index": np.array([0, 1, 0, 1]),
                                     "Dst_index": dst}, ["Out"], {"out_size": [3]})[0]
    assert out.shape == (3, 2, 3)
    np.testing.assert_array_equal(out[1], 2 * (y.T[0] + 1) * np.ones((2, 1)))   # edges 0 and 2: X[0] + 1 twice


HUGE = 2 ** 40


@pytest.mark.parametrize("op_type, inputs, attrs", [
    ("graph_send_recv", {"X": X, **EDGES}, {"out_size": [HUGE]}),
    ("graph_send_ue_recv", {"X": X, "Y": X[:1].repeat(5, 0), **EDGES, "Out_size": np.array([HUGE])}, {}),
    ("graph_send_recv", {"X": np.zeros((HUGE, 0), np.float32), **EDGES}, {}),   # no features: no memory to feed
    ("segment_pool", {"X": X[:2], "SegmentIds": np.array([0, HUGE])}, {"pooltype": "MAX"}),
], ids=["out_size", "Out_size", "rows of an empty X", "the last segment id"])
def test_out_rows_beyond_the_memory_limit_are_refused_before_allocating(op_type, inputs, attrs):
    """Out's rows come from an attribute, a tensor's value or a segment id: they are checked against --max-memory."""
    refused = r"Out.* of shape \[109951162777[67][],].* more than the limit"
    with limited(max_bytes=1 << 20), pytest.raises(gradc.ExecutionError, match=refused):
        one_op.run(op_type, inputs, attrs)


FIRST_ORDER = [case for case in graph_cases.CASES if case.program is None]


@pytest.mark.parametrize("case", FIRST_ORDER, ids=[c.id for c in FIRST_ORDER])
def test_float32_in_float32_out(case):
    """Every gradcheck case of the family, run in float32: float32 outputs and input grads."""
    float32_family.test_float32_in_float32_out(case)

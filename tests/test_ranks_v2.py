"""gradc.ops.collective_v2 across 2 or 3 ranks (gradc.executor.ranks.run_ranks) against numpy on the ranks' values,
and the gradients their makers write, run across the ranks, against the derivative of the job's loss."""

import numpy as np
import pytest

import gradc
from gradc.executor.ranks import run_ranks
from programs import Net
from test_ranks import each_rank

r = np.random.default_rng(23)


def test_c_allgather_and_c_reducescatter():
    xs = [r.standard_normal((2, 3)) for _ in range(3)]
    for out in each_rank("c_allgather", xs, lambda rank: {"nranks": 3}, shape=[6, 3]):
        np.testing.assert_array_equal(out, np.concatenate(xs))
    scalars = [np.array(float(rank)) for rank in range(2)]
    for out in each_rank("c_allgather", scalars, lambda rank: {"nranks": 2}, shape=[2]):
        np.testing.assert_array_equal(out, [0.0, 1.0])   # 0-d: stacked
    xs = [r.standard_normal((4, 3)) for _ in range(2)]
    outs = each_rank("c_reducescatter", xs, lambda rank: {"nranks": 2}, shape=[2, 3])
    np.testing.assert_allclose(np.concatenate(outs), xs[0] + xs[1], rtol=1e-12)


@pytest.mark.parametrize("how,expected", [("max", np.max), ("min", np.min), ("prod", np.prod)])
def test_c_allreduce_and_c_reduce_kinds(how, expected):
    xs = [r.standard_normal((2, 3)) for _ in range(3)]
    for out in each_rank(f"c_allreduce_{how}", xs):
        np.testing.assert_allclose(out, expected(np.stack(xs), axis=0), rtol=1e-12)
    outs = each_rank(f"c_reduce_{how}", xs, lambda rank: {"root_id": 1})
    np.testing.assert_allclose(outs[1], expected(np.stack(xs), axis=0), rtol=1e-12)
    assert not outs[0].any() and not outs[2].any()   # the reduction is root's only


def test_rooted_ops():
    xs = [r.standard_normal((4, 3)) for _ in range(2)]
    outs = each_rank("c_reduce_sum", xs, lambda rank: {"root_id": 1})
    np.testing.assert_allclose(outs[1], xs[0] + xs[1], rtol=1e-12)
    for reduce_type, value in ((0, xs[0] + xs[1]), (4, (xs[0] + xs[1]) / 2)):
        outs = each_rank("reduce", xs, lambda rank, kind=reduce_type: {"root_id": 0, "reduce_type": kind},
                         slots=("x", "out"))
        np.testing.assert_allclose(outs[0], value, rtol=1e-12)
        assert not outs[1].any()
    for out in each_rank("c_broadcast", xs, lambda rank: {"root": 1}):
        np.testing.assert_array_equal(out, xs[1])
    outs = each_rank("c_scatter", xs, lambda rank: {"root": 1, "nranks": 2}, shape=[2, 3])
    np.testing.assert_array_equal(np.concatenate(outs), xs[1])


def test_all_to_all_sends_chunk_j_to_rank_j():
    xs = [r.standard_normal((6, 2)) for _ in range(3)]
    outs = each_rank("all_to_all", xs, slots=("x", "out"))
    for rank, out in enumerate(outs):
        np.testing.assert_array_equal(out, np.concatenate([x[2 * rank:2 * rank + 2] for x in xs]))


@pytest.mark.parametrize("op_type,attrs,slots", [
    ("c_reduce_sum", {"root_id": 1}, ("X", "Out")), ("c_broadcast", {"root": 1}, ("X", "Out")),
    ("reduce", {"root_id": 1, "reduce_type": 0}, ("x", "out")), ("broadcast", {"root": 1}, ("x", "out")),
    ("c_allgather", {"nranks": 2}, ("X", "Out")), ("c_reducescatter", {"nranks": 2}, ("X", "Out")),
    ("all_to_all", {}, ("x", "out"))])
def test_the_grad_ops_across_ranks_are_the_adjoints(op_type, attrs, slots):
    """The job's loss is the sum of the ranks' sum(w_r * op(x)_r), each rank's term in its program: the backward
    gradc's makers write, run across the ranks, is the op's adjoint applied to the ranks' w."""
    xs, rows = [r.standard_normal((4, 3)) for _ in range(2)], {"c_allgather": 8, "c_reducescatter": 2}.get(op_type, 4)
    ws = [r.standard_normal((rows, 3)) for _ in range(2)]
    programs = []
    for _ in range(2):
        net = Net()
        x, w = net.data("x", [4, 3]), net.data("w", [rows, 3])
        net.block.create_var("out", [rows, 3], gradc.VarType.FP64)
        net.block.append_op(op_type, {slots[0]: [x]}, {slots[1]: ["out"]}, {"ring_id": 0, **attrs})
        loss = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": "out", "Y": w})}, {"reduce_all": True})
        gradc.gradients(net.program, loss, [x])
        programs.append(net.program)
    values = run_ranks(programs, [{"x": x, "w": w} for x, w in zip(xs, ws)], [["x@GRAD"]] * 2)

    def total(inputs):
        outs = each_rank(op_type, inputs, lambda _: attrs, slots=slots, shape=[rows, 3])
        return sum(float((w * out).sum()) for w, out in zip(ws, outs))

    for rank in range(2):   # the job's loss is linear in x: its gradient is the loss of unit inputs
        numeric = np.zeros((4, 3))
        for index in np.ndindex(4, 3):
            bumped = [x.copy() for x in xs]
            bumped[rank][index] += 1.0
            numeric[index] = total(bumped) - total(xs)
        np.testing.assert_allclose(values[rank][0], numeric, rtol=1e-9, atol=1e-9)

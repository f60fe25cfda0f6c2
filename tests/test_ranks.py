"""gradc.executor.ranks.run_ranks: the programs of N ranks run together, each collective a rendezvous of its group.
Each collective across 2 or 3 ranks against numpy on the ranks' values; the failures (a rank that fails, stops early,
or reaches another collective) end the run with one error naming the rank and the op."""

import numpy as np
import pytest

import gradc
from gradc.errors import ExecutionError
from gradc.executor.ranks import run_ranks
from programs import Net

r = np.random.default_rng(5)


def one_op(op_type: str, x: np.ndarray, attrs: dict, slots=("X", "Out"), shape=None):
    """A program reading x into ``op_type``; fetch its output 'out'."""
    net = Net(str(x.dtype))
    net.data("x", list(x.shape))
    net.block.create_var("out", shape if shape is not None else list(x.shape), net.dtype)
    net.block.append_op(op_type, {slots[0]: ["x"]}, {slots[1]: ["out"]}, attrs)
    return net.program


def each_rank(op_type, xs, attrs=lambda rank: {}, **options):
    programs = [one_op(op_type, x, {"ring_id": 0, **attrs(rank)}, **options) for rank, x in enumerate(xs)]
    return [values[0] for values in run_ranks(programs, [{"x": x} for x in xs], ["out"])]


def test_allreduces_sum_every_ranks_x():
    xs = [r.standard_normal((2, 3)).astype("float32") for _ in range(3)]
    for op_type, slots in (("mp_allreduce_sum", ("X", "Out")), ("c_allreduce_sum", ("X", "Out")),
                           ("all_reduce", ("x", "out"))):
        for out in each_rank(op_type, xs, slots=slots):
            np.testing.assert_allclose(out, xs[0] + xs[1] + xs[2], rtol=1e-6)


@pytest.mark.parametrize("reduce_type,expected", [(1, np.max), (2, np.min), (3, np.prod), (4, np.mean)])
def test_all_reduce_types(reduce_type, expected):
    xs = [r.standard_normal((2, 3)) for _ in range(2)]
    for out in each_rank("all_reduce", xs, lambda rank: {"reduce_type": reduce_type}, slots=("x", "out")):
        np.testing.assert_allclose(out, expected(np.stack(xs), axis=0), rtol=1e-12)


def test_c_concat_and_all_gather_join_the_ranks_values_in_rank_order():
    xs = [r.standard_normal((2, 3)) for _ in range(2)]
    for out in each_rank("c_concat", xs, lambda rank: {"rank": rank, "nranks": 2}, shape=[2, 6]):
        np.testing.assert_array_equal(out, np.concatenate(xs, axis=1))
    for out in each_rank("all_gather", xs, lambda rank: {"nranks": 2}, slots=("x", "out"), shape=[4, 3]):
        np.testing.assert_array_equal(out, np.concatenate(xs, axis=0))


def test_reduce_scatter_gives_each_rank_its_rows_of_the_sum():
    xs = [r.standard_normal((4, 3)) for _ in range(2)]
    outs = each_rank("reduce_scatter", xs, lambda rank: {"nranks": 2}, slots=("x", "out"), shape=[2, 3])
    np.testing.assert_allclose(np.concatenate(outs), xs[0] + xs[1], rtol=1e-12)


def test_broadcast_gives_every_rank_the_roots_x():
    xs = [r.standard_normal((2, 3)) for _ in range(3)]
    for out in each_rank("broadcast", xs, lambda rank: {"root": 2}, slots=("x", "out")):
        np.testing.assert_array_equal(out, xs[2])


def test_a_vocabulary_split_over_two_ranks_is_the_whole_embedding_and_softmax_cross_entropy():
    """c_embedding + mp_allreduce_sum over the ranks' halves of W is the lookup in all of W; c_softmax_with_
    cross_entropy over the halves of the logits is softmax_with_cross_entropy over all of them."""
    w, ids = r.standard_normal((6, 4)), np.array([[0, 5], [3, 2]])
    logits, label = r.standard_normal((3, 6)), np.array([[4], [1], [-100]])
    programs = []
    for rank in range(2):
        net = Net()
        table, idx = net.data("w", [3, 4]), net.data("ids", [2, 2], gradc.VarType.INT64)
        looked = net.op("c_embedding", {"W": table, "Ids": idx}, {"start_index": 3 * rank, "vocab_size": 6})
        net.block.create_var("out", [2, 2, 4], gradc.VarType.FP64)
        net.block.append_op("mp_allreduce_sum", {"X": [looked]}, {"Out": ["out"]}, {"ring_id": 0})
        shard, target = net.data("logits", [3, 3]), net.data("label", [3, 1], gradc.VarType.INT64)
        for name, shape in (("softmax", [3, 3]), ("loss", [3, 1])):
            net.block.create_var(name, shape, gradc.VarType.FP64)
        net.block.append_op("c_softmax_with_cross_entropy", {"Logits": [shard], "Label": [target]},
                            {"Softmax": ["softmax"], "Loss": ["loss"]}, {"rank": rank, "nranks": 2, "ring_id": 0})
        programs.append(net.program)
    feeds = [{"w": w[3 * rank:3 * rank + 3], "ids": ids, "logits": logits[:, 3 * rank:3 * rank + 3], "label": label}
             for rank in range(2)]
    values = run_ranks(programs, feeds, ["out", "softmax", "loss"])
    softmax = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    for rank, (out, shard, loss) in enumerate(values):
        np.testing.assert_array_equal(out, w[ids])
        np.testing.assert_allclose(shard, softmax[:, 3 * rank:3 * rank + 3], rtol=1e-12)
        np.testing.assert_allclose(loss[:, 0], [-np.log(softmax[0, 4]), -np.log(softmax[1, 1]), 0.0], rtol=1e-12)


def test_rings_name_their_groups():
    xs = [np.full((1, 2), float(rank)) for rank in range(3)]
    programs = [one_op("mp_allreduce_sum", x, {"ring_id": 4}) for x in xs[:2]] + [one_op("c_identity", xs[2], {})]
    values = run_ranks(programs, [{"x": x} for x in xs], ["out"], rings={4: [0, 1]})
    assert [v[0].tolist() for v in values] == [[[1.0, 1.0]], [[1.0, 1.0]], [[2.0, 2.0]]]


def test_a_rank_that_fails_ends_the_run_with_its_own_error():
    good, bad = one_op("c_concat", np.zeros((2, 3)), {"rank": 0, "nranks": 2}, shape=[2, 6]), gradc.Program()
    bad.global_block.append_op("no_such_op", {}, {})
    with pytest.raises(ExecutionError, match=r"^rank 1: no kernel for 1 op\(s\): block 0, op 0 \(no_such_op\)"):
        run_ranks([good, bad], [{"x": np.zeros((2, 3))}, {}], [["out"], []])


def test_a_rank_that_finishes_without_the_collective_its_peer_waits_in():
    waiting = one_op("mp_allreduce_sum", np.zeros((2, 3)), {"ring_id": 0})
    done = one_op("c_identity", np.zeros((2, 3)), {"ring_id": 0})
    with pytest.raises(ExecutionError, match=r"^rank 0: block 0, op 0 \(mp_allreduce_sum\): rank\(s\) \[1\] finished "
                                             r"their program without reaching this collective"):
        run_ranks([waiting, done], [{"x": np.zeros((2, 3))}] * 2, ["out"])


def test_ranks_that_reach_different_collectives():
    x = np.zeros((2, 3))
    programs = [one_op("mp_allreduce_sum", x, {"ring_id": 0}), one_op("all_reduce", x, {}, slots=("x", "out"))]
    with pytest.raises(ExecutionError, match=r"the ranks reached different collectives on ring_id 0: rank 0: block 0, "
                                             r"op 0 \(mp_allreduce_sum\), rank 1: block 0, op 0 \(all_reduce\)"):
        run_ranks(programs, [{"x": x}] * 2, ["out"])


def test_an_op_whose_nranks_is_not_the_groups():
    x = np.zeros((2, 3))
    programs = [one_op("c_concat", x, {"rank": rank, "nranks": 3}, shape=[2, 9]) for rank in range(2)]
    with pytest.raises(ExecutionError, match=r"nranks=3, but the group of ring_id 0 has 2 rank\(s\) \[0, 1\]"):
        run_ranks(programs, [{"x": x}] * 2, ["out"])


def test_only_the_sum_all_reduce_is_differentiated():
    for reduce_type in (0, 1):
        net = Net()
        net.data("x", [2, 3])
        reduced = net.op("all_reduce", {"x": "x"}, {"reduce_type": reduce_type}, out="out")
        loss = net.mean(reduced)
        if reduce_type == 0:
            assert gradc.gradients(net.program, loss, ["x"]) == ["x@GRAD"]
            assert [op.type for op in net.block.ops][-1] == "c_identity"
        else:
            with pytest.raises(gradc.GradError, match="all_reduce with reduce_type 1: gradc differentiates the sum"):
                gradc.gradients(net.program, loss, ["x"])


def test_multi_label_cross_entropy_over_two_ranks_is_the_one_over_all_classes():
    """Forward (Softmax shards, Loss) and its grad op at each rank equal the op over every class at one rank."""
    logits, weight = r.standard_normal((3, 6)), r.uniform(0.1, 1.0, (3, 2))
    label, dloss = np.array([[4, 1], [-100, 5], [2, 2]]), r.standard_normal((3, 2))

    def program(rank: int, nranks: int):
        width = 6 // nranks
        net = Net()
        for name, shape, dtype in (("logits", [3, width], None), ("label", [3, 2], gradc.VarType.INT64),
                                   ("weight", [3, 2], None), ("dloss", [3, 2], None)):
            net.data(name, shape, dtype)
        attrs = {"rank": rank, "nranks": nranks, "ring_id": 0, "sum_multi_label_loss": False}
        for name, shape in (("softmax", [3, width]), ("loss", [3, 2]), ("dlogits", [3, width])):
            net.block.create_var(name, shape, net.dtype)
        net.block.append_op("c_softmax_with_multi_label_cross_entropy",
                            {"Logits": ["logits"], "Label": ["label"], "SmoothWeight": ["weight"]},
                            {"Softmax": ["softmax"], "Loss": ["loss"]}, attrs)
        net.block.append_op("c_softmax_with_multi_label_cross_entropy_grad",
                            {"Softmax": ["softmax"], "Label": ["label"], "SmoothWeight": ["weight"],
                             "Loss@GRAD": ["dloss"]}, {"Logits@GRAD": ["dlogits"]}, attrs)
        return net.program

    def feed(part):
        return {"logits": part, "label": label, "weight": weight, "dloss": dloss}

    fetch = ["softmax", "loss", "dlogits"]
    whole = gradc.Executor().run(program(0, 1), feed(logits), fetch, gradc.Scope())
    halves = run_ranks([program(0, 2), program(1, 2)], [feed(logits[:, :3]), feed(logits[:, 3:])], fetch)
    np.testing.assert_allclose(np.concatenate([halves[0][0], halves[1][0]], axis=1), whole[0], rtol=1e-12)
    np.testing.assert_allclose(halves[1][1], whole[1], rtol=1e-12)
    np.testing.assert_allclose(np.concatenate([halves[0][2], halves[1][2]], axis=1), whole[2], rtol=1e-12)
    assert whole[1][1, 0] == 0   # the ignored label
    np.testing.assert_allclose(whole[1][2, 0] / weight[2, 0], whole[1][2, 1] / weight[2, 1], rtol=1e-12)

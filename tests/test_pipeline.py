"""Pipeline parallelism: the two stage programs Paddle 3.3.1's PipelineOptimizer writes (tests/data/paddle/pipeline,
made by tools/paddle_pipeline.py) run together give the single-device model's loss, gradients and SGD step as Paddle
computes them on CPU (reference.npz), from the legacy programs and from their PIR translations; and each
point-to-point op across ranks against numpy."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from gradc.errors import ExecutionError
from gradc.executor.ranks import pair_rings, run_ranks
from programs import Net

DATA = Path(__file__).parent / "data" / "paddle" / "pipeline"
r = np.random.default_rng(17)


def reference() -> dict[str, np.ndarray]:
    with np.load(DATA / "reference.npz") as archive:
        return dict(archive)


def stage_scope(stage: int, ref: dict, stages: Path = DATA) -> gradc.Scope:
    """The stage's startup run (its learning rate), then the reference's parameters of the stage."""
    scope = gradc.Scope()
    gradc.Executor().run(gradc.load(stages / f"stage{stage}" / "startup.pb"), scope=scope)
    held = json.loads((DATA / "meta.json").read_text())["stages"][str(stage)]["params"]
    for name in held:
        scope[name] = ref[f"param.{name}"].copy()
    return scope


@pytest.mark.parametrize("form", ["train.pb", "train.json"])
def test_both_stages_give_the_single_device_loss_and_step(form):
    ref, meta = reference(), json.loads((DATA / "meta.json").read_text())
    programs = [gradc.load(DATA / f"stage{stage}" / form) for stage in (0, 1)]
    assert pair_rings(programs) == {20: [0, 1], 21: [1, 0]}   # stage 1 sends the gradient back on ring 21
    scopes = [stage_scope(stage, ref) for stage in (0, 1)]
    values = run_ranks(programs, [{"x": ref["feed.x"]}, {"label": ref["feed.label"]}], [[], [meta["loss"]]], scopes)
    np.testing.assert_allclose(values[1][0], ref["loss"], rtol=1e-6)
    for stage, scope in enumerate(scopes):
        for name in meta["stages"][str(stage)]["params"]:
            np.testing.assert_allclose(scope[name], ref[f"stepped.{name}"], rtol=1e-5, atol=1e-7)
            if form == "train.pb":   # Paddle's names: the accumulated gradient the sgd op read
                np.testing.assert_allclose(scope[f"{name}@GRAD@MERGED"], ref[f"grad.{name}"], rtol=1e-5, atol=1e-7)


def two_ranks(build) -> list:
    """A program per rank, build(net, rank) adding its ops to a net with input x [2, 6] (float64)."""
    programs = []
    for rank in range(2):
        net = Net()
        net.data("x", [2, 6])
        build(net, rank)
        programs.append(net.program)
    return programs


def var(net, name, shape):
    net.block.create_var(name, shape, gradc.VarType.FP64)
    return name


def test_send_and_receive_in_order_on_each_ring():
    """Two sends from rank 0 (p_send, send_v2) and one back from rank 1: each receive takes its sender's next."""
    def build(net, rank):
        if rank == 0:
            net.block.append_op("send_v2", {"X": ["x"]}, {}, {"ring_id": 3, "peer": 1})
            net.block.append_op("p_send", {"x": ["x"]}, {}, {"ring_id": 3, "peer": 1})
            net.block.append_op("recv_v2", {}, {"Out": [var(net, "back", [2, 6])]},
                                {"ring_id": 4, "peer": 1, "dtype": 6, "out_shape": [2, 6]})
        else:
            net.block.append_op("recv_v2", {}, {"Out": [var(net, "first", [2, 6])]},
                                {"ring_id": 3, "peer": 0, "dtype": 6, "out_shape": [2, 6]})
            net.block.append_op("p_recv", {}, {"out": [var(net, "second", [3, 4])]},
                                {"ring_id": 3, "peer": 0, "dtype": 6, "out_shape": [3, 4]})
            net.block.append_op("scale", {"X": ["first"]}, {"Out": [var(net, "doubled", [2, 6])]}, {"scale": 2.0})
            net.block.append_op("send_v2", {"X": ["doubled"]}, {}, {"ring_id": 4, "peer": 0})

    xs = [r.standard_normal((2, 6)) for _ in range(2)]
    values = run_ranks(two_ranks(build), [{"x": x} for x in xs], [["back"], ["first", "second"]])
    np.testing.assert_array_equal(values[0][0], 2 * xs[0])
    np.testing.assert_array_equal(values[1][0], xs[0])
    np.testing.assert_array_equal(values[1][1], xs[0].reshape(3, 4))   # out_shape: the same elements, reshaped


def test_partial_send_receive_and_allgather_rebuild_the_tensor():
    """Rank 0 sends each half of x as partial_send's parts; rank 1 receives part id and gathers the other from
    rank 0's own copy of it through partial_allgather: both end with rank 0's x."""
    def build(net, rank):
        out = var(net, "whole", [2, 6])
        if rank == 0:
            net.block.append_op("partial_send", {"X": ["x"]}, {}, {"ring_id": 5, "peer": 1, "num": 2, "id": 1})
            net.block.append_op("assign", {"X": ["x"]}, {"Out": [out]})
        else:
            net.block.append_op("partial_recv", {}, {"Out": [out]},
                                {"ring_id": 5, "peer": 0, "num": 2, "id": 1, "dtype": 6, "out_shape": [2, 6]})
        net.block.append_op("partial_allgather", {"X": [out]}, {"Out": [var(net, "gathered", [2, 6])]},
                            {"ring_id": 0, "nranks": 2, "rank": rank})

    xs = [r.standard_normal((2, 6)) for _ in range(2)]
    values = run_ranks(two_ranks(build), [{"x": x} for x in xs], [["whole", "gathered"]] * 2)
    assert not values[1][0].reshape(-1)[:6].any()   # partial_recv: zeros outside its part
    np.testing.assert_array_equal(values[1][0].reshape(-1)[6:], xs[0].reshape(-1)[6:])
    for rank in range(2):
        np.testing.assert_array_equal(values[rank][1], xs[0])


def test_a_receive_of_another_shape_or_dtype_fails():
    def build(dtype, out_shape):
        def add(net, rank):
            if rank == 0:
                net.block.append_op("send_v2", {"X": ["x"]}, {}, {"ring_id": 1, "peer": 1})
            else:
                net.block.append_op("recv_v2", {}, {"Out": [var(net, "got", out_shape)]},
                                    {"ring_id": 1, "peer": 0, "dtype": dtype, "out_shape": out_shape})
        return add

    x = np.zeros((2, 6))
    with pytest.raises(ExecutionError, match=r"rank 1: block 0, op 0 \(recv_v2\): the peer sent a tensor of shape "
                                             r"\[2, 6\], and out_shape is \[4, 6\]"):
        run_ranks(two_ranks(build(6, [4, 6])), [{"x": x}] * 2, [[], ["got"]])
    with pytest.raises(ExecutionError, match=r"\(recv_v2\): the peer sent float64, and dtype says float32"):
        run_ranks(two_ranks(build(5, [2, 6])), [{"x": x}] * 2, [[], ["got"]])


def test_a_receive_whose_sender_finished_without_sending():
    def build(net, rank):
        if rank == 1:
            net.block.append_op("recv_v2", {}, {"Out": [var(net, "got", [2, 6])]},
                                {"ring_id": 2, "peer": 0, "dtype": 6, "out_shape": [2, 6]})
        else:   # sends on another ring
            net.block.append_op("p_send", {"x": ["x"]}, {}, {"ring_id": 7, "peer": 1})

    with pytest.raises(ExecutionError, match=r"rank 1: block 0, op 0 \(recv_v2\): peer 0 is no other rank of "
                                             r"ring_id 2"):
        run_ranks(two_ranks(build), [{"x": np.zeros((2, 6))}] * 2, [[], ["got"]], rings={2: [1]})
    with pytest.raises(ExecutionError, match=r"rank 1: block 0, op 0 \(recv_v2\): rank 0 finished its program "
                                             r"without sending what this op receives \(ring_id 2\)"):
        run_ranks(two_ranks(build), [{"x": np.zeros((2, 6))}] * 2, [[], ["got"]], rings={2: [0, 1]})


def test_a_point_to_point_op_alone_names_the_missing_peer():
    net = Net()
    net.data("x", [2, 6])
    net.block.append_op("send_v2", {"X": ["x"]}, {}, {"ring_id": 20, "peer": 1})
    with pytest.raises(ExecutionError, match=r"^block 0, op 0 \(send_v2\): ring_id 20: its peer 1 is another rank, "
                                             r"and this process runs one rank: the peer is missing"):
        gradc.Executor().run(net.program, feed={"x": np.zeros((2, 6))})


def test_paddles_translations_read_back_as_the_legacy_ops():
    """translated.json: Paddle's translator's PIR form of the other point-to-point ops and of reduce, c_scatter,
    all_to_all (the 2.x c_ ops and p_send/p_recv it refuses: meta.json)."""
    program = gradc.load(DATA / "translated.json")
    ops = {op.type: op for op in program.global_block.ops if op.type not in ("feed", "fetch")}
    assert set(ops) == {"partial_send", "partial_recv", "partial_allgather", "reduce", "c_scatter", "all_to_all"}
    assert ops["partial_recv"].attrs.items() >= {"ring_id": 2, "peer": 1, "num": 2, "id": 1, "dtype": 5}.items()
    assert list(ops["partial_recv"].attrs["out_shape"]) == [4, 6]
    assert ops["partial_allgather"].input("X") == ops["partial_allgather"].output("Out")   # in place
    assert ops["reduce"].attrs.items() >= {"ring_id": 2, "reduce_type": 0, "root_id": 1}.items()
    assert ops["c_scatter"].attrs.items() >= {"ring_id": 2, "root": 1, "nranks": 2, "use_calc_stream": True}.items()
    refused = json.loads((DATA / "meta.json").read_text())["translator_refused"]
    assert set(refused) == {"p_send", "p_recv", "c_allgather", "c_reducescatter", "c_broadcast", "c_allreduce_max",
                            "c_reduce_sum"}


def test_two_micro_batches_give_the_single_device_loss_and_step():
    """micro2: num_microbatches=2 (2 rows each, the loss gradient scaled by 1/2, gradients summed into @GRAD@MERGED),
    run as Paddle's SectionWorker schedules it: the whole batch's loss (the mean of the two), gradients and step."""
    ref, meta = reference(), json.loads((DATA / "meta.json").read_text())
    stages = DATA / "micro2"
    programs = [gradc.load(stages / f"stage{stage}" / "train.pb") for stage in (0, 1)]
    scopes = [stage_scope(stage, ref, stages) for stage in (0, 1)]
    feeds = [{"x": ref["feed.x"]}, {"label": ref["feed.label"]}]
    values = run_ranks(programs, feeds, [[], [meta["loss"]]], scopes, micro_batches=2)
    losses = values[1][0]
    assert len(losses) == 2 and not np.allclose(losses[0], losses[1])
    np.testing.assert_allclose(np.mean(losses), ref["loss"], rtol=1e-6)
    for stage, scope in enumerate(scopes):
        for name in meta["stages"][str(stage)]["params"]:
            np.testing.assert_allclose(scope[f"{name}@GRAD@MERGED"], ref[f"grad.{name}"], rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(scope[name], ref[f"stepped.{name}"], rtol=1e-5, atol=1e-7)


def test_micro_batches_need_the_op_roles_and_feeds_that_split():
    ref = reference()
    programs = [gradc.load(DATA / "micro2" / f"stage{stage}" / "train.json") for stage in (0, 1)]
    with pytest.raises(ExecutionError, match=r"^rank 0: block 0, op 0 \(reshape2\): has no op_role \(Paddle's PIR "
                                             r"translation drops it: run the legacy program\)"):
        run_ranks(programs, [{"x": ref["feed.x"]}, {"label": ref["feed.label"]}], micro_batches=2)
    programs = [gradc.load(DATA / "micro2" / f"stage{stage}" / "train.pb") for stage in (0, 1)]
    with pytest.raises(ExecutionError, match=r"^rank 0: feed var 'x' of shape \[4, 6\] does not split into 3 "
                                             r"micro-batches of equal rows"):
        run_ranks(programs, [{"x": ref["feed.x"]}, {"label": ref["feed.label"]}], micro_batches=3)


def test_the_cli_runs_the_micro_batches(tmp_path):
    ref, meta = reference(), json.loads((DATA / "meta.json").read_text())
    np.savez(tmp_path / "feed0.npz", x=ref["feed.x"])
    np.savez(tmp_path / "feed1.npz", label=ref["feed.label"])
    for stage in (0, 1):
        np.savez(tmp_path / f"params{stage}.npz", **dict(stage_scope(stage, ref, DATA / "micro2").vars))
    programs = [DATA / "micro2" / f"stage{stage}" / "train.pb" for stage in (0, 1)]
    result = gradc_cli("run-ranks", *programs, "--feed", tmp_path / "feed0.npz", "--feed", tmp_path / "feed1.npz",
                       "--params", tmp_path / "params0.npz", "--params", tmp_path / "params1.npz",
                       "--fetch", f"1:{meta['loss']}", "--micro-batches", "2",
                       "--out", tmp_path / "out.npz")
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "out.npz") as out:
        assert out[f"rank1/{meta['loss']}"].shape[0] == 2
        np.testing.assert_allclose(out[f"rank1/{meta['loss']}"].mean(), ref["loss"], rtol=1e-6)
    missing = gradc_cli("run-ranks", *programs, "--fetch", "2:loss")
    assert missing.returncode == 1
    assert missing.stderr == "gradc: error: --fetch 2:loss: there is no rank 2 (2 programs)\n"

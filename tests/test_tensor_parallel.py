"""The programs of both ranks of a 2-way tensor-parallel job that Paddle 3.3.1's own mp layers build
(tests/data/paddle/tensor_parallel, written by tools/paddle_tensor_parallel.py): gradc's backward writes Paddle's grad
ops in Paddle's places, and the two ranks run together give the single-device model's loss and gradients, as
Paddle computes them on CPU (reference.npz), the split weights joined along the axis Paddle splits them on."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from gradc.errors import ExecutionError
from gradc.executor.ranks import run_ranks
from gradc.ir import roles

DATA = Path(__file__).parent / "data" / "paddle" / "tensor_parallel"


def meta(case: str) -> dict:
    """The case's ranks: each rank's params (shape, split axis), loss, and what Paddle's backward did."""
    return {"ranks": [json.loads((DATA / case / f"rank{rank}" / "meta.json").read_text()) for rank in range(2)]}


def reference(case: str) -> dict[str, np.ndarray]:
    with np.load(DATA / case / "reference.npz") as archive:
        return dict(archive)


def shard(ref: dict, params: dict, rank: int) -> gradc.Scope:
    """A scope holding rank ``rank``'s part of each full parameter (Paddle's split_axis; none: replicated)."""
    scope = gradc.Scope()
    for name, spec in params.items():
        full = ref[f"param.{name}"]
        scope[name] = full if spec["split_axis"] is None else np.split(full, 2, axis=spec["split_axis"])[rank]
    return scope


def run_both(case: str, programs: list, grads: list[dict]) -> tuple[np.ndarray, dict]:
    """Both ranks run together: (rank 0's loss, each full parameter's gradient joined from the ranks')."""
    ranks, ref = meta(case)["ranks"], reference(case)
    feed = {"ids": ref["feed.ids"], "label": ref["feed.label"]}
    fetches = [[info["loss"], *(grads[rank][name] for name in info["params"])] for rank, info in enumerate(ranks)]
    values = run_ranks(programs, [feed, feed], fetches, [shard(ref, info["params"], r) for r, info in enumerate(ranks)])
    assert values[0][0] == values[1][0]   # the loss is replicated
    joined = {}
    for i, (name, spec) in enumerate(ranks[0]["params"].items(), start=1):
        if spec["split_axis"] is None:   # a replicated parameter: each rank has the whole gradient
            np.testing.assert_array_equal(values[0][i], values[1][i])
            joined[name] = values[0][i]
        else:
            joined[name] = np.concatenate([values[0][i], values[1][i]], axis=spec["split_axis"])
    return values[0][0], joined


def assert_single_device(case: str, loss, grads: dict) -> None:
    ref = reference(case)
    np.testing.assert_allclose(loss, ref["loss"], rtol=1e-5, atol=1e-6)
    assert grads.keys() == {name.removeprefix("grad.") for name in ref if name.startswith("grad.")}
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, ref[f"grad.{name}"], rtol=1e-5, atol=1e-6, err_msg=name)


def compiled(case: str, file: str) -> tuple[list, list[dict]]:
    programs, grads = [], []
    for rank, info in enumerate(meta(case)["ranks"]):
        program = gradc.load(DATA / case / f"rank{rank}" / file)
        grads.append(dict(gradc.append_backward(program, info["loss"])))
        programs.append(program)
    return programs, grads


@pytest.mark.parametrize("rank", [0, 1])
def test_gradcs_backward_writes_paddles_grad_ops_in_paddles_places(rank):
    info = meta("mlp")["ranks"][rank]
    program = gradc.load(DATA / "mlp" / f"rank{rank}" / "forward.pb")
    gradc.append_backward(program, info["loss"])
    paddles = gradc.load(DATA / "mlp" / f"rank{rank}" / "backward.pb")
    ours = [(op.type, op.inputs, op.outputs) for op in program.global_block.ops]
    theirs = [(op.type, op.inputs, op.outputs) for op in paddles.global_block.ops]
    assert [t for t, *_ in ours][len(info["ops"]):].count("all_reduce") == 3   # c_identity's grads
    assert ours == theirs


@pytest.mark.parametrize("case,file", [("mlp", "forward.pb"), ("mlp", "program.json"), ("split", "forward.pb"),
                                       ("split", "program.json")])
def test_two_ranks_of_gradcs_compiled_programs_give_the_single_device_model(case, file):
    assert_single_device(case, *run_both(case, *compiled(case, file)))


@pytest.mark.parametrize("file", ["backward.pb", "backward.json"])
def test_two_ranks_of_paddles_own_backward_give_the_single_device_model(file):
    ranks = meta("mlp")["ranks"]
    programs = [gradc.load(DATA / "mlp" / f"rank{rank}" / file) for rank in range(2)]
    assert_single_device("mlp", *run_both("mlp", programs, [info["grads"] for info in ranks]))


def test_c_splits_gradient_is_a_c_concat_where_paddles_backward_fails():
    for info in meta("split")["ranks"]:   # what Paddle 3.3.1 does with this program, recorded by the tool
        assert "[operator < all_gather > error]" in info["legacy_backward_error"]
        assert "pd_op.c_split' has no grad op" in info["pir_backward"]
    programs, _ = compiled("split", "forward.pb")
    ops = programs[0].global_block.ops
    split = next(i for i, op in enumerate(ops) if op.type == "c_split")
    grad = next(op for op in ops[split:] if op.input("X") == [f"{ops[split].output('Out')[0]}@GRAD"])
    assert grad.type == "c_concat" and grad.attr("nranks") == 2 and grad.attr("rank") == 0


def test_paddles_pir_backward_drops_the_gradients_behind_c_identity():
    """Paddle marks pd_op.c_identity forward-only: its PIR backward gives None for every parameter before one."""
    for info in meta("mlp")["ranks"]:
        assert info["pir_backward"].startswith("no gradient (None) for 7 of 8 parameters")


def test_one_rank_alone_says_the_others_are_missing():
    programs, grads = compiled("mlp", "forward.pb")
    ref = reference("mlp")
    scope = shard(ref, meta("mlp")["ranks"][0]["params"], 0)
    with pytest.raises(ExecutionError, match=r"block 0, op 1 \(mp_allreduce_sum\): ring_id 1 is a group of nranks=2,"
                                             r" and this process runs one rank: the other 1 rank\(s\) are missing"):
        gradc.Executor().run(programs[0], {"ids": ref["feed.ids"], "label": ref["feed.label"]}, ["mean_0.tmp_0"],
                             scope)


def test_the_cli_runs_both_ranks_and_says_in_one_line_when_one_runs_alone(tmp_path):
    ref, ranks = reference("mlp"), meta("mlp")["ranks"]
    np.savez(tmp_path / "feed.npz", ids=ref["feed.ids"], label=ref["feed.label"])
    for rank, info in enumerate(ranks):
        np.savez(tmp_path / f"params{rank}.npz", **dict(shard(ref, info["params"], rank).vars))
    programs = [DATA / "mlp" / f"rank{rank}" / "backward.pb" for rank in range(2)]
    grad = "linear_1.b_0@GRAD"   # RowParallelLinear's bias: replicated, the whole gradient on each rank
    result = gradc_cli("run-ranks", *programs, "--feed", tmp_path / "feed.npz", "--params", tmp_path / "params0.npz",
                       "--params", tmp_path / "params1.npz", "--fetch", "mean_0.tmp_0", "--fetch", grad,
                       "--out", tmp_path / "out.npz")
    assert result.returncode == 0, result.stderr
    assert f"rank 1 mean_0.tmp_0: float32[] = {ref['loss'].item():.8g}" in result.stdout
    with np.load(tmp_path / "out.npz") as out:
        for rank in range(2):
            np.testing.assert_allclose(out[f"rank{rank}/{grad}"], ref["grad.linear_1.b_0"], rtol=1e-5, atol=1e-6)
    alone = gradc_cli("run", programs[0], "--feed", tmp_path / "feed.npz", "--params", tmp_path / "params0.npz",
                      "--fetch", "mean_0.tmp_0")
    assert alone.returncode == 1 and len(alone.stderr.strip().splitlines()) == 1, alone.stderr
    assert alone.stderr.startswith("gradc: error: block 0, op 1 (mp_allreduce_sum): ring_id 1 is a group of nranks=2")


def test_every_collectives_pir_form_reads_as_its_legacy_op():
    """Paddle's translator's PIR op of each collective (ops_translated.json) and the in-place forms its PIR API writes
    (ops_in_place.json) read back as the legacy op with its attributes."""
    translated = gradc.load(DATA / "ops_translated.json").global_block.ops
    ops = {op.type: op for op in translated if op.type != "fetch"}
    assert sorted(ops) == sorted(["c_identity", "mp_allreduce_sum", "all_reduce", "c_split", "c_concat", "all_gather",
                                  "reduce_scatter", "broadcast", "barrier", "c_sync_calc_stream", "c_sync_comm_stream",
                                  "c_embedding", "c_softmax_with_cross_entropy"])
    assert ops["all_reduce"].attr("reduce_type") == 1 and ops["broadcast"].attr("root") == 1
    assert (ops["c_split"].attr("rank"), ops["c_split"].attr("nranks"), ops["c_split"].attr("ring_id")) == (1, 2, 1)
    assert ops["c_embedding"].attr("start_index") == 3 and ops["c_embedding"].attr("vocab_size") == 8
    assert ops["c_softmax_with_cross_entropy"].attr("ignore_index") == -1
    assert ops["c_sync_comm_stream"].output("Out") == ops["c_sync_comm_stream"].input("X")   # in place
    in_place = [op for op in gradc.load(DATA / "ops_in_place.json").global_block.ops]
    assert [op.type for op in in_place] == ["c_identity", "mp_allreduce_sum", "c_allreduce_sum", "c_allreduce_sum",
                                            "all_reduce", "broadcast", "c_sync_calc_stream",
                                            "c_softmax_with_cross_entropy_grad",
                                            "c_softmax_with_multi_label_cross_entropy"]
    assert [op.output_names() == op.input_names()[:1] for op in in_place] == [True, True, False] + [True] * 5 + [False]
    assert in_place[-1].attr("sum_multi_label_loss") is False and in_place[-1].attr("nranks") == 2


def test_gradcs_compiled_programs_written_as_pir_and_read_back_still_give_it(tmp_path):
    from gradc.pir import load_pir, save_pir

    programs, grads = compiled("split", "forward.pb")
    for rank, program in enumerate(programs):
        save_pir(program, tmp_path / f"rank{rank}.json")
    read = [load_pir(tmp_path / f"rank{rank}.json") for rank in range(2)]
    # the backward's seed is written as Paddle writes it, ones like the loss (pd_op.full_like), and read back so
    expected = ["fill_any_like" if op.type == "fill_constant" and roles.has_role(op, roles.LOSS | roles.BACKWARD)
                else op.type for op in programs[0].global_block.ops]
    assert expected.count("fill_any_like") == 1
    assert [op.type for op in read[0].global_block.ops if op.type != "fetch"] == expected
    assert_single_device("split", *run_both("split", read, grads))

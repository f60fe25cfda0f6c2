"""Auto-parallel's dist_op.reshard run by gradc (gradc.ops.reshard, gradc.executor.reshard): each rank's block under
the src placements becomes its block under the dst placements, across run_ranks' ranks, against a numpy model of
the global value; Paddle's programs from before its reshard pass (tests/data/paddle/auto_parallel/<case>/rank0/
reshard.json, the one program of every rank) give the single-device loss and step; gradc's backward of a reshard."""

import json

import numpy as np
import pytest

import gradc
from gradc.errors import ExecutionError
from gradc.executor.ranks import run_ranks
from gradc.executor.reshard import chunk
from gradc.pir import save_pir
from gradc.pir.dist import spread
from programs import Net
from test_auto_parallel import DATA, check_step, reference, run_case

r = np.random.default_rng(7)
REDUCE = {0: np.sum, 1: np.max, 4: np.mean}
M2, M2B, M22 = ([2], [0, 1]), ([2], [2, 3]), ([2, 2], [0, 1, 2, 3])


def tensor_dist(mesh, mapping, partial=()):
    shape, ids = mesh
    names = [f"d{i}" for i in range(len(shape))]
    return {"#": "4.a_tensor_dist", "D": [{"#": "4.a_process_mesh", "D": [shape, ids, names]}, list(mapping),
                                          [list(p) for p in partial]]}


def op_dist_attr(src, dst) -> str:
    ids = sorted(set(src[0][1]) | set(dst[0][1]))
    mesh = {"#": "4.a_process_mesh", "D": [[len(ids)], ids, ["all"]]}
    return json.dumps({"#": "4.a_op_dist", "D": [mesh, [tensor_dist(*src)], [tensor_dist(*dst)], -1]})


def coordinates(mesh, rank):
    return np.unravel_index(mesh[1].index(rank), mesh[0])


def block(value, placement, rank):
    """The block of the global ``value`` a rank holds (uneven dims in chunks of ceil(n / k))."""
    mesh, mapping = placement[0], placement[1]
    where = coordinates(mesh, rank)
    return value[tuple(slice(None) if axis < 0 else chunk(size, mesh[0][axis], where[axis])
                       for size, axis in zip(value.shape, mapping))]


def global_value(blocks: dict, placement, shape):
    """The global value the ranks' blocks stand for: partial parts reduced, shards put in place."""
    mesh, mapping, partial = placement[0], placement[1], dict(placement[2] if len(placement) > 2 else ())
    out = np.zeros(shape)
    for rank in mesh[1]:
        where = coordinates(mesh, rank)
        group = [other for other in mesh[1] if all(coordinates(mesh, other)[axis] == where[axis]
                                                    for axis in range(len(mesh[0])) if axis not in partial)]
        reduce = REDUCE[next(iter(partial.values()), 0)]
        index = tuple(slice(None) if axis < 0 else chunk(size, mesh[0][axis], where[axis])
                      for size, axis in zip(shape, mapping))
        out[index] = reduce(np.stack([blocks[other] for other in group]), axis=0)
    return out


def run_reshard(src, dst, shape):
    """Every rank's program of one reshard, each fed its src block (a partial one: parts of random values): (the
    global value, each rank's out)."""
    count, partial = max(src[0][1] + dst[0][1]) + 1, [axis for axis, _ in (src[2] if len(src) > 2 else ())]
    parts = {}   # the ranks at one place on the partial axes hold one global part (replicated on the others)
    blocks = {rank: block(parts.setdefault(tuple(coordinates(src[0], rank)[axis] for axis in partial),
                                           r.standard_normal(shape)), src, rank) for rank in src[0][1]}
    programs, feeds = [], []
    for rank in range(count):
        net = Net()
        held = blocks.get(rank, np.zeros(0))
        net.data("x", list(held.shape))
        net.block.create_var("out", None, net.dtype)
        net.block.append_op("reshard", {"x": ["x"]}, {"out": ["out"]}, {"op_dist_attr": op_dist_attr(src, dst)})
        programs.append(net.program)
        feeds.append({"x": held} if rank in blocks else {})
    return global_value(blocks, src, shape), [values[0] for values in run_ranks(programs, feeds, ["out"])]


CASES = {   # (src placement, dst placement, global dims): placement (mesh, dims_mapping[, partial (axis, reduce)])
    "r_to_s0": ((M2, [-1, -1]), (M2, [0, -1]), [4, 3]),
    "r_to_s1_uneven": ((M2, [-1, -1]), (M2, [-1, 0]), [4, 5]),
    "s0_to_r_uneven": ((M2, [0, -1]), (M2, [-1, -1]), [5, 3]),
    "s1_to_r": ((M2, [-1, 0]), (M2, [-1, -1]), [4, 6]),
    "p_to_r_sum": ((M2, [-1, -1], [(0, 0)]), (M2, [-1, -1]), [2, 3]),
    "p_to_r_avg": ((M2, [-1, -1], [(0, 4)]), (M2, [-1, -1]), [2, 3]),
    "p_to_r_max": ((M2, [-1, -1], [(0, 1)]), (M2, [-1, -1]), [2, 3]),
    "p_to_s0_uneven": ((M2, [-1, -1], [(0, 0)]), (M2, [0, -1]), [5, 2]),
    "r_to_p": ((M2, [-1, -1]), (M2, [-1, -1], [(0, 0)]), [2, 3]),
    "s0_to_s1": ((M2, [0, -1]), (M2, [-1, 0]), [4, 6]),
    "nd_s_s_to_r": ((M22, [0, 1]), (M22, [-1, -1]), [4, 6]),
    "nd_r_to_swapped": ((M22, [-1, -1]), (M22, [1, 0]), [4, 5]),
    "nd_p_mp_to_r_mp": ((M22, [0, -1], [(1, 0)]), (M22, [0, -1]), [4, 3]),
    "nd_p_dp_to_s_dp": ((M22, [-1, -1], [(0, 0)]), (M22, [0, 1]), [4, 6]),
    "nd_s_to_s": ((M22, [1, -1]), (M22, [0, 1]), [4, 6]),
    "cross_s0_to_s1": ((M2, [0, -1]), (M2B, [-1, 0]), [4, 6]),
    "cross_p_to_r": ((M2, [-1, -1], [(0, 0)]), (M2B, [-1, -1]), [3, 2]),
    "global_to_sub": ((M22, [0, 1]), (M2B, [-1, -1]), [4, 2]),
    "sub_to_global": ((([1], [0]), [-1, -1]), (M2, [-1, -1]), [3, 2]),
    "row_to_mesh_shard": ((([1, 2], [0, 1]), [-1, 1]), (M22, [-1, 1]), [2, 4]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_rank_gets_its_dst_block_of_the_global_value(name):
    src, dst, shape = CASES[name]
    whole, outs = run_reshard(src, dst, shape)
    partial = dict(dst[2]) if len(dst) > 2 else {}
    for rank in dst[0][1]:
        expected = block(whole, dst, rank)
        if partial and any(coordinates(dst[0], rank)[axis] != 0 for axis in partial):
            expected = np.zeros_like(expected)   # a sum's parts: the whole at the axis's first rank
        np.testing.assert_allclose(outs[rank], expected, rtol=1e-12, err_msg=f"rank {rank}")


def test_the_backward_of_a_reshard_is_the_reverse_reshard_partial_read_as_replicated():
    """loss = mean(y * y), y = x sharded then gathered, and x made a sum's parts then summed again: x@GRAD is
    2 x / n on every rank, as on one device."""
    x = r.standard_normal((4, 6))
    programs = []
    for _ in range(2):
        net = Net()
        net.data("x", [4, 6])
        net.block.var("x").stop_gradient = False
        hops = [((M2, [-1, -1]), (M2, [-1, 0])), ((M2, [-1, 0]), (M2, [-1, -1])),
                ((M2, [-1, -1]), (M2, [-1, -1], [(0, 0)])), ((M2, [-1, -1], [(0, 0)]), (M2, [-1, -1]))]
        value = "x"
        for src, dst in hops:
            value = net.op("reshard", {"x": value}, {"op_dist_attr": op_dist_attr(src, dst)}, out="out")
        loss = net.mean(net.elementwise_mul(value, value))
        gradc.append_backward(net.program, loss, parameter_list=["x"])
        assert [op.type for op in net.program.global_block.ops].count("reshard") == 8
        programs.append(net.program)
    for value, grad in run_ranks(programs, [{"x": x}] * 2, [loss, "x@GRAD"]):
        np.testing.assert_allclose(value, np.mean(x * x), rtol=1e-12)
        np.testing.assert_allclose(grad, 2 * x / x.size, rtol=1e-12)


@pytest.mark.parametrize("case_name", ["dp_mp", "shared", "sharding2", "sharding3"])
def test_the_program_before_paddles_reshard_pass_gives_the_single_device_loss_and_step(case_name):
    count = len(json.loads((DATA / "meta.json").read_text())["cases"][case_name]["ranks"])
    check_step(case_name, [gradc.load(DATA / case_name / "rank0" / "reshard.json") for _ in range(count)])


@pytest.mark.parametrize("case_name,form", [("pipeline", "reshard.json"), ("pipeline", "train.json"),
                                            ("partial", "reshard.json")])
def test_a_pipeline_whose_hidden_value_crosses_meshes(case_name, form):
    """Stage 0 on ranks 0, 1 (column-parallel), stage 1 on 2, 3 (row-parallel): the hidden value, split by rows on
    the first mesh, is sent to the second split by columns, its gradient sent back; the loss is stage 1's. Before
    Paddle's reshard pass (one program for every rank) and after it (Paddle's send_v2 / recv_v2 and all_to_all
    between reshapes, which state global dims: gradc reshapes the rank's block to its local dims, as Paddle's
    dist-to-dense pass rewrites them). partial: the hidden value crosses replicated and becomes a sum's parts on the
    second mesh; Paddle's pass fails on the backward's Shard(1) -> Partial, gradc runs the program before it (with
    the pipeline's startup program: the same model's)."""
    case = json.loads((DATA / "meta.json").read_text())["cases"][case_name]
    ref = reference(case)
    programs = [gradc.load(DATA / case_name / f"rank{0 if form == 'reshard.json' else rank}" / form)
                for rank in range(4)]
    losses, scopes = run_case(case_name, programs, fetch_lists=[[], [], ["loss_0"], ["loss_0"]],
                              startup_case="pipeline")
    if case_name == "partial":
        assert case["ranks"][2]["paddle_error"].startswith("There is no reshard function that matches src_dist_attr"
                                                           ": mesh_shape:[2],process_ids:[2,3],dims_mappings:[-1,0]")
    assert losses[:2] == [None, None]
    np.testing.assert_allclose(np.mean(losses[2:]), ref["loss"], rtol=1e-6)
    for rank, (program, scope) in enumerate(zip(programs, scopes)):
        own = [name for name in case["ranks"][rank]["params"] if name in program.global_block.vars
               and rank in spread(program.global_block.vars[name].dist).process_ids]
        assert own == [f"linear_{rank // 2}.{kind}_0.dist" for kind in "wb"]   # each stage steps its own Linear
        for name in own:
            stepped = spread(program.global_block.vars[name].dist).local_part(
                ref[f"stepped.{name.removesuffix('.dist')}"], rank)
            np.testing.assert_allclose(scope[name], stepped, rtol=1e-5, atol=1e-7)


def test_a_reshard_between_ranks_run_alone_and_an_unsupported_one_are_one_line_errors():
    net = Net()
    net.data("x", [2, 3])
    net.block.create_var("out", None, net.dtype)
    net.block.append_op("reshard", {"x": ["x"]}, {"out": ["out"]},
                        {"op_dist_attr": op_dist_attr((M2, [0, -1]), (M2, [-1, -1]))})
    with pytest.raises(ExecutionError, match=r"block 0, op 0 \(reshard\): the reshard spans ranks \[0, 1\], and "
                                             r"this process runs one rank"):
        gradc.Executor().run(net.program, feed={"x": np.zeros((2, 3))}, fetch_list=["out"])
    with pytest.raises(ExecutionError, match=r"rank 0: block 0, op 0 \(reshard\): Paddle 3.3.1's reshard pass has no "
                                             r"function for meshes of different shapes.*not from mesh \[0, 1\] \[2\], "
                                             r"dims_mapping \[0, -1\] to mesh \[0, 1, 2\] \[3\]"):
        run_reshard((M2, [0, -1]), (([3], [0, 1, 2]), [-1, -1]), [4, 2])


def test_a_program_with_reshards_saved_as_pir_writes_them_back_and_still_trains(tmp_path):
    program = gradc.load(DATA / "shared" / "rank0" / "reshard.json")
    save_pir(program, tmp_path / "reshard.json")
    assert (tmp_path / "reshard.json").read_text().count('"dist_op.reshard"') == 24
    saved = gradc.load(tmp_path / "reshard.json")
    assert [op.attrs["op_dist_attr"] for op in saved.global_block.ops if op.type == "reshard"] == \
        [op.attrs["op_dist_attr"] for op in program.global_block.ops if op.type == "reshard"]
    check_step("shared", [saved, saved])

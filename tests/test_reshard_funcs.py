"""Which of Paddle 3.3.1's reshard functions lowers a pair of placements (tests/data/paddle/reshard_funcs.json, by
tools/paddle_reshard_funcs.py: Paddle's own choose_reshard_func, and its whole reshard pass on a program of the
pair): gradc picks the same function for every pair, and splits a reshard into the steps Paddle's pass does; between
meshes of different shapes it runs the pairs whose every step Paddle has a function for (global_to_sub,
sub_to_global), each rank getting its dst block of the global value, and refuses the others in one line; where
Paddle picks s_to_s, the ranks exchange only all_to_all's pieces."""

import json
from pathlib import Path

import numpy as np
import pytest

from gradc.errors import ExecutionError
from gradc.executor import ranks
from gradc.executor.reshard_funcs import paddle_function, paddle_steps
from gradc.executor.reshard_placement import Placement
from test_reshard import block, coordinates, run_reshard

PAIRS = {row["name"]: row for row in json.loads(
    (Path(__file__).parent / "data" / "paddle" / "reshard_funcs.json").read_text())["pairs"]}
SHAPES = {2: [4, 6], 3: [4, 3, 6]}   # global dims by rank of the tensor


def placement(written) -> Placement:
    shape, ids, mapping, partial = written
    return Placement(tuple(shape), tuple(ids), tuple(mapping), tuple(tuple(p) for p in partial))


def as_test_placement(written):
    """test_reshard's form: (mesh, dims_mapping, partial)."""
    shape, ids, mapping, partial = written
    return (shape, ids), mapping, [tuple(p) for p in partial]


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_gradc_picks_paddles_function(name):
    row = PAIRS[name]
    src, dst = placement(row["src"]), placement(row["dst"])
    if row["paddle"] is not None and row["paddle"].startswith("error: "):
        with pytest.raises(ValueError, match="global_to_sub_mesh_func.py asks get_sub_meshes of the 1-D src mesh"):
            paddle_function(src, dst)
        assert "The size of this process mesh must be equal to the size of its process ids" in row["paddle"]
    else:
        assert paddle_function(src, dst) == row["paddle"]


def steps_or_refusal(row) -> list | None:
    """gradc's Paddle function for each step of the pair, None where one step has none or choosing fails."""
    try:
        steps = paddle_steps(placement(row["src"]), placement(row["dst"]))
    except ValueError:
        return None
    return None if None in steps else steps


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_gradc_splits_the_reshard_as_paddles_pass_does(name):
    """Where Paddle's pass lowers the pair, every step has a function, with its collectives (all_to_all: s_to_s;
    broadcast: sub_to_global); where it finds none, gradc has none. Paddle faults: its pass crashes on a partial sum
    sent from a layer of the mesh, and fails in s_to_r of an uneven split; gradc has the functions for both."""
    row = PAIRS[name]
    steps, result = steps_or_refusal(row), row["pass"]
    if result.startswith("ok: "):
        assert steps is not None
        assert ("pd_op.all_to_all" in result) == ("s_to_s" in steps)
        assert ("pd_op.broadcast" in result) == ("sub_to_global" in steps)
    elif "There is no reshard function that matches" in result or "The size of this process mesh" in result:
        assert steps is None
    else:
        assert result.startswith("crash: ") or "'list' object has no attribute 'get_defining_op'" in result
        assert steps is not None


DIFFERENT_SHAPES = sorted(name for name, row in PAIRS.items() if row["src"][0] != row["dst"][0])


@pytest.mark.parametrize("name", DIFFERENT_SHAPES)
def test_meshes_of_different_shapes_run_where_paddle_has_a_function_and_are_refused_elsewhere(name):
    row = PAIRS[name]
    src, dst = as_test_placement(row["src"]), as_test_placement(row["dst"])
    shape = SHAPES[len(row["src"][2])]
    if steps_or_refusal(row) is None:
        with pytest.raises(ExecutionError) as caught:
            run_reshard(src, dst, shape)
        message = str(caught.value)
        assert "\n" not in message
        expected = "gradc refuses it too" if row["pass"].startswith("error: (InvalidArgument)") else \
            "has no function for meshes of different shapes"
        assert expected in message
        return
    whole, outs = run_reshard(src, dst, shape)
    partial = [axis for axis, _ in dst[2]]
    (mesh_shape, ids), mapping = dst[0], dst[1]
    for rank in ids:
        expected = block(whole, (dst[0], mapping), rank)
        if not partial:
            np.testing.assert_allclose(outs[rank], expected, rtol=1e-12, err_msg=f"rank {rank}")
            continue
        where = coordinates(dst[0], rank)   # a sum's parts: the ranks along the partial axes add up to the block
        group = [other for other in ids if all(coordinates(dst[0], other)[a] == where[a]
                                               for a in range(len(mesh_shape)) if a not in partial)]
        np.testing.assert_allclose(sum(outs[other] for other in group), expected, rtol=1e-12, err_msg=f"rank {rank}")


@pytest.mark.parametrize("name", ["s0_to_s1", "s1_to_s0_4_ranks", "s0_to_s2"])
def test_s_to_s_moves_all_to_all_pieces_and_gives_each_rank_its_block(name, monkeypatch):
    row, sent, met = PAIRS[name], {}, []
    posting, meeting = ranks.Job.post, ranks.Job.meet

    def post(job, rank, ring, receiver, value):
        sent.setdefault(rank, []).append((receiver, value.shape))
        return posting(job, rank, ring, receiver, value)

    def meet(job, rank, *args):
        met.append(rank)
        return meeting(job, rank, *args)

    monkeypatch.setattr(ranks.Job, "post", post)
    monkeypatch.setattr(ranks.Job, "meet", meet)
    src, dst = as_test_placement(row["src"]), as_test_placement(row["dst"])
    shape = SHAPES[len(row["src"][2])]
    whole, outs = run_reshard(src, dst, shape)
    group, gathered, split = row["src"][1], row["src"][2].index(0), row["dst"][2].index(0)
    assert not met   # no all_gather
    for rank in group:
        np.testing.assert_array_equal(outs[rank], block(whole, dst, rank))
        local = list(block(whole, src, rank).shape)
        piece = local[:split] + [local[split] // len(group)] + local[split + 1:]
        assert sorted(sent[rank]) == [(other, tuple(piece)) for other in group if other != rank]
        assert outs[rank].shape[gathered] == shape[gathered]

"""The random ops of a multi-rank run (gradc.executor.ranks.run_ranks) draw from streams of each rank's own:
seeded, a run repeats draw for draw however the ranks' threads interleave, and each rank draws what one process
seeded alike draws (Paddle's engine, as paddle.seed seeds it); the process's own streams are left alone."""

import numpy as np

import gradc
from cli_inprocess import gradc_cli
from gradc.executor import randomness
from gradc.executor.ranks import run_ranks
from programs import Net


def drawing_program(collective: bool) -> gradc.Program:
    """uniform_random [3, 4] (seed 0: the engine), dropout of x (no fix_seed), and between them an all_reduce that
    makes the ranks meet mid-program."""
    net = Net("float32")
    net.data("x", [4, 5])
    net.block.create_var("noise", [3, 4], gradc.VarType.FP32)
    net.block.append_op("uniform_random", {}, {"Out": ["noise"]}, {"shape": [3, 4], "dtype": 5})
    source = "x"
    if collective:
        net.block.create_var("summed", [4, 5], gradc.VarType.FP32)
        net.block.append_op("all_reduce", {"x": ["x"]}, {"out": ["summed"]}, {"ring_id": 0, "reduce_type": 0})
        source = "summed"
    for name, shape in (("dropped", [4, 5]), ("mask", [4, 5])):
        net.block.create_var(name, shape, gradc.VarType.UINT8 if name == "mask" else gradc.VarType.FP32)
    net.block.append_op("dropout", {"X": [source]}, {"Out": ["dropped"], "Mask": ["mask"]}, {"dropout_prob": 0.5})
    return net.program


FEED = {"x": np.ones((4, 5), np.float32)}


def alone(seed: int) -> list:
    randomness.seed(seed)
    return gradc.Executor().run(drawing_program(False), feed=FEED, fetch_list=["noise", "mask"])


def together(seed) -> list:
    return run_ranks([drawing_program(True)] * 3, [FEED] * 3, ["noise", "mask"], seed=seed)


def test_a_seeded_run_repeats_draw_for_draw_and_each_rank_draws_as_one_process():
    first, second = together(7), together(7)
    expected = alone(7)
    for rank in range(3):
        for value, again, single in zip(first[rank], second[rank], expected):
            np.testing.assert_array_equal(value, again)
            np.testing.assert_array_equal(value, single)   # paddle.seed(7) on every rank: the same draws


def test_a_seed_per_rank():
    values = together([3, 4, 5])
    for rank, seed in enumerate((3, 4, 5)):
        for value, single in zip(values[rank], alone(seed)):
            np.testing.assert_array_equal(value, single)
    assert not np.array_equal(values[0][0], values[1][0])


def test_the_processs_streams_are_left_alone():
    randomness.seed(11)
    before = randomness.snapshot()
    together(7)
    assert randomness.snapshot() == before


def test_run_ranks_takes_a_seed(tmp_path):
    gradc.save(drawing_program(True), tmp_path / "p.pb")
    np.savez(tmp_path / "feed.npz", **FEED)
    args = ["run-ranks", tmp_path / "p.pb", tmp_path / "p.pb", "--feed", tmp_path / "feed.npz", "--fetch", "noise",
            "--seed", "3", "--seed", "4", "--out", tmp_path / "out.npz"]
    result = gradc_cli(*args)
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_array_equal(out["rank1/noise"], alone(4)[0])

"""The random_dist family: each sampler's distribution (moments at fixed seeds, sample sizes that put the checked
moment many standard errors inside its tolerance), Paddle's attribute semantics (truncation bounds in the draws'
units, seeds, dtypes), Paddle's values where they are deterministic (the graph samplers asked for every neighbour,
graph_reindex) and exponential's zero gradient in Paddle's form."""

import json
import math

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc import Executor, Scope, append_backward
from gradc.executor import randomness
from gradc.layers import ProgramBuilder
from gradc.limits import limited
from gradc.passes.checkpoints import recomputable
from one_op import run

LAYERS = DATA / "layers"
# a CSC graph of 5 nodes: node 0's in-neighbours are [3, 1], node 1's [0], node 2's none, node 3's [2, 0, 1]
GRAPH = {"Row": np.array([3, 1, 0, 2, 0, 1]), "Col_Ptr": np.array([0, 2, 3, 3, 6, 6]), "X": np.array([3, 0, 2])}


@pytest.fixture(autouse=True)
def _seeded():
    randomness.seed(7)
    yield
    randomness.seed(None)


def truncated_moments(mean, std, low, high):
    """The mean and variance of N(mean, std^2) truncated to [low, high]."""
    alpha, beta = (low - mean) / std, (high - mean) / std
    pdf = [math.exp(-z * z / 2) / math.sqrt(2 * math.pi) for z in (alpha, beta)]
    mass = (math.erf(beta / math.sqrt(2)) - math.erf(alpha / math.sqrt(2))) / 2
    shift = (pdf[0] - pdf[1]) / mass
    return mean + std * shift, std ** 2 * (1 + (alpha * pdf[0] - beta * pdf[1]) / mass - shift ** 2)


@pytest.mark.parametrize("mean, std, low, high", [(0.0, 1.0, -2.0, 2.0), (1.0, 2.0, -1.0, 4.0), (0.0, 1.0, 1.0, 3.0)])
def test_truncated_gaussian_random_bounds_the_draws_and_has_the_truncated_moments(mean, std, low, high):
    out = run("truncated_gaussian_random", {}, {"shape": [400, 500], "mean": mean, "std": std, "a": low, "b": high})
    draws = out["Out"].astype(np.float64)
    expected_mean, expected_var = truncated_moments(mean, std, low, high)
    assert out["Out"].dtype == np.float32 and low <= draws.min() and draws.max() <= high
    # standard errors about std / 450: the tolerances are over 10 of them
    assert abs(draws.mean() - expected_mean) < 0.02 and abs(draws.var() - expected_var) < 0.03 * expected_var


def test_the_default_bounds_are_absolute_not_in_stds():
    """TruncatedNormal(std=0.02), as ViT and BERT initialise weights: a=-2, b=2 lie 100 stds out, so the draws are
    an untruncated N(0, 0.02^2) (Paddle 3.3.1 gives std 0.020 and draws beyond 3 stds), not one cut at 2 stds."""
    drawn = run("truncated_gaussian_random", {}, {"shape": [100_000], "std": 0.02})["Out"].astype(np.float64)
    assert abs(drawn.std() - 0.02) < 0.0003 and np.abs(drawn).max() > 0.07


def test_truncated_gaussian_random_seed_and_float64():
    attrs = {"shape": [3, 4], "seed": 11, "dtype": 6}
    first, second = (run("truncated_gaussian_random", {}, attrs)["Out"] for _ in range(2))
    assert first.dtype == np.float64 and (np.abs(first) <= 2).all()
    np.testing.assert_array_equal(first, second)


def test_the_truncated_normal_paddle_writes_runs_within_its_bounds():
    """TruncatedNormal(mean=1, std=2, a=-1, b=4) as Paddle 3.3.1 writes it, drawn by gradc instead of replayed."""
    program = gradc.load(LAYERS / "TruncatedNormal_bounds" / "forward.pb")
    op = next(op for op in program.global_block.ops if op.type == "truncated_gaussian_random")
    assert (op.attrs["mean"], op.attrs["std"], op.attrs["a"], op.attrs["b"]) == (1.0, 2.0, -1.0, 4.0)
    feed = dict(np.load(LAYERS / "TruncatedNormal_bounds" / "feed.npz"))
    drawn = Executor().run(program, feed, op.output("Out"), Scope())[0]
    assert drawn.shape == (2, 5) and drawn.dtype == np.float32 and ((drawn >= -1) & (drawn <= 4)).all()


def test_binomial_moments_and_certain_probabilities():
    # 132,000 draws of B(10, 0.3): the mean's standard error 0.0040, the variance's 0.0079 (sqrt((mu4 - var^2) / n),
    # mu4 = 12.684): the tolerances are 5 and 6.3 of them
    count, prob = np.full(132_000, 10.0, np.float32), np.full(132_000, 0.3, np.float32)
    drawn = run("binomial", {"count": count, "prob": prob})["out"]
    assert drawn.dtype == np.int64 and drawn.min() >= 0 and drawn.max() <= 10
    assert abs(drawn.mean() - 3.0) < 0.02 and abs(drawn.var() - 2.1) < 0.05
    certain = run("binomial", {"count": np.array([4.0, 7.0, 0.0], np.float32),
                               "prob": np.array([1.0, 0.0, 1.0], np.float32)})["out"]
    np.testing.assert_array_equal(certain, [4, 0, 0])


# draws enough for tolerances of at least 5 standard errors: the mean's sqrt(k / n), the variance's
# sqrt((mu4 - k^2) / n) with mu4 = k^2 (3 + 6 / k): k = 0.5 5.3 and 5.0 of them, k = 3 6.9 and 5.0
@pytest.mark.parametrize(("shape", "draws"), [(0.5, 140_000), (3.0, 40_000)])
def test_standard_gamma_has_mean_and_variance_its_shape(shape, draws):
    drawn = run("standard_gamma", {"x": np.full(draws, shape, np.float32)})["out"].astype(np.float64)
    assert abs(drawn.mean() - shape) < 0.02 * shape and abs(drawn.var() - shape) < 0.05 * shape


def test_standard_gamma_never_draws_below_the_smallest_normal_float():
    """Like Paddle's kernel: at tiny shapes most draws underflow, and give float32's smallest normal instead of 0."""
    drawn = run("standard_gamma", {"x": np.full(1000, 1e-3, np.float32)})["out"]
    assert drawn.min() == np.finfo(np.float32).tiny and drawn.dtype == np.float32


def test_dirichlet_rows_sum_to_one_with_mean_alpha_over_its_total():
    alpha = np.tile(np.array([0.5, 1.0, 2.5], np.float32), (100_000, 1))
    drawn = run("dirichlet", {"Alpha": alpha})["Out"].astype(np.float64)
    np.testing.assert_allclose(drawn.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(drawn.mean(axis=0), [0.125, 0.25, 0.625], atol=0.003)


def test_exponential_has_mean_one_over_lambda():
    drawn = run("exponential", {"X": np.zeros(200_000, np.float32)}, {"lambda": 4.0})["Out"].astype(np.float64)
    assert drawn.min() >= 0 and abs(drawn.mean() - 0.25) < 0.003 and abs(drawn.std() - 0.25) < 0.003


def test_exponential_grad_is_paddles_fill_any_like_of_zeros():
    net = ProgramBuilder()
    x = net.data("x", [2, 3], "float32")
    net.block.var(x).is_parameter = True
    out = net.op("exponential", {"X": x}, {"lambda": 2.0})[0]
    append_backward(net.program, net.op("reduce_sum", {"X": out}, {"reduce_all": True})[0])
    grad = next(op for op in net.block.ops if op.output("Out") == [f"{x}@GRAD"])
    assert (grad.type, grad.input("X"), grad.attrs["value"]) == ("fill_any_like", [f"{out}@GRAD"], 0.0)
    feed = {x: np.ones((2, 3), np.float32)}
    np.testing.assert_array_equal(Executor().run(net.program, feed, [f"{x}@GRAD"], Scope())[0], np.zeros((2, 3)))


def test_sampling_every_neighbour_gives_paddles_outputs():
    """Paddle 3.3.1's draws for sample_size 3 (no node has more neighbours): every neighbour, in order."""
    recorded = np.load(LAYERS / "sample_neighbors_all" / "random.npz")
    out = run("graph_sample_neighbors", GRAPH, {"sample_size": 3})
    np.testing.assert_array_equal(out["Out"], recorded["sample_neighbors_0.tmp_0"])
    np.testing.assert_array_equal(out["Out_Count"], recorded["sample_neighbors_0.tmp_1"])


def test_graph_sample_neighbors_draws_each_neighbour_equally_often():
    """Node 3 has 3 neighbours: sampling 2, each is drawn 2/3 of the time, never twice in one draw."""
    graph = {**GRAPH, "X": np.full(30_000, 3)}
    out = run("graph_sample_neighbors", {**graph, "Eids": np.arange(6) + 10}, {"sample_size": 2, "return_eids": True})
    pairs = out["Out"].reshape(-1, 2)
    assert (out["Out_Count"] == 2).all() and (pairs[:, 0] != pairs[:, 1]).all()
    np.testing.assert_allclose(np.bincount(pairs.ravel(), minlength=3) / len(pairs), [2 / 3] * 3, atol=0.015)
    np.testing.assert_array_equal(out["Out_Eids"] - 10, 3 + np.array([1, 2, 0])[out["Out"]])   # neighbour 2: edge 3


def test_weighted_sample_neighbors_draws_in_proportion_to_the_weights():
    graph = {"row": GRAPH["Row"], "colptr": GRAPH["Col_Ptr"], "input_nodes": np.full(40_000, 3),
             "edge_weight": np.array([1, 1, 1, 1.0, 3.0, 6.0], np.float32)}
    one = run("weighted_sample_neighbors", graph, {"sample_size": 1})["out_neighbors"]
    np.testing.assert_allclose(np.bincount(one, minlength=3) / one.size, [0.3, 0.6, 0.1], atol=0.01)
    # two without replacement: the lightest edge (weight 1) is left out with probability 0.6*3/4 + 0.3*6/7
    two = run("weighted_sample_neighbors", graph, {"sample_size": 2})["out_neighbors"].reshape(-1, 2)
    assert (two[:, 0] != two[:, 1]).all()
    # written last drawn first, as Paddle 3.3.1's min-heap pops them (it gives [0.480, 0.328, 0.192])
    second = [0.6 * 3 / 4 + 0.1 * 3 / 9, 0.3 * 6 / 7 + 0.1 * 6 / 9, 0.6 * 1 / 4 + 0.3 * 1 / 7]
    np.testing.assert_allclose(np.bincount(two[:, 0], minlength=3) / len(two), second, atol=0.012)
    assert abs((two != 2).all(axis=1).mean() - (0.45 + 1.8 / 7)) < 0.012


def test_a_weight_zero_edge_is_drawn_only_when_nothing_else_is_left():
    graph = {"row": GRAPH["Row"], "colptr": GRAPH["Col_Ptr"], "input_nodes": np.full(1000, 3),
             "edge_weight": np.array([1, 1, 1, 0.0, 1.0, 2.0], np.float32)}
    assert 2 not in run("weighted_sample_neighbors", graph, {"sample_size": 2})["out_neighbors"]
    # all zero (Paddle draws the first neighbours, as printed by Paddle 3.3.1)
    zero = run("weighted_sample_neighbors", {**graph, "edge_weight": np.zeros(6, np.float32),
                                             "input_nodes": GRAPH["X"]}, {"sample_size": 1})
    np.testing.assert_array_equal(zero["out_neighbors"], [2, 3])


def test_graph_reindex_matches_paddle():
    """Values printed by Paddle 3.3.1's reindex_graph; X holding node 5 twice maps it to its last position."""
    neighbors, count = np.array([8, 9, 0, 4, 7, 6, 7]), np.array([2, 3, 2], np.int32)
    out = run("graph_reindex", {"X": np.array([0, 1, 2]), "Neighbors": neighbors, "Count": count})
    np.testing.assert_array_equal(out["Reindex_Src"], [3, 4, 0, 5, 6, 7, 6])
    np.testing.assert_array_equal(out["Reindex_Dst"], [0, 0, 1, 1, 1, 2, 2])
    np.testing.assert_array_equal(out["Out_Nodes"], [0, 1, 2, 8, 9, 4, 7, 6])
    twice = run("graph_reindex", {"X": np.array([5, 1, 5]), "Neighbors": neighbors, "Count": count})
    np.testing.assert_array_equal(twice["Reindex_Src"], [3, 4, 5, 6, 7, 8, 7])
    np.testing.assert_array_equal(twice["Reindex_Dst"], [2, 2, 1, 1, 1, 2, 2])
    np.testing.assert_array_equal(twice["Out_Nodes"], [5, 1, 5, 8, 9, 0, 4, 7, 6])


def test_a_sampled_subgraph_paddle_saves_without_edge_ids_verifies_and_gives_paddles_outputs():
    """PGL's sampling (sample_neighbors, reindex_graph) as paddle.jit.save writes it: the unwritten edge ids are
    declared float32 [] (tools/paddle_sampling_fixture.py); every neighbour is drawn, so the outputs are Paddle's."""
    folder = DATA / "pir_sampling"
    program = gradc.load(folder / "inference.json")
    assert gradc.verify(program) == []
    fetched = [op.input("X")[0] for op in program.global_block.ops if op.type == "fetch"]
    outputs = Executor().run(program, dict(np.load(folder / "feed.npz")), fetched, Scope())
    recorded = np.load(folder / "outputs.npz")
    for i, value in enumerate(outputs):
        np.testing.assert_array_equal(value, recorded[f"arr_{i}"])


def test_graph_reindex_of_several_edge_types():
    """reindex_heter_graph's concatenated counts: one per node of X for each edge type in turn."""
    out = run("graph_reindex", {"X": np.array([5, 2]), "Neighbors": np.array([2, 7, 5, 6, 0]),
                                "Count": np.array([2, 1, 1, 1], np.int32)})
    np.testing.assert_array_equal(out["Reindex_Dst"], [0, 0, 1, 0, 1])
    np.testing.assert_array_equal(out["Out_Nodes"], [5, 2, 7, 6, 0])


@pytest.mark.parametrize("op_type, inputs", [
    ("truncated_gaussian_random", {}),
    ("binomial", {"count": np.ones(3, np.float32), "prob": np.full(3, 0.5, np.float32)}),
    ("standard_gamma", {"x": np.ones(3, np.float32)}), ("dirichlet", {"Alpha": np.ones((2, 3), np.float32)}),
    ("exponential", {"X": np.ones(3, np.float32)}),
    ("graph_sample_neighbors", GRAPH),
    ("weighted_sample_neighbors", {"row": GRAPH["Row"], "colptr": GRAPH["Col_Ptr"], "input_nodes": GRAPH["X"],
                                   "edge_weight": np.ones(6, np.float32)})])
def test_recompute_never_draws_again(op_type, inputs):
    """Running a sampler again would not give the draws the backward saw: checkpointing keeps its outputs."""
    net = ProgramBuilder()
    net.op(op_type, {slot: net.data(slot.lower(), list(v.shape), v.dtype.name) for slot, v in inputs.items()})
    assert not recomputable(net.block.ops[-1])


def test_a_negative_seed_is_a_seed():
    """Paddle seeds its engine with the int seed as a uint64: -5 gives the same draws every run."""
    first, second = (run("truncated_gaussian_random", {}, {"shape": [4], "seed": -5})["Out"] for _ in range(2))
    np.testing.assert_array_equal(first, second)


def test_sampling_a_hub_many_times_is_refused_within_the_memory_limit():
    """Each input node's edges are laid out in full: 3000 copies of a 3000-edge hub would need 9M edges."""
    hub = {"Row": np.zeros(3000, np.int64), "Col_Ptr": np.array([0, 3000]), "X": np.zeros(3000, np.int64)}
    with limited(max_bytes=1 << 24), pytest.raises(gradc.ExecutionError, match="the 9,000,000 edges of the input"):
        run("graph_sample_neighbors", hub, {"sample_size": 1})


@pytest.mark.parametrize("startup", ["startup.pb", "startup.json"])
def test_paddles_startup_program_with_a_truncated_normal_initializer_runs(startup):
    """nn.Linear with TruncatedNormal(mean 0.5, std 1, a -0.5, b 1.5), as Paddle writes its startup program in
    legacy and in PIR mode (tools/paddle_startup_fixtures.py): 16,384 draws inside [a, b] whose mean and spread are
    those of a normal cut one std either side of its mean (std sqrt(1 - 2 phi(1) / (2 Phi(1) - 1)) = 0.5396)."""
    meta = json.loads((DATA / "startup_truncated" / "meta.json").read_text())
    program = gradc.load(DATA / "startup_truncated" / startup)
    scope = Scope()
    Executor().run(program, scope=scope)
    weight, bias = np.asarray(scope[meta["weight"]]), np.asarray(scope[meta["bias"]])
    assert weight.shape == tuple(meta["shape"]) and weight.dtype == np.float32
    assert weight.min() >= -0.5 and weight.max() <= 1.5 and not bias.any()
    phi, cut = math.exp(-0.5) / math.sqrt(2 * math.pi), math.erf(1 / math.sqrt(2))
    std = math.sqrt(1 - 2 * phi / cut)
    assert abs(weight.mean() - 0.5) < 5 * std / math.sqrt(weight.size)
    assert abs(weight.std() - std) < 0.02

"""paddle.incubate.layers' ops (gradc.ops.incubate) and correlation: values against references written from the
ops' definitions (Paddle 3.3.1's own values, where its CPU runs them, are the coverage rows' fixtures:
tests/data/paddle/layers/partial_*, shuffle_batch, tdm_*), the properties of the random ones, and the PIR round trip
of the ops no Paddle PIR fixture holds (no CPU kernel, no PIR layer, or no PIR vjp in 3.3.1)."""

from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.errors import ExecutionError
from gradc.ir import to_var_type
from gradc.pir import parse_pir, serialize_pir
from test_extra_math import program_of, round_trips_through_pir, run, weighted_loss

r = np.random.default_rng(31)
DATA_LAYERS = Path(__file__).parent / "data" / "paddle" / "layers"
MINSTD = 2**31 - 1


def test_partial_sum_and_concat_take_the_column_range_of_each_input():
    a, b = r.standard_normal((3, 6)), r.standard_normal((3, 6))
    (summed,) = run("partial_sum", {"X": [a, b]}, ["Out"], {"start_index": 1, "length": 3})
    np.testing.assert_array_equal(summed, a[:, 1:4] + b[:, 1:4])
    (joined,) = run("partial_concat", {"X": [a, b]}, ["Out"], {"start_index": -2})
    np.testing.assert_array_equal(joined, np.concatenate([a[:, 4:], b[:, 4:]], axis=1))


def test_shuffle_batch_moves_every_row_and_gives_paddles_next_seed():
    x = np.arange(12.0).reshape(2, 3, 2)
    out, index, seed = run("shuffle_batch", {"X": x, "Seed": np.array([5])}, ["Out", "ShuffleIdx", "SeedOut"])
    rows = x.reshape(6, 2)
    assert sorted(index) == list(range(6)) and all(index != np.arange(6))   # no row stays in place
    np.testing.assert_array_equal(out.reshape(6, 2)[index], rows)
    assert seed.tolist() == [16807 * 5 % MINSTD]   # std::minstd_rand0's first number (Paddle: 84035)


def test_shuffle_batch_without_a_seed_value_starts_from_startup_seed():
    program, feed = program_of("shuffle_batch", {"X": np.ones((3, 2)), "Seed": np.zeros(0, np.int64)},
                               ["Out", "ShuffleIdx", "SeedOut"], {"startup_seed": 7})
    assert not gradc.verify(program)
    empty = gradc.Executor().run(program, feed, ["seedout"], gradc.Scope())[0]   # PIR's empty Seed
    unset = gradc.Executor().run(program, {"x0": feed["x0"]}, ["seedout"], gradc.Scope())[0]   # legacy: no value
    assert empty.tolist() == unset.tolist() == [16807 * 7 % MINSTD]


TREE = np.array([[0, 0, 0, 1, 2], [0, 1, 0, 3, 4], [0, 1, 0, 5, 6], [10, 2, 1, 0, 0], [11, 2, 1, 0, 0],
                 [12, 2, 2, 0, 0], [0, 2, 2, 0, 0]], np.int32)


def test_tdm_child_gives_a_nodes_children_and_which_are_items():
    child, leaf = run("tdm_child", {"X": np.array([[1], [2], [3], [0]], np.int32), "TreeInfo": TREE},
                      ["Child", "LeafMask"], {"child_nums": 2})
    assert child.tolist() == [[[3, 4]], [[5, 6]], [[0, 0]], [[0, 0]]]   # node 3 has none; node 0 is padding
    assert leaf.tolist() == [[[1, 1]], [[1, 0]], [[0, 0]], [[0, 0]]]     # node 6 holds no item
    assert child.dtype == np.int32


TRAVEL = np.array([[1, 3], [1, 4], [2, 5], [0, 6]], np.int32)   # leaf 3's path is padded at layer 1
LAYER = np.arange(1, 7, dtype=np.int32).reshape(6, 1)


def sample(seed: int, negatives=(1, 3), positive=True):
    return run("tdm_sampler", {"X": np.arange(4, dtype=np.int32).reshape(4, 1), "Travel": TRAVEL, "Layer": LAYER},
               ["Out", "Labels", "Mask"], {"neg_samples_num_list": list(negatives), "layer_offset": [0, 2, 6],
                                           "seed": seed, "output_positive": positive, "dtype": 3})


def test_tdm_sampler_draws_distinct_negatives_per_layer_and_masks_padding():
    out, labels, mask = sample(5)
    assert out.dtype == np.int64 and out.shape == (4, 6)
    for leaf, row in enumerate(out):
        first, second = row[:2], row[2:]
        if TRAVEL[leaf, 0]:
            assert first[0] == TRAVEL[leaf, 0] and first[1] in (1, 2) and first[1] != first[0]
        else:
            assert first.tolist() == [0, 0] and mask[leaf, :2].tolist() == [0, 0]
        assert second[0] == TRAVEL[leaf, 1] and len(set(second)) == 4 and set(second) <= {3, 4, 5, 6}
    assert labels[:, [0, 2]].tolist() == [[1, 1], [1, 1], [1, 1], [0, 1]] and labels[:, [1, 3, 4, 5]].sum() == 0


def test_tdm_sampler_draws_the_same_negatives_from_the_same_seed():
    """Each run seeds a fresh engine per layer, as Paddle's samplers are made per run (the coverage rows
    tdm_sampler* hold Paddle's own draws, which gradc gives)."""
    np.testing.assert_array_equal(sample(5)[0], sample(5)[0])
    assert not np.array_equal(sample(5, positive=False)[0], sample(6, positive=False)[0])


def test_tdm_sampler_refuses_a_layer_with_too_few_nodes_besides_the_positive():
    with pytest.raises(ExecutionError, match="draws 3 negatives at layer 1, whose Layer nodes hold 2 besides"):
        run("tdm_sampler", {"X": np.array([[0]], np.int32), "Travel": np.array([[1, 3]], np.int32),
                            "Layer": np.array([[1], [2], [3], [4], [5], [3]], np.int32)}, ["Out", "Labels", "Mask"],
            {"neg_samples_num_list": [1, 3], "layer_offset": [0, 2, 6], "seed": 1})


def test_batch_fc_is_a_linear_layer_per_slot():
    x, w, bias = r.standard_normal((2, 4, 3)), r.standard_normal((2, 3, 5)), r.standard_normal((2, 5))
    (out,) = run("batch_fc", {"Input": x, "W": w, "Bias": bias}, ["Out"])
    np.testing.assert_allclose(out, np.stack([x[s] @ w[s] + bias[s] for s in range(2)]), rtol=1e-12)


def rank_attention_reference(x, offsets, param, ranks):
    """Out[i] = sum over pairs k with both ranks set of X[row] RankParam[block (own rank, pair rank)]."""
    width = x.shape[1]
    out = np.zeros((len(x), param.shape[1]))
    for i, offset in enumerate(offsets):
        for k in range(ranks):
            own, pair, row = offset[0] - 1, offset[2 * k + 1] - 1, offset[2 * k + 2]
            if own >= 0 and pair >= 0:
                block = own * ranks + pair
                out[i] += x[row] @ param[block * width:(block + 1) * width]
    return out


def test_rank_attention_is_a_sum_of_rank_pair_blocks():
    x, param = r.standard_normal((4, 3)), r.standard_normal((12, 2))
    offsets = np.array([[1, 1, 0, 2, 1], [2, 1, 0, 2, 1], [2, 2, 3, 1, 2], [0, 1, 2, 2, 3]], np.int32)
    out, helper, ins_rank = run("rank_attention", {"X": x, "RankOffset": offsets, "RankParam": param},
                                ["Out", "InputHelp", "InsRank"], {"MaxRank": 2, "MaxSize": 6})
    np.testing.assert_allclose(out, rank_attention_reference(x, offsets, param, 2), rtol=1e-12)
    assert helper.shape == (6, 6) and ins_rank[:, 0].tolist() == [1, 2, 2, 0, -1, -1]
    np.testing.assert_array_equal(helper[2], np.concatenate([x[3], x[2]]))


def correlation_reference(a, b, pad, kernel, reach, stride1, stride2):
    """FlowNet's correlation written out: the channel mean over a window of products, zeros outside the inputs."""
    radius, steps = (kernel - 1) // 2, reach // stride2
    margin = pad + radius
    pa, pb = (np.pad(v, ((0, 0), (0, 0), (margin, margin), (margin, margin))) for v in (a, b))
    rows, cols = (-(-(d + 2 * pad - 2 * (radius + reach)) // stride1) for d in a.shape[2:])
    out = np.zeros((a.shape[0], (2 * steps + 1) ** 2, rows, cols))
    for n in range(a.shape[0]):
        for y in range(rows):
            for x in range(cols):
                h, w = y * stride1 + reach + radius, x * stride1 + reach + radius
                for c, (dy, dx) in enumerate((dy * stride2, dx * stride2) for dy in range(-steps, steps + 1)
                                             for dx in range(-steps, steps + 1)):
                    first = pa[n, :, h - radius:h + radius + 1, w - radius:w + radius + 1]
                    second = pb[n, :, h + dy - radius:h + dy + radius + 1, w + dx - radius:w + dx + radius + 1]
                    out[n, c, y, x] = (first * second).sum() / (kernel * kernel * a.shape[1])
    return out


@pytest.mark.parametrize("pad, kernel, reach, stride1, stride2", [(2, 1, 2, 1, 1), (1, 3, 1, 2, 1), (3, 1, 3, 2, 2)])
def test_correlation_is_the_window_product_of_each_displacement(pad, kernel, reach, stride1, stride2):
    a, b = r.standard_normal((2, 3, 7, 6)), r.standard_normal((2, 3, 7, 6))
    attrs = {"pad_size": pad, "kernel_size": kernel, "max_displacement": reach, "stride1": stride1,
             "stride2": stride2}
    (out,) = run("correlation", {"Input1": a, "Input2": b}, ["Output"], attrs)
    np.testing.assert_allclose(out, correlation_reference(a, b, pad, kernel, reach, stride1, stride2), rtol=1e-12)


def seqpool_program(x: np.ndarray, cvm: np.ndarray, attrs: dict):
    """fused_seqpool_cvm of one X (fed as x0) with CVM (cvm), writing out."""
    program = gradc.Program()
    block = program.global_block
    block.create_var("x0", list(x.shape), to_var_type(x.dtype)).stop_gradient = False
    block.create_var("cvm", list(cvm.shape), to_var_type(cvm.dtype))
    width = x.shape[1] - (0 if attrs.get("use_cvm", True) else attrs.get("cvm_offset", 2))
    block.create_var("out", [-1, width], to_var_type(x.dtype))
    block.append_op("fused_seqpool_cvm", {"X": ["x0"], "CVM": ["cvm"]}, {"Out": ["out"]}, attrs)
    return program


def test_fused_seqpool_cvm_pools_each_sequence_onto_pad_value():
    x = gradc.LoDTensor.from_lengths(r.uniform(0.5, 2.0, (5, 4)), [[2, 0, 3]])
    pooled = np.stack([x.array[:2].sum(0), np.zeros(4), x.array[2:].sum(0)])
    for attrs in ({"pad_value": 0.25}, {"use_cvm": False}):
        program = seqpool_program(x.array, np.ones((3, 2)), attrs)
        (out,) = gradc.Executor().run(program, {"x0": x, "cvm": np.ones((3, 2))}, ["out"], gradc.Scope())
        expected = pooled + attrs.get("pad_value", 0.0)
        if attrs.get("use_cvm", True):
            shows = np.log(expected[:, 0] + 1)
            expected[:, 1], expected[:, 0] = np.log(expected[:, 1] + 1) - shows, shows
        else:
            expected = expected[:, 2:]
        np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_fused_seqpool_cvm_round_trips_through_pir():
    x = gradc.LoDTensor.from_lengths(r.uniform(0.5, 2.0, (5, 4)), [[2, 0, 3]])
    program = seqpool_program(x.array, np.ones((3, 2)), {"use_cvm": True})
    block = program.global_block
    block.create_var("total", [], to_var_type(np.dtype("float64")))
    block.append_op("reduce_sum", {"X": ["out"]}, {"Out": ["total"]}, {"reduce_all": True})
    gradc.append_backward(program, "total")
    round_trips_through_pir(program, {"x0": x, "cvm": r.uniform(0.5, 2.0, (3, 2))}, ["total", "x0@GRAD"],
                            ("fused_seqpool_cvm", "fused_seqpool_cvm_grad"))


def trained(op: str, inputs: dict, outputs: list[str], attrs: dict, grads: tuple) -> tuple:
    """The op with loss = sum(first output * w) (test_extra_math.weighted_loss) and its backward; the program, feed
    and fetches."""
    program, feed = program_of(op, inputs, outputs, attrs, grads=grads)
    out = outputs[0].lower()
    shape = list(gradc.Executor().run(program, feed, [out], gradc.Scope())[0].shape)
    weighted_loss(program, feed, [out], shape, r)
    gradc.append_backward(program, "loss")
    return program, feed, ["loss", *[f"{slot.lower()}0@GRAD" for slot in grads]]


ROUND_TRIPS = {
    "partial_sum": ({"X": [r.standard_normal((3, 5)), r.standard_normal((3, 5))]}, ["Out"],
                    {"start_index": 1, "length": 2}, ("X",)),
    "partial_concat": ({"X": [r.standard_normal((3, 5)), r.standard_normal((3, 5))]}, ["Out"], {"start_index": 2},
                       ("X",)),
    "batch_fc": ({"Input": r.standard_normal((2, 3, 4)), "W": r.standard_normal((2, 4, 2)),
                  "Bias": r.standard_normal((2, 2))}, ["Out"], {}, ("Input", "W", "Bias")),
    "rank_attention": ({"X": r.standard_normal((2, 3)), "RankOffset": np.array([[1, 1, 0, 2, 1], [2, 1, 0, 2, 1]],
                                                                                np.int32),
                        "RankParam": r.standard_normal((12, 2))}, ["Out", "InputHelp", "InsRank"], {"MaxRank": 2},
                       ("RankParam",)),
    "correlation": ({"Input1": r.standard_normal((1, 2, 5, 5)), "Input2": r.standard_normal((1, 2, 5, 5))},
                    ["Output"], {"pad_size": 1, "kernel_size": 1, "max_displacement": 1, "stride1": 1, "stride2": 1},
                    ("Input1", "Input2")),
}


@pytest.mark.parametrize("op", sorted(ROUND_TRIPS))
def test_a_training_program_round_trips_through_pir(op):
    """No Paddle PIR program holds these grads (3.3.1: no CPU kernel and no PIR layer, or no PIR vjp): gradc's
    export, read back, trains to the same loss and gradients."""
    program, feed, fetch = trained(op, *ROUND_TRIPS[op])
    round_trips_through_pir(program, feed, fetch, (op, f"{op}_grad"))


def test_tdm_sampler_round_trips_through_pir():
    """Paddle's PIR tdm_sampler layer fails in 3.3.1 (the cast of its parameters); its translated program
    (pir_layers/tdm_sampler_negatives_only) has no output list: gradc's export of all three, read back."""
    program, feed = program_of("tdm_sampler", {"X": np.arange(4, dtype=np.int32).reshape(4, 1), "Travel": TRAVEL,
                                               "Layer": LAYER}, ["Out", "Labels", "Mask"],
                               {"neg_samples_num_list": [1, 3], "layer_offset": [0, 2, 6], "seed": 9})
    round_trips_through_pir(program, feed, ["out", "labels", "mask"], ("tdm_sampler",))


KHOP_ROW = np.array([1, 2, 3, 0, 2, 0, 1, 3, 0, 1, 4, 2])
KHOP_COLPTR = np.array([0, 3, 5, 8, 10, 12])


@pytest.mark.parametrize("seed", range(5))
def test_graph_khop_sampler_samples_each_hop_from_the_nodes_the_last_one_reached(seed):
    """Every sampled edge is an edge of the graph into its renumbered target; at most the hop's size per node, no edge
    twice; the second hop starts from every node the first reached anew (Paddle 3.3.1 only from the first len(X) of
    them: the coverage rows keep to graphs where both agree)."""
    gradc.seed(seed)
    inputs = {"Row": KHOP_ROW, "Col_Ptr": KHOP_COLPTR, "X": np.array([0, 4]), "Eids": np.arange(12) + 100}
    src, dst, nodes, reindexed, eids = run("graph_khop_sampler", inputs, ["Out_Src", "Out_Dst", "Sample_Index",
                                                                          "Reindex_X", "Out_Eids"],
                                           {"sample_sizes": [2, 1], "return_eids": True})
    edges = eids - 100
    assert nodes[reindexed].tolist() == [0, 4] and len(set(edges.tolist())) == len(edges)
    assert (KHOP_ROW[edges] == nodes[src[:, 0]]).all()
    targets = nodes[dst[:, 0]]
    assert ((KHOP_COLPTR[targets] <= edges) & (edges < KHOP_COLPTR[targets + 1])).all()
    first = np.unique(KHOP_ROW[edges[np.isin(targets, [0, 4])]])
    frontier = np.setdiff1d(first, [0, 4])
    assert np.bincount(dst[:, 0]).tolist() == [2, 2] + [1] * len(frontier)   # node 4 has 2 edges, node 0 3
    assert nodes[2:2 + len(frontier)].tolist() == frontier.tolist()


def test_shuffle_batchs_unfed_seed_goes_to_pir_as_paddles_layer_makes_it():
    """Paddle's legacy program reads the Seed var before anything writes it (a state: empty before the first run);
    gradc's PIR export makes it an empty pd_op.full, as Paddle's PIR layer does, not a pd_op.data to feed."""
    program = gradc.load(DATA_LAYERS / "shuffle_batch" / "forward.pb")
    feed = dict(np.load(DATA_LAYERS / "shuffle_batch" / "feed.npz"))
    data = serialize_pir(program, fetch=["reduce_sum_0.tmp_0"])
    assert b'"shuffle_batch_seed_0"' not in data   # no data op names it
    again = parse_pir(data)
    (total,) = gradc.Executor().run(again, feed, ["reduce_sum_0.tmp_0"], gradc.Scope())
    np.testing.assert_allclose(total, (feed["x"].astype(np.float64) ** 2).sum(), rtol=1e-6)

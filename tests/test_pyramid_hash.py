"""pyramid_hash (search_pyramid_hash): its hashes and its draws, written from their published definitions, on
their reference values; Paddle's own outputs, in inference and in training with dropout, are the coverage rows
search_pyramid_hash(_training) (tests/test_layer_fixtures.py); with bloom filters, and its grad op's in-place update
of W, Paddle's programs and outputs from tools/paddle_pyramid_hash.py."""

from pathlib import Path

import numpy as np

import gradc
from gradc.executor.kernels.pyramid_hash import murmur3_x64_128, rand_r, xxh32
from gradc.ir import VarType
from programs import Net


def test_xxh32_gives_the_reference_hashes():
    assert xxh32(b"", 0) == 0x02CC5D05
    assert xxh32(b"abc", 0) == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition", 0) == 0xE2293B2F   # 16-byte stripes, then the tail


def test_rand_r_gives_glibcs_sequence():
    state = [1]
    assert [rand_r(state) for _ in range(3)] == [476707713, 1186278907, 505671508]


def test_a_sequence_of_one_id_gives_a_row_of_zeros_and_ngrams_a_row_each():
    net = Net()
    x, w = net.data("x", [4, 1], VarType.INT32), net.data("w", [42, 1])
    lists = [net.data(name, [1, 1]) for name in ("white", "black")]
    op = net.block.append_op("pyramid_hash", {"X": [x], "W": [w], "WhiteList": [lists[0]], "BlackList": [lists[1]]},
                             {}, {"num_emb": 4, "space_len": 40, "rand_len": 2, "pyramid_layer": 3,
                                  "drop_out_percent": 1.0, "use_filter": False})
    op.outputs = {"Out": [net.tmp([-1, 4], prefix="out")], "DropPos": [net.tmp([-1, 1], VarType.INT32, prefix="drop")],
                  "X_Temp_Out": [net.tmp([4, 1], prefix="ids")]}
    ids = gradc.LoDTensor.from_lengths(np.array([[3], [5], [7], [9]], np.int32), [[3, 1]])
    table = np.arange(42, dtype=np.float32).reshape(42, 1)
    out, drop = gradc.Executor().run(net.program, {x: ids, w: table, lists[0]: np.zeros((1, 1), np.float32),
                                                   lists[1]: np.zeros((1, 1), np.float32)},
                                     [op.outputs["Out"][0], op.outputs["DropPos"][0]], gradc.Scope())
    assert np.asarray(out).shape == (4, 4)   # bigrams (3, 5), (5, 7), the trigram, then the lone id's zeros
    np.testing.assert_array_equal(np.asarray(out)[3], 0)
    first = np.float32([3, 5]).tobytes()
    picks = [xxh32(first, seed) % 40 for seed in (0, 2)]
    np.testing.assert_array_equal(np.asarray(out)[0], [picks[0], picks[0] + 1, picks[1], picks[1] + 1])
    assert np.asarray(drop).reshape(-1).tolist() == [1, 1, 1]


PADDLE = Path(__file__).parent / "data" / "paddle" / "pyramid_hash"   # tools/paddle_pyramid_hash.py


def run_paddles_program(case: str):
    """The case's program run by gradc on its feed: (the fetched values, Paddle's, the scope)."""
    program = gradc.load(PADDLE / case / "program.pb")
    with np.load(PADDLE / case / "feed.npz") as feed, np.load(PADDLE / case / "expected.npz") as expected:
        values = {name: feed[name] for name in feed.files if name not in ("ids", "lengths")}
        values["ids"] = gradc.LoDTensor.from_lengths(feed["ids"], [feed["lengths"].tolist()])
        scope = gradc.Scope()
        got = gradc.Executor().run(program, values, expected["fetch"].tolist(), scope, return_lod=True)
        return got, {name: expected[name] for name in expected.files}, scope


def test_murmur3_x64_128_gives_the_reference_hashes():
    assert murmur3_x64_128(b"", 0) == (0, 0)
    assert murmur3_x64_128(b"hello", 0) == (0xCBD8A7B341BD9B02, 0x5B1E906A48AE1D19)


def test_bloom_filters_keep_the_ngrams_paddles_filters_keep():
    """White list: only its n-grams are kept; black list: its n-grams are dropped; then the dropout draws (training),
    a filtered n-gram drawing none: Out, DropPos and both LoDs are Paddle's."""
    (out, drop), paddle, _ = run_paddles_program("filters")
    np.testing.assert_array_equal(out.array, paddle["out"])
    marks = drop.array.reshape(-1)
    np.testing.assert_array_equal(marks, paddle["drop_pos"].reshape(-1)[:marks.size])   # Paddle's rows past: unset
    assert list(out.lod[0]) == paddle["out_lod"].tolist() and list(drop.lod[0]) == paddle["drop_pos_lod"].tolist()


def test_a_white_list_alone_in_inference_scales_the_kept_rows():
    (out, _), paddle, _ = run_paddles_program("white_only_inference")
    np.testing.assert_array_equal(out.array, paddle["out"])


def test_pyramid_hash_grad_updates_the_table_in_place_as_paddles():
    """W -= lr * each kept n-gram's Out@GRAD row, at the slices the forward copied."""
    (w_after,), paddle, _ = run_paddles_program("grad_update")
    with np.load(PADDLE / "grad_update" / "feed.npz") as feed:
        assert not np.array_equal(w_after, feed["w"])
    np.testing.assert_allclose(w_after, paddle["w_after"], rtol=1e-6, atol=1e-7)

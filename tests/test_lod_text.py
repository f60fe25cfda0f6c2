"""The lod_text family (crf_decoding, chunk_eval, edit_distance, ctc_align, beam_search, beam_search_decode) and
row_conv's LoD form: edge values against Paddle 3.3.1 (ties, all-blank alignments, pruned beams), random small
cases against Paddle's outputs and LoDs (tests/data/paddle/lod_text_values.npz), the metrics against hand counts.
Whole programs against Paddle: the lod_text rows of tests/test_layer_fixtures.py."""

import functools
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc import ExecutionError, LoDTensor
from gradc.executor.kernels.lod_text import chunks, levenshtein
from gradc.executor.lod import with_lods
from gradc.layers import ProgramBuilder
from gradc.limits import limited

I64 = np.int64
VALUES = Path(__file__).parent / "data" / "paddle" / "lod_text_values.npz"


@functools.cache
def paddle_values() -> dict:
    """Paddle's values, x@LOD<k> joined to x: read by the first test that needs them, not at collection."""
    with np.load(VALUES) as archive:
        return with_lods(dict(archive))


def _random_cases() -> list[str]:
    with np.load(VALUES) as archive:
        return sorted({key.rsplit(".", 1)[0] for key in archive.files if key.endswith(".@attrs")})


def run(op_type, inputs: dict, attrs=None, outputs=None) -> dict:
    """The op over data vars named after its slots: {output slot: value, LoDTensor where it has a LoD}."""
    net = ProgramBuilder()
    feed, slots = {}, {}
    for slot, value in inputs.items():
        array = value.array if isinstance(value, LoDTensor) else value
        slots[slot] = net.data(slot.lower(), [-1, *array.shape[1:]], array.dtype.name,
                               lod_level=len(value.lod) if isinstance(value, LoDTensor) else 0)
        feed[slots[slot]] = value
    names = net.op(op_type, slots, attrs, outputs=outputs)
    values = gradc.Executor().run(net.program, feed, names, gradc.Scope(), return_lod=True)
    return dict(zip(outputs, values))


@pytest.mark.parametrize("case", _random_cases())
def test_random_cases_match_paddle(case):
    """Random small cases (tools/paddle_lod_text_values.py): every output, its dtype and its LoD as Paddle 3.3.1's."""
    paddle = paddle_values()
    op_type = case.split(".")[0]
    meta = json.loads(str(paddle[f"{case}.@attrs"]))
    out = run(op_type, {slot: paddle[f"{case}.{slot}"] for slot in meta["inputs"]}, meta["attrs"],
              outputs=meta["outputs"])
    for slot in meta["outputs"]:
        mine, theirs = out[slot], paddle[f"{case}.{slot}"]
        if isinstance(theirs, LoDTensor):
            assert isinstance(mine, LoDTensor) and mine.lod == theirs.lod, (slot, mine, theirs.lod)
            mine, theirs = mine.array, theirs.array
        assert mine.dtype == theirs.dtype and mine.shape == theirs.shape, (slot, mine, theirs)
        np.testing.assert_allclose(mine, theirs, rtol=1e-6, err_msg=slot)


def test_crf_decoding_ties_go_to_the_lower_tag_as_paddle():
    emission = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 2.0], [3.0, 0.0, 3.0]], np.float32)
    out = run("crf_decoding", {"Emission": LoDTensor(emission, [[0, 3]]), "Transition": np.zeros((5, 3), np.float32)},
              outputs=["ViterbiPath"])["ViterbiPath"]
    np.testing.assert_array_equal(out.array.ravel(), [0, 1, 0])   # Paddle 3.3.1's path
    assert out.lod == ((0, 3),)


def test_crf_decoding_never_picks_a_nan_score_as_paddle():
    """Paddle's loop takes a score only when strictly greater than the best so far: NaN never wins (numpy's argmax
    picks the first NaN). Paddle's float32 AVX kernel (8 tags or more) treats NaN otherwise."""
    nan = np.nan
    emission = np.array([[nan, 1.0, 0.0], [0.0, nan, 2.0], [1.0, 1.0, nan]], np.float32)
    transition = np.zeros((5, 3), np.float32)
    transition[2, 1] = nan
    out = run("crf_decoding", {"Emission": LoDTensor(emission, [[0, 3]]), "Transition": transition},
              outputs=["ViterbiPath"])["ViterbiPath"]
    np.testing.assert_array_equal(out.array.ravel(), [1, 2, 0])   # Paddle 3.3.1's path


def _path(emission, start, end, moves, lod):
    transition = np.array([start, end, *moves], np.float32)
    out = run("crf_decoding", {"Emission": LoDTensor(np.asarray(emission, np.float32), lod), "Transition": transition},
              outputs=["ViterbiPath"])["ViterbiPath"]
    return out.array.ravel().tolist()


def test_crf_decoding_scores_start_end_and_moves():
    """Transition row 0 scores the first tag, row 1 the last, rows 2.. each move: they overrule flat emissions."""
    flat, still = np.zeros((2, 2)), [[0, 0], [0, 0]]
    assert _path(flat, [0, 1], [0, 0], still, [[0, 1, 2]]) == [1, 1]   # one-step sequences: the start row
    assert _path(flat, [0, 1], [2, 0], still, [[0, 1, 2]]) == [0, 0]   # the end row outweighs it
    assert _path(flat, [0, 0], [0, 0], [[0, 5], [0, 0]], [[0, 2]]) == [0, 1]   # moving 0 -> 1 pays 5


@pytest.mark.parametrize("scheme, labels, found", [
    ("IOB", [0, 1, 4, 2, 2, 3, 0], [(0, 1, 0), (3, 3, 1), (4, 5, 1), (6, 6, 0)]),   # B I O B B I B
    ("IOE", [0, 1, 4, 3, 0, 1], [(0, 1, 0), (3, 3, 1), (4, 5, 0)]),   # I E O E I E
    ("IOBES", [0, 1, 2, 3, 8, 7, 4, 6], [(0, 2, 0), (3, 3, 0), (5, 5, 1), (6, 7, 1)]),
    ("plain", [0, 0, 1, 2, 1], [(0, 1, 0), (2, 2, 1), (4, 4, 1)]),
])
def test_chunks_of_each_scheme(scheme, labels, found):
    assert chunks(labels, 2, scheme) == found


def test_chunk_eval_counts_and_ratios():
    """IOB, two types: inference finds 3 chunks, the label has 2, 1 matches exactly (Paddle 3.3.1's counts and
    ratios); type 1 excluded leaves 1, 1, 1."""
    inference = np.array([[0], [1], [2], [4], [2]], I64)   # B0 I0 B1 O B1
    label = np.array([[0], [1], [2], [3], [4]], I64)   # B0 I0 B1 I1 O
    inputs = {"Inference": LoDTensor(inference, [[0, 5]]), "Label": LoDTensor(label, [[0, 5]])}
    slots = ["Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks"]
    out = run("chunk_eval", inputs, {"num_chunk_types": 2, "chunk_scheme": "IOB"}, outputs=slots)
    np.testing.assert_allclose([out[s][0] for s in slots], [1 / 3, 1 / 2, 0.4, 3, 2, 1], rtol=1e-6)
    out = run("chunk_eval", inputs, {"num_chunk_types": 2, "chunk_scheme": "IOB", "excluded_chunk_types": [1]},
              outputs=slots)
    np.testing.assert_allclose([out[s][0] for s in slots], [1, 1, 1, 1, 1, 1])


def test_chunk_eval_without_a_match_is_zero_not_nan():
    inputs = {"Inference": LoDTensor(np.array([[0], [2]], I64), [[0, 2]]),
              "Label": LoDTensor(np.array([[2], [0]], I64), [[0, 2]])}
    out = run("chunk_eval", inputs, {"num_chunk_types": 1}, outputs=["Precision", "Recall", "F1-Score"])
    assert [out[s][0] for s in ("Precision", "Recall", "F1-Score")] == [0, 0, 0]


def _table_distance(a, b) -> int:
    table = np.zeros((len(a) + 1, len(b) + 1), int)
    table[:, 0], table[0] = np.arange(len(a) + 1), np.arange(len(b) + 1)
    for i, j in itertools.product(range(1, len(a) + 1), range(1, len(b) + 1)):
        table[i, j] = min(table[i - 1, j] + 1, table[i, j - 1] + 1, table[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
    return int(table[-1, -1])


def test_levenshtein_matches_the_full_table():
    r = np.random.default_rng(3)
    for _ in range(200):
        a, b = r.integers(0, 3, r.integers(0, 7)), r.integers(0, 3, r.integers(0, 7))
        assert levenshtein(a, b) == _table_distance(a, b), (a, b)


def test_edit_distance_over_lod_with_empty_strings():
    hyps = LoDTensor(np.array([[1], [2], [3], [4]], I64), [[0, 0, 3, 4]])   # "", "1 2 3", "4"
    refs = LoDTensor(np.array([[5], [1], [3], [4]], I64), [[0, 1, 3, 4]])   # "5", "1 3", "4"
    out = run("edit_distance", {"Hyps": hyps, "Refs": refs}, outputs=["Out", "SequenceNum"])
    np.testing.assert_array_equal(out["Out"].ravel(), [1, 1, 0])
    assert out["SequenceNum"].tolist() == [3]
    out = run("edit_distance", {"Hyps": hyps, "Refs": refs}, {"normalized": True}, outputs=["Out"])
    np.testing.assert_allclose(out["Out"].ravel(), [1, 0.5, 0])


def test_ctc_align_merges_then_drops_blanks():
    tokens = LoDTensor(np.array([[1], [1], [0], [1], [2], [2], [0], [0], [3]], I64), [[0, 6, 6, 9]])
    out = run("ctc_align", {"Input": tokens}, outputs=["Output"])["Output"]
    np.testing.assert_array_equal(out.array.ravel(), [1, 1, 2, 3])   # 1 1 _ 1 2 2 | | _ _ 3
    assert out.lod == ((0, 3, 3, 4),)
    out = run("ctc_align", {"Input": tokens}, {"merge_repeated": False}, outputs=["Output"])["Output"]
    np.testing.assert_array_equal(out.array.ravel(), [1, 1, 1, 2, 2, 3])


def test_ctc_align_merges_a_leading_minus_one_as_paddle():
    """Paddle's token before each sequence is -1: with merge_repeated, -1 tokens that open a sequence go."""
    tokens = LoDTensor(np.array([[-1], [-1], [2], [-1], [0], [-1]], I64), [[0, 2, 6]])
    out = run("ctc_align", {"Input": tokens}, outputs=["Output"])["Output"]
    np.testing.assert_array_equal(out.array.ravel(), [2, -1, -1])   # Paddle 3.3.1, LoD [[0, 0, 3]]
    assert out.lod == ((0, 0, 3),)


def test_ctc_align_padded_output_length_is_batch_by_one_as_paddle():
    tokens = np.array([[-1, -1, 3], [0, -1, -1]], I64)
    out = run("ctc_align", {"Input": tokens, "InputLength": np.array([3, 3], I64)}, {"padding_value": 7},
              outputs=["Output", "OutputLength"])
    np.testing.assert_array_equal(out["Output"], [[3, 7, 7], [-1, 7, 7]])   # Paddle 3.3.1
    np.testing.assert_array_equal(out["OutputLength"], [[1], [1]])   # [batch, 1] for InputLength [batch] too


def test_ctc_align_of_blanks_only_is_one_minus_one_as_paddle():
    out = run("ctc_align", {"Input": LoDTensor(np.zeros((3, 1), I64), [[0, 2, 3]])}, outputs=["Output"])["Output"]
    np.testing.assert_array_equal(out.array, [[-1]])   # Paddle 3.3.1: Output [[-1]], LoD [[0, 0, 0]]
    assert out.lod == ((0, 0, 0),)


BEAM_OUTPUTS = ["selected_ids", "selected_scores", "parent_idx"]


def test_beam_search_ties_rank_the_later_prefix_first_as_paddle():
    scores = np.array([[0.5, 0.5, 0.2], [0.5, 0.1, 0.5]], np.float32)
    out = run("beam_search", {"pre_ids": np.array([[1], [2]], I64), "pre_scores": np.zeros((2, 1), np.float32),
                              "ids": np.array([[10, 11, 12], [20, 21, 22]], I64),
                              "scores": LoDTensor(scores, [[0, 2], [0, 1, 2]])},
              {"beam_size": 3, "end_id": 0}, outputs=BEAM_OUTPUTS)
    # Paddle 3.3.1: ids [10, 20, 22], LoD [[0, 2], [0, 1, 3]], parents [0, 1, 1]
    np.testing.assert_array_equal(out["selected_ids"].array.ravel(), [10, 20, 22])
    assert out["selected_ids"].lod == ((0, 2), (0, 1, 3))
    np.testing.assert_array_equal(out["parent_idx"], [0, 1, 1])
    assert out["parent_idx"].dtype == np.int32


def test_beam_search_prunes_a_source_whose_branches_all_ended():
    """Source 0's prefixes both ended (pre_id end_id 0): they carry end_id on, and the source is pruned; source 1's
    ended prefix competes with its pre_score against the other prefix's log probabilities, whose two candidates tie:
    the second replaces the first as the last of the full beam (Paddle's insertion)."""
    scores = np.array([[0.9, 0.1], [0.9, 0.1], [0.9, 0.1], [0.5, 0.5]], np.float32)
    out = run("beam_search", {"pre_ids": np.array([[0], [0], [0], [3]], I64),
                              "pre_scores": np.array([[-1.0], [-2.0], [-0.1], [-0.2]], np.float32),
                              "scores": LoDTensor(scores, [[0, 2, 4], [0, 1, 2, 3, 4]])},
              {"beam_size": 2, "end_id": 0, "is_accumulated": False}, outputs=BEAM_OUTPUTS)
    assert out["selected_ids"].lod == ((0, 2, 4), (0, 0, 0, 1, 2))   # Paddle 3.3.1 gives these ids, LoD and scores
    np.testing.assert_array_equal(out["selected_ids"].array.ravel(), [0, 1])   # row 2's end_id, row 3's id 1
    np.testing.assert_allclose(out["selected_scores"].array.ravel(), [-0.1, -0.2 + np.log(0.5)], rtol=1e-6)


def _decode(step_lods, step_ids, step_scores, attrs):
    """beam_search_decode of steps written to the arrays ids and scores: (SentenceIds, SentenceScores)."""
    net = ProgramBuilder()
    ids, scores = (net.block.create_var(name, None, None, type=gradc.ir.VarType.DENSE_TENSOR_ARRAY).name
                   for name in ("ids", "scores"))
    feed = {}
    for step, (lod, step_id, step_score) in enumerate(zip(step_lods, step_ids, step_scores)):
        index = net.data(f"i{step}", [1], "int64")
        step_vars = net.data(f"ids{step}", [-1, 1], "int64", lod_level=2), net.data(f"s{step}", [-1, 1], "float32",
                                                                                       lod_level=2)
        feed[index] = np.array([step], I64)
        feed[step_vars[0]] = LoDTensor(np.array(step_id, I64).reshape(-1, 1), lod)
        feed[step_vars[1]] = LoDTensor(np.array(step_score, np.float32).reshape(-1, 1), lod)
        for array, var in zip((ids, scores), step_vars):
            net.block.append_op("write_to_array", {"X": [var], "I": [index]}, {"Out": [array]}, {})
    names = net.op("beam_search_decode", {"Ids": ids, "Scores": scores}, attrs,
                   outputs=["SentenceIds", "SentenceScores"])
    return gradc.Executor().run(net.program, feed, names, gradc.Scope(), return_lod=True)


STEP_LODS = [((0, 1, 2), (0, 1, 2)), ((0, 1, 2), (0, 2, 4)), ((0, 2, 4), (0, 1, 2, 3, 4))]
STEP_IDS = [[1, 1], [2, 3, 4, 2], [0, 0, 5, 3]]
STEP_SCORES = [[0.0, 0.0], [-0.1, -0.5, -0.2, -0.3], [-0.2, -0.3, -0.25, -0.45]]


def test_beam_search_decode_traces_sentences_back_best_first():
    """Two sources, beam 2: step 1 picks two words per source, step 2 ends source 0's beams (end_id 0) and
    extends source 1's; the sentences come back in step order, best final score first."""
    sentence_ids, sentence_scores = _decode(STEP_LODS, STEP_IDS, STEP_SCORES, {"beam_size": 2, "end_id": 0})
    # Paddle 3.3.1 on the beam_search_decode coverage row, which makes these steps
    np.testing.assert_array_equal(sentence_ids.array, [1, 2, 0, 1, 3, 0, 1, 4, 5, 1, 2, 3])
    assert sentence_ids.lod == ((0, 2, 4), (0, 3, 6, 9, 12))
    np.testing.assert_allclose(sentence_scores.array, [0, -0.1, -0.2, 0, -0.5, -0.3, 0, -0.2, -0.25, 0, -0.3, -0.45],
                               rtol=1e-6)


def test_beam_search_decode_gives_each_unused_beam_slot_an_empty_sentence():
    sentence_ids, _ = _decode(STEP_LODS, STEP_IDS, STEP_SCORES, {"beam_size": 3, "end_id": 0})
    np.testing.assert_array_equal(sentence_ids.array, [1, 2, 0, 1, 3, 0, 1, 4, 5, 1, 2, 3])
    assert sentence_ids.lod == ((0, 3, 6), (0, 3, 6, 6, 9, 12, 12))


def test_beam_search_decode_refuses_a_beam_size_its_lod_cannot_hold():
    """One LoD offset per beam slot, used or not: beam_size 2**40 is refused before the sentences are laid out."""
    with pytest.raises(ExecutionError, match="the LoD of SentenceIds .* more than the limit"):
        _decode(STEP_LODS, STEP_IDS, STEP_SCORES, {"beam_size": 2**40, "end_id": 0})


def test_beam_search_decode_refuses_steps_whose_prefixes_are_not_the_candidates_before():
    lods = [((0, 1), (0, 1)), ((0, 3), (0, 1, 2, 3))]   # step 1 extends 3 prefixes, step 0 selected 1 candidate
    with pytest.raises(ExecutionError, match="step 1: .* has 3 prefixes, but step 0 selected only 1 candidates"):
        _decode(lods, [[1], [2, 3, 4]], [[0.0], [-0.1, -0.2, -0.3]], {"beam_size": 3, "end_id": 0})


def test_empty_batches_give_empty_outputs():
    empty = np.zeros((0, 4), I64)
    out = run("chunk_eval", {"Inference": empty, "Label": empty, "SeqLength": np.zeros(0, I64)},
              {"num_chunk_types": 2}, outputs=["Precision", "NumInferChunks"])
    assert out["Precision"].tolist() == [0] and out["NumInferChunks"].tolist() == [0]
    out = run("edit_distance", {"Hyps": empty, "Refs": empty, "HypsLength": np.zeros(0, I64),
                                "RefsLength": np.zeros(0, I64)}, outputs=["Out", "SequenceNum"])
    assert out["Out"].shape == (0, 1) and out["SequenceNum"].tolist() == [0]
    out = run("beam_search", {"pre_ids": np.zeros((0, 1), I64), "pre_scores": np.zeros((0, 1), np.float32),
                              "scores": LoDTensor(np.zeros((0, 3), np.float32), [[0, 0], [0]])},
              {"beam_size": 2}, outputs=BEAM_OUTPUTS)
    assert out["selected_ids"].array.shape == (0, 1) and out["selected_ids"].lod == ((0, 0), (0,))


def test_edit_distance_of_sequences_beyond_the_memory_limit_is_refused():
    """Paddle fills a float table of (len(hyp) + 1) x (len(ref) + 1); gradc's time is that table's size, bounded so."""
    hyps, refs = (LoDTensor(np.zeros((n, 1), I64), [[0, n]]) for n in (3000, 2000))
    with limited(max_bytes=1 << 20), pytest.raises(ExecutionError, match="table of sequence 0 .* more than the limit"):
        run("edit_distance", {"Hyps": hyps, "Refs": refs}, outputs=["Out"])
    assert run("edit_distance", {"Hyps": hyps, "Refs": refs}, outputs=["Out"])["Out"].tolist() == [[1000]]


def test_row_conv_looks_ahead_within_each_sequence_only():
    x = np.arange(1, 6, dtype=np.float32).reshape(5, 1)
    weights = np.array([[1.0], [10.0]], np.float32)
    out = run("row_conv", {"X": LoDTensor(x, [[0, 2, 2, 5]]), "Filter": weights}, outputs=["Out"])["Out"]
    # out[t] = x[t] + 10 x[t + 1] within the sequence: [1 2] and [3 4 5]
    np.testing.assert_array_equal(out.array.ravel(), [21, 2, 43, 54, 5])


def test_row_conv_rows_without_a_lod_are_refused():
    with pytest.raises(ExecutionError, match="without a LoD"):
        run("row_conv", {"X": np.zeros((4, 2), np.float32), "Filter": np.zeros((2, 2), np.float32)}, outputs=["Out"])


def test_chunk_eval_padded_reads_nothing_past_each_length():
    """-1 padding past SeqLength is never read; IOBES with one type: 0 1 2 is one chunk, 3 a single one."""
    inference = np.array([[0, 1, 2, -1], [3, -1, -1, -1]], I64)
    label = np.array([[0, 1, 2, -1], [4, -1, -1, -1]], I64)   # 4: outside
    out = run("chunk_eval", {"Inference": inference, "Label": label, "SeqLength": np.array([3, 1], I64)},
              {"num_chunk_types": 1, "chunk_scheme": "IOBES"},
              outputs=["NumInferChunks", "NumLabelChunks", "NumCorrectChunks"])
    assert [int(v[0]) for v in out.values()] == [2, 1, 1]


def _array_round_trip(lod_level: int):
    """x written to slot 0 of an array and read back as y: (program, x, y)."""
    net = ProgramBuilder()
    array = net.block.create_var("steps", None, None, type=gradc.ir.VarType.DENSE_TENSOR_ARRAY).name
    index, x = net.data("i", [1], "int64"), net.data("x", [-1, 1], "int64", lod_level=lod_level)
    net.block.append_op("write_to_array", {"X": [x], "I": [index]}, {"Out": [array]}, {})
    net.block.create_var("y", None, None)
    net.block.append_op("read_from_array", {"X": [array], "I": [index]}, {"Out": ["y"]}, {})
    return net.program, {index: np.array([0], I64)}, x


def test_an_array_slot_reads_back_with_the_lod_it_was_written_with():
    """As Paddle's LoDTensorArray: a decoder loop reads its previous step's ids (and their LoD) from an array."""
    program, feed, x = _array_round_trip(lod_level=2)
    lod = ((0, 1, 2), (0, 2, 3))
    (y,) = gradc.Executor().run(program, {**feed, x: LoDTensor(np.arange(3).reshape(3, 1), lod)}, ["y"],
                                gradc.Scope(), return_lod=True)
    assert y.lod == lod
    np.testing.assert_array_equal(y.array.ravel(), [0, 1, 2])


def test_an_array_program_without_lod_runs_the_plain_plan():
    program, feed, x = _array_round_trip(lod_level=0)
    executor = gradc.Executor()
    (y,) = executor.run(program, {**feed, x: np.arange(3).reshape(3, 1)}, ["y"], gradc.Scope(), return_lod=True)
    assert isinstance(y, np.ndarray)   # no LoD
    plan = next(iter(executor.plans(program.global_block).values()))
    assert not plan.makes_lod and plan._lod_rows is None   # read_from_array passes LoD on but makes none


def test_an_array_slot_keeps_no_lod_from_an_earlier_run():
    program, feed, x = _array_round_trip(lod_level=0)
    executor, scope = gradc.Executor(), gradc.Scope()
    (y,) = executor.run(program, {**feed, x: LoDTensor(np.arange(3).reshape(3, 1), [[0, 1, 3]])}, ["y"], scope,
                        return_lod=True)
    assert y.lod == ((0, 1, 3),)
    (y,) = executor.run(program, {**feed, x: np.arange(3).reshape(3, 1)}, ["y"], scope, return_lod=True)
    assert isinstance(y, np.ndarray) and scope.lods is None

"""Rows: Paddle 1.x/2.x's text inference and metrics over LoD tensors (and their padded forms): crf_decoding,
chunk_eval in each scheme, edit_distance, ctc_align, beam_search steps, beam_search_decode (of steps written to
tensor arrays, and of Paddle 1.x's while-loop decoder), appended as those versions' layers did (no 3.3.1 API writes
them), and paddle.static.nn.row_conv over a LoD input. Their outputs are ids,
paths and counts: each row multiplies a float input by the sum of those outputs (as floats), so the loss and its
gradient check their values."""

import numpy as np
import paddle
from paddle.base.layer_helper import LayerHelper
from paddle.static import nn as snn

from .legacy_shim import _outputs, append
from .spec import Input, f, given, ints, seq, seq_ids, table

I64, F32 = paddle.int64, paddle.float32


def weighed(x, *outputs):
    """x times the sum over the outputs of (k + 1) * sum(output k): a loss whose gradient reads every output."""
    total = None
    for k, out in enumerate(outputs):
        term = paddle.sum(paddle.cast(out, "float32")) * float(k + 1)
        total = term if total is None else total + term
    return x * total


def crf(emission, transition, label=None, length=None):
    inputs = {"Emission": emission, "Transition": transition}
    inputs.update({slot: var for slot, var in (("Label", label), ("Length", length)) if var is not None})
    return _outputs("crf_decoding", inputs, {"ViterbiPath": I64}, {})[0]


def chunk_eval(inference, label, scheme, types, excluded=(), lengths=None):
    inputs = {"Inference": inference, "Label": label, **({} if lengths is None else {"SeqLength": lengths})}
    return _outputs("chunk_eval", inputs, {"Precision": F32, "Recall": F32, "F1-Score": F32, "NumInferChunks": I64,
                                           "NumLabelChunks": I64, "NumCorrectChunks": I64},
                    {"num_chunk_types": types, "chunk_scheme": scheme, "excluded_chunk_types": list(excluded)})


def edit_distance(hyps, refs, normalized, hyps_length=None, refs_length=None):
    inputs = {"Hyps": hyps, "Refs": refs}
    if hyps_length is not None:
        inputs.update({"HypsLength": hyps_length, "RefsLength": refs_length})
    return _outputs("edit_distance", inputs, {"Out": F32, "SequenceNum": I64}, {"normalized": normalized})


def ctc_align(tokens, length=None, **attrs):
    if length is None:
        return _outputs("ctc_align", {"Input": tokens}, {"Output": tokens.dtype}, attrs)
    return _outputs("ctc_align", {"Input": tokens, "InputLength": length},
                    {"Output": tokens.dtype, "OutputLength": length.dtype}, attrs)


def beam_step(scores, pre_ids, pre_scores, prefixes, ids=None, **attrs):
    """One beam_search step; scores' second LoD level (one prefix per row) appended by lod_reset."""
    two_level = _outputs("lod_reset", {"X": scores}, {"Out": scores.dtype},
                         {"target_lod": list(range(prefixes + 1)), "append": True})[0]
    inputs = {"pre_ids": pre_ids, "pre_scores": pre_scores, "scores": two_level, **({} if ids is None else
                                                                                   {"ids": ids})}
    return _outputs("beam_search", inputs, {"selected_ids": I64, "selected_scores": F32, "parent_idx": paddle.int32},
                    {"level": 0, "end_id": 0, **attrs})


LENGTHS = (4, 3, 5)
CHUNK = [("IOB", 2), ("IOE", 2), ("IOBES", 4), ("plain", 1)]

ROWS = table(
    "lod_text",
    ("crf_decoding_lod", lambda x, e, t: weighed(x, crf(e, t)), f(), seq(4, lengths=(3, 1, 2), grad=False),
     f(6, 4)),
    ("crf_decoding_lod_label", lambda x, e, t, y: weighed(x, crf(e, t, y)), f(),
     seq(3, lengths=(4, 2), grad=False), f(5, 3), seq_ids(3, lengths=(4, 2))),
    ("crf_decoding_padded", lambda x, e, t, n: weighed(x, crf(e, t, length=n)), f(), Input((2, 4, 3), grad=False),
     f(5, 3), given([4, 2], "int64")),
    ("crf_decoding_padded_label", lambda x, e, t, y, n: weighed(x, crf(e, t, y, n)), f(),
     Input((3, 4, 3), grad=False), f(5, 3), ints(3, 3, 4), given([4, 0, 3], "int64")),
    *[(f"chunk_eval_{scheme.lower()}", lambda x, a, b, scheme=scheme, tags=tags: weighed(
        x, *chunk_eval(a, b, scheme, 2)), f(), seq_ids(2 * tags + 1, LENGTHS), seq_ids(2 * tags + 1, LENGTHS))
      for scheme, tags in CHUNK],
    ("chunk_eval_excluded", lambda x, a, b: weighed(x, *chunk_eval(a, b, "IOB", 3, excluded=[1])), f(),
     seq_ids(7, (6, 5)), seq_ids(7, (6, 5))),
    ("chunk_eval_padded", lambda x, a, b, n: weighed(x, *chunk_eval(a, b, "IOBES", 2, lengths=n)), f(),
     ints(9, 3, 6), ints(9, 3, 6), given([6, 2, 4], "int64")),
    ("edit_distance_lod", lambda x, a, b: weighed(x, *edit_distance(a, b, False)), f(), seq_ids(4, (3, 0, 5)),
     seq_ids(4, (2, 4, 3))),
    ("edit_distance_lod_normalized", lambda x, a, b: weighed(x, *edit_distance(a, b, True)), f(),
     seq_ids(3, (4, 2, 0)), seq_ids(3, (3, 5, 2))),
    ("edit_distance_padded", lambda x, a, b, m, n: weighed(x, *edit_distance(a, b, False, m, n)), f(),
     ints(4, 3, 5), ints(4, 3, 4), given([5, 2, 0], "int64"), given([3, 4, 2], "int64")),
    ("edit_distance_padded_normalized", lambda x, a, b, m, n: weighed(x, *edit_distance(a, b, True, m, n)), f(),
     ints(3, 2, 6), ints(3, 2, 5), given([6, 3], "int64"), given([5, 1], "int64")),
    ("ctc_align_lod", lambda x, a: weighed(x, *ctc_align(a)), f(), seq_ids(3, (5, 4, 6))),
    ("ctc_align_lod_unmerged", lambda x, a: weighed(x, *ctc_align(a, blank=2, merge_repeated=False)), f(),
     seq_ids(3, (6, 3))),
    ("ctc_align_padded", lambda x, a, n: weighed(x, *ctc_align(a, n, padding_value=-1)), f(), ints(3, 3, 6),
     given([[6], [3], [0]], "int64")),
    ("ctc_align_padded_int32", lambda x, a, n: weighed(x, *ctc_align(a, n, blank=1)), f(),
     ints(3, 2, 5, dtype="int32"), given([[5], [4]], "int32")),
    ("beam_search_no_ids", lambda x, s, p, q: weighed(x, *beam_step(s, p, q, 2, beam_size=3,
                                                                         is_accumulated=False)),
     f(), Input((2, 6), "unit", grad=False, lengths=(1, 1)), given([[1], [1]], "int64"),
     given([[0.0], [0.0]], "float32")),
    ("beam_search_log_probs", lambda x, s, p, q, i: weighed(x, *beam_step(s, p, q, 2, i, beam_size=3,
                                                                          is_accumulated=False)),
     f(), Input((2, 6), "unit", grad=False, lengths=(1, 1)), given([[1], [1]], "int64"),
     given([[-0.3], [-1.2]], "float32"), ints(50, 2, 6)),
    ("beam_search_ended_prefix", lambda x, s, p, q, i: weighed(x, *beam_step(s, p, q, 4, i, beam_size=2)),
     f(), Input((4, 3), grad=False, lengths=(2, 2)), given([[0], [3], [0], [0]], "int64"),
     given([[-0.5], [-1.0], [-0.2], [-0.4]], "float32"), ints(9, 4, 3)),
    ("row_conv_lod", lambda x: snn.row_conv(x, 2), seq(3, lengths=(3, 1, 4))),
    ("row_conv_lod_short", lambda x: snn.row_conv(x, 3, act="tanh"), seq(2, lengths=(2, 0, 5))),
)


def _first_step(values):
    """A first beam step's tensor: one prefix per source, LoD [[0, 1, ..., n], [0, 1, ..., n]]."""
    rows = list(range(values.shape[0] + 1))
    one_level = _outputs("lod_reset", {"X": values}, {"Out": values.dtype}, {"target_lod": rows})[0]
    return _outputs("lod_reset", {"X": one_level}, {"Out": values.dtype}, {"target_lod": rows, "append": True})[0]


def decode_steps(ids0, scores0, *later, beam_size=2, end_id=0):
    """beam_search steps (ids and scores of each in ``later``) after a first one, their ids and scores written to
    tensor arrays, then decoded."""
    pre_ids, pre_scores = _first_step(ids0), _first_step(scores0)
    id_steps, score_steps = [pre_ids], [pre_scores]
    for ids, scores in zip(later[::2], later[1::2]):
        lodded = _outputs("lod_reset", {"X": scores, "Y": pre_ids}, {"Out": scores.dtype}, {})[0]
        pre_ids, pre_scores, _ = _outputs(
            "beam_search", {"pre_ids": pre_ids, "pre_scores": pre_scores, "ids": ids, "scores": lodded},
            {"selected_ids": I64, "selected_scores": F32, "parent_idx": paddle.int32},
            {"level": 0, "beam_size": beam_size, "end_id": end_id, "is_accumulated": True})
        id_steps.append(pre_ids)
        score_steps.append(pre_scores)
    id_array = score_array = None
    for step, (ids, scores) in enumerate(zip(id_steps, score_steps)):
        index = paddle.full([1], step, "int64")
        id_array = paddle.tensor.array_write(ids, index, id_array)
        score_array = paddle.tensor.array_write(scores, index, score_array)
    return _outputs("beam_search_decode", {"Ids": id_array, "Scores": score_array},
                    {"SentenceIds": I64, "SentenceScores": F32}, {"beam_size": beam_size, "end_id": end_id})


ROWS += table(
    "lod_text",
    ("beam_search_decode", lambda x, a, b, c, d, e, g: weighed(x, *decode_steps(a, b, c, d, e, g)), f(),
     given([[1], [1]], "int64"), given([[0.0], [0.0]], "float32"), ints(6, 2, 3), given(
         [[-0.5, -0.1, -0.9], [-0.3, -0.2, -0.8]], "float32"), given(
         [[0, 2, 3], [4, 0, 1], [2, 5, 0], [3, 1, 4]], "int64"), given(
         [[-0.2, -0.4, -0.7], [-0.6, -0.3, -0.35], [-0.9, -0.25, -0.5], [-0.45, -0.8, -0.55]], "float32")),
    # source 0 ends both beams at step 2 and is pruned at step 3: its sentences start from step 2
    ("beam_search_decode_pruned", lambda x, a, b, c, d, e, g, h, k: weighed(x, *decode_steps(a, b, c, d, e, g, h, k)),
     f(), given([[1], [1]], "int64"), given([[0.0], [0.0]], "float32"), given([[3, 2, 3], [2, 4, 2]], "int64"),
     given([[-0.5, -0.1, -0.9], [-0.3, -0.2, -0.8]], "float32"), given(
         [[0, 2, 3], [4, 0, 1], [2, 5, 0], [3, 1, 4]], "int64"), given(
         [[-0.2, -0.4, -0.7], [-0.6, -0.3, -0.35], [-0.9, -0.25, -0.5], [-0.45, -0.8, -0.55]], "float32"), given(
         [[1, 2, 3], [1, 2, 3], [0, 4, 5], [3, 0, 2]], "int64"), given(
         [[-0.3, -0.5, -0.6], [-0.4, -0.45, -0.7], [-0.5, -0.3, -0.9], [-0.6, -0.35, -0.4]], "float32")),
)


def _op(op_type: str, inputs: dict, outputs: dict, attrs: dict | None = None) -> None:
    """Append an op writing existing vars (in place)."""
    LayerHelper(op_type).append_op(type=op_type, inputs=inputs, outputs=outputs, attrs=attrs or {})


def decoder_loop(start_ids, start_scores, bigram, steps: int = 3, beam_size: int = 2, end_id: int = 0):
    """Paddle 1.x's beam search decoder: a while loop reads the previous step's ids and scores from tensor arrays,
    scores the next words (here a bigram table of probabilities), keeps the beam_size best per source and writes
    them back; beam_search_decode traces the sentences. The loop runs ``steps`` steps."""
    counter, limit = paddle.full([1], 0, "int64"), paddle.full([1], steps, "int64")
    id_array = paddle.tensor.array_write(_first_step(start_ids), counter)
    score_array = paddle.tensor.array_write(_first_step(start_scores), counter)
    cond = append("less_than", {"X": counter, "Y": limit}, dtype=paddle.bool)
    loop = paddle.static.nn.control_flow.While(cond)
    with loop.block():
        pre_ids = paddle.tensor.array_read(id_array, counter)
        pre_scores = paddle.tensor.array_read(score_array, counter)
        probs = append("lookup_table_v2", {"W": bigram, "Ids": pre_ids}, {"padding_idx": -1}, bigram.dtype)
        top_scores, top_ids = _outputs("top_k_v2", {"X": paddle.reshape(probs, [-1, bigram.shape[1]])},
                                       {"Out": bigram.dtype, "Indices": I64}, {"k": beam_size, "axis": -1})
        scores = append("elementwise_add", {"X": append("log", {"X": top_scores}), "Y": pre_scores}, {"axis": 0})
        scores = _outputs("lod_reset", {"X": scores, "Y": pre_ids}, {"Out": scores.dtype}, {})[0]
        ids, scores, _ = _outputs("beam_search", {"pre_ids": pre_ids, "pre_scores": pre_scores, "ids": top_ids,
                                                  "scores": scores},
                                  {"selected_ids": I64, "selected_scores": F32, "parent_idx": paddle.int32},
                                  {"level": 0, "beam_size": beam_size, "end_id": end_id, "is_accumulated": True})
        _op("increment", {"X": counter}, {"Out": counter}, {"step": 1.0})
        paddle.tensor.array_write(ids, counter, id_array)
        paddle.tensor.array_write(scores, counter, score_array)
        _op("less_than", {"X": counter, "Y": limit}, {"Out": cond}, {"axis": -1})
    return _outputs("beam_search_decode", {"Ids": id_array, "Scores": score_array},
                    {"SentenceIds": I64, "SentenceScores": F32}, {"beam_size": beam_size, "end_id": end_id})


def _bigram(words: int) -> Input:
    """A table of next-word probabilities, word 0 (the end) likelier after higher words."""
    rng = np.random.default_rng(5)
    table = rng.uniform(0.05, 1.0, (words, words)) + np.linspace(0, 1, words)[:, None] * np.eye(words)[0]
    return given(table / table.sum(1, keepdims=True), "float32")


ROWS += table(
    "lod_text",
    ("beam_search_decoder_loop", lambda x, a, b, w: weighed(x, *decoder_loop(a, b, w)), f(),
     given([[1], [3]], "int64"), given([[0.0], [0.0]], "float32"), _bigram(6)),
)

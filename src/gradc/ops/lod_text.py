"""Text inference and metrics over LoD sequences (Paddle 1.x/2.x's CRF decoding, chunk evaluation, edit distance,
CTC alignment and beam search). Each takes sequences either as a LoD tensor (rows grouped by the last LoD level) or
padded, [batch, time, ...] with a tensor of lengths. None has a gradient.

- crf_decoding: the best tag path of each sequence under a linear-chain CRF: Emission [rows, tags], Transition
  [tags + 2, tags] (row 0: start scores, row 1: end scores, rows 2..: tag-to-tag). With Label, the path becomes
  1 where it equals the label, else 0. Padded: Emission [batch, time, tags] with Length; ViterbiPath
  [batch, time], 0 past each end.
- chunk_eval: precision, recall and F1 of the chunks (IOB, IOE, IOBES or plain tagging: tag = label % tag types,
  chunk type = label // tag types; type num_chunk_types is "outside") Inference finds against Label, with the
  counts; chunks of excluded_chunk_types are not counted.
- edit_distance: the Levenshtein distance of each hypothesis to its reference (divided by the reference's
  length with ``normalized``).
- ctc_align: each sequence with repeats merged (``merge_repeated``) and ``blank`` dropped; padded, each row's
  tokens up front and ``padding_value`` after them, with OutputLength [batch, 1].
- beam_search: one step: the beam_size best (prefix, id) candidates of each source sentence (level ``level`` of
  scores' two-level LoD); a finished prefix (pre_id end_id) carries end_id on; sources all of whose candidates
  end are pruned. beam_search_decode: the sentences of a finished search, traced back through the steps.
"""

from __future__ import annotations

from ..ir import VarType
from ..ir.types import INTEGER_DTYPES
from ..registry import NO_GRAD, defop
from ..shapes import dims_match
from .infer import check_float

CHUNK_SCHEMES = ("IOB", "IOE", "IOBES", "plain")


def check_int(ctx, *slots: str) -> None:
    for slot in slots:
        if ctx.has(slot) and ctx.dtype(slot) is not None and ctx.dtype(slot) not in INTEGER_DTYPES:
            ctx.fail(f"{slot} must hold integers (ids, tags or lengths), got {ctx.dtype(slot).name}")


def _lengths_infer(ctx, slot: str, batch: int) -> None:
    lengths = ctx.shape(slot)
    if lengths is not None and (len(lengths) not in (1, 2) or not dims_match(lengths[0], batch)
                                or (len(lengths) == 2 and not dims_match(lengths[1], 1))):
        ctx.fail(f"{slot} must hold one length per sequence ([{batch}] or [{batch}, 1]), got {lengths}")


def _crf_infer(ctx):
    emission, transition = ctx.shape("Emission"), ctx.shape("Transition")
    check_float(ctx, "Emission")
    check_int(ctx, "Label", "Length")
    padded = ctx.has("Length")
    if emission is None:
        return {"ViterbiPath": (None, None)}
    if len(emission) != (3 if padded else 2):
        form = "[batch, time, tags] with Length" if padded else "[rows, tags] (a LoD tensor) without Length"
        ctx.fail(f"crf_decoding needs Emission {form}, got {emission}")
    tags = emission[-1]
    if tags == 0:
        ctx.fail(f"crf_decoding needs Emission with at least one tag, got {emission}")
    if transition is not None and (len(transition) != 2 or not dims_match(transition[0], tags + 2 if tags >= 0 else -1)
                                   or not dims_match(transition[1], tags)):
        ctx.fail(f"crf_decoding needs Transition [tags + 2, tags] (start, end, then tag-to-tag rows) for Emission "
                 f"{emission}, got {transition}")
    if padded:
        _lengths_infer(ctx, "Length", emission[0])
    path = emission[:2] if padded else [emission[0], 1]
    label = ctx.shape("Label")
    if label is not None and not any(len(label) == len(like) and all(map(dims_match, label, like))
                                     for like in (path, [*path, 1])):
        ctx.fail(f"crf_decoding needs Label shaped like its path {path}, got {label}")
    return {"ViterbiPath": (path, None)}   # int64 whatever the program declares (Paddle's declare Emission's)


defop("crf_decoding", ["Emission", "Transition", "Label?", "Length?"], ["ViterbiPath"], infer=_crf_infer,
      grad=NO_GRAD, kernel_dtype_outputs=["ViterbiPath"])


def _chunk_infer(ctx):
    inference, label = ctx.shape("Inference"), ctx.shape("Label")
    check_int(ctx, "Inference", "Label", "SeqLength")
    if ctx.attr("chunk_scheme") not in CHUNK_SCHEMES:
        ctx.fail(f"chunk_scheme {ctx.attr('chunk_scheme')!r} is not one of {list(CHUNK_SCHEMES)}")
    if ctx.attr("num_chunk_types") < 1:
        ctx.fail(f"num_chunk_types must be at least 1, got {ctx.attr('num_chunk_types')}")
    if inference is not None and label is not None and (len(inference) != len(label) or not all(
            dims_match(a, b) for a, b in zip(inference, label))):
        ctx.fail(f"chunk_eval needs Inference and Label of one shape, got {inference} and {label}")
    if ctx.has("SeqLength"):
        if inference is not None and len(inference) not in (2, 3):
            ctx.fail(f"chunk_eval with SeqLength needs Inference [batch, time] (padded), got {inference}")
        _lengths_infer(ctx, "SeqLength", -1 if inference is None else inference[0])
    elif inference is not None and (len(inference) != 2 or not dims_match(inference[1], 1)):
        ctx.fail(f"chunk_eval without SeqLength needs Inference [rows, 1] (a LoD tensor), got {inference}")
    ratio, count = ([1], VarType.FP32), ([1], VarType.INT64)
    return {"Precision": ratio, "Recall": ratio, "F1-Score": ratio, "NumInferChunks": count,
            "NumLabelChunks": count, "NumCorrectChunks": count}


defop("chunk_eval", ["Inference", "Label", "SeqLength?"],
      ["Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks"],
      attrs={"num_chunk_types": 0, "chunk_scheme": "IOB", "excluded_chunk_types": []}, infer=_chunk_infer,
      grad=NO_GRAD, lod_levels=lambda ctx: dict.fromkeys(("Precision", "Recall", "F1-Score", "NumInferChunks",
                                                          "NumLabelChunks", "NumCorrectChunks"), 0))


def _edit_infer(ctx):
    hyps, refs = ctx.shape("Hyps"), ctx.shape("Refs")
    check_int(ctx, "Hyps", "Refs", "HypsLength", "RefsLength")
    padded = ctx.has("HypsLength")
    if padded != ctx.has("RefsLength"):
        ctx.fail("edit_distance needs both HypsLength and RefsLength (padded sequences) or neither (LoD tensors)")
    for slot, shape in (("Hyps", hyps), ("Refs", refs)):
        if shape is not None and (len(shape) != 2 or (not padded and not dims_match(shape[1], 1))):
            ctx.fail(f"edit_distance needs {slot} " + ("[batch, time] with lengths" if padded else
                                                      "[rows, 1] (a LoD tensor)") + f", got {shape}")
    batch = hyps[0] if padded and hyps is not None else -1
    if padded:
        if refs is not None and not dims_match(refs[0], batch):
            ctx.fail(f"edit_distance needs as many Refs as Hyps, got {hyps} and {refs}")
        _lengths_infer(ctx, "HypsLength", batch)
        _lengths_infer(ctx, "RefsLength", batch)
    # SequenceNum is int64 and a padded Out [batch, 1] whatever the program declares (Paddle's programs declare
    # float32, and a padded Out shaped like Refs)
    return {"Out": (None if padded else [batch, 1], VarType.FP32), "SequenceNum": ([1], None)}


defop("edit_distance", ["Hyps", "Refs", "HypsLength?", "RefsLength?"], ["SequenceNum", "Out"],
      attrs={"normalized": False}, infer=_edit_infer, grad=NO_GRAD,
      lod_levels=lambda ctx: {"Out": 0, "SequenceNum": 0}, kernel_dtype_outputs=["SequenceNum"])


def _ctc_align_infer(ctx):
    tokens = ctx.shape("Input")
    check_int(ctx, "Input", "InputLength")
    padded = ctx.has("InputLength")
    if tokens is not None and padded and len(tokens) != 2:
        ctx.fail(f"ctc_align with InputLength needs Input [batch, time] (padded), got {tokens}")
    if tokens is not None and not padded and (len(tokens) != 2 or not dims_match(tokens[1], 1)):
        ctx.fail(f"ctc_align without InputLength needs Input [rows, 1] (a LoD tensor), got {tokens}")
    if padded:
        _lengths_infer(ctx, "InputLength", -1 if tokens is None else tokens[0])
        # OutputLength [batch, 1] of Input's dtype, as Paddle's kernel writes it
        batch = -1 if tokens is None else tokens[0]
        return {"Output": (tokens, ctx.dtype("Input")), "OutputLength": ([batch, 1], ctx.dtype("Input"))}
    return {"Output": ([-1, 1], ctx.dtype("Input"))}


defop("ctc_align", ["Input", "InputLength?"], ["Output", "OutputLength?"],
      attrs={"blank": 0, "merge_repeated": True, "padding_value": 0}, infer=_ctc_align_infer, grad=NO_GRAD)


def _beam_search_infer(ctx):
    scores = ctx.shape("scores")
    check_int(ctx, "pre_ids", "ids")
    check_float(ctx, "scores")
    if ctx.attr("beam_size") < 1:
        ctx.fail(f"beam_size must be at least 1, got {ctx.attr('beam_size')}")
    if ctx.attr("level") not in (0, 1):
        ctx.fail(f"level must be 0 or 1 (a level of scores' two-level LoD), got {ctx.attr('level')}")
    if ctx.has("ids") and None not in (ctx.shape("ids"), scores) and not all(
            dims_match(a, b) for a, b in zip(ctx.shape("ids"), scores)):
        ctx.fail(f"beam_search needs ids shaped like scores {scores}, got {ctx.shape('ids')}")
    # pre_ids' rows are checked when it runs: Paddle declares selected_ids (a next step's pre_ids) with made-up rows
    # parent_idx is int32 whatever the program declares: Paddle's kernel writes int32, its programs declare int64
    return {"selected_ids": ([-1, 1], VarType.INT64), "selected_scores": ([-1, 1], VarType.FP32),
            "parent_idx": ([-1], None)}


defop("beam_search", ["pre_ids", "pre_scores", "ids?", "scores"], ["selected_ids", "selected_scores", "parent_idx?"],
      attrs={"level": 0, "beam_size": 1, "end_id": 0, "is_accumulated": True}, infer=_beam_search_infer,
      grad=NO_GRAD, lod_levels=lambda ctx: {"selected_ids": 2, "selected_scores": 2, "parent_idx": 0},
      kernel_dtype_outputs=["parent_idx"])


def _beam_decode_infer(ctx):
    if ctx.attr("beam_size") < 1:
        ctx.fail(f"beam_size must be at least 1, got {ctx.attr('beam_size')}")
    for slot in ("Ids", "Scores"):
        var = ctx.block.find_var(ctx.op.input(slot)[0]) if ctx.has(slot) else None
        if var is not None and var.type not in (None, VarType.DENSE_TENSOR_ARRAY):
            ctx.fail(f"beam_search_decode needs {slot} as a tensor array (one tensor per step), got {var.type.name}")
    check_int(ctx, "Ids")
    # the sentences' length is known only at run time (Paddle's programs declare the outputs with shape [])
    return {"SentenceIds": (None, VarType.INT64), "SentenceScores": (None, ctx.dtype("Scores"))}


defop("beam_search_decode", ["Ids", "Scores"], ["SentenceIds", "SentenceScores"], attrs={"beam_size": 1, "end_id": 0},
      infer=_beam_decode_infer, grad=NO_GRAD, lod_levels=lambda ctx: {"SentenceIds": 2, "SentenceScores": 2})

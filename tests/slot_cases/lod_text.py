"""Optional inputs of gradc.ops.lod_text. crf_decoding's Label turns the path into hits (1 where it equals the
label) and Length reads Emission as padded; chunk_eval's SeqLength, edit_distance's HypsLength and RefsLength and
ctc_align's InputLength read padded sequences (the rows past each length are ignored); beam_search's ids name the
candidates (without them, a candidate is its column)."""

import numpy as np

from gradc import LoDTensor

from . import SlotCase

I64 = np.int64
EMISSION = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], np.float32)   # with zero transitions: path 0, 1, 0
NO_MOVES = np.zeros((4, 2), np.float32)
EDIT = {"Hyps": np.array([[1, 2, 3]], I64), "Refs": np.array([[1, 3, 5]], I64), "HypsLength": np.array([3], I64),
        "RefsLength": np.array([2], I64)}   # "1 2 3" against "1 3": one deletion
CHUNK_COUNTS = {"Precision": np.array([1.0], np.float32), "NumInferChunks": np.array([1], I64),
                "NumCorrectChunks": np.array([1], I64)}

CASES = [
    SlotCase("crf_decoding", "Label", {"Emission": LoDTensor(EMISSION, [[0, 3]]), "Transition": NO_MOVES,
                                       "Label": np.array([[0], [0], [0]], I64)},
             {"ViterbiPath": np.array([[1], [0], [1]], I64)}, overrides=False),
    SlotCase("crf_decoding", "Length", {"Emission": np.array([[[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]], np.float32),
                                        "Transition": NO_MOVES, "Length": np.array([2], I64)},
             {"ViterbiPath": np.array([[0, 1, 0]], I64)}, overrides=False),
    # IOB with one chunk type: 0 begins a chunk, 1 continues it, 2 is outside; the label's second chunk is cut off
    SlotCase("chunk_eval", "SeqLength", {"Inference": np.array([[0, 1, 2, 2]], I64),
                                         "Label": np.array([[0, 1, 2, 0]], I64), "SeqLength": np.array([3], I64)},
             CHUNK_COUNTS, {"num_chunk_types": 1, "chunk_scheme": "IOB"}, overrides=False),
    SlotCase("edit_distance", "HypsLength", EDIT, {"Out": np.array([[1.0]], np.float32)}, overrides=False),
    SlotCase("edit_distance", "RefsLength", EDIT, {"Out": np.array([[0.5]], np.float32)}, {"normalized": True},
             overrides=False),
    SlotCase("ctc_align", "InputLength", {"Input": np.array([[1, 1, 0, 2, 2]], I64),
                                          "InputLength": np.array([[4]], I64)},
             {"Output": np.array([[1, 2, 0, 0, 0]], I64), "OutputLength": np.array([[2]], I64)}, overrides=False),
    SlotCase("beam_search", "ids", {"pre_ids": np.array([[1]], I64), "pre_scores": np.array([[0.0]], np.float32),
                                    "ids": np.array([[7, 8, 9]], I64),
                                    "scores": LoDTensor(np.array([[0.1, 0.5, 0.9]], np.float32), [[0, 1], [0, 1]])},
             {"selected_ids": np.array([[9], [8]], I64)}, {"beam_size": 2, "end_id": 0}),
]

"""Write tests/data/paddle/lod_text_values.npz: what Paddle 3.3.1 computes for random small cases of crf_decoding,
chunk_eval, edit_distance, ctc_align and beam_search (LoD and padded forms, ties and ended prefixes on purpose),
every output with its LoD. Case k of op o is keyed ``o.k.<slot>``, a LoD level ``o.k.<slot>@LOD<level>``, its
attributes ``o.k.@attrs`` (JSON). tests/test_lod_text.py runs gradc on each case and compares exactly.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_lod_text_values.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import paddle
from paddle.base.layer_helper import LayerHelper

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "paddle" / "lod_text_values.npz"
CASES = 12   # per op
I64 = np.int64
OUTPUTS = {"crf_decoding": {"ViterbiPath": "int64"}, "edit_distance": {"Out": "float32", "SequenceNum": "int64"},
           "chunk_eval": {s: "float32" for s in ("Precision", "Recall", "F1-Score")}
           | {s: "int64" for s in ("NumInferChunks", "NumLabelChunks", "NumCorrectChunks")},
           "beam_search": {"selected_ids": "int64", "selected_scores": "float32", "parent_idx": "int32"}}


def run(op: str, inputs: dict, attrs: dict, outputs: dict) -> dict:
    """{slot: (array, lod)} of the op's outputs for inputs {slot: (array, lod or None)}."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    feed = {}
    with paddle.static.program_guard(main, startup):
        slots = {}
        for slot, (value, lod) in inputs.items():
            slots[slot] = paddle.static.data(slot.lower(), [-1, *value.shape[1:]] if lod else list(value.shape),
                                             str(value.dtype), lod_level=len(lod) if lod else 0)
            feed[slot.lower()] = value
            if lod:
                feed[slot.lower()] = paddle.base.core.DenseTensor()
                feed[slot.lower()].set(value, paddle.CPUPlace())
                feed[slot.lower()].set_lod([list(level) for level in lod])
        helper = LayerHelper(op)
        made = {slot: helper.create_variable_for_type_inference(dtype) for slot, dtype in outputs.items()}
        helper.append_op(type=op, inputs=slots, outputs=made, attrs=dict(attrs))
    values = paddle.static.Executor(paddle.CPUPlace()).run(main, feed=feed, fetch_list=list(made.values()),
                                                           return_numpy=False)
    return {slot: (np.array(value), value.lod()) for slot, value in zip(outputs, values)}


def offsets(lengths) -> list[list[int]]:
    return [[0, *np.cumsum(lengths).tolist()]]


def crf(rng):
    tags, lengths = int(rng.integers(1, 5)), rng.integers(1, 5, int(rng.integers(1, 4)))
    small_ints = rng.random() < 0.5   # ties
    dtype = rng.choice([np.float32, np.float64])

    def draw(*shape):
        return (rng.integers(-2, 3, shape) if small_ints else rng.normal(size=shape)).astype(dtype)

    inputs = {"Transition": (draw(tags + 2, tags), None)}
    if rng.random() < 0.5:
        steps = int(lengths.max())
        inputs |= {"Emission": (draw(len(lengths), steps, tags), None), "Length": (lengths.astype(I64), None)}
        label = rng.integers(0, tags, (len(lengths), steps)), None
    else:
        inputs["Emission"] = draw(int(lengths.sum()), tags), offsets(lengths)
        label = rng.integers(0, tags, (int(lengths.sum()), 1)), offsets(lengths)
    if rng.random() < 0.5:
        inputs["Label"] = label[0].astype(I64), label[1]
    return inputs, {}


def chunk(rng):
    scheme, tag_types = [("IOB", 2), ("IOE", 2), ("IOBES", 4), ("plain", 1)][rng.integers(4)]
    types, lengths = int(rng.integers(1, 4)), rng.integers(0, 7, int(rng.integers(1, 4)))
    labels = types * tag_types + 1
    attrs = {"num_chunk_types": types, "chunk_scheme": scheme,
             "excluded_chunk_types": sorted(set(rng.integers(0, types + 1, rng.integers(0, 2)).tolist()))}
    if rng.random() < 0.4:
        shape = (len(lengths), max(int(lengths.max()), 1))
        return {"Inference": (rng.integers(0, labels, shape).astype(I64), None),
                "Label": (rng.integers(0, labels, shape).astype(I64), None),
                "SeqLength": (lengths.astype(I64), None)}, attrs
    lengths[0] = max(lengths[0], 1)
    inferred = rng.integers(0, labels, (int(lengths.sum()), 1)).astype(I64)
    label = inferred.copy()
    changed = rng.random(len(label)) < 0.3
    label[changed, 0] = rng.integers(0, labels, changed.sum())
    return {"Inference": (inferred, offsets(lengths)), "Label": (label, offsets(lengths))}, attrs


def edit(rng):
    count = int(rng.integers(1, 4))
    hyp_lengths, ref_lengths = rng.integers(0, 6, count), rng.integers(1, 6, count)
    attrs = {"normalized": bool(rng.random() < 0.5)}
    if rng.random() < 0.5:
        return {"Hyps": (rng.integers(0, 3, (count, max(int(hyp_lengths.max()), 1))).astype(I64), None),
                "Refs": (rng.integers(0, 3, (count, int(ref_lengths.max()))).astype(I64), None),
                "HypsLength": (hyp_lengths.astype(I64), None), "RefsLength": (ref_lengths.astype(I64), None)}, attrs
    hyp_lengths[0] = max(hyp_lengths[0], 1)
    return {"Hyps": (rng.integers(0, 3, (int(hyp_lengths.sum()), 1)).astype(I64), offsets(hyp_lengths)),
            "Refs": (rng.integers(0, 3, (int(ref_lengths.sum()), 1)).astype(I64), offsets(ref_lengths))}, attrs


def ctc(rng):
    lengths, dtype = rng.integers(0, 7, int(rng.integers(1, 4))), rng.choice([np.int32, I64])
    attrs = {"blank": int(rng.integers(0, 3)), "merge_repeated": bool(rng.random() < 0.6)}
    if rng.random() < 0.5:
        attrs["padding_value"] = int(rng.integers(-1, 2))
        length_shape = (-1, 1) if rng.random() < 0.5 else (-1,)
        return {"Input": (rng.integers(-1, 3, (len(lengths), max(int(lengths.max()), 1))).astype(dtype), None),
                "InputLength": (lengths.astype(dtype).reshape(length_shape), None)}, attrs
    lengths[0] = max(lengths[0], 1)
    return {"Input": (rng.integers(-1, 3, (int(lengths.sum()), 1)).astype(dtype), offsets(lengths))}, attrs


def beam(rng):
    prefixes = rng.integers(0, 3, int(rng.integers(1, 4)))
    prefixes[0] = max(prefixes[0], 1)
    rows, width = int(prefixes.sum()), int(rng.integers(1, 4))
    accumulated = bool(rng.random() < 0.5)
    scores = (rng.integers(-3, 1, (rows, width)) / 2 if accumulated
              else rng.choice([0.25, 0.5, 1.0, 0.0], (rows, width))).astype(np.float32)
    attrs = {"beam_size": int(rng.integers(1, 4)), "end_id": int(rng.integers(0, 3)), "level": 0,
             "is_accumulated": accumulated}
    return {"pre_ids": (rng.integers(0, 3, (rows, 1)).astype(I64), None),
            "pre_scores": (rng.integers(-3, 1, (rows, 1)).astype(np.float32) / 2, None),
            "ids": (rng.integers(0, 5, (rows, width)).astype(I64), None),
            "scores": (scores, [offsets(prefixes)[0], list(range(rows + 1))])}, attrs


def main() -> None:
    paddle.enable_static()
    rng = np.random.default_rng(11)
    values = {}
    for op, draw in (("crf_decoding", crf), ("chunk_eval", chunk), ("edit_distance", edit), ("ctc_align", ctc),
                     ("beam_search", beam)):
        for case in range(CASES):
            inputs, attrs = draw(rng)
            outputs = OUTPUTS.get(op) or {"Output": str(inputs["Input"][0].dtype)} | (
                {"OutputLength": str(inputs["Input"][0].dtype)} if "InputLength" in inputs else {})
            key = f"{op}.{case}."
            values[key + "@attrs"] = np.array(json.dumps({"attrs": attrs, "inputs": list(inputs),
                                                          "outputs": list(outputs)}))
            for slot, (value, lod) in {**inputs, **run(op, inputs, attrs, outputs)}.items():
                values[key + slot] = value
                values.update({f"{key}{slot}@LOD{k}": np.array(level, I64) for k, level in enumerate(lod or [])})
    np.savez(OUT, **values)
    print(f"wrote {OUT} ({len(values)} arrays)")


if __name__ == "__main__":
    main()

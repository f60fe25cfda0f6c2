"""Cases for gradc.ops.sequence_lod over LoD inputs (gradc.executor.LoDTensor), empty sequences included: every
sequence_pool type (MAX without ties), sequence_softmax on one and two LoD levels, sequence_conv's context
variants with and without trainable padding, sequence_expand (X with and without a LoD, ref_level), lod_reset's
three LoD sources, im2sequence (paddings, strides, real image sizes), and the grad ops' makers."""

import numpy as np

from gradc import LoDTensor

from . import Case, rng
from .second_order import distinct, second_order

r = rng(59)
seqs = LoDTensor.from_lengths


def randn(*shape):
    return r.standard_normal(shape)


def conv(length: int, start: int, trainable: bool, lengths=(3, 0, 1, 3), width: int = 2) -> Case:
    inputs = {"X": seqs(randn(sum(lengths), width), [lengths]), "Filter": randn(length * width, 3)}
    if trainable:
        inputs["PaddingData"] = randn(max(0, -start) + max(0, start + length - 1), width)
    return Case("sequence_conv", inputs, {"contextLength": length, "contextStart": start,
                                          "paddingTrainable": trainable})


POOLED = seqs(distinct(6, 3), [[2, 0, 3, 1]])   # distinct values: MAX has no ties

CASES = [
    *[Case("sequence_pool", {"X": POOLED}, {"pooltype": kind, "pad_value": 0.5})
      for kind in ("AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST")],
    Case("sequence_pool", {"X": seqs(distinct(5, 2, 2), [[1, 2], [2, 0, 3]])}, {"pooltype": "MAX"}),
    Case("sequence_pool", {"X": seqs(randn(5, 2), [[1, 2], [2, 0, 3]])}, {"pooltype": "SQRT"}),
    Case("sequence_softmax", {"X": seqs(randn(6, 1), [[2, 0, 3, 1]])}),
    Case("sequence_softmax", {"X": seqs(randn(5), [[1, 2], [2, 0, 3]])}),
    *[conv(length, start, trainable) for length, start in ((3, -1), (2, 0), (4, -3), (2, 1), (5, -2), (1, 3))
      for trainable in (False, True)],
    Case("sequence_expand", {"X": randn(3, 2), "Y": seqs(np.zeros((5, 1)), [[2, 0, 3]])}),
    Case("sequence_expand", {"X": seqs(randn(4, 2), [[1, 0, 3]]), "Y": seqs(np.zeros((5, 1)), [[2, 0, 3]])}),
    Case("sequence_expand", {"X": randn(2, 3), "Y": seqs(np.zeros((5, 1)), [[1, 1], [2, 3]])}, {"ref_level": 0}),
    Case("lod_reset", {"X": randn(5, 2)}, {"target_lod": [0, 2, 5]}),
    Case("lod_reset", {"X": randn(5, 2), "Y": np.array([0, 1, 5], np.int32)}),
    Case("lod_reset", {"X": seqs(randn(4, 2), [[4]]), "Y": seqs(np.zeros((4, 1)), [[1, 3]])}, {"append": True}),
    Case("im2sequence", {"X": randn(2, 2, 5, 4)}, {"kernels": [2, 3], "paddings": [1, 0, 1, 1]}),
    Case("im2sequence", {"X": randn(1, 1, 6, 5)}, {"kernels": [3, 2], "strides": [2, 2]}),
    Case("im2sequence", {"X": randn(2, 1, 5, 5), "Y": np.array([[3, 4], [5, 5]], np.float32)},
         {"kernels": [2, 2], "strides": [2, 1]}),
    Case("im2sequence", {"X": randn(2, 1, 4, 6), "Y": np.array([[7, 5], [8, 12]], np.float32)},
         {"kernels": [2, 2], "out_stride": [2, 2]}),
    *[second_order("sequence_pool", {"X": seqs(distinct(6, 2), [[2, 0, 3, 1]])}, {"pooltype": kind, "pad_value": 0.5})
      for kind in ("AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST")],
    second_order("sequence_softmax", {"X": seqs(randn(6, 1), [[2, 0, 3, 1]])}),
    second_order("sequence_conv", {"X": seqs(randn(5, 2), [[3, 0, 2]]), "Filter": randn(6, 2),
                                   "PaddingData": randn(2, 2)},
                 {"contextLength": 3, "contextStart": -1, "paddingTrainable": True}),
    second_order("sequence_conv", {"X": seqs(randn(4, 2), [[1, 3]]), "Filter": randn(4, 3)},
                 {"contextLength": 2, "contextStart": 0}),
    second_order("sequence_expand", {"X": seqs(randn(3, 2), [[1, 2]]), "Y": seqs(np.zeros((3, 1)), [[2, 1]])}),
    second_order("lod_reset", {"X": randn(5, 2)}, {"target_lod": [0, 2, 5]}),
    second_order("im2sequence", {"X": randn(2, 1, 4, 3)}, {"kernels": [2, 2], "paddings": [0, 1, 1, 0]}),
]

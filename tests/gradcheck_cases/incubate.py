"""Cases for paddle.incubate.layers' ops (gradc.ops.incubate) and correlation (gradc.ops.correlation).
shuffle_batch draws a new permutation every run: its case's loss, a sum of squares, is one no permutation changes,
yet a gradient sent back to the wrong row changes its gradient. rank_attention's RankOffset has unset ranks (0) and
pairs listed out of rank order. fused_seqpool_cvm's gradient of X's count columns is Paddle's by design (the CVM
input, as cvm's): its cases check the embedding columns, X built as [fixed counts, checked embedding]."""

import numpy as np

from gradc import LoDTensor
from gradc.ir import VarType
from programs import Net

from . import Case, rng
from .second_order import second_order

r = rng(97)


def randn(*shape):
    return r.standard_normal(shape)


def _shuffled_squares():
    net = Net()
    x, seed = net.data("x", [6, 3]), net.data("seed", [1], VarType.INT64)
    shuffled = net.op("shuffle_batch", {"X": x, "Seed": seed}, {"startup_seed": 3})
    loss = net.op("reduce_sum", {"X": net.op("square", {"X": shuffled})}, {"reduce_all": True})
    return {"program": net.program, "feed": {"x": randn(6, 3), "seed": np.array([5], np.int64)}, "loss": loss,
            "wrt": ["x"]}


def _seqpool_cvm(use_cvm: bool, pad_value: float = 0.0):
    """loss = mean(fused_seqpool_cvm([concat(counts, embedding)]) * w), checked in the embedding."""
    lengths = [[2, 0, 3]]
    net = Net()
    counts, embedding, cvm = net.data("counts", [5, 2]), net.data("embedding", [5, 3]), net.data("cvm", [3, 2])
    x = net.op("concat", {"X": [counts, embedding]}, {"axis": 1})
    op = net.block.append_op("fused_seqpool_cvm", {"X": [x], "CVM": [cvm]}, {},
                             {"use_cvm": use_cvm, "pad_value": pad_value, "cvm_offset": 2})
    op.outputs["Out"] = [net.tmp([3, 5 if use_cvm else 3], prefix="pooled")]
    w = net.data("w", [3, 5 if use_cvm else 3])
    loss = net.mean(net.elementwise_mul(op.outputs["Out"][0], w))
    feed = {"counts": LoDTensor.from_lengths(r.uniform(0.5, 3.0, (5, 2)), lengths),
            "embedding": LoDTensor.from_lengths(randn(5, 3), lengths), "cvm": r.uniform(0.5, 3.0, (3, 2)),
            "w": randn(3, 5 if use_cvm else 3)}
    return {"program": net.program, "feed": feed, "loss": loss, "wrt": ["embedding"]}


def _shuffle_batch_grad():
    """loss = sum(w * shuffle_batch_grad(ShuffleIdx, dOut)) through gradc's backward of the grad op, ShuffleIdx a
    fixed permutation: the second derivative of shuffle_batch without its draws."""
    net = Net()
    index, dout, w = net.data("index", [5], VarType.INT64), net.data("dout", [5, 1, 2]), net.data("w", [5, 1, 2])
    op = net.block.append_op("shuffle_batch_grad", {"ShuffleIdx": [index], "Out@GRAD": [dout]}, {},
                             {"startup_seed": 0})
    op.outputs["X@GRAD"] = [net.tmp([5, 1, 2], prefix="dx")]
    loss = net.mean(net.elementwise_mul(op.outputs["X@GRAD"][0], w))
    feed = {"index": np.array([3, 0, 4, 1, 2]), "dout": randn(5, 1, 2), "w": randn(5, 1, 2)}
    return {"program": net.program, "feed": feed, "loss": loss, "wrt": ["dout"]}


# instance: own rank, then (rank, instance) per pair; rank 0 unset; instance 2 lists its pairs out of rank order
OFFSETS = np.array([[1, 1, 0, 2, 1], [2, 1, 0, 2, 1], [2, 2, 3, 1, 2], [0, 1, 2, 2, 3]], np.int32)

CASES = [
    Case("partial_sum", {"X": [randn(4, 6), randn(4, 6)]}, {"start_index": 1, "length": 3}),
    Case("partial_sum", {"X": [randn(3, 5), randn(3, 5), randn(3, 5)]}, {"start_index": 2}),
    Case("partial_concat", {"X": [randn(4, 6), randn(4, 6)]}, {"start_index": 1, "length": 3}),
    Case("partial_concat", {"X": [randn(3, 5), randn(3, 5)]}, {"start_index": -2}),
    Case("shuffle_batch", {}, program=_shuffled_squares),
    Case("batch_fc", {"Input": randn(2, 5, 4), "W": randn(2, 4, 3), "Bias": randn(2, 3)}),
    Case("rank_attention", {"X": randn(4, 3), "RankOffset": OFFSETS, "RankParam": randn(2 * 2 * 3, 4)},
         {"MaxRank": 2}),
    Case("rank_attention", {"X": randn(4, 3), "RankOffset": OFFSETS, "RankParam": randn(2 * 2 * 3, 2)},
         {"MaxRank": 2, "MaxSize": 6}),
    Case("correlation", {"Input1": randn(1, 3, 6, 6), "Input2": randn(1, 3, 6, 6)},
         {"pad_size": 2, "kernel_size": 1, "max_displacement": 2, "stride1": 1, "stride2": 1}),
    Case("correlation", {"Input1": randn(2, 2, 7, 7), "Input2": randn(2, 2, 7, 7)},
         {"pad_size": 1, "kernel_size": 3, "max_displacement": 1, "stride1": 2, "stride2": 1}),
    Case("correlation", {"Input1": randn(1, 2, 8, 8), "Input2": randn(1, 2, 8, 8)},
         {"pad_size": 2, "kernel_size": 1, "max_displacement": 2, "stride1": 1, "stride2": 2}),
    Case("fused_seqpool_cvm", {}, {"use_cvm": True}, program=lambda: _seqpool_cvm(True)),
    Case("fused_seqpool_cvm", {}, {"use_cvm": False, "pad_value": 0.5}, program=lambda: _seqpool_cvm(False, 0.5)),
    second_order("partial_sum", {"X": [randn(3, 5), randn(3, 5)]}, {"start_index": 1, "length": 2}),
    second_order("partial_concat", {"X": [randn(3, 5), randn(3, 5)]}, {"start_index": -3, "length": 2}),
    Case("shuffle_batch_grad", {}, program=_shuffle_batch_grad),
    second_order("batch_fc", {"Input": randn(2, 3, 4), "W": randn(2, 4, 2), "Bias": randn(2, 2)}),
    second_order("rank_attention", {"X": randn(4, 3), "RankOffset": OFFSETS, "RankParam": randn(2 * 2 * 3, 2)},
                 {"MaxRank": 2}),
    second_order("correlation", {"Input1": randn(1, 2, 5, 5), "Input2": randn(1, 2, 5, 5)},
                 {"pad_size": 1, "kernel_size": 1, "max_displacement": 1, "stride1": 1, "stride2": 1}),
    second_order("fused_seqpool_cvm", {"X": [LoDTensor.from_lengths(r.uniform(0.5, 3.0, (5, 4)), [[2, 0, 3]])],
                                       "CVM": r.uniform(0.5, 3.0, (3, 2))}, {"use_cvm": True}, tied=True),
    second_order("fused_seqpool_cvm", {"X": [LoDTensor.from_lengths(r.uniform(0.5, 3.0, (4, 4)), [[1, 3]])],
                                       "CVM": r.uniform(0.5, 3.0, (2, 2))}, {"use_cvm": False}, tied=True),
]

"""Rows: paddle.static.nn's sequence layers over LoD tensors (Paddle 1.x/2.x text models): sequence_pool in every
pool type (an empty sequence too), first/last step, sequence_softmax, sequence_conv (context variants, trainable
padding), sequence_expand, a text CNN (embedding -> sequence_conv -> max pool -> fc -> cross entropy), and the
ops no 3.3.1 API writes, appended as Paddle 1.x's layers did (lod_reset, im2sequence)."""

import paddle
import paddle.nn.functional as F
from paddle.static import nn as snn

from .legacy_shim import append
from .spec import f, given, ints, seq, seq_ids, table

ATTRS = {"contextStride": 1}


def trainable_conv(x, length: int, start: int, size: int = 3):
    """sequence_conv with paddingTrainable: PaddingData rows before (-start) and after (start + length - 1)."""
    width = x.shape[1]
    pad_rows = max(0, -start) + max(0, start + length - 1)
    padding = paddle.static.create_parameter([pad_rows, width], "float32")
    weight = paddle.static.create_parameter([length * width, size], "float32")
    return append("sequence_conv", {"X": x, "PaddingData": padding, "Filter": weight},
                  {"contextLength": length, "contextStart": start, "paddingTrainable": True, **ATTRS})


def text_cnn(ids, label):
    """As Paddle 1.x wrote it: lookup_table (v1) of [rows, 1] ids gives [rows, 6] word vectors, with the ids' LoD."""
    table = paddle.static.create_parameter([20, 6], "float32")
    words = append("lookup_table", {"W": table, "Ids": ids}, {"padding_idx": -1}, dtype=table.dtype)
    words.desc.set_shape([-1, 6])
    features = snn.sequence_pool(snn.sequence_conv(words, 5, filter_size=3, act="tanh"), "max")
    return paddle.mean(F.softmax_with_cross_entropy(snn.fc(features, 3), label))


def im2sequence(x, y=None, **attrs):
    """Paddle's compile-time rule declares [N, C * kh * kw]; its rows are known at run time only: declared -1."""
    inputs = {"X": x} if y is None else {"X": x, "Y": y}
    out = append("im2sequence", inputs, {"strides": [1, 1], "paddings": [0, 0, 0, 0], "out_stride": [1, 1], **attrs})
    out.desc.set_shape([-1, out.shape[1]])
    return out


ROWS = table(
    "sequence_lod",
    *[(f"sequence_pool_{kind.lower()}", lambda x, kind=kind: snn.sequence_pool(x, kind), seq(3, lengths=(2, 3, 1)))
      for kind in ("AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST")],
    *[(f"sequence_pool_{kind.lower()}_empty", lambda x, kind=kind: snn.sequence_pool(x, kind, pad_value=0.5),
       seq(2, lengths=(2, 0, 3))) for kind in ("AVERAGE", "MAX", "LAST")],
    ("sequence_first_step", lambda x: snn.sequence_first_step(x), seq(4, lengths=(3, 1, 2))),
    ("sequence_last_step", lambda x: snn.sequence_last_step(x), seq(4, lengths=(3, 1, 2))),
    ("sequence_softmax", lambda x: snn.sequence_softmax(x), seq(1, lengths=(2, 4, 1))),
    ("sequence_softmax_empty", lambda x: snn.sequence_softmax(x), seq(1, lengths=(3, 0, 2))),
    ("sequence_conv", lambda x: snn.sequence_conv(x, 4), seq(3, lengths=(3, 1, 4))),
    ("sequence_conv_context", lambda x: snn.sequence_conv(x, 2, filter_size=4, padding_start=-3, bias_attr=False),
     seq(2, lengths=(2, 5))),
    ("sequence_conv_start_after", lambda x: snn.sequence_conv(x, 3, filter_size=2, padding_start=1, act="tanh"),
     seq(3, lengths=(4, 0, 2))),
    ("sequence_conv_trainable_padding", lambda x: trainable_conv(x, 3, -1), seq(2, lengths=(3, 1, 2))),
    ("sequence_conv_trainable_padding_wide", lambda x: trainable_conv(x, 5, -3), seq(2, lengths=(2, 4))),
    ("sequence_expand", lambda x, y: snn.sequence_expand(x, y), f(3, 2), seq(1, lengths=(2, 0, 3), grad=False)),
    ("sequence_expand_lod", lambda x, y: snn.sequence_pool(snn.sequence_expand(x, y), "SUM"),
     seq(3, lengths=(1, 2)), seq(1, lengths=(2, 1), grad=False)),
    ("text_cnn", text_cnn, seq_ids(20, lengths=(4, 2, 5)), ints(3, 3, 1)),
    ("lod_reset_target", lambda x: snn.sequence_pool(append("lod_reset", {"X": x}, {"target_lod": [0, 2, 5]}),
                                                     "SQRT"), seq(3, lengths=(1, 4))),
    ("lod_reset_y_lod", lambda x, y: snn.sequence_pool(append("lod_reset", {"X": x, "Y": y}), "MAX"),
     seq(3, lengths=(5,)), seq(1, lengths=(3, 2), grad=False)),
    ("lod_reset_y_offsets", lambda x, y: snn.sequence_pool(append("lod_reset", {"X": x, "Y": y}), "AVERAGE"),
     seq(2, lengths=(5,)), given([0, 1, 5], "int32")),
    ("im2sequence", lambda x: im2sequence(x, kernels=[2, 2]), f(2, 2, 4, 3)),
    ("im2sequence_padded_strided", lambda x: im2sequence(x, kernels=[3, 2], strides=[2, 1], paddings=[1, 0, 1, 1]),
     f(2, 1, 5, 4)),
    ("im2sequence_real_sizes", lambda x, y: im2sequence(x, y, kernels=[2, 2], out_stride=[1, 1]),
     f(2, 1, 4, 4), given([[3, 4], [4, 2]], "float32")),
)

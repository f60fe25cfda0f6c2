"""Rows: the layers of paddle.static.nn that paddle.nn lacks (continuous value model, NCE, row convolution,
static_pylayer, the auc metric), paddle.text's Viterbi decoder, class-center sampling, and paddle.signal's framing.
Sequence layers over LoD tensors have their own rows."""

import paddle
import paddle.nn.functional as F
from paddle.static import nn as snn

from .spec import f, ints, pos, table, unit

STATIC_NN = table(
    "static_nn",
    ("continuous_value_model", lambda x, c: snn.continuous_value_model(x, c, True), pos(3, 5), pos(3, 2)),
    ("continuous_value_model_no_cvm", lambda x, c: snn.continuous_value_model(x, c, False), pos(3, 5), pos(3, 2)),
    ("nce", lambda x, y: snn.nce(x, y, 10, num_neg_samples=3, seed=7), f(3, 4), ints(10, 3, 1)),
    ("nce_log_uniform", lambda x, y: snn.nce(x, y, 12, num_neg_samples=4, sampler="log_uniform", seed=3),
     f(3, 4), ints(12, 3, 1)),
    ("nce_custom_dist", lambda x, y: snn.nce(x, y, 5, num_neg_samples=2, sampler="custom_dist",
                                             custom_dist=[0.1, 0.2, 0.3, 0.25, 0.15], seed=5), f(3, 4), ints(5, 3, 1)),
    ("row_conv", lambda x: snn.row_conv(x, 2), f(2, 5, 4)),
    ("row_conv_relu", lambda x: snn.row_conv(x, 1, act="relu"), f(3, 4, 2)),
    ("static_pylayer", lambda x: snn.static_pylayer(lambda a: paddle.tanh(a), [x], lambda g: g * 2.0), f(2, 3)),
    ("static_pylayer_two_inputs", lambda x, y: snn.static_pylayer(
        lambda a, b: a * b + paddle.exp(a), [x, y], lambda g: (g * 3.0, g - 1.0)), f(2, 3), f(2, 3)),
    ("static_pylayer_no_backward", lambda x: x * snn.static_pylayer(lambda a: paddle.sigmoid(a) * 2.0,
                                                                     [paddle.full([2, 3], 0.5)]), f(2, 3)),
    ("auc", lambda p, lab: p * paddle.static.auc(paddle.concat([1 - p, p], 1), lab, num_thresholds=15)[0]
     .astype("float32"),
     unit(6, 1), ints(2, 6, 1)),
    # without slide_steps the batch AUC's startup gives buckets + 1 counts, of which Paddle counts into the first
    # (labels from the probabilities' digits: both classes, whatever the seed draws)
    ("auc_no_slide", lambda p: p * paddle.static.auc(paddle.concat([1 - p, p], 1), ((p * 7) % 1 > 0.5).astype(
        "int64"), num_thresholds=15, slide_steps=0)[1].astype("float32"), unit(6, 1)),
)

TEXT_SIGNAL = table(
    "text_signal",
    ("viterbi_decode", lambda e, t: e * paddle.text.viterbi_decode(e, t, paddle.to_tensor([3, 2]), False)[0]
     .astype("float32").sum(), f(2, 3, 4), f(4, 4)),
    ("ViterbiDecoder_tags", lambda e, t: e * paddle.text.ViterbiDecoder(t, include_bos_eos_tag=True)(
        e, paddle.to_tensor([4, 2]))[0].astype("float32").sum(), f(2, 4, 5), f(5, 5)),
    ("class_center_sample", lambda x: x * F.class_center_sample(paddle.to_tensor([1, 3, 3]), 8, 5)[1]
     .astype("float32").sum(), f(2)),
    ("frame", lambda x: paddle.signal.frame(x, 8, 4), f(2, 32)),
    ("frame_axis0", lambda x: paddle.signal.frame(x, 4, 3, axis=0), f(13, 2)),
    ("overlap_add", lambda x: paddle.signal.overlap_add(x, 4), f(2, 8, 5)),
    ("overlap_add_axis0", lambda x: paddle.signal.overlap_add(x, 3, axis=0), f(5, 4, 2)),
)

ROWS = STATIC_NN + TEXT_SIGNAL

"""The loss cases of tools/paddle_loss_fixtures.py: every loss class of paddle.nn (and the extra losses of
paddle.nn.functional) with a few option combinations each. A case takes the fixture's Inputs (data vars
with fed values) and returns the loss Paddle's layer builds; cross_entropy2, which no 3.3.1 layer emits
any more (programs saved by older Paddle hold it), is appended as a raw op.
"""

from __future__ import annotations

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.base.layer_helper import LayerHelper


def cross_entropy2(x, label, ignore_index=-100):
    helper = LayerHelper("cross_entropy2")
    out, xshape, match = (helper.create_variable_for_type_inference(x.dtype) for _ in range(3))
    helper.append_op(type="cross_entropy2", inputs={"X": [x], "Label": [label]},
                     outputs={"Y": [out], "XShape": [xshape], "MatchX": [match]}, attrs={"ignore_index": ignore_index})
    return out


def raw_op(op_type, inputs: dict, out_slot: str, **attrs):
    """A legacy loss op no 3.3.1 layer emits any more (programs saved by older Paddle hold them)."""
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(next(iter(inputs.values())).dtype)
    helper.append_op(type=op_type, inputs={s: [v] for s, v in inputs.items()}, outputs={out_slot: [out]}, attrs=attrs)
    return out


def ce(i, shape=(4, 5), labels=(4, 1), axis=-1, **options):
    """CrossEntropyLoss on integer labels (class axis ``axis``; ``labels`` a shape or the values), with
    ``weight`` fed when asked for."""
    classes = shape[axis]
    if options.pop("weighted", False):
        options["weight"] = i.uniform("weight", classes, low=0.2, high=2.0, grad=False)
    x = i.randn("x", *shape)
    label = i.classes("label", classes, *labels) if isinstance(labels, tuple) else i.ints("label", labels)
    return nn.CrossEntropyLoss(axis=axis, **options)(x, label)


def soft_ce(i, **options):
    if options.pop("weighted", False):
        options["weight"] = i.uniform("weight", 5, low=0.2, high=2.0, grad=False)
    return nn.CrossEntropyLoss(soft_label=True, **options)(i.randn("x", 4, 5), i.probs("label", 4, 5, grad=False))


def nll(i, shape=(5, 4), labels=None, **options):
    if options.pop("weighted", False):
        options["weight"] = i.uniform("weight", shape[1], low=0.2, high=2.0, grad=False)
    label = i.ints("label", labels) if labels is not None else i.classes("label", shape[1], shape[0], *shape[2:])
    return nn.NLLLoss(**options)(i.randn("x", *shape), label)


def pair(make, label=None, shape=(4, 5)):
    """A loss of (input, label) with a float label of the input's shape."""
    return lambda i: make()(i.randn("x", *shape), label(i) if label else i.randn("y", *shape))


def signs(i, *shape):
    return i.data("label", i.rng.choice([-1.0, 1.0], shape))


def hsigmoid(i, custom=False, scale=1.0, **options):
    """HSigmoidLoss: 5 features, 6 classes on the default tree, or a custom tree of path_table/path_code."""
    x, label = i.randn("x", 4, 5, scale=scale), i.ints("label", [[0], [5], [3], [2]])
    if not custom:
        return nn.HSigmoidLoss(5, 6, **options)(x, label)
    table = i.ints("path_table", [[0, 1, -1], [0, 2, 4], [0, 1, 3], [0, 2, -1]])  # node ids; -1 ends a path
    code = i.ints("path_code", [[1, 0, -1], [0, 1, 1], [1, 1, 0], [0, 0, -1]])
    return nn.HSigmoidLoss(5, 6, is_custom=True, **options)(x, label, table, code)


def ctc(i, blank=0, reduction="mean", norm_by_times=False, times=(6, 5, 4), zero_infinity=False):
    """CTCLoss: T=6, B=3, 5 classes, sequences of 6, 5, 4 steps with labels of 3, 2, 1 (padded)."""
    logits = i.randn("logits", 6, 3, 5)
    labels = i.rng.integers(0, 4, (3, 3))
    labels = labels + (labels >= blank)  # no label is the blank
    labels[0, 1] = labels[0, 0]          # a repeated label needs a blank between the two
    label = i.ints("label", labels, "int32")
    lengths = i.ints("logit_lengths", times), i.ints("label_lengths", [3, 2, 1])
    return nn.CTCLoss(blank, reduction, zero_infinity)(logits, label, *lengths, norm_by_times=norm_by_times)


def rnnt(i, blank=0, fastemit_lambda=0.001, reduction="mean", log_probs=True):
    """RNNTLoss: B=2, T=4, U+1=3, 5 symbols; the second sequence has 3 frames and 1 label. Paddle's CPU kernel
    takes log-probabilities as they are (its GPU kernel normalises them first)."""
    labels = i.rng.integers(0, 4, (2, 2))
    label = i.ints("label", labels + (labels >= blank), "int32")
    lengths = i.ints("input_lengths", [4, 3], "int32"), i.ints("label_lengths", [2, 1], "int32")
    x = i.rng.standard_normal((2, 4, 3, 5))
    if log_probs:
        x -= np.log(np.exp(x).sum(-1, keepdims=True))
    return nn.RNNTLoss(blank, fastemit_lambda, reduction)(i.data("x", x.astype(i.dtype), grad=True), label, *lengths)


CASES = {
    # softmax_with_cross_entropy through CrossEntropyLoss / F.softmax_with_cross_entropy
    "ce_mean": lambda i: ce(i),
    "ce_weight_ignore_index_mean_float32": lambda i: ce(i, shape=(6, 5), labels=[3, 0, 4, 3, 1, 2], weighted=True,
                                                        ignore_index=3),
    "ce_label_without_class_dim_sum": lambda i: ce(i, labels=(4,), reduction="sum"),
    "ce_ignore_index_none": lambda i: ce(i, labels=[1, 0, 2, 1, 2, 0], shape=(6, 3), ignore_index=1, reduction="none"),
    "ce_weight_mean": lambda i: ce(i, shape=(6, 5), labels=(6,), weighted=True),
    "ce_weight_ignore_index_sum": lambda i: ce(i, shape=(6, 3), labels=[[2], [0], [1], [2], [1], [0]], weighted=True,
                                               ignore_index=2, reduction="sum"),
    "ce_weight_none": lambda i: ce(i, labels=(4,), weighted=True, reduction="none"),
    "ce_soft_label_mean": lambda i: soft_ce(i),
    "ce_soft_label_weight_none": lambda i: soft_ce(i, weighted=True, reduction="none"),
    "ce_axis1_mean": lambda i: ce(i, shape=(2, 4, 3), labels=(2, 1, 3), axis=1),
    "ce_axis1_4d_weight_mean": lambda i: ce(i, shape=(2, 3, 2, 2), labels=(2, 2, 2), axis=1, weighted=True),
    "ce_3d_last_axis_ignore_sum": lambda i: ce(i, shape=(2, 3, 3), labels=[[[0], [2], [1]], [[1], [0], [2]]],
                                               ignore_index=0, reduction="sum"),
    "ce_no_softmax_mean": lambda i: nn.CrossEntropyLoss(use_softmax=False)(
        i.probs("x", 4, 5), i.classes("label", 5, 4)),
    "ce_no_softmax_soft_label_sum": lambda i: nn.CrossEntropyLoss(use_softmax=False, soft_label=True,
                                                                  reduction="sum")(
        i.probs("x", 4, 5), i.probs("label", 4, 5, grad=False)),
    "ce_label_smoothing_mean": lambda i: ce(i, labels=(4,), label_smoothing=0.1),
    "sce_not_numeric_stable": lambda i: F.softmax_with_cross_entropy(
        i.randn("x", 4, 5), i.classes("label", 5, 4, 1), numeric_stable_mode=False),
    "sce_axis0_return_softmax": lambda i: F.softmax_with_cross_entropy(
        i.randn("x", 5, 3), i.classes("label", 5, 1, 3), axis=0, return_softmax=True)[0],
    "sce_soft_label_ignore_index": lambda i: F.softmax_with_cross_entropy(
        i.randn("x", 4, 5), i.probs("label", 4, 5, grad=False), soft_label=True, ignore_index=2),
    "sce_large_logits": lambda i: F.softmax_with_cross_entropy(
        i.randn("x", 4, 5, scale=40.0), i.classes("label", 5, 4, 1)),
    # cross_entropy2 (raw op)
    "cross_entropy2": lambda i: cross_entropy2(i.probs("x", 4, 5), i.ints("label", [[1], [4], [0], [2]])),
    "cross_entropy2_label_without_class_dim": lambda i: cross_entropy2(
        i.probs("x", 4, 5), i.ints("label", [1, -100, 0, 3])),
    "cross_entropy2_3d_ignore_index": lambda i: cross_entropy2(
        i.probs("x", 2, 3, 4), i.ints("label", [[[1], [5], [3]], [[5], [0], [2]]]), ignore_index=5),
    # legacy ops (raw)
    "cross_entropy_v1": lambda i: raw_op("cross_entropy", {"X": i.probs("x", 4, 5), "Label": i.ints(
        "label", [[1], [4], [0], [2]])}, "Y"),
    "cross_entropy_v1_ignore_index": lambda i: raw_op("cross_entropy", {"X": i.probs("x", 2, 3, 4), "Label": i.ints(
        "label", [[[1], [5], [3]], [[5], [0], [2]]])}, "Y", ignore_index=5),
    "cross_entropy_v1_soft_label": lambda i: raw_op("cross_entropy", {"X": i.probs("x", 4, 5), "Label": i.probs(
        "label", 4, 5, grad=False)}, "Y", soft_label=True),
    "identity_loss_sum": lambda i: raw_op("identity_loss", {"X": i.randn("x", 3, 4)}, "Out", reduction=0),
    "identity_loss_mean": lambda i: raw_op("identity_loss", {"X": i.randn("x", 3, 4)}, "Out", reduction=1),
    "identity_loss_none": lambda i: raw_op("identity_loss", {"X": i.randn("x", 3, 4)}, "Out", reduction=2),
    # nll_loss
    "nll_mean": lambda i: nll(i),
    # Paddle's kernel writes a 0 at out[i] for an ignored label i of a reduced (scalar) loss: one at i = 0 only
    "nll_weight_ignore_index_mean": lambda i: nll(i, labels=[2, 1, 3, 0, 3], weighted=True, ignore_index=2),
    "nll_sum": lambda i: nll(i, labels=[-100, 1, 3, 2, 0], reduction="sum"),
    "nll_weight_none": lambda i: nll(i, labels=[0, 3, 0, 1, 2], weighted=True, ignore_index=0, reduction="none"),
    "nll_4d_weight_mean": lambda i: nll(i, shape=(2, 3, 2, 2), weighted=True),
    "nll_3d_none": lambda i: nll(i, shape=(2, 3, 4), reduction="none"),
    # elementwise losses
    "bce_mean": lambda i: nn.BCELoss()(i.uniform("x", 4, 5), i.uniform("y", 4, 5, grad=False)),
    "bce_weight_none": lambda i: nn.BCELoss(i.uniform("weight", 5, grad=False), "none")(
        i.uniform("x", 4, 5), i.uniform("y", 4, 5, grad=False)),
    "bce_sum": lambda i: nn.BCELoss(reduction="sum")(i.uniform("x", 4, 5), i.classes("y", 2, 4, 5, dtype="float64")),
    "bce_logits_mean": pair(nn.BCEWithLogitsLoss, lambda i: i.uniform("y", 4, 5, grad=False)),
    "bce_logits_pos_weight_sum": lambda i: nn.BCEWithLogitsLoss(
        reduction="sum", pos_weight=i.uniform("pos_weight", 5, low=0.5, high=3.0, grad=False))(
        i.randn("x", 4, 5), i.uniform("y", 4, 5, grad=False)),
    "bce_logits_weight_pos_weight_none": lambda i: nn.BCEWithLogitsLoss(
        i.uniform("weight", 4, 5, grad=False), "none", i.uniform("pos_weight", 5, low=0.5, high=3.0, grad=False))(
        i.randn("x", 4, 5), i.uniform("y", 4, 5, grad=False)),
    "kldiv_mean": pair(nn.KLDivLoss, lambda i: i.probs("y", 4, 5, grad=False)),
    "kldiv_batchmean": pair(lambda: nn.KLDivLoss("batchmean"), lambda i: i.probs("y", 4, 5, grad=False)),
    "kldiv_none": pair(lambda: nn.KLDivLoss("none"), lambda i: i.probs("y", 4, 5, grad=False)),
    "kldiv_sum_log_target": pair(lambda: nn.KLDivLoss("sum", log_target=True),
                                 lambda i: i.randn("y", 4, 5, grad=False)),
    "l1_mean": pair(nn.L1Loss),
    "l1_none": pair(lambda: nn.L1Loss("none")),
    "mse_sum": pair(lambda: nn.MSELoss("sum")),
    "mse_none": pair(lambda: nn.MSELoss("none")),
    "smooth_l1_mean": pair(nn.SmoothL1Loss),
    "smooth_l1_delta_none": pair(lambda: nn.SmoothL1Loss("none", delta=0.5)),
    "huber_delta_sum": pair(lambda: nn.HuberLoss("sum", delta=0.7)),
    "soft_margin_mean": pair(nn.SoftMarginLoss, lambda i: signs(i, 4, 5)),
    "soft_margin_none": pair(lambda: nn.SoftMarginLoss("none"), lambda i: signs(i, 4, 5)),
    "margin_ranking_mean": lambda i: nn.MarginRankingLoss(0.3)(i.randn("x", 6), i.randn("y", 6), signs(i, 6)),
    "margin_ranking_none": lambda i: nn.MarginRankingLoss(reduction="none")(i.randn("x", 6), i.randn("y", 6),
                                                                            signs(i, 6)),
    "hinge_embedding_sum": pair(lambda: nn.HingeEmbeddingLoss(0.5, "sum"), lambda i: signs(i, 4, 5)),
    "cosine_embedding_mean": lambda i: nn.CosineEmbeddingLoss(0.2)(i.randn("x", 4, 5), i.randn("y", 4, 5),
                                                                   signs(i, 4)),
    "cosine_embedding_none": lambda i: nn.CosineEmbeddingLoss(reduction="none")(
        i.randn("x", 4, 5), i.randn("y", 4, 5), signs(i, 4)),
    "poisson_nll_mean": pair(nn.PoissonNLLLoss, lambda i: i.uniform("y", 4, 5, high=3.0, grad=False)),
    "poisson_nll_full_none": lambda i: nn.PoissonNLLLoss(log_input=False, full=True, reduction="none")(
        i.uniform("x", 4, 5, low=0.5, high=3.0), i.uniform("y", 4, 5, low=0.0, high=4.0, grad=False)),
    "triplet_margin_mean": lambda i: nn.TripletMarginLoss()(i.randn("x", 4, 5), i.randn("p", 4, 5),
                                                            i.randn("n", 4, 5)),
    "triplet_margin_p1_swap_none": lambda i: nn.TripletMarginLoss(0.5, 1.0, swap=True, reduction="none")(
        i.randn("x", 4, 5), i.randn("p", 4, 5), i.randn("n", 4, 5)),
    "triplet_margin_with_distance_mean": lambda i: nn.TripletMarginWithDistanceLoss()(
        i.randn("x", 4, 5), i.randn("p", 4, 5), i.randn("n", 4, 5)),
    "triplet_margin_with_l1_distance_sum": lambda i: nn.TripletMarginWithDistanceLoss(
        lambda a, b: paddle.sum(paddle.abs(a - b), axis=-1), reduction="sum")(
        i.randn("x", 4, 5), i.randn("p", 4, 5), i.randn("n", 4, 5)),
    "gaussian_nll_mean": lambda i: nn.GaussianNLLLoss()(i.randn("x", 4, 5), i.randn("y", 4, 5),
                                                        i.uniform("variance", 4, 5, low=0.2, high=2.0)),
    "multi_label_soft_margin_weight_mean": lambda i: nn.MultiLabelSoftMarginLoss(
        i.uniform("weight", 5, grad=False))(i.randn("x", 4, 5), i.classes("y", 2, 4, 5, dtype="float64")),
    "multi_margin_mean": lambda i: nn.MultiMarginLoss()(i.randn("x", 4, 5), i.classes("label", 5, 4)),
    "multi_label_margin_mean": lambda i: nn.MultiLabelMarginLoss()(i.randn("x", 4, 5), i.classes("label", 5, 4, 5)),
    "adaptive_log_softmax_with_loss": lambda i: nn.AdaptiveLogSoftmaxWithLoss(5, 8, [4])(
        i.randn("x", 4, 5), i.classes("label", 8, 4))[1],
    # hierarchical_sigmoid
    "hsigmoid_default_tree": lambda i: hsigmoid(i),
    "hsigmoid_no_bias": lambda i: hsigmoid(i, bias_attr=False),
    "hsigmoid_custom_tree": lambda i: hsigmoid(i, custom=True),
    "hsigmoid_sparse": lambda i: hsigmoid(i, is_sparse=True),
    "hsigmoid_custom_tree_float32": lambda i: hsigmoid(i, custom=True),
    "hsigmoid_saturated": lambda i: hsigmoid(i, scale=100.0),  # logits beyond the +-40 clip
    # warpctc
    "ctc_mean": lambda i: ctc(i),
    "ctc_blank4_sum": lambda i: ctc(i, blank=4, reduction="sum"),
    "ctc_none": lambda i: ctc(i, blank=2, reduction="none"),
    "ctc_norm_by_times_mean": lambda i: ctc(i, norm_by_times=True),
    "ctc_sum_float32": lambda i: ctc(i, reduction="sum"),
    # 3 labels, the first two equal, need 4 steps: with 3 no alignment exists (warp-ctc gives loss 0, grad 0)
    "ctc_impossible_none": lambda i: ctc(i, reduction="none", times=(3, 5, 4)),
    "ctc_impossible_zero_infinity_sum": lambda i: ctc(i, reduction="sum", times=(3, 5, 4), zero_infinity=True),
    # warprnnt
    "rnnt_mean": lambda i: rnnt(i),
    "rnnt_blank2_no_fastemit_none": lambda i: rnnt(i, blank=2, fastemit_lambda=0.0, reduction="none"),
    "rnnt_fastemit_sum": lambda i: rnnt(i, fastemit_lambda=0.5, reduction="sum"),
    "rnnt_unnormalised_input_mean": lambda i: rnnt(i, log_probs=False),
    "rnnt_sum_float32": lambda i: rnnt(i, reduction="sum"),
    # paddle.nn.functional's other losses
    "log_loss_float32": lambda i: F.log_loss(i.uniform("x", 4, 1), i.classes("y", 2, 4, 1, dtype="float32")),
    "log_loss_epsilon_float32": lambda i: F.log_loss(i.uniform("x", 6, 1), i.uniform("y", 6, 1, grad=False),
                                                     epsilon=0.05),
    "dice_loss": lambda i: F.dice_loss(i.probs("x", 4, 5), i.classes("label", 5, 4, 1)),
    "npair_loss_float32": lambda i: F.npair_loss(i.randn("x", 4, 5), i.randn("p", 4, 5),
                                                 i.ints("labels", [0, 1, 0, 2])),
    "sigmoid_focal_loss_sum": lambda i: F.sigmoid_focal_loss(i.randn("x", 4, 5), i.classes("y", 2, 4, 5,
                                                                                           dtype="float64")),
    "sigmoid_focal_loss_normalizer_mean": lambda i: F.sigmoid_focal_loss(
        i.randn("x", 4, 5), i.classes("y", 2, 4, 5, dtype="float64"), i.data("normalizer", [3.0]), alpha=0.4,
        gamma=1.5, reduction="mean"),
    "square_error_cost": pair(lambda: F.square_error_cost),
    "margin_cross_entropy": lambda i: F.margin_cross_entropy(i.uniform("x", 4, 5, low=-0.9, high=0.9),
                                                             i.classes("label", 5, 4)),
}

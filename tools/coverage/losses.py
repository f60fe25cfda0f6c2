"""Rows: every loss layer of paddle.nn, with its reduction, weight, ignore_index, soft-label, axis and
label-smoothing options."""

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn

from .spec import f, given, ints, pos, signs, soft, some_ignored, table, unit, weights


def constant(values):
    """A tensor made in the program (assign_value), as users pass class weights."""
    return paddle.to_tensor(np.array(values, dtype=paddle.get_default_dtype()))


def cosine_distance(a, b):
    return 1 - F.cosine_similarity(a, b)


N, C = 4, 3
REDUCTIONS = ("mean", "sum", "none")
BCE = table(
    "loss",
    ("bce_loss", lambda x, label: nn.BCELoss()(x, label), unit(N, C), unit(N, C, grad=False)),
    ("bce_loss_weight_none", lambda x, label, w: nn.BCELoss(w, reduction="none")(x, label),
     unit(N, C), unit(N, C, grad=False), weights(C)),
    ("bce_loss_sum", lambda x, label: nn.BCELoss(reduction="sum")(x, label), unit(N, C), unit(N, C, grad=False)),
    ("bce_with_logits", lambda x, label: nn.BCEWithLogitsLoss()(x, label), f(N, C), unit(N, C, grad=False)),
    ("bce_with_logits_pos_weight", lambda x, label, pw: nn.BCEWithLogitsLoss(pos_weight=pw)(x, label),
     f(N, C), unit(N, C, grad=False), weights(C)),
    ("bce_with_logits_weight_sum", lambda x, label, w: nn.BCEWithLogitsLoss(w, reduction="sum")(x, label),
     f(N, C), unit(N, C, grad=False), weights(N, C)),
)

CROSS_ENTROPY = table(
    "loss",
    ("cross_entropy", lambda x, label: nn.CrossEntropyLoss()(x, label), f(N, C), ints(C, N)),
    ("cross_entropy_label_n1", lambda x, label: nn.CrossEntropyLoss()(x, label), f(N, C), ints(C, N, 1)),
    ("cross_entropy_weight", lambda x, label, w: nn.CrossEntropyLoss(w)(x, label), f(N, C), ints(C, N), weights(C)),
    ("cross_entropy_weight_constant", lambda x, label: nn.CrossEntropyLoss(constant([0.2, 1.0, 3.0]))(x, label),
     f(N, C), ints(C, N)),
    ("cross_entropy_ignore_index", lambda x, label: nn.CrossEntropyLoss()(x, label), f(N, C), some_ignored(C, N)),
    ("cross_entropy_weight_ignore_index", lambda x, label, w: nn.CrossEntropyLoss(w, ignore_index=1)(x, label),
     f(N, C), ints(C, N), weights(C)),
    ("cross_entropy_none", lambda x, label: nn.CrossEntropyLoss(reduction="none")(x, label), f(N, C), ints(C, N)),
    ("cross_entropy_sum", lambda x, label: nn.CrossEntropyLoss(reduction="sum")(x, label), f(N, C), ints(C, N)),
    ("cross_entropy_soft_label", lambda x, label: nn.CrossEntropyLoss(soft_label=True)(x, label),
     f(N, C), soft(N, C)),
    ("cross_entropy_soft_label_weight", lambda x, label, w: nn.CrossEntropyLoss(w, soft_label=True)(x, label),
     f(N, C), soft(N, C), weights(C)),
    ("cross_entropy_axis1", lambda x, label: nn.CrossEntropyLoss(axis=1)(x, label), f(2, C, 2, 2), ints(C, 2, 1, 2, 2)),
    ("cross_entropy_label_smoothing", lambda x, label: nn.CrossEntropyLoss(label_smoothing=0.1)(x, label),
     f(N, C), ints(C, N)),
    ("cross_entropy_no_softmax", lambda x, label: nn.CrossEntropyLoss(use_softmax=False)(F.softmax(x), label),
     f(N, C), ints(C, N)),
    ("nll_loss", lambda x, label: nn.NLLLoss()(F.log_softmax(x), label), f(N, C), ints(C, N)),
    ("nll_loss_weight_ignore", lambda x, label, w: nn.NLLLoss(w)(F.log_softmax(x), label),
     f(N, C), some_ignored(C, N), weights(C)),
    ("nll_loss_none", lambda x, label: nn.NLLLoss(reduction="none")(x, label), f(N, C), ints(C, N)),
    ("nll_loss_sum", lambda x, label: nn.NLLLoss(reduction="sum")(x, label), f(N, C), ints(C, N)),
    ("nll_loss_4d", lambda x, label: nn.NLLLoss()(x, label), f(2, C, 2, 3), ints(C, 2, 2, 3)),
    ("adaptive_log_softmax_with_loss", lambda x, label: nn.AdaptiveLogSoftmaxWithLoss(4, 6, [2, 4])(x, label),
     f(N, 4), ints(6, N)),
    ("hsigmoid_loss", lambda x, label: nn.HSigmoidLoss(4, 5)(x, label), f(N, 4), ints(5, N, 1)),
)

REGRESSION = table(
    "loss",
    *((f"mse_loss_{r}", lambda x, label, r=r: nn.MSELoss(r)(x, label), f(N, C), f(N, C)) for r in REDUCTIONS),
    *((f"l1_loss_{r}", lambda x, label, r=r: nn.L1Loss(r)(x, label), f(N, C), f(N, C)) for r in REDUCTIONS),
    ("smooth_l1_loss", lambda x, label: nn.SmoothL1Loss()(x, label), f(N, C), f(N, C)),
    ("smooth_l1_loss_delta_sum", lambda x, label: nn.SmoothL1Loss("sum", delta=0.5)(x, label), f(N, C), f(N, C)),
    ("huber_loss", lambda x, label: nn.HuberLoss(delta=0.6)(x, label), f(N, C), f(N, C)),
    ("huber_loss_none", lambda x, label: nn.HuberLoss("none")(x, label), f(N, C), f(N, C)),
    ("gaussian_nll_loss", lambda x, label, var: nn.GaussianNLLLoss()(x, label, var), f(N, C), f(N, C), pos(N, C)),
    ("gaussian_nll_loss_full_sum", lambda x, label, var: nn.GaussianNLLLoss(True, reduction="sum")(x, label, var),
     f(N, C), f(N, C), pos(N, 1)),
    ("poisson_nll_loss", lambda x, label: nn.PoissonNLLLoss()(x, label), f(N, C), pos(N, C)),
    ("poisson_nll_loss_rates_full", lambda x, label: nn.PoissonNLLLoss(log_input=False, full=True)(x, label),
     pos(N, C), pos(N, C)),
    *((f"kl_div_loss_{r}", lambda x, label, r=r: nn.KLDivLoss(r)(F.log_softmax(x), label), f(N, C), soft(N, C))
      for r in ("mean", "batchmean", "sum", "none")),
    ("kl_div_loss_log_target", lambda x, label: nn.KLDivLoss(log_target=True)(F.log_softmax(x), label),
     f(N, C), f(N, C)),
)

MARGIN = table(
    "loss",
    ("margin_ranking_loss", lambda x, other, label: nn.MarginRankingLoss(0.2)(x, other, label),
     f(N), f(N), signs(N)),
    ("margin_ranking_loss_none", lambda x, other, label: nn.MarginRankingLoss(reduction="none")(x, other, label),
     f(N), f(N), signs(N)),
    ("hinge_embedding_loss", lambda x, label: nn.HingeEmbeddingLoss(0.5)(x, label), f(N, C), signs(N, C)),
    ("soft_margin_loss", lambda x, label: nn.SoftMarginLoss()(x, label), f(N, C), signs(N, C)),
    ("soft_margin_loss_sum", lambda x, label: nn.SoftMarginLoss("sum")(x, label), f(N, C), signs(N, C)),
    ("cosine_embedding_loss", lambda x1, x2, label: nn.CosineEmbeddingLoss(0.1)(x1, x2, label),
     f(N, C), f(N, C), given([1, -1, 1, -1], "int64")),
    ("multi_margin_loss", lambda x, label: nn.MultiMarginLoss()(x, label), f(N, C), ints(C, N)),
    ("multi_margin_loss_p2_weight", lambda x, label, w: nn.MultiMarginLoss(2, 0.5, w, "sum")(x, label),
     f(N, C), ints(C, N), weights(C)),
    ("multi_label_margin_loss", lambda x, label: nn.MultiLabelMarginLoss()(x, label),
     f(2, 4), given([[3, 0, -1, 1], [1, 2, 3, -1]], "int64")),
    ("multi_label_soft_margin_loss", lambda x, label: nn.MultiLabelSoftMarginLoss()(x, label),
     f(N, C), given([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]], "float32")),
    ("multi_label_soft_margin_loss_weight", lambda x, label, w: nn.MultiLabelSoftMarginLoss(w, "none")(x, label),
     f(N, C), given([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]], "float32"), weights(C)),
    ("triplet_margin_loss", lambda a, p, n: nn.TripletMarginLoss()(a, p, n), f(N, C), f(N, C), f(N, C)),
    ("triplet_margin_loss_p1_swap", lambda a, p, n: nn.TripletMarginLoss(0.5, p=1.0, swap=True)(a, p, n),
     f(N, C), f(N, C), f(N, C)),
    ("triplet_margin_with_distance_loss", lambda a, p, n: nn.TripletMarginWithDistanceLoss()(a, p, n),
     f(N, C), f(N, C), f(N, C)),
    # the layer drops its distance_function (Paddle 3.3.1): the functional form takes it
    ("triplet_margin_with_cosine_distance",
     lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n, cosine_distance, swap=True),
     f(N, C), f(N, C), f(N, C)),
)

SEQUENCE = table(
    "loss",
    ("ctc_loss", lambda logp, labels, in_len, label_len: nn.CTCLoss()(logp, labels, in_len, label_len),
     f(5, 2, 4), given([[1, 2], [3, 3]], "int32"), given([5, 4], "int64"), given([2, 1], "int64")),
    ("ctc_loss_sum_norm_by_times",
     lambda logp, labels, in_len, label_len: nn.CTCLoss(reduction="sum")(logp, labels, in_len, label_len, True),
     f(5, 2, 4), given([[2, 1], [3, 3]], "int32"), given([5, 5], "int64"), given([2, 2], "int64")),
    ("rnnt_loss", lambda x, label, in_len, label_len: nn.RNNTLoss()(F.log_softmax(x), label, in_len, label_len),
     f(2, 4, 3, 5), given([[1, 2], [3, 1]], "int32"), given([4, 3], "int32"), given([2, 2], "int32")),
    ("rnnt_loss_no_fastemit_sum",
     lambda x, label, in_len, label_len: nn.RNNTLoss(fastemit_lambda=0.0, reduction="sum")(
         F.log_softmax(x), label, in_len, label_len),
     f(2, 4, 3, 5), given([[1, 2], [3, 1]], "int32"), given([4, 3], "int32"), given([2, 2], "int32")),
)

ROWS = BCE + CROSS_ENTROPY + REGRESSION + MARGIN + SEQUENCE

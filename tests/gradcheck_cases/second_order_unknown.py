"""Second-derivative cases (as in second_order.py) whose inputs are declared with sizes known only at run time
(-1), or with an unknown rank: the makers build what depends on those sizes from run-time shape ops."""

from __future__ import annotations

import numpy as np

from . import Case, rng
from .bev_pool import hand_written_backward
from .extra_math import LABELS, MARGINS, RMS, cosines, rms_inputs
from .flash_attention import mea, packed, qkv
from .linalg_extra import _lu_solve
from .linalg_grads import lu_of
from .lod_rnn import third_order
from .second_order import distinct, second_order
from .transformer_fused import ATTENTION_TEST, ATTENTION_TRAIN, FFN_TEST, attention, bdr, ffn, positive

r = rng(61)


def randn(*shape):
    return r.standard_normal(shape)


def shifted(*shape):
    return randn(*shape) + 3 * np.eye(*shape[-2:])


def with_nan(*shape):
    values = randn(*shape)
    values.flat[1] = np.nan
    return values


def spd(*shape):
    """Symmetric positive definite matrices."""
    a = randn(*shape)
    return a @ np.swapaxes(a, -1, -2) + 3 * np.eye(shape[-1])


def gru_unit(d: int, bias: bool = True, **attrs):
    """A gru_unit step with its hidden size (and Input's 3 D, HiddenPrev's D) declared -1."""
    inputs = {"Input": randn(3, 3 * d), "HiddenPrev": randn(3, d), "Weight": randn(d, 3 * d)}
    unknown = {"Input": [0, 1], "HiddenPrev": [1], "Weight": [0, 1]}
    if bias:
        inputs["Bias"], unknown["Bias"] = randn(1, 3 * d), [1]
    return second_order("gru_unit", inputs, attrs, rtol=1e-4, atol=1e-6, unknown=unknown)


CASES = [
    second_order("swiglu", {"x": randn(2, 6)}, unknown={"x": [1]}),
    second_order("swiglu", {"x": randn(2, 3, 4)}, unknown={"x": None}),
    *[second_order("margin_cross_entropy", {"Logits": cosines(3, 5), "Label": labels}, margins, rtol=1e-4,
                   unknown={"Logits": [0, 1]})
      for margins, labels in zip(MARGINS[:2], (LABELS, LABELS[:, 0]))],
    # Logits (and Label) of unknown rank: a matrix at run time all the same, Label flattened to [N] by reshape2
    *[second_order("margin_cross_entropy", {"Logits": cosines(3, 5), "Label": labels}, margins, rtol=1e-4,
                   unknown=unknown)
      for margins, labels, unknown in ((MARGINS[0], LABELS, {"Logits": None, "Softmax": None, "Loss": None}),
                                       (MARGINS[2], LABELS[:, 0], {"Logits": None, "Label": None}),
                                       (MARGINS[1], LABELS, {"Logits": None, "Label": None, "Loss": None}),
                                       (MARGINS[3], LABELS, {"Label": None}))],
    second_order("logsumexp", {"X": randn(2, 3, 2)}, {"axis": [1]}, unknown={"X": None}),
    second_order("logsumexp", {"X": randn(2, 3, 2)}, {"axis": [-1, -3]}, unknown={"X": None}),
    second_order("logsumexp", {"X": randn(2, 3)}, {"axis": [1]}, unknown={"X": [0, 1]}),
    second_order("frobenius_norm", {"X": randn(3, 4, 2)}, {"dim": [0, 2]}, unknown={"X": None}),
    second_order("frobenius_norm", {"X": randn(3, 4, 2)}, {"dim": [-2]}, unknown={"X": None}),
    second_order("frobenius_norm", {"X": randn(2, 3)}, {"reduce_all": True}, unknown={"X": None}),
    # dims counted from both ends of an X of unknown rank: placed at run time
    second_order("logsumexp", {"X": randn(2, 3, 2)}, {"axis": [0, -1]}, unknown={"X": None}),
    second_order("logsumexp", {"X": randn(2, 3, 4, 2)}, {"axis": [-2, 1]}, unknown={"X": None}),
    second_order("frobenius_norm", {"X": randn(3, 4, 2)}, {"dim": [0, -1]}, unknown={"X": None}),
    # var / std: the count each mean is taken over read at run time
    second_order("var", {"x": randn(3, 4)}, {"axis": [1], "keepdim": False, "unbiased": True, "correction": 1.0},
                 unknown={"x": [0, 1]}),
    second_order("var", {"x": randn(2, 3, 4)}, {"axis": [0, -1], "keepdim": True, "unbiased": False,
                                                "correction": 2.0}, unknown={"x": None}),
    second_order("std", {"x": randn(2, 3)}, {"axis": [], "keepdim": False, "unbiased": True, "correction": 1.0},
                 unknown={"x": [0, 1]}),
    gru_unit(2),
    gru_unit(3, bias=False, activation=0, gate_activation=2, origin_mode=True),
    second_order("cummax", {"x": distinct(2, 3, 2)}, {"axis": -2}, unknown={"x": None}),
    second_order("cummin", {"x": distinct(3, 4)}, {"axis": 1}, unknown={"x": None}),
    second_order("mode", {"X": distinct(2, 3, 2)}, {"axis": -2}, unknown={"X": None}),
    second_order("mode", {"X": distinct(3, 4)}, {"axis": 0, "keepdim": True}, unknown={"X": None}),
    *[second_order(op, {slot: distinct(2, 3, 2)}, {"axis": axis, "keepdim": keepdim, "mode": mode},
                   unknown={slot: None})
      for op, slot in (("median", "x"), ("nanmedian", "X"))
      for axis, keepdim, mode in (([0, -1], False, "avg"), ([1], True, "min"), ([], False, "avg"))],
    # matrix sizes (the last two dims) known at run time only
    second_order("cholesky", {"X": spd(2, 3, 3)}, unknown={"X": [1, 2], "Out": [1, 2]}),
    second_order("eigh", {"X": spd(2, 3, 3)}, unknown={"X": [1, 2], "Eigenvalues": [1], "Eigenvectors": [1, 2]}),
    second_order("cholesky_solve", {"X": randn(2, 3, 2), "Y": np.linalg.cholesky(spd(2, 3, 3))},
                 unknown={"X": [1, 2], "Y": [1, 2], "Out": [1, 2]}),
    second_order("triangular_solve", {"X": np.triu(shifted(3, 3)), "Y": randn(2, 3, 2)}, {"transpose": True},
                 unknown={"X": [0, 1], "Y": [1, 2], "Out": [1, 2]}),
    second_order("solve", {"X": shifted(2, 3, 3), "Y": randn(2, 3, 2)}, unknown={"X": [1, 2], "Y": [1, 2]}),
    second_order("solve", {"X": shifted(2, 3, 3), "Y": randn(3)}, unknown={"X": [1, 2], "Y": [0], "Out": [1]}),
    *[second_order("svd", {"X": randn(*shape)}, unknown={"X": [-2, -1], "U": [-2, -1], "S": [-1], "VH": [-2, -1]})
      for shape in ((4, 3), (2, 3, 5), (3, 3))],   # tall, wide, square: both outside parts, zero where U, V square
    # batch dims known at run time only, broadcast: the solves' grads summed back by reduce_as
    second_order("triangular_solve", {"X": np.triu(shifted(2, 3, 3)), "Y": randn(1, 3, 2)},
                 unknown={"X": [0], "Y": [0], "Out": [0]}),
    second_order("solve", {"X": shifted(1, 3, 3), "Y": randn(2, 3, 2)}, unknown={"X": [0, 1, 2], "Y": [0]}),
    second_order("cholesky_solve", {"X": randn(1, 3, 2), "Y": np.linalg.cholesky(spd(2, 3, 3))},
                 unknown={"X": [0], "Y": [0], "Out": [0]}),
    *[second_order("svd", {"X": randn(*shape)}, {"full_matrices": True}, unknown={"X": [-2, -1], "U": [-2, -1],
                                                                                 "S": [-1], "VH": [-2, -1]})
      for shape in ((4, 3), (2, 3, 5), (3, 3))],   # U, VH cut to K columns, rows by selection matrices
    *[second_order("qr", {"X": randn(*shape)}, {"mode": mode}, unknown={"X": [-2, -1], "R": [-2, -1],
                                                                        **({} if mode == "r" else {"Q": [-2, -1]})})
      for shape, mode in (((2, 4, 3), "reduced"), ((2, 3, 5), "reduced"), ((3, 3), "complete"), ((3, 5), "complete"),
                          ((4, 3), "r"), ((3, 5), "r"))],   # no branch on M against N: R's columns split by projection
    *[second_order("lu", {"X": randn(*shape)}, unknown={"X": [-2, -1], "Out": [-2, -1], "Pivots": [-1]})
      for shape in ((4, 3), (2, 3, 5), (3, 3))],
    *[second_order("lu_unpack", dict(zip(("X", "Pivots"), lu_of(randn(*shape)))),
                   unknown={"X": [-2, -1], "Pivots": [-1], "Pmat": [-2, -1], "L": [-2, -1], "U": [-2, -1]})
      for shape in ((2, 4, 3), (3, 5), (3, 3))],
    # max pooling with SAME paddings over spatial sizes known at run time only (pads computed at run time)
    second_order("pool2d", {"X": distinct(1, 5, 4, 2)}, {"pooling_type": "max", "ksize": [2, 3], "strides": [2, 2],
                                                        "padding_algorithm": "SAME", "data_format": "NHWC"},
                 unknown={"X": [1, 2]}),
    second_order("pool2d", {"X": distinct(2, 1, 5, 6)}, {"pooling_type": "max", "ksize": [3, 3], "strides": [1, 2],
                                                        "padding_algorithm": "SAME", "ceil_mode": True},
                 unknown={"X": [0, 2, 3]}),
    second_order("pool3d", {"X": distinct(1, 2, 3, 4, 3)}, {"pooling_type": "max", "ksize": [2, 3, 2],
                                                           "strides": [2, 1, 2], "padding_algorithm": "SAME"},
                 unknown={"X": [2, 4]}),
    # a batch (and sequence) of size -1: the fused norms and layers need X's rank only, fused_attention's reshapes
    # copy the batch and sequence dims (0)
    second_order("fast_ln", {"x": randn(2, 3, 4), "scale": positive(4), "bias": randn(4)}, {"epsilon": 1e-5},
                 unknown={"x": [0, 1], "y": [0, 1], "mean": [0, 1], "invvar": [0, 1]}),
    second_order("fast_rms_norm", {"x": randn(3, 5), "scale": positive(5)}, {"epsilon": 1e-5},
                 unknown={"x": [0], "y": [0], "invvar": [0]}),
    second_order("fused_rms_norm_ext", {"x": randn(2, 3, 4), "scale": positive(4)}, {"epsilon": 1e-5},
                 unknown={"x": [0], "y": [0], "invvar": [0]}),
    second_order("rms_norm", {"x": randn(2, 3, 4), "scale": positive(3, 4)}, {"normalized_shape": [3, 4]},
                 unknown={"x": [0], "y": [0], "invvar": [0]}),
    second_order("rms_norm", {"x": randn(3, 4)}, {"normalized_shape": [4]},
                 unknown={"x": [0], "y": [0], "invvar": [0]}),
    second_order("fused_bias_dropout_residual_layer_norm", bdr(), {"is_test": True, "dropout_rate": 0.3},
                 unknown={slot: [0] for slot in ("X", "Residual", "Y", "BiasDropoutResidualOut", "DropoutMaskOut",
                                                 "LnMean", "LnVariance")}),
    second_order("fused_feedforward", ffn(), {"pre_layer_norm": True, **FFN_TEST},
                 unknown={"X": [0, 1], "Out": [0, 1]}),
    # bev_pool_v2_bkwd's channels known at run time only: feat and dOut as rows of their last dim by flattening the rest
    BEV_AT_RUN_TIME := second_order("bev_pool_v2_bkwd", hand_written_backward(2, shared_depth=True),
                                    grad_type="bev_pool_v2_bkwd", unknown={"_out_grad": [0, 3], "_feat": [0, 3]}),
    # the normalised dims known at run time only too: the weights reshaped to them by a Shape tensor from x's shape
    second_order("fused_rms_norm_quant", rms_inputs(bias=True, residual=True, norm_bias=True), RMS,
                 grad_type="fused_rms_norm_quant_grad", unknown={slot: [0, 1, 2] for slot in ("x", "residual", "out",
                                                                                          "residual_out", "inv_var")}),
    second_order("rms_norm", {"x": randn(2, 3, 4), "scale": positive(3, 4)}, {"normalized_shape": [3, 4]},
                 unknown={"x": [0, 1, 2], "y": [0, 1, 2], "invvar": [0]}),
    second_order("fused_attention", attention(), {"pre_layer_norm": True, **ATTENTION_TEST},
                 grad_type="fused_attention_grad", unknown={"X": [0, 1], "Y": [0, 1]}),
    second_order("fused_attention", attention(pre=False, transposed=True, biases=False),
                 {"transpose_qkv_wb": True, "num_heads": 2, **ATTENTION_TRAIN}, grad_type="fused_attention_grad",
                 unknown={"X": [0], "Y": [0]}),
    # layer_norm_grad of an X of unknown rank (the attention's norms): rows folded from begin_norm_axis, dX given
    # back X's run-time shape
    second_order("layer_norm", {"X": randn(2, 3, 4), "Scale": randn(12), "Bias": randn(12)}, {"begin_norm_axis": 1},
                 unknown={"X": None, "Y": None}),
    second_order("layer_norm", {"X": randn(2, 3, 4), "Scale": randn(4)}, {"begin_norm_axis": 2},
                 unknown={"X": None, "Y": None}),
    # X's rank or QKVW's shape unknown: X is [b, s, e] at run time; nh, dh, e from X, OutLinearW or QKVW's run-time
    # shape (a Shape tensor for the heads split, 1 / sqrt(dh) computed in the program)
    second_order("fused_attention", attention(), {"pre_layer_norm": True, **ATTENTION_TEST},
                 grad_type="fused_attention_grad", unknown={"X": None, "Y": None, "QKVW": None}),
    second_order("fused_attention", attention(pre=False, transposed=True), {"transpose_qkv_wb": True, "num_heads": 2,
                 **ATTENTION_TRAIN}, grad_type="fused_attention_grad", unknown={"X": None, "QKVW": None, "Y": None}),
    second_order("fused_attention", attention(mask=False, e=6, nh=3), {"pre_layer_norm": True, **ATTENTION_TEST},
                 grad_type="fused_attention_grad", unknown={"X": [2], "QKVW": [1, 2, 3], "OutLinearW": [0, 1]}),
    second_order("fused_attention", attention(pre=False, transposed=True, biases=False, e=6, nh=3),
                 {"transpose_qkv_wb": True, "num_heads": 3, **ATTENTION_TRAIN}, grad_type="fused_attention_grad",
                 unknown={"X": [2], "QKVW": [0, 1], "OutLinearW": [0, 1], "Ln2Scale": [0], "Ln2Bias": [0]}),
    # the flash attentions over a batch and sequences of sizes -1: reshapes that copy (0) or take the rest (-1), a 4-D
    # mask's heads split after moving them last
    second_order("flash_attn", qkv(2, 3, 4, 2, 1) | {"attn_mask": randn(2, 2, 3, 4)},
                 unknown={"q": [0, 1], "k": [0, 1], "v": [0, 1], "out": [0, 1], "attn_mask": [0, 2, 3]}),
    second_order("flash_attn", qkv(1, 3, 3, 2, 2) | {"attn_mask": randn(1, 1, 3, 3)},
                 unknown={"q": [1], "k": [1], "v": [1], "out": [1], "attn_mask": [2, 3]}),
    second_order("flash_attn", qkv(1, 3, 3, 4, 2), {"causal": True}, unknown={"q": [0, 1], "k": [0, 1], "v": [0, 1]}),
    second_order("flash_attn_qkvpacked", packed(1, 3, 2, 2), {"causal": True}, unknown={"qkv": [0, 1], "out": [0, 1]}),
    second_order("memory_efficient_attention", mea(2, 3, 3, 2, bias=(1, 2, 3, 3)), {"causal": True, "scale": 0.5},
                 unknown={"query": [0, 1], "key": [0, 1], "value": [0, 1], "bias": [2, 3], "output": [0, 1]}),
    # nansum's axes and fused_dropout_add's rate in tensors, known at run time only: the grad ops are linear in the
    # output grad, so their adjoints apply (nansum over the same axes, the grad op itself) with those tensors
    second_order("nansum", {"x": with_nan(2, 3, 4), "AxisTensor": np.array([2, 0], np.int64)}, {"keepdim": False}),
    second_order("nansum", {"x": with_nan(2, 3, 4), "AxisTensorList": [np.array([-1], np.int64)]}, {"keepdim": True}),
    *[second_order("fused_dropout_add", {"x": randn(2, 3), "y": randn(2, 3), "PTensor": np.array([rate], np.float32)},
                   {"p": 0.5, **attrs})
      for rate, attrs in ((0.3, {"is_test": True, "mode": "downscale_in_infer"}), (1.0, {}))],
    # matrices of unknown rank: transposed by a product with the identity of their rows (transpose2 needs the rank)
    second_order("determinant", {"Input": shifted(2, 3, 3)}, unknown={"Input": None}),
    second_order("slogdeterminant", {"Input": shifted(3, 3)}, unknown={"Input": None}),
    second_order("cholesky", {"X": spd(2, 3, 3)}, {"upper": True}, unknown={"X": None, "Out": None}),
    # solves of unknown ranks: their temporaries declared like such an input, the grads summed back by reduce_as
    second_order("cholesky_solve", {"X": randn(1, 3, 2), "Y": np.linalg.cholesky(spd(2, 3, 3))},
                 unknown={"X": None, "Y": None, "Out": None}),
    second_order("triangular_solve", {"X": np.triu(shifted(2, 3, 3)), "Y": randn(3, 2)}, {"transpose": True},
                 unknown={"X": None, "Out": None}),
    # solve of an X of unknown rank: a Y of rank 1 holds a vector whatever X's rank (Paddle's rule)
    second_order("solve", {"X": shifted(2, 3, 3), "Y": randn(3)}, unknown={"X": None, "Out": None}),
    # whether Y holds vectors left to the run (a rank unknown, or sizes): dY and Out made matrices at run time
    *[second_order("solve", {"X": shifted(2, 3, 3), "Y": randn(*y)}, unknown=unknown) for y, unknown in (
        ((2, 3, 2), {"X": None, "Y": None, "Out": None}), ((2, 3), {"X": None, "Out": None}),
        ((3, 2), {"X": None, "Out": None}), ((2, 3), {"X": [0, 1, 2], "Y": [0, 1], "Out": [0, 1]}),
        ((3, 2), {"X": [0, 1, 2], "Y": [0, 1], "Out": [0, 1, 2]}), ((2, 3), {"Y": None, "Out": None}))],
    # the decompositions of unknown rank: the paths for sizes known at run time (selections, no cuts), values made
    # rows and columns by unsqueeze2 counting from the end
    UNRANKED_QR := second_order("qr", {"X": randn(2, 3, 5)}, unknown={"X": None, "Q": None, "R": None}),
    second_order("qr", {"X": randn(4, 3)}, {"mode": "r"}, unknown={"X": None, "R": None}),
    second_order("svd", {"X": randn(2, 3, 5)}, unknown={"X": None, "U": None, "S": None, "VH": None}),
    second_order("svd", {"X": randn(4, 3)}, {"full_matrices": True}, unknown={"X": None, "U": None, "S": None,
                                                                             "VH": None}),
    second_order("lu", {"X": randn(2, 4, 3)}, unknown={"X": None, "Out": None, "Pivots": None}),
    second_order("lu_unpack", dict(zip(("X", "Pivots"), lu_of(randn(3, 5)))),
                 unknown={"X": None, "Pivots": None, "Pmat": None, "L": None, "U": None}),
    second_order("svdvals", {"x": randn(2, 3, 5)}, unknown={"x": None, "s": None}),
    second_order("eigvalsh", {"X": spd(2, 3, 3)}, unknown={"X": None, "Eigenvalues": None, "Eigenvectors": None}),
    second_order("lu_solve", *_lu_solve((2, 3, 2), (2, 3, 3), "T"),
                 unknown={"b": None, "lu": None, "pivots": None, "out": None}),
]
# third derivatives through the run-time axes, rate and rank (the weights of the grads drawn in their fed shapes)
CASES += [third_order(case, case.op, run_time_shapes=True) for case in CASES
          if case.op in ("nansum_grad", "fused_dropout_add_grad", "determinant_grad")][::2]
CASES.append(third_order(UNRANKED_QR, "qr_grad", run_time_shapes=True))
# bev_pool_v2_bkwd is a forward op there: its maker's first derivative checked too (the first loss of that program)
CASES.append(Case("bev_pool_v2_bkwd", {}, {"channels": "run time"},
                  program=lambda: {**BEV_AT_RUN_TIME.program(), "loss": "loss1", "wrt": ["_out_grad0", "_depth0",
                                                                                        "_feat0"]}))


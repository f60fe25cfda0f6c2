"""Layers of paddle.static.nn that paddle.nn lacks: the continuous value model (cvm), noise-contrastive estimation
(nce) and the row (lookahead) convolution (row_conv).

cvm's gradient is Paddle's on purpose, not the derivative: cvm_grad writes the CVM input (each row's show and
click counts) as the gradient of X's first two columns, which a parameter server adds to its embedding table's
statistics; the other columns get Y's gradient. nce draws its negative classes (SampleLabels) from its sampler:
0 uniform over the classes, 1 log-uniform (P(c) = log((c + 2) / (c + 1)) / log(classes)), 2 custom_dist (the
alias tables CustomDistAlias, CustomDistAliasProbs over CustomDistProbs); its gradient holds those samples fixed.
row_conv takes X padded ([batch, time, dim]) or as a LoD tensor ([rows, dim], each sequence convolved on its own).
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..ir.types import INTEGER_DTYPES
from ..registry import defop, grad_op, typed
from ..shapes import dims_match
from .infer import check_float, one_dtype


def refuse_lod(ctx, slot: str) -> None:
    """Fails for a LoD tensor in ``slot`` (lod_level > 0): the op's sequence form, which gradc does not run."""
    var = ctx.block.find_var(ctx.op.input(slot)[0]) if ctx.has(slot) else None
    if var is not None and (var.lod_level or 0) > 0:
        ctx.fail(f"{ctx.op.type} takes {slot} as a padded tensor: gradc does not support its LoD form "
                 f"(lod_level {var.lod_level})")


def _cvm_infer(ctx):
    x, cvm = ctx.shape("X"), ctx.shape("CVM")
    check_float(ctx, "X")
    refuse_lod(ctx, "X")
    if x is not None and (len(x) != 2 or (x[1] != -1 and x[1] < 2)):
        ctx.fail(f"cvm needs X [batch, width] whose first two columns are show and click, got {x}")
    if cvm is not None and (len(cvm) != 2 or not dims_match(cvm[1], 2) or
                            (x is not None and not dims_match(cvm[0], x[0]))):
        ctx.fail(f"cvm needs CVM [batch, 2] (show, click per row of X {x}), got {cvm}")
    dropped = 0 if x is None or ctx.attr("use_cvm") or x[1] == -1 else 2   # without use_cvm, show and click go
    return {"Y": (None if x is None else [x[0], x[1] - dropped], ctx.dtype("X"))}


defop("cvm", ["X", "CVM"], ["Y"], attrs={"use_cvm": True}, infer=_cvm_infer, no_grad_inputs=["CVM"],
      grad=grad_op("CVM", "X"))


def _nce_infer(ctx):
    x, label, weight = ctx.shape("Input"), ctx.shape("Label"), ctx.shape("Weight")
    dtype = one_dtype(ctx, "Input", "Weight")
    check_float(ctx, "Input")
    refuse_lod(ctx, "Input")
    if ctx.dtype("Label") not in (None, *INTEGER_DTYPES):
        ctx.fail("nce needs integer class ids in Label")
    if x is None or label is None or weight is None:   # undeclared shapes: the kernel checks them
        return {"Cost": (None, dtype), "SampleLogits": (None, dtype), "SampleLabels": (None, VarType.INT64)}
    classes, negatives, sampler = ctx.attr("num_total_classes"), ctx.attr("num_neg_samples"), ctx.attr("sampler")
    if classes < 2 or negatives < 1:
        ctx.fail(f"nce needs num_total_classes >= 2 and num_neg_samples >= 1, got {classes} and {negatives}")
    if sampler not in (0, 1, 2):
        ctx.fail(f"nce sampler must be 0 (uniform), 1 (log_uniform) or 2 (custom_dist), got {sampler}")
    chosen = ctx.attr("custom_neg_classes")
    if chosen and len(chosen) != negatives:
        ctx.fail(f"nce needs as many custom_neg_classes as num_neg_samples={negatives}, got {list(chosen)}")
    if sampler == 2 and not all(ctx.has(s) for s in ("CustomDistProbs", "CustomDistAlias", "CustomDistAliasProbs")):
        ctx.fail("nce's custom_dist sampler needs CustomDistProbs, CustomDistAlias and CustomDistAliasProbs")
    if len(x) != 2 or len(weight) != 2 or not dims_match(weight[1], x[1]) or not dims_match(weight[0], classes):
        ctx.fail(f"nce needs Input [batch, dim] and Weight [num_total_classes={classes}, dim], got {x} and {weight}")
    if len(label) not in (1, 2) or not dims_match(label[0], x[0]):
        ctx.fail(f"nce needs Label [batch, true classes] with one row per row of Input {x}, got {label}")
    bias, weights = ctx.shape("Bias"), ctx.shape("SampleWeight")
    if bias is not None and (bias[1:] not in ([], [1]) or not bias or not dims_match(bias[0], classes)):
        ctx.fail(f"nce needs Bias [num_total_classes={classes}, 1], got {bias}")
    if weights is not None and (weights[1:] not in ([], [1]) or not weights or not dims_match(weights[0], x[0])):
        ctx.fail(f"nce needs SampleWeight [batch] or [batch, 1] for Input {x}, got {weights}")
    trues = label[1] if len(label) == 2 else 1
    samples = -1 if trues == -1 else trues + negatives
    return {"Cost": ([x[0], 1], dtype), "SampleLogits": ([x[0], samples], dtype),
            "SampleLabels": ([x[0], samples], VarType.INT64)}


# is_sparse gives Weight a SelectedRows gradient (backward/sparse.py): the sampled rows; remote_prefetch is what
# paddle.static.nn.nce writes with is_sparse, and runs locally without a parameter server's tables
REMOTE = "parameter-server tables are not supported"
defop("nce", ["Input", "Label", "Weight", "Bias?", "SampleWeight?", "CustomDistProbs?", "CustomDistAlias?",
              "CustomDistAliasProbs?"], ["Cost", "SampleLogits!", "SampleLabels!"],
      attrs={"num_total_classes": 1, "num_neg_samples": 10, "sampler": 0, "seed": 0, "is_sparse": False,
             "remote_prefetch": False, "is_test": False, "custom_neg_classes": typed([], AttrType.INTS),
             "epmap": typed([], AttrType.STRINGS), "height_sections": typed([], AttrType.LONGS),
             "table_names": typed([], AttrType.STRINGS), "trainer_id": 0},
      no_grad_inputs=["Label", "SampleWeight", "CustomDistProbs", "CustomDistAlias", "CustomDistAliasProbs"],
      no_grad_outputs=["SampleLogits", "SampleLabels"], infer=_nce_infer,
      unsupported_attrs={"epmap": REMOTE, "table_names": REMOTE, "height_sections": REMOTE},
      grad=grad_op("Input", "Label", "Weight", "Bias", "SampleWeight", "CustomDistProbs", "CustomDistAlias",
                   "CustomDistAliasProbs", "SampleLogits", "SampleLabels"))


def _row_conv_infer(ctx):
    x, kernel = ctx.shape("X"), ctx.shape("Filter")
    dtype = one_dtype(ctx, "X", "Filter")
    check_float(ctx, "X")
    if x is not None and len(x) not in (2, 3):   # [rows, dim] must have a LoD when it runs
        ctx.fail(f"row_conv needs X [rows, dim] (a LoD tensor) or [batch, time, dim] (padded), got {x}")
    if kernel is not None and (len(kernel) != 2 or (x is not None and not dims_match(kernel[1], x[-1]))):
        ctx.fail(f"row_conv needs Filter [future_context + 1, dim] with X's dim, got Filter {kernel} for X {x}")
    return {"Out": (x, dtype)}


defop("row_conv", ["X", "Filter"], infer=_row_conv_infer, grad=grad_op("X", "Filter"))

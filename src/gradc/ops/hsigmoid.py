"""The hierarchical sigmoid (nn.HSigmoidLoss): a binary logistic loss along each label's path in a tree of
classes, the default complete binary tree of ``num_classes`` leaves or a custom one (PathTable: the node
of each step, -1 after the path's end; PathCode: the branch taken)."""

from __future__ import annotations

from ..ir import AttrType
from ..registry import defop, grad_op, typed
from ..shapes import dims_match


def _infer(ctx):
    x, w, label = ctx.shape("X"), ctx.shape("W"), ctx.shape("Label")
    if len(x) != 2 or len(w) != 2:
        ctx.fail(f"X {x} and W {w} must be matrices")
    if not dims_match(w[1], x[1]):
        ctx.fail(f"W {w} must have X's feature size {x[1]} as its second dim")
    if not label or not dims_match(label[0], x[0]) or label[1:] not in ([], [1]):
        ctx.fail(f"Label {label} must be [{x[0]}] or [{x[0]}, 1] (one class per row of X)")
    if ctx.has("PathTable") != ctx.has("PathCode"):
        ctx.fail("a custom tree needs both PathTable and PathCode")
    if ctx.has("PathTable"):
        table, code = ctx.shape("PathTable"), ctx.shape("PathCode")
        if len(table) != 2 or not dims_match(table[0], x[0]) or code != table:
            ctx.fail(f"PathTable {table} and PathCode {code} must both be [{x[0]}, path length]")
    elif ctx.attr("num_classes") < 2:
        ctx.fail(f"num_classes={ctx.attr('num_classes')} must be at least 2")
    if ctx.has("Bias") and ctx.shape("Bias") not in ([w[0], 1], [w[0]]):
        ctx.fail(f"Bias {ctx.shape('Bias')} must be [{w[0]}, 1], one bias per row of W")
    return {"Out": ([x[0], 1], ctx.dtype("X")), "W_Out": (w, ctx.dtype("W"))}


# W_Out is W itself (Paddle's layer passes the same var): a hook for remote tables, left unchanged here.
# PreOut, softplus of each step's logit, is what Paddle's grad reads. is_sparse gives W a SelectedRows gradient
# (backward/sparse.py): the path nodes' rows.
REMOTE = "parameter-server tables are not supported"
defop("hierarchical_sigmoid", ["X", "W", "Label", "PathTable?", "PathCode?", "Bias?"], ["Out", "PreOut", "W_Out"],
      attrs={"num_classes": 2, "is_sparse": False, "epmap": typed([], AttrType.STRINGS),
             "height_sections": typed([], AttrType.LONGS), "table_names": typed([], AttrType.STRINGS),
             "trainer_id": 0},
      no_grad_inputs=["Label", "PathTable", "PathCode"], no_grad_outputs=["PreOut", "W_Out"], infer=_infer,
      alias_outputs=["W_Out"],
      unsupported_attrs={"epmap": REMOTE, "table_names": REMOTE, "height_sections": REMOTE},
      grad=grad_op("X", "W", "Label", "PathTable", "PathCode", "Bias", "PreOut"))

"""Fine-tuning a saved model: a loss appended to a model that has none (what paddle.jit.save and save_inference_model
write, legacy or PIR), ``gradc compile model.json -o train.pb --add-loss cross-entropy --optimizer adam``, and its
test mode undone. (Not add_loss.py: a module named as its function shadows it in gradc.training once imported.)

    loss = add_loss(program, "cross-entropy", label="label")   # the mean cross entropy of the model's one output

cross-entropy is Paddle's F.cross_entropy over the last axis (or ``axis``: 1 for a segmentation output [N, C, H, W])
against integer class labels of the output's shape with 1 there ([N, 1, H, W]), its mean over the labels other than
``ignore_index`` (a segmentation map's 255 borders) when one is given; an output a softmax op writes is scored through
that softmax's input (the same loss, without the log of a rounded probability).
mse is F.mse_loss against float targets of the output's shape; ctc is nn.CTCLoss over scores a step [N, T, C] against
padded labels and their lengths (finetune_ctc.py). The label var is a new input of the program. A
legacy model file marks no var a parameter (save_inference_model drops the mark): the persistable float vars an op
reads where a gradient flows (weights, biases, norms' scales; not running statistics) are marked then. A saved model
is in test mode (dropout off, batch norm on its running statistics) and fine-tunes so unless set_train_mode turns it
back, as ``model.train()`` does to the model in Paddle before export.
"""

from __future__ import annotations

from .. import registry
from ..backward import default_loss
from ..errors import GradcError
from ..ir import DIFFERENTIABLE_DTYPES, AttrType, Block, Program, VarType
from ..ops.infer import InferContext
from .finetune_ctc import append_ctc

KINDS = ("cross-entropy", "mse", "ctc")


def add_loss(program: Program, kind: str = "cross-entropy", label: str = "label", output: str | None = None,
             axis: int = -1, ignore_index: int | None = None) -> str:
    """Append ``kind``'s loss of ``output`` (default: the model's one fetch target) against the new input ``label``
    to block 0, cross-entropy's classes along ``axis``; return the loss var (a float scalar)."""
    if kind not in KINDS:
        raise GradcError(f"unknown loss '{kind}' to add (known: {', '.join(KINDS)})")
    block = program.global_block
    own = None if output else default_loss(program, notice=False)
    if own is not None:
        raise GradcError(f"the program has a loss of its own ({own}): compile it without --add-loss (add_loss is for a "
                         f"model without one; --loss-of NAME adds one all the same)")
    output = output or _one_output(block)
    var = block.find_var(output)
    if var is None:
        raise GradcError(f"the output '{output}' the loss scores is not a var of block 0")
    if var.dtype not in (VarType.FP32, VarType.FP64) or var.shape is None:
        raise GradcError(f"the output '{output}' the loss scores is not a float tensor of known shape")
    writer = next((op for op in reversed(block.ops) if output in op.output_names()), None)
    if writer is not None and getattr(registry.get(writer.type), "grad", None) is registry.NO_GRAD:
        raise GradcError(f"the output '{output}' is written by {writer.type} (block 0, op {block.ops.index(writer)}), "
                         f"which has no gradient: a loss of it trains nothing (score an output a gradient flows back "
                         f"from, a detector's head before its decoding and NMS: --loss-of NAME)")
    mark_parameters(block)
    if kind == "ctc":   # scores a step, [N, T, C]: through their softmax, as nn.CTCLoss takes logits
        return append_ctc(block, _softmax_input(block, output, 2) if len(var.shape) == 3 else output, label, _fresh,
                          _mean)
    if block.find_var(label) is not None:
        raise GradcError(f"the label var '{label}' is already a var of the program; name the labels otherwise "
                         f"(--label NAME)")
    if kind == "mse":
        block.create_var(label, var.shape, var.dtype, need_check_feed=True).stop_gradient = True
        errors = _fresh(block, "mse", var.shape, var.dtype)
        block.append_op("elementwise_sub", {"X": [output], "Y": [label]}, {"Out": [errors]}, {"axis": -1})
        squares = _fresh(block, "mse", var.shape, var.dtype)
        block.append_op("square", {"X": [errors]}, {"Out": [squares]}, {})
        return _mean(block, squares, var.dtype)
    if len(var.shape) < 2 or not 1 <= axis % max(len(var.shape), 1) < len(var.shape):
        raise GradcError(f"the output '{output}' is {var.shape}: cross-entropy scores classes along an axis after "
                         f"the batch's (the last, or --class-axis) of an output of rank 2 or more")
    axis %= len(var.shape)
    label_shape = [*var.shape[:axis], 1, *var.shape[axis + 1:]]
    block.create_var(label, label_shape, VarType.INT64, need_check_feed=True).stop_gradient = True
    logits = _softmax_input(block, output, axis)
    probabilities = _fresh(block, "cross_entropy", var.shape, var.dtype)
    losses = _fresh(block, "cross_entropy", label_shape, var.dtype)
    block.append_op("softmax_with_cross_entropy", {"Logits": [logits], "Label": [label]},
                    {"Softmax": [probabilities], "Loss": [losses]},
                    {"axis": -1 if axis == len(var.shape) - 1 else axis,   # the last: -1, as F.cross_entropy writes it
                     **({} if ignore_index is None else {"ignore_index": ignore_index})})
    if ignore_index is None:
        return _mean(block, losses, var.dtype)
    return _mean_of_counted(block, losses, label, ignore_index, var.dtype)


def mark_parameters(block: Block) -> list[str]:
    """In a block that marks no var a parameter, mark the persistable float tensors its ops read through slots a
    gradient flows through; return their names (none when the block marks any already)."""
    if any(var.is_parameter for var in block.vars.values()):
        return []
    marked = {}
    for op in block.ops:
        opdef = registry.get(op.type)
        frozen = opdef.no_grad_inputs if opdef is not None else frozenset(op.inputs)
        for slot, names in op.inputs.items():
            for name in names if slot not in frozen else ():
                var = block.find_var(name)
                if (var is not None and var.persistable and var.type == VarType.DENSE_TENSOR
                        and var.dtype in DIFFERENTIABLE_DTYPES and not var.stop_gradient):
                    marked[name] = var
    for var in marked.values():
        var.is_parameter = True
    if marked:
        block.program.mark_changed()
    return sorted(marked)


def test_mode_ops(program: Program) -> dict[str, int]:
    """op type -> how many ops of it compute otherwise in test mode (is_test set on a batch norm, a dropout or an op
    with a dropout of its own, rrelu), in every block: export sets is_test on conv2d and pool2d too, inert there."""
    counts: dict[str, int] = {}
    for block in program.blocks:
        for op in block.ops:
            if op.attrs.get("is_test") is True and _mode_matters(op):
                counts[op.type] = counts.get(op.type, 0) + 1
    return counts


def _mode_matters(op) -> bool:
    return "use_global_stats" in op.attrs or op.type == "rrelu" or any("dropout" in name for name in op.attrs)


def set_train_mode(program: Program) -> dict[str, int]:
    """Undo the test mode a saved model is in: is_test off (dropout drops, recurrent ops keep their states for the
    backward), and on the ops it turns, use_global_stats off (batch norm normalises with the batch's statistics and
    updates the running ones). Returns op type -> ops turned whose computation changes (test_mode_ops)."""
    turned = test_mode_ops(program)
    for block in program.blocks:
        for idx, op in enumerate(block.ops):
            if op.attrs.get("is_test") is True:
                op.set_attr("is_test", False, AttrType.BOOLEAN)
                if op.attrs.get("use_global_stats") is True:
                    op.set_attr("use_global_stats", False, AttrType.BOOLEAN)
                _declare_training_outputs(block, idx, op)
    program.mark_changed()
    return turned


def _declare_training_outputs(block: Block, idx: int, op) -> None:
    """Outputs a saved model declares as test mode leaves them (batch norm's saved statistics, of shape []) take the
    shapes training mode writes."""
    opdef = registry.get(op.type)
    try:
        inferred = opdef.infer(InferContext(op, block, idx)) if opdef is not None and opdef.infer else {}
    except Exception:  # noqa: BLE001 - shapes the rule cannot read: the declarations stay
        return
    for slot, result in (inferred or {}).items():
        names = op.outputs.get(slot) or []
        if isinstance(result, tuple) and len(names) == 1 and result[0] is not None:
            var = block.find_var(names[0])
            if var is not None and (var.shape is None or len(var.shape) != len(result[0])):
                var.shape = list(result[0])


def _one_output(block: Block) -> str:
    targets = [name for op in block.ops if op.type == "fetch" for name in op.input("X")]
    if len(targets) != 1:
        found = f"its outputs: {', '.join(targets)}" if targets else "it has no fetch ops"
        raise GradcError(f"which output does the loss score? ({found}): name it (--loss-of NAME)")
    return targets[0]


def _softmax_input(block: Block, output: str, axis: int) -> str:
    """The logits a softmax over ``axis`` turned into ``output``, else ``output`` itself."""
    writers = [op for op in block.ops if output in op.output_names()]
    rank = len(block.var(output).shape)
    if len(writers) == 1 and writers[0].type == "softmax" and writers[0].attr("axis", -1) % rank == axis:
        return writers[0].input("X")[0]
    return output


def _mean(block: Block, values: str, dtype) -> str:
    loss = _fresh(block, "mean", [], dtype)
    block.append_op("reduce_mean", {"X": [values]}, {"Out": [loss]}, {"reduce_all": True, "dim": [], "keep_dim": False})
    return loss


def _mean_of_counted(block: Block, losses: str, label: str, ignore_index: int, dtype) -> str:
    """The losses' sum over the number of labels other than ``ignore_index`` (at least one), as F.cross_entropy's
    mean leaves the ignored ones out."""
    total = _fresh(block, "sum", [], dtype)
    block.append_op("reduce_sum", {"X": [losses]}, {"Out": [total]}, {"reduce_all": True, "dim": [], "keep_dim": False})
    ignored = _fresh(block, "fill_constant", [1], VarType.INT64)
    block.append_op("fill_constant", {}, {"Out": [ignored]},
                    {"shape": [1], "dtype": int(VarType.INT64), "value": float(ignore_index)})
    kept = _fresh(block, "not_equal", block.var(label).shape, VarType.BOOL)
    block.append_op("not_equal", {"X": [label], "Y": [ignored]}, {"Out": [kept]}, {"axis": -1})
    ones = _fresh(block, "cast", block.var(label).shape, dtype)
    block.append_op("cast", {"X": [kept]}, {"Out": [ones]}, {"in_dtype": int(VarType.BOOL), "out_dtype": int(dtype)})
    count, one = _fresh(block, "sum", [], dtype), _fresh(block, "fill_constant", [], dtype)
    block.append_op("reduce_sum", {"X": [ones]}, {"Out": [count]}, {"reduce_all": True, "dim": [], "keep_dim": False})
    block.append_op("fill_constant", {}, {"Out": [one]}, {"shape": [], "dtype": int(dtype), "value": 1.0})
    at_least_one, loss = _fresh(block, "max", [], dtype), _fresh(block, "mean", [], dtype)
    block.append_op("elementwise_max", {"X": [count], "Y": [one]}, {"Out": [at_least_one]}, {"axis": -1})
    block.append_op("elementwise_div", {"X": [total], "Y": [at_least_one]}, {"Out": [loss]}, {"axis": -1})
    return loss


def _fresh(block: Block, stem: str, shape, dtype) -> str:
    """A new var named as Paddle names a layer's output (``mean_0.tmp_0``), after any of that name already there."""
    name = block.unused_name(stem + "_{}.tmp_0")
    block.create_var(name, shape, dtype)
    return name

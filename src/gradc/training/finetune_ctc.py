"""The CTC loss ``gradc compile --add-loss ctc`` appends to an exported recogniser (a PaddleOCR line reader: scores a
step, [N, T, C], its width the time axis), as nn.CTCLoss(blank, reduction='mean') computes it: warpctc over the
logits (through the softmax that wrote the output, if one did) made time-major, every step of T read (T taken at run
time: an export of any width), each line's loss over its label length, their mean. The labels (int32 [N, L], padded)
and their lengths (int64 [N]) are new inputs."""

from __future__ import annotations

from ..errors import GradcError
from ..ir import Block, VarType
from .ctc_args import parse_ctc


def ctc_inputs(label: str) -> tuple[str, str, int]:
    """``LABEL[,LENGTHS[,BLANK]]``: the labels' input, their lengths' (default LABEL_len) and the blank (default 0)."""
    try:
        labels, lengths, blank = parse_ctc(label if "," in label else f"{label},{label}_len")
    except GradcError:
        raise GradcError(f"--label {label!r}: with --add-loss ctc give LABEL[,LENGTHS[,BLANK]] (the padded labels' "
                         f"input, their lengths' (default LABEL_len) and the blank class (default 0))") from None
    return labels, lengths, 0 if blank is None else blank


def append_ctc(block: Block, logits: str, label: str, fresh, mean) -> str:
    """Append the loss of ``logits`` [N, T, C] against the new inputs ``label`` names (ctc_inputs); ``fresh(block,
    stem, shape, dtype)`` makes a var, ``mean(block, values, dtype)`` their mean: return the loss var."""
    var = block.var(logits)
    if len(var.shape) != 3:
        raise GradcError(f"the output '{logits}' is {var.shape}: the CTC loss scores an output of scores a step, "
                         f"[N, T, C] (batch, time, classes with the blank)")
    labels, lengths, blank = ctc_inputs(label)
    for name in (labels, lengths):
        if block.find_var(name) is not None:
            raise GradcError(f"the label var '{name}' is already a var of the program; name the labels otherwise "
                             f"(--label LABEL,LENGTHS)")
    batch, steps, classes = var.shape
    if 0 <= classes <= blank:
        raise GradcError(f"the blank {blank} is not one of the {classes} classes of '{logits}' {var.shape}")
    block.create_var(labels, [batch, -1], VarType.INT32, need_check_feed=True).stop_gradient = True
    block.create_var(lengths, [batch], VarType.INT64, need_check_feed=True).stop_gradient = True
    time_major, layout = fresh(block, "transpose", [steps, batch, classes], var.dtype), fresh(
        block, "transpose", [0, batch, steps, classes], var.dtype)
    block.append_op("transpose2", {"X": [logits]}, {"Out": [time_major], "XShape": [layout]}, {"axis": [1, 0, 2]})
    losses, grad = fresh(block, "warpctc", [batch, 1], var.dtype), fresh(block, "warpctc", [steps, batch, classes],
                                                                         var.dtype)
    block.append_op("warpctc", {"Logits": [time_major], "Label": [labels], "LabelLength": [lengths],
                                "LogitsLength": [_every_step(block, logits, fresh)]},
                    {"Loss": [losses], "WarpCTCGrad": [grad]}, {"blank": blank, "norm_by_times": False})
    flat, flat_layout = fresh(block, "squeeze", [batch], var.dtype), fresh(block, "squeeze", [0, batch, 1], var.dtype)
    block.append_op("squeeze2", {"X": [losses]}, {"Out": [flat], "XShape": [flat_layout]}, {"axes": [-1]})
    divisor, per_label = fresh(block, "cast", [batch], var.dtype), fresh(block, "div", [batch], var.dtype)
    block.append_op("cast", {"X": [lengths]}, {"Out": [divisor]},
                    {"in_dtype": int(VarType.INT64), "out_dtype": int(var.dtype)})
    block.append_op("elementwise_div", {"X": [flat], "Y": [divisor]}, {"Out": [per_label]}, {"axis": -1})
    return mean(block, per_label, var.dtype)


def _every_step(block: Block, logits: str, fresh) -> str:
    """Each line's input length, T, read from the logits' shape when the program runs: int64 [N]."""
    batch = block.var(logits).shape[0]
    row, zeros = fresh(block, "slice", [batch], block.var(logits).dtype), fresh(block, "full_like", [batch],
                                                                                VarType.INT64)
    block.append_op("slice", {"Input": [logits]}, {"Out": [row]},
                    {"axes": [1, 2], "starts": [0, 0], "ends": [1, 1], "decrease_axis": [1, 2], "infer_flags": [1, 1]})
    block.append_op("fill_any_like", {"X": [row]}, {"Out": [zeros]}, {"value": 0.0, "dtype": int(VarType.INT64)})
    dims, steps32 = fresh(block, "shape", [3], VarType.INT32), fresh(block, "slice", [1], VarType.INT32)
    block.append_op("shape", {"Input": [logits]}, {"Out": [dims]}, {})
    block.append_op("slice", {"Input": [dims]}, {"Out": [steps32]},
                    {"axes": [0], "starts": [1], "ends": [2], "decrease_axis": [], "infer_flags": [1]})
    steps, every = fresh(block, "cast", [1], VarType.INT64), fresh(block, "tmp", [batch], VarType.INT64)
    block.append_op("cast", {"X": [steps32]}, {"Out": [steps]},
                    {"in_dtype": int(VarType.INT32), "out_dtype": int(VarType.INT64)})
    block.append_op("elementwise_add", {"X": [zeros], "Y": [steps]}, {"Out": [every]}, {"axis": -1})
    return every

"""What `gradc compile` says of Paddle 3.3.1's F.cross_entropy with label_smoothing and ignore_index: its mean
divides by not_equal(the smoothed labels, ignore_index) summed, a count of every class of every label (N S C, the
ignored ones too, since no smoothed entry is 0), and its softmax_with_cross_entropy of soft labels ignores nothing:
the loss is 1/C of the mean over the labels, and the padding trains as a class (a language model learns to predict
it). gradc runs the program as Paddle does; the warning names it."""

from __future__ import annotations

import warnings

from ..errors import GradcWarning
from ..ir import Block


def warn_smoothed_count(block: Block, losses: list[str]) -> None:
    """A warning for each not_equal of a label_smooth output whose count a loss is divided by."""
    writers = {name: op for op in block.ops for name in op.output_names()}
    smoothed = {name for op in block.ops if op.type == "label_smooth" for name in op.output_names()}
    for loss in losses:
        op = writers.get(loss)
        counts = _sources(writers, op.input("Y")) if op is not None and op.type == "elementwise_div" else []
        for count in counts:
            if count.type == "not_equal" and smoothed.intersection(count.input("X")):
                warnings.warn(f"the loss '{loss}' is divided by the count of the smoothed labels "
                              f"'{count.input('X')[0]}' not equal to the ignore_index: every class of every label, "
                              f"ignored ones too (Paddle 3.3.1's F.cross_entropy with label_smoothing and "
                              f"ignore_index): the loss is 1/classes of the mean over the labels and the ignored "
                              f"labels train as a class; smooth by hand for the mean over the counted labels",
                              GradcWarning, stacklevel=3)
                return


def _sources(writers: dict, names: list[str]) -> list:
    """The ops the vars ``names`` are computed from, nearest first."""
    found, queue, seen = [], list(names), set()
    while queue:
        name = queue.pop(0)
        op = writers.get(name)
        if op is None or id(op) in seen:
            continue
        seen.add(id(op))
        found.append(op)
        queue.extend(op.input_names())
    return found

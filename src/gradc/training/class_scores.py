"""The class scores and labels an evaluation's accuracy is of, when not named (--scores): an inference model's
outputs paired with the data's arrays (--label SCORES=LABEL), the cross-entropy op whose labels the data holds (the
loss's own first, then the other heads'), labels the program computes from the data (a captioner's next tokens), or
a saved inference model's one output of rank >= 2 against the one array it does not read; else what is missing,
said."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import GradcError
from ..ir import Program
from ..pairing import BACKWARD, op_kinds
from .ctc_eval import ctc_hint
from .eval_plan import EvalPlan
from .heads import Head, loss_heads, named_heads, paired, pairing, score_outputs
from .labels import classifiers
from .programs import computed_from_data, missing_inputs, reads_data_values


def find_scores(result: EvalPlan, forward: Program, names: Sequence[str], label: str | None) -> None:
    """Set on ``result`` the class scores and labels its accuracy is of (their class axis and ignore_index; a
    multi-head model's heads), found in ``forward`` for data holding the arrays ``names``; refuse a ``label`` that no
    class scores are scored against."""
    if pairs := paired(label):   # an inference model's outputs, each with its labels
        heads = named_heads(forward, names, pairs)
        result.scores, result.label, result.axis = heads[0].scores, heads[0].label, None
        result.heads = heads if len(heads) > 1 else []
        return
    direct = _computing(forward, result.losses)   # MAML's query classifier before its support one
    for found in sorted(classifiers(forward), key=lambda found: found.index not in direct):
        if found.label in names and (label is None or label == found.label):
            result.scores, result.label, result.axis = found.scores, found.label, found.axis
            result.ignore_index = found.ignore_index
            others = loss_heads(forward, names, found.label) if label is None else []
            result.heads = [Head(found.scores, found.label, found.axis, found.ignore_index), *others] if others else []
            return
    if label is None:   # labels the program computes from the data: a captioner's next tokens, caption[:, 1:]
        derived = computed_from_data(forward.global_block)
        for found in classifiers(forward):
            if (found.label in derived and reads_data_values(forward.global_block, found.label)
                    and not missing_inputs(forward, [found.label], names)):
                result.scores, result.label, result.axis = found.scores, found.label, found.axis
                result.ignore_index, result.label_computed = found.ignore_index, True
                return
    block, given = forward.global_block, label
    scores = score_outputs(block)
    if label is None:
        unread = [name for name in names if block.find_var(name) is None]
        label = unread[0] if len(unread) == 1 else None
    elif label not in names:
        raise GradcError(f"evaluation: --label {label}: the data has no such array (it holds {', '.join(names)})")
    if len(scores) > 1 and given is not None:   # which output is whose: the user's to say
        raise GradcError(f"evaluation: {pairing(scores)}")
    if len(scores) == 1 and label is not None:
        result.scores, result.label, result.axis = scores[0], label, None
    elif len(scores) == 1 and not result.scalars:   # nothing else to report: say what the data lacks
        unread = [name for name in names if block.find_var(name) is None]
        lacking = (f"several arrays it does not read could be them ({', '.join(unread)}): pick one with --label NAME"
                   if unread else f"it holds only what the model reads ({', '.join(names)}): add an array of class "
                                  f"labels (any name the model does not read, or --label NAME)")
        raise GradcError(f"evaluation: the model's class scores ({scores[0]}) need labels to score; {lacking}"
                         f"{ctc_hint(block, scores[0], unread)}")
    elif len(scores) > 1 and label is not None and not result.scalars:   # a multi-head model's outputs
        raise GradcError(f"evaluation: the model has several outputs that could be class scores ({', '.join(scores)}): "
                         f"name the one to score against '{label}' with --scores NAME (each head of a multi-head "
                         f"model in turn)")
    elif given is not None:   # an input the model reads (its features), or labels of a program with no class scores
        readers = sorted({found.label for found in classifiers(forward)})
        meant = f" (the labels its classification ops read: {', '.join(readers)})" if readers else ""
        raise GradcError(f"evaluation: --label {label}: no class scores of the program are scored against it{meant}")


def _computing(forward: Program, losses: Sequence[str]) -> set[int]:
    """The indices of the forward ops ``losses`` are computed from, not through a backward op (an inner step's)."""
    block, needed, found = forward.global_block, set(losses), set()
    kinds = op_kinds(block)
    for index in range(len(block.ops) - 1, -1, -1):
        op = block.ops[index]
        if kinds[index] != BACKWARD and needed.intersection(op.output_names()):
            needed.update(op.input_names())
            found.add(index)
    return found

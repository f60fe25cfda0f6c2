"""Class labels and embedding ids: the classification-loss ops of a program (which var holds the scores, which the
labels, how many classes the scores' declared shape gives), and the up-front check that data's labels and the ids
its embeddings look up are in range, so a bad one costs no epoch (the kernel would find it only when a batch
reaches it)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import registry
from ..errors import FeedError, GradcError, op_location
from ..ir import Program

# op type -> (the scores' slot, the class axis when the op has no axis attribute)
CLASS_LOSSES = {"softmax_with_cross_entropy": ("Logits", -1), "cross_entropy": ("X", -1),
                "cross_entropy2": ("X", -1), "nll_loss": ("X", 1)}
EMBEDDINGS = ("lookup_table", "lookup_table_v2")
# ops that change only a label's shape: F.cross_entropy unsqueezes labels [N, S] to [N, S, 1]
RESHAPES = ("unsqueeze2", "unsqueeze", "squeeze2", "squeeze", "reshape2", "reshape", "flatten_contiguous_range",
            "flatten2", "assign")


@dataclass(frozen=True)
class Classifier:
    index: int            # the op's index in block 0
    op_type: str
    scores: str           # logits or probabilities, the classes along ``axis``
    label: str
    axis: int
    classes: int | None   # None: the scores' declared shape does not fix it
    ignore_index: int | None

    def where(self) -> str:
        return op_location(0, self.index, self.op_type)


def classifiers(program: Program) -> list[Classifier]:
    """The hard-label classification losses of block 0, in order."""
    block, found = program.global_block, []
    for index, op in enumerate(block.ops):
        if op.type not in CLASS_LOSSES or not op.input("Label") or not op.input(CLASS_LOSSES[op.type][0]):
            continue   # an op without its scores: the run names the empty slot
        opdef = registry.get(op.type)
        attrs = {**(opdef.attrs if opdef is not None else {}), **op.attrs}
        label = label_source(block, index, op.input("Label")[0])
        if attrs.get("soft_label") and (label := _smoothed_from(block, index, label)) is None:
            continue   # soft labels of no one-hot class: nothing the scores' best class could match
        slot, axis = CLASS_LOSSES[op.type]
        scores = op.input(slot)[0]
        var = block.find_var(scores)
        axis = int(attrs.get("axis", axis))
        shape = var.shape if var is not None else None
        classes = None
        if shape and -len(shape) <= axis < len(shape) and shape[axis] > 0:
            classes = int(shape[axis])
        ignore = attrs.get("ignore_index") if not attrs.get("soft_label") else None
        found.append(Classifier(index, op.type, scores, label, axis, classes,
                                int(ignore) if isinstance(ignore, (int, np.integer)) else None))
    return found


def chosen_scores(program: Program, names: list[str], label: str | None, scores: str) -> tuple[str, int | None,
                                                                                               int | None]:
    """The labels, class axis and ignore_index of the class scores ``scores`` a user named (one head of a multi-head
    model, which no loss of the program scores): ``label``, else the labels of its own cross entropy, of another
    (the heads share their labels), or the one array of ``names`` the program does not read; the axis and
    ignore_index those of its own cross entropy, else the axis the labels' shape leaves out (None)."""
    block = program.global_block
    if not any(scores in op.output_names() for op in block.ops):
        scored = [clf.scores for clf in classifiers(program)]
        offer = f" (its cross entropy scores {', '.join(dict.fromkeys(scored))})" if scored else ""
        raise GradcError(f"evaluation: --scores {scores}: no op of the forward part of the program writes it{offer}")
    found = classifiers(program)
    own = [clf for clf in found if clf.scores == scores]
    if label is None:
        unread = [name for name in names if block.find_var(name) is None]
        held = [clf.label for clf in own + found if clf.label in names] or (unread if len(unread) == 1 else [])
        if not held:
            raise GradcError(f"evaluation: --scores {scores}: no labels to score them against: the data holds no "
                             f"labels of the program's cross entropy; name them with --label NAME")
        label = held[0]
    elif label not in names:
        raise GradcError(f"evaluation: --label {label}: the data has no such array (it holds {', '.join(names)})")
    return label, own[0].axis if own else None, own[0].ignore_index if own else None


def label_source(block, index: int, label: str) -> str:
    """The var whose values the label of op ``index`` holds, followed back through ops that only reshape it (the
    data's array, where F.cross_entropy reads an unsqueezed copy)."""
    for op in reversed(block.ops[:index]):
        if label not in op.output_names():
            continue
        sources = op.input("X") if op.type in RESHAPES and op.output("Out") == [label] else []
        if len(sources) != 1:
            return label
        label = sources[0]
    return label


def _smoothed_from(block, index: int, soft: str) -> str | None:
    """The class ids whose one-hot, smoothed by label_smooth or not, are the soft labels ``soft`` of op ``index``
    (a translation model's F.label_smooth(F.one_hot(target))): its best class is the id's."""
    for position in range(index - 1, -1, -1):
        op = block.ops[position]
        if soft not in op.output_names():
            continue
        if op.type == "label_smooth" and not op.input("PriorDist"):
            soft = op.input("X")[0]
        elif op.type in ("one_hot", "one_hot_v2"):
            return label_source(block, position, op.input("X")[0])
        else:
            return None
    return None


def check_indices(program: Program, arrays: dict, source: str, item: str = "array",
                  sequences: dict | None = None) -> None:
    """Refuse a label outside 0 .. classes-1 (other than the op's ignore_index), or an id outside an embedding's
    rows (other than its padding_idx), in the data's ``arrays``, naming the data, the array (a .csv's column), the
    value, the example and the class or row count the program gives. ``sequences``: the offsets of the arrays whose
    rows are sequences' (NAME@LOD0), whose row is named as its example's."""
    _check_ids(program, arrays, source, item, sequences or {})
    _check_ctc_labels(program, arrays, source, item)
    for found in classifiers(program):
        if found.classes is None or found.label not in arrays:
            continue
        bad = _in_example(out_of_range(arrays[found.label], found.classes, found.ignore_index),
                          (sequences or {}).get(found.label))
        if bad is not None:
            allowed = f"0 to {found.classes - 1}"
            if found.ignore_index is not None:
                allowed += f", or {found.ignore_index} (its ignore_index) to leave an example out"
            dim = "the last dim" if found.axis == -1 else f"dim {found.axis}"
            raise label_error(source, item, found.label, bad,
                              f"{found.where()} has {found.classes} classes ({dim} of '{found.scores}')", allowed)


def label_error(source: str, item: str, label: str, bad: tuple[int, int | str], classes: str,
                allowed: str) -> FeedError:
    """The one-line refusal of the label ``bad`` (value, example) that ``classes`` (what scores how many) rules out."""
    return FeedError(f"{source}: {item} '{label}' holds the label {bad[0]} (example {bad[1]}), but {classes}: a label "
                     f"is {allowed}")


def _in_example(bad: tuple[int, int] | None, offsets) -> tuple[int, int | str] | None:
    """(value, example) of a bad value found at row ``bad[1]`` (from 1): a sequence's row is named by its example,
    from 1, and its place in it ("13, token 5")."""
    if bad is None or offsets is None:
        return bad
    example = int(np.searchsorted(offsets, bad[1] - 1, side="right"))
    return bad[0], f"{example}, token {bad[1] - int(offsets[example - 1])}"


def _check_ids(program: Program, arrays: dict, source: str, item: str, sequences: dict) -> None:
    block = program.global_block
    for index, op in enumerate(block.ops):
        ids = op.input("Ids")[0] if op.type in EMBEDDINGS and op.input("Ids") else None
        if ids not in arrays:
            continue
        table = op.input("W")[0]
        rows = (getattr(block.find_var(table), "shape", None) or [-1])[0]
        padding = op.attrs.get("padding_idx", -1)
        padding = None if padding == -1 else padding   # -1: Paddle's kNoPadding, so an id of -1 is out of range
        bad = _in_example(out_of_range(arrays[ids], rows, padding) if rows > 0 else None, sequences.get(ids))
        if bad is not None:
            beyond = padding is not None and padding >= rows   # a padding id the rows do not already allow
            allowed = f"0 to {rows - 1}" + (f", or {padding} (its padding_idx)" if beyond else "")
            raise FeedError(f"{source}: {item} '{ids}' holds the id {bad[0]} (example {bad[1]}), but "
                            f"{op_location(0, index, op.type)} looks ids up in the {rows} rows of '{table}': an id "
                            f"is {allowed}")


def _check_ctc_labels(program: Program, arrays: dict, source: str, item: str) -> None:
    """A warpctc op's padded labels and their lengths in the data: each length within the labels' width, each label
    within its length a class of the logits other than the blank (an OCR line's character missing from the
    dictionary, mapped to the blank), found before the first step, not at the batch that holds it."""
    block = program.global_block
    for index, op in enumerate(block.ops):
        if op.type != "warpctc" or not op.input("LabelLength"):
            continue
        label, lengths = op.input("Label")[0], op.input("LabelLength")[0]
        if label not in arrays or lengths not in arrays or np.ndim(arrays[label]) != 2:
            continue
        labels, sizes = np.asarray(arrays[label]), np.asarray(arrays[lengths]).reshape(-1)
        where, width = op_location(0, index, op.type), labels.shape[1]
        if sizes.size == labels.shape[0] and ((sizes < 0) | (sizes > width)).any():
            example = int(np.flatnonzero((sizes < 0) | (sizes > width))[0])
            raise FeedError(f"{source}: {item} '{lengths}' holds the length {int(sizes[example])} (example "
                            f"{example + 1}), but the padded labels '{label}' ({where}'s) are {width} wide: a length "
                            f"is 0 to {width}")
        classes = (getattr(block.find_var(op.input("Logits")[0]), "shape", None) or [-1])[-1]
        blank = int(op.attrs.get("blank", 0))
        read = np.arange(width) < sizes.reshape(-1, 1) if sizes.size == labels.shape[0] else np.ones(labels.shape, bool)
        bad = read & ((labels == blank) | (labels < 0) | (labels >= classes if classes > 0 else False))
        if bad.any():
            example, position = (int(i) for i in np.argwhere(bad)[0])
            allowed = f"0 to {classes - 1}" if classes > 0 else "0 or more"
            raise FeedError(f"{source}: {item} '{label}' holds the label {int(labels[example, position])} (example "
                            f"{example + 1}, position {position + 1} of its {int(sizes[example])}), but {where} "
                            f"reads labels as classes {allowed} other than its blank {blank}")


def out_of_range(labels, classes: int, ignore_index: int | None = None) -> tuple[int, int] | None:
    """The first integer label outside 0 .. classes-1 other than ``ignore_index``, and its example (from 1)."""
    labels = np.asarray(labels)
    if labels.dtype.kind not in "iu":
        return None   # a float label is refused by the dtype check, or is a soft label
    bad = ((labels < 0) | (labels >= classes)) & (labels != ignore_index)
    if not bad.any():
        return None
    position = np.unravel_index(int(np.flatnonzero(bad)[0]), labels.shape)
    return int(labels[position]), int(position[0]) + 1 if labels.ndim else 1

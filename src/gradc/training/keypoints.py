"""A pose model's keypoints scored over the whole set (``gradc evaluate --keypoints``): the program's predicted (x, y)
of each keypoint (a heatmap's argmax or soft-argmax, [N, K, 2]), or its heatmaps [N, K, H, W], whose argmax gives the
(column, row) as paddle.argmax would, against the data's true ones, each keypoint counted
where the data's visibility (a target weight, any shape of N x K values) is above 0. The mean pixel error is the mean
Euclidean distance over the counted keypoints; PCK@T the share of them within T of the truth, in the coordinates'
own units (heatmap pixels, or pixels of the image), or PCK@T*SIZE within T times the data's SIZE of the example (its
head segment's length: MPII's PCKh@0.5; its box's size: PCK@0.2)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from ..errors import GradcError, GradcNotice
from ..ir import Program
from .metric_inputs import checked_inputs


def parse_keypoints(value: str) -> tuple[str, ...]:
    """``PRED,TRUE[,VISIBLE]``: the program's coordinates, the data's true ones and, given, the data's visibility."""
    names = tuple(name.strip() for name in value.split(","))
    if len(names) not in (2, 3) or not all(names):
        raise GradcError(f"--keypoints {value!r}: give PRED,TRUE[,VISIBLE] (the program's (x, y) of each keypoint, "
                         f"[N, K, 2], the data's true ones of that shape and its visibility, > 0 where counted)")
    return names


class PCK(NamedTuple):
    """A PCK's distance: ``distance`` in the coordinates' units, or with ``size`` that share of the data's array of
    that name, a length an example (or a keypoint)."""
    distance: float
    size: str | None = None

    @property
    def key(self) -> str:
        return f"pck@{self.distance:g}" + (f"*{self.size}" if self.size else "")


def parse_pck(value) -> PCK:
    """``T`` or ``T*SIZE`` (a PCK, a float or such a string)."""
    if isinstance(value, PCK):
        return value
    number, star, size = str(value).partition("*")
    try:
        distance = float(number)
    except ValueError:
        distance = math.nan
    if not 0 <= distance < math.inf or star and not size.strip():
        raise GradcError(f"--pck {value!r}: give T or T*SIZE, T a distance of 0 or more in the coordinates' units, "
                         f"or with SIZE the share of the data's SIZE array (a head segment's length an example)")
    return PCK(distance, size.strip() or None)


def pcks(values: Sequence) -> list[PCK]:
    """Each PCK asked once, in order of distance (1 in the coordinates' units when none is)."""
    return sorted(set(map(parse_pck, values or [1.0])), key=lambda pck: (pck.distance, pck.size or ""))


def check_keypoints(program: Program, names: Sequence[str], keypoints: tuple[str, ...], sizes: Sequence[str] = ()
                    ) -> None:
    """The coordinates computed by the forward part, a pair a keypoint; the truth, visibility and PCK sizes in the
    data."""
    predicted, var = keypoints[0], checked_inputs(program, names, "--keypoints", [*keypoints, *sizes])
    shape = list(var.shape or [])
    if len(shape) != 4 and (len(shape) < 2 or shape[-1] not in (-1, 2)):
        raise GradcError(f"evaluation: --keypoints: '{predicted}' {shape} is neither an (x, y) a keypoint ([N, K, 2]) "
                         f"nor a heatmap a keypoint ([N, K, H, W])")


class KeypointTally:
    """Every counted keypoint's distance from its truth, over every batch."""

    def __init__(self, keypoints: tuple[str, ...], thresholds: Sequence):
        self.keypoints, self.thresholds, self.source = keypoints, pcks(thresholds), "data"
        self.distances: list[np.ndarray] = []
        self.seen = 0   # keypoints of every example, counted or not
        self.sizes: dict[str, list[np.ndarray]] = {pck.size: [] for pck in self.thresholds if pck.size}

    def add(self, predicted, batch: Mapping, source: str) -> None:
        predicted = np.asarray(predicted, np.float64)
        truth = np.asarray(batch[self.keypoints[1]], np.float64)
        if predicted.ndim == 4:   # heatmaps: the first of each one's highest places, as paddle.argmax picks it
            width = predicted.shape[-1]
            places = np.argmax(predicted.reshape(*predicted.shape[:2], -1), axis=-1)
            predicted = np.stack([places % width, places // width], -1).astype(np.float64)
        self.source = source
        if predicted.shape != truth.shape or predicted.shape[-1] != 2:
            raise GradcError(f"{source}: --keypoints: the coordinates '{self.keypoints[0]}' "
                             f"{list(predicted.shape)} and the truth '{self.keypoints[1]}' {list(truth.shape)} differ: "
                             f"give the same shape, an (x, y) a keypoint")
        distances = np.sqrt(np.sum((predicted - truth) ** 2, axis=-1))
        self.seen += distances.size
        counted = np.ones(distances.size, bool)
        if len(self.keypoints) > 2:
            visible = np.asarray(batch[self.keypoints[2]])
            if visible.size != distances.size:
                raise GradcError(f"{source}: --keypoints: the visibility '{self.keypoints[2]}' "
                                 f"{list(visible.shape)} holds {visible.size} values for {distances.size} keypoints: "
                                 f"give one a keypoint")
            counted = visible.reshape(-1) > 0
        self.distances.append(distances.reshape(-1)[counted])
        for name, kept in self.sizes.items():
            kept.append(self._sizes(name, batch[name], distances.shape, source)[counted])

    @staticmethod
    def _sizes(name: str, given, shape: tuple[int, ...], source: str) -> np.ndarray:
        """The PCK size of each keypoint: the data's one an example ([N] or [N, 1]) or one a keypoint ([N, K])."""
        sizes = np.asarray(given, np.float64)
        per_example = sizes.size == shape[0]
        if not (per_example or sizes.size == int(np.prod(shape))) or not np.all(np.isfinite(sizes) & (sizes >= 0)):
            raise GradcError(f"{source}: --pck: the sizes '{name}' {list(sizes.shape)} are not a length of 0 or more "
                             f"for each of the {shape[0]} examples (or each of their {shape[1]} keypoints)")
        return (np.repeat(sizes.reshape(-1), shape[1]) if per_example else sizes).reshape(-1)

    def results(self) -> dict[str, float]:
        """The mean error and each PCK over the counted keypoints; with none counted, each undefined (NaN) and a
        notice saying why: the evaluation after each epoch of gradc train must not stop the training it reports."""
        distances = np.concatenate(self.distances) if self.distances else np.zeros(0)
        if not distances.size:
            keys = ["mean_error", *(pck.key for pck in self.thresholds)]
            why = (f"none of its {self.seen:,} keypoints is visible (> 0 in '{self.keypoints[2]}')" if self.seen
                   else "it has no keypoint to score (no example)")
            warnings.warn(f"{self.source}: --keypoints: {why}: {', '.join(keys)} undefined (nan)", GradcNotice,
                          stacklevel=2)
            return dict.fromkeys(keys, math.nan)
        sizes = {name: np.concatenate(kept) for name, kept in self.sizes.items()}
        return {"mean_error": float(distances.mean()),
                **{pck.key: float(np.mean(distances <= pck.distance * (sizes[pck.size] if pck.size else 1.0)))
                   for pck in self.thresholds}}


def keypoints_hint(forward: Program, names: Sequence[str]) -> str:
    """A pose model's outputs (a keypoint's (x, y), [N, K, 2], or heatmaps [N, K, H, W]) and the data's arrays it does
    not read: the --keypoints that scores them."""
    block = forward.global_block
    targets = [name for op in block.ops if op.type == "fetch" for name in op.input("X")]
    shapes = {name: list(getattr(block.find_var(name), "shape", None) or []) for name in targets}
    poses = [name for name, shape in shapes.items() if len(shape) == 4 or len(shape) == 3 and shape[-1] == 2]
    unread = [name for name in names if block.find_var(name) is None]
    if not poses or not unread:
        return ""
    return (f", or a pose model's keypoints, their mean error and PCK (--keypoints {poses[-1]},TRUE[,VISIBLE], of the "
            f"arrays it does not read: {', '.join(unread)})")

"""A pose model's keypoints scored over the whole set (``gradc evaluate --keypoints``): the program's predicted (x, y)
of each keypoint (a heatmap's argmax or soft-argmax, [N, K, 2]), or its heatmaps [N, K, H, W], whose argmax gives the
(column, row) as paddle.argmax would, against the data's true ones, each keypoint counted
where the data's visibility (a target weight, any shape of N x K values) is above 0. The mean pixel error is the mean
Euclidean distance over the counted keypoints; PCK@T the share of them within T of the truth, in the coordinates'
own units (heatmap pixels, or pixels of the image)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import GradcError
from ..ir import Program


def parse_keypoints(value: str) -> tuple[str, ...]:
    """``PRED,TRUE[,VISIBLE]``: the program's coordinates, the data's true ones and, given, the data's visibility."""
    names = tuple(name.strip() for name in value.split(","))
    if len(names) not in (2, 3) or not all(names):
        raise GradcError(f"--keypoints {value!r}: give PRED,TRUE[,VISIBLE] (the program's (x, y) of each keypoint, "
                         f"[N, K, 2], the data's true ones of that shape and its visibility, > 0 where counted)")
    return names


def pck_key(threshold: float) -> str:
    return f"pck@{threshold:g}"


def check_keypoints(program: Program, names: Sequence[str], keypoints: tuple[str, ...]) -> None:
    """The coordinates computed by the forward part, a pair a keypoint; the truth and visibility in the data."""
    block = program.global_block
    predicted, var = keypoints[0], block.find_var(keypoints[0])
    if var is None or predicted not in {name for op in block.ops for name in op.output_names()}:
        raise GradcError(f"evaluation: --keypoints: '{predicted}' is not computed by the forward part of the program")
    for name in keypoints[1:]:
        if name not in names:
            raise GradcError(f"evaluation: --keypoints: the data has no array '{name}' (it holds {', '.join(names)})")
    shape = list(var.shape or [])
    if len(shape) != 4 and (len(shape) < 2 or shape[-1] not in (-1, 2)):
        raise GradcError(f"evaluation: --keypoints: '{predicted}' {shape} is neither an (x, y) a keypoint ([N, K, 2]) "
                         f"nor a heatmap a keypoint ([N, K, H, W])")


class KeypointTally:
    """Every counted keypoint's distance from its truth, over every batch."""

    def __init__(self, keypoints: tuple[str, ...], thresholds: Sequence[float]):
        self.keypoints, self.thresholds, self.source = keypoints, list(thresholds), "data"
        self.distances: list[np.ndarray] = []

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
        distances = np.sqrt(np.sum((predicted - truth) ** 2, axis=-1)).reshape(-1)
        if len(self.keypoints) > 2:
            visible = np.asarray(batch[self.keypoints[2]])
            if visible.size != distances.size:
                raise GradcError(f"{source}: --keypoints: the visibility '{self.keypoints[2]}' "
                                 f"{list(visible.shape)} holds {visible.size} values for {distances.size} keypoints: "
                                 f"give one a keypoint")
            distances = distances[visible.reshape(-1) > 0]
        self.distances.append(distances)

    def results(self) -> dict[str, float]:
        distances = np.concatenate(self.distances) if self.distances else np.zeros(0)
        if not distances.size:
            raise GradcError(f"{self.source}: --keypoints: no keypoint is visible (> 0 in "
                             f"'{self.keypoints[-1]}'): no error to average")
        return {"mean_error": float(distances.mean()),
                **{pck_key(t): float(np.mean(distances <= t)) for t in self.thresholds}}

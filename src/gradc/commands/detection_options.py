"""The options for a detector's mAP (--detections, --iou) of `gradc evaluate` and `gradc train --eval`."""

from __future__ import annotations

import click

from ..errors import GradcError
from ..training.detections import parse_detections, parse_iou


def _detections(ctx, param, value: str | None) -> tuple[str, ...] | None:
    try:
        return parse_detections(value) if value is not None else None
    except GradcError as exc:
        raise click.BadParameter(str(exc).removeprefix(f"--detections {value!r}: ")) from None


def _iou(ctx, param, values: tuple[float, ...]) -> list[float]:
    try:
        return parse_iou(values) if values else []
    except GradcError as exc:
        raise click.BadParameter(str(exc).partition(": ")[2]) from None


DETECTION_OPTIONS = (   # --detections ROWS,BOXES,LABELS and --iou T (repeatable)
    click.option("--iou", multiple=True, type=float, metavar="T", callback=_iou, help="--detections: "
                           "the IoU a detection must reach with a true box of its class to count (map@T, "
                           "class_ap@T). Repeatable; default 0.5."),
    click.option("--detections", metavar="ROWS,BOXES,LABELS", callback=_detections, help="A detector's "
                        "mean average precision over the whole set (VOC's: each class's detections by score, the "
                        "area under the precision envelope; map@T and class_ap@T): ROWS the rows an NMS op of the "
                        "program keeps, [M, 6] (class, score, x1, y1, x2, y2), each image's counted by the op "
                        "(multiclass_nms3's NmsRoisNum, matrix_nms's RoisNum); BOXES the data's true boxes [N, G, 4] "
                        "(x1, y1, x2, y2, in the rows' coordinates) and LABELS their classes [N, G], padding a class "
                        "below 0 or a box without area."))

"""The look shared by the HTML viewer and the DOT picture: a fill and a border colour per op kind, and for
var nodes and the grad-op links."""

from __future__ import annotations

from ..pairing import BACKWARD, FEED_FETCH, FORWARD, OPTIMIZER

KIND_ORDER = (FORWARD, BACKWARD, OPTIMIZER, FEED_FETCH)   # the viewer's kind codes are indices into this
KIND_COLORS = {   # kind -> (fill, border)
    FORWARD: ("#dbeafe", "#2563eb"),
    BACKWARD: ("#ffedd5", "#ea580c"),
    OPTIMIZER: ("#dcfce7", "#16a34a"),
    FEED_FETCH: ("#f3f4f6", "#6b7280"),
}
LOSS_BORDER = "#dc2626"
VAR_COLORS = {"plain": ("#ffffff", "#9ca3af"), "persistable": ("#fef9c3", "#ca8a04"),
              "grad": ("#fff7ed", "#fb923c")}
GRAD_LINK = "#9333ea"

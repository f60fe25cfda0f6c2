"""PIR ops that layers of the coverage table emit and that gradc's table has no row for, with the reason
(docs/pir-coverage.md lists them; the unmapped-op error names the reason)."""

from __future__ import annotations

NO_LEGACY_OP = "gradc registers no legacy op that computes it"

UNMAPPED = {
    "pd_op.broadcast_tensors": NO_LEGACY_OP + " (broadcast_tensors; nn.MultiLabelMarginLoss)",
    "pd_op.cumprod": NO_LEGACY_OP + " (cumprod; nn.MultiLabelMarginLoss)",
    "pd_op.index_put": NO_LEGACY_OP + " (index_put; nn.MultiLabelMarginLoss)",
}

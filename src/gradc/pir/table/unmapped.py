"""PIR ops that layers of the coverage table emit and that gradc's table has no row for, with the reason
(docs/pir-coverage.md lists them; the unmapped-op error names the reason)."""

from __future__ import annotations

UNMAPPED: dict[str, str] = {
    "pd_op.remainder_grad": "Paddle 3.3.1 has no kernel for it: its own training program of paddle.remainder fails",
}

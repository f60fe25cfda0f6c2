"""PIR ops that layers of the coverage table emit and that gradc's table has no row for, with the reason
(docs/pir-coverage.md lists them; the unmapped-op error names the reason)."""

from __future__ import annotations

UNMAPPED: dict[str, str] = {}

"""The arguments naming a CTC recogniser's labels (``evaluate --ctc``, ``compile --add-loss ctc --label``), read
without numpy: compile starts without it."""

from __future__ import annotations

from ..errors import GradcError


def parse_ctc(value: str) -> tuple[str, str, int | None]:
    """``LABEL,LENGTHS[,BLANK]``: the data's padded labels and their lengths, and the blank class (default: the
    program's warpctc op's, else 0)."""
    parts = [part.strip() for part in value.split(",")]
    blank = int(parts.pop()) if len(parts) == 3 and parts[2].lstrip("-").isdigit() else None
    if len(parts) != 2 or not all(parts) or blank is not None and blank < 0:
        raise GradcError(f"--ctc {value!r}: give LABEL,LENGTHS[,BLANK] (the data's padded labels [N, L], their "
                         f"lengths [N], and the blank class, 0 or more: default the warpctc op's, else 0)")
    return parts[0], parts[1], blank

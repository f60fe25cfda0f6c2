"""What the deep-MLP benchmarks share: their command line and how they report."""

from __future__ import annotations

import argparse
from pathlib import Path


def mlp_arguments(doc: str) -> argparse.Namespace:
    """--layers (fc+relu layers of the deep MLP), --rounds (the median of these is reported), --out (a file)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--layers", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path)
    return parser.parse_args()


def report(lines: list[str], out: Path | None) -> None:
    """Print the lines, and write them to ``out`` where given."""
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)

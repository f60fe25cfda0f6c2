"""Compile every .pb program under tests/ and print one line per program: its path, the verify pass's outcome and
a digest of the compiled bytes (or the error). Run it with two source trees and diff the outputs to show that a
change to the compiler leaves every compiled program byte-identical:

    PYTHONPATH=build/baseline/src .venv/bin/python tools/compile_digests.py > /tmp/before.txt
    PYTHONPATH=src .venv/bin/python tools/compile_digests.py > /tmp/after.txt
    diff /tmp/before.txt /tmp/after.txt && echo identical

The loss is the one meta.json beside the program names, else the one gradc picks by itself. A program that
already has a backward gets a second one (append_backward names its grads v@GRAD@2), so it is compiled too.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import gradc
from gradc.io import serialize
from gradc.passes import VerifyPass

ROOT = Path(__file__).resolve().parents[1]


def meta_loss(path: Path) -> str | None:
    meta = path.parent / "meta.json"
    if not meta.exists():
        return None
    data = json.loads(meta.read_text())
    loss = data.get("loss") if isinstance(data, dict) else None
    return loss if isinstance(loss, str) else None


def outcome(action) -> str:
    """'ok' or the error's type and first line: a changed message counts as a change."""
    try:
        action()
    except Exception as exc:  # noqa: BLE001 - every failure is part of the digest
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return "ok"


def digest(path: Path) -> str:
    try:
        program = gradc.load(str(path))
    except Exception as exc:  # noqa: BLE001
        return f"load {type(exc).__name__}"
    verified = outcome(lambda: VerifyPass()(program))
    loss = meta_loss(path)
    if loss is not None and program.global_block.find_var(loss) is None:
        loss = None
    compiled = outcome(lambda: gradc.append_backward(program, loss))
    if compiled == "ok":
        compiled = hashlib.sha256(serialize(program, "pb")).hexdigest()[:20]
    return f"verify {verified} | compile {compiled}"


def main() -> None:
    paths = sorted((ROOT / "tests").rglob("*.pb"))
    for path in paths:
        print(f"{path.relative_to(ROOT)}: {digest(path)}", flush=True)
    print(f"# {len(paths)} programs", file=sys.stderr)


if __name__ == "__main__":
    main()

"""The --json side of tests/fuzzing.py: scenarios for compile, precision and train --json, and the verdict on what a
--json command printed (one strict JSON object; train's strict JSON lines ending in its "end" object)."""

from __future__ import annotations

import json
from pathlib import Path


def json_scenarios(data: Path) -> list[tuple[dict[str, bytes], list[str], str | None]]:
    """(files, gradc command, the output it writes) of the --json options over Paddle's fixtures."""
    found = []
    for fixture in (data / "mlp", data / "cond"):
        files = {name: (fixture / name).read_bytes() for name in ("forward.pb", "feed.npz", "params.npz")}
        found += [(files, ["compile", "forward.pb", "-o", "out.pb", "--optimizer", "adam", "--json"], "out.pb"),
                  (files, ["precision", "forward.pb", "--feed", "feed.npz", "--params", "params.npz", "--top", "3",
                           "--json"], None)]
    sgd = data / "train_sgd"
    train = {name: (sgd / name).read_bytes() for name in ("train.pb", "startup.pb", "feed.npz", "params.npz")}
    found += [(train, ["train", "train.pb", "--startup", "startup.pb", "--params", "params.npz", "--feed", "feed.npz",
                       "--steps", "2", "--save-params", "out.npz", "--json"], "out.npz"),
              (train, ["train", "train.pb", "--startup", "startup.pb", "--data", "feed.npz", "--batch-size", "8",
                       "--epochs", "2", "--eval", "feed.npz", "--log-every", "1", "--json"], None)]
    return found


def json_verdict(args: list[str], code: int | None, stdout: str, stderr_lines: list[str]) -> str | None:
    """--json: after an error stdout is empty (train: its lines so far, no "end" object); else it is one strict JSON
    object (train: strict JSON lines, the last its "end"), and an exit 1 without an error line is its verdict
    (problems, differences). None: judged as any other outcome."""
    failed = any(line.startswith(("gradc: error:", "gradc: internal error:")) for line in stderr_lines)
    try:
        records = [json.loads(line, parse_constant=_not_strict) for line in stdout.splitlines()]
    except ValueError:
        return "bad_json"
    if not all(isinstance(record, dict) for record in records) or (stdout and not stdout.endswith("\n")):
        return "bad_json"
    if args[0] == "train":
        ended = any(record.get("event") == "end" for record in records)
        if failed or code != 0:
            return "partial_output" if ended else None
        return None if records and records[-1].get("event") == "end" else "bad_json"
    if failed:
        return "partial_output" if stdout else None
    if len(records) != 1:
        return "bad_json"
    if code == 1:
        return "ok" if records[0].get("ok", records[0].get("same")) is False else "bad_json"
    return None


def _not_strict(constant: str):
    raise ValueError(f"{constant} is not strict JSON")

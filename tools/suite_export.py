"""What the export tools of Paddle's suites (tools/paddle*_export.py) share: each config is exported in a child
process of its own, since a suite's modules keep global state and one config's failure must not stop the others,
and the parent prints one line per config: `CONFIG OK`, or `CONFIG FAIL` and the child's last line of errors. Also
what their checkers and the fixture tools share: a model output's tensors, a report line per case, a child process
per mode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_CHILD = "GRADC_SUITE_EXPORT_ONE"


def in_child(source: Path) -> bool:
    """Whether this is the child process; if so, the suite's checkout is on sys.path and the working directory (its
    configs name files relative to it)."""
    if not os.environ.get(_CHILD):
        return False
    sys.path.insert(0, str(source))
    os.chdir(source)
    return True


def export_each(script: str, source: Path, out_dir: Path, configs: list[str], timeout: int) -> None:
    """Run ``script`` as the child once per config, and print how each went."""
    for config in configs:
        try:
            result = subprocess.run([sys.executable, script, str(source), str(out_dir), config], capture_output=True,
                                    text=True, env={**os.environ, _CHILD: "1"}, timeout=timeout)
        except subprocess.TimeoutExpired:
            print(config, f"FAIL timed out after {timeout} s", flush=True)
            continue
        last = (result.stdout.strip().splitlines() or [""])[-1]
        reason = (result.stderr.strip().splitlines() or ["no output"])[-1][:200]
        print(config, "OK" if result.returncode == 0 and last == "OK" else f"FAIL {reason}", flush=True)


def main(script: str, export_one, default: list[str] = (), timeout: int = 900) -> None:
    """The command line the exporters share, `SUITE_DIR OUT_DIR [ENTRY ...]` (``default`` without entries): in the
    child, ``export_one(out_dir, entry)`` exports one entry and returns "OK"; in the parent, one line per entry."""
    source, out_dir, entries = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3:] or list(default)
    if in_child(source):
        print(export_one(out_dir, entries[0]), flush=True)
        return
    export_each(script, source, out_dir, entries, timeout)


def output_tensors(value) -> list:
    """The tensors in a model's output (a tuple, a ModelOutput, nested), in order."""
    import paddle
    if isinstance(value, (paddle.Tensor, paddle.pir.Value)):   # a Value when traced
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [tensor for item in value for tensor in output_tensors(item)]
    return []


def report_each(folder: Path, check) -> None:
    """The static checkers' gradc side: ``check(case)`` of every case folder (one with a meta.json) under ``folder``,
    a JSON line each; a case's failure is its result."""
    import json
    for case in sorted(p.parent for p in folder.glob("*/meta.json")):
        try:
            report = check(case)
        except Exception as error:  # noqa: BLE001 - each case's failure is its result
            report = {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"}
        print(case.name, json.dumps(report), flush=True)


def paddle_or_gradc(models, paddle_step, gradc_step) -> None:
    """The zoo tools' modes but ``fixture``: ``paddle OUT [MODEL ...]`` runs ``paddle_step`` of each model (all by
    default) into OUT/MODEL ('@' written '_'); ``DIR`` reports ``gradc_step`` of every case under DIR."""
    if sys.argv[1] == "paddle":
        out = Path(sys.argv[2]).resolve()
        for entry in sys.argv[3:] or list(models):
            paddle_step(out / entry.replace("@", "_"), entry)
            print(entry, "OK", flush=True)
        return
    report_each(Path(sys.argv[2]), gradc_step)


def in_both_modes(script: str, build) -> None:
    """The fixture tools' command line: in a child process per mode (legacy, then PIR), ``build(pir)``."""
    if sys.argv[1:] == ["--child"]:
        build(pir=os.environ["FLAGS_enable_pir_api"] == "1")
        return
    for flag in ("0", "1"):
        subprocess.run([sys.executable, script, "--child"], env={**os.environ, "FLAGS_enable_pir_api": flag},
                       check=True)

"""Run the test suite under other Pythons and under the oldest dependencies pyproject.toml allows (`make compat`).

Each interpreter gets a venv in build/compat/ with gradc's dev extras at their newest; `--oldest PYTHON` adds one with
every runtime dependency pinned to its floor (`numpy>=2.0` installs numpy==2.0), the extras newest. An interpreter is a
path, or a version (3.10) found as python3.10 on PATH or in pyenv's versions. Prints one line an environment: its
versions, the suite's time and its failed tests. Exit 1 if any failed.

    python tools/compat.py --python 3.10 --python 3.12 --python 3.13 --oldest 3.10
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ("import sys, numpy, google.protobuf, importlib.metadata as m; print(sys.version.split()[0], 'numpy',"
            " numpy.__version__, 'protobuf', google.protobuf.__version__, 'click', m.version('click'))")


def floors() -> list[str]:
    """The runtime dependencies (the installed gradc's, as pyproject.toml gives them), each pinned to its floor."""
    pinned = []
    for requirement in metadata.requires("gradc"):
        if "extra ==" in requirement:
            continue
        name, floor = re.match(r"[\w.-]+", requirement).group(), re.search(r">=\s*([\w.]+)", requirement)
        if floor is None:
            raise SystemExit(f"compat: {requirement!r} names no floor (>=) to pin")
        pinned.append(f"{name}=={floor.group(1)}")
    return pinned


def interpreter(spec: str) -> str:
    """A path as given; a version as the first python<version> that runs (pyenv's shims on PATH may refuse)."""
    if os.sep in spec:
        return spec
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [shutil.which(f"python{spec}"), *map(str, sorted(pyenv.glob(f"{spec}.*/bin/python{spec}")))]
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-c", "pass"], capture_output=True).returncode == 0:
            return candidate
    raise SystemExit(f"compat: no Python {spec} found on PATH or in {pyenv}")


def prepare(spec: str, name: str, pins: list[str]) -> Path:
    venv = ROOT / "build" / "compat" / name
    if not (venv / "bin" / "python").exists():
        subprocess.run([interpreter(spec), "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "--quiet", "-e", f"{ROOT}[dev]", *pins]
    installed = subprocess.run(pip, capture_output=True, text=True)
    if installed.returncode:
        raise SystemExit(f"compat: {' '.join(pip)} failed:\n{installed.stderr}")
    return venv


def run_suite(venv: Path, pytest_args: list[str]) -> tuple[int, float, list[str]]:
    start = time.perf_counter()
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    result = subprocess.run([str(venv / "bin" / "pytest"), "-n", "2", "-q", "-p", "no:warnings", "-rfE",
                             *pytest_args], cwd=ROOT, capture_output=True, text=True, env=environment)
    failed = [line.split()[1] for line in result.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    return result.returncode, time.perf_counter() - start, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", default=[], help="an interpreter to run the suite under")
    parser.add_argument("--oldest", help="an interpreter to run the suite under with the dependencies' floors")
    parser.add_argument("pytest_args", nargs="*", default=["tests"], help="given to pytest (default: tests)")
    args = parser.parse_args()
    runs = [(python, f"python{Path(python).name}", []) for python in args.python]
    if args.oldest:
        runs.append((args.oldest, f"python{Path(args.oldest).name}-oldest", floors()))
    if not runs:
        parser.error("give --python or --oldest")
    failures = 0
    for python, name, pins in runs:
        venv = prepare(python, name, pins)
        versions = subprocess.run([str(venv / "bin" / "python"), "-c", VERSIONS], capture_output=True,
                                  text=True, check=True).stdout.strip()
        code, seconds, failed = run_suite(venv, args.pytest_args)
        failures += code != 0
        print(f"{name}: {versions}: {'passed' if code == 0 else f'exit {code}'} in {seconds:.0f} s"
              + "".join(f"\n    {test}" for test in failed), flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

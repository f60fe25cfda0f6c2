"""Instructions a `gradc compile` in a new process runs, and how many of them its imports take, counted by callgrind:
unlike seconds, the count does not move with a shared machine's load, so a change of a few percent to the command
line's start shows in one run.

    .venv/bin/python benchmarks/cli_instructions.py [--program PATH] [--baseline build/baseline/src]

Each line is one new interpreter under `valgrind --tool=callgrind` (PYTHONHASHSEED=0, bytecode cached): the bare
interpreter, then `import click`, `import gradc`, `import gradc.cli`, that and the compile command's module, and the
whole `gradc compile` of the program (default: the 100-layer deep MLP, 301 ops). ``--baseline`` counts an older
source tree too, in the next column. Needs valgrind; says so and stops without it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
SRC = HERE.parent / "src"
STAGES = [("the interpreter alone", ["-c", "pass"]),
          ("import click", ["-c", "import click"]),
          ("import gradc", ["-c", "import gradc"]),
          ("import gradc.cli", ["-c", "import gradc.cli"]),
          ("+ the compile command's module", ["-c", "import gradc.cli, gradc.commands.compile"])]
_COLLECTED = re.compile(r"Collected : (\d+)")


def instructions(tree: Path, arguments: list[str], folder: Path) -> int:
    """Instructions of ``python ARGUMENTS`` with gradc from ``tree``, all of them (from the interpreter's start)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)   # bytecode cached, as an installed gradc has it
    command = [sys.executable, *arguments]
    subprocess.run(command, env=env, check=True, capture_output=True)   # writes the bytecode the counted run reads
    counted = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={folder / 'callgrind.out'}",
                              *command], env=env, check=True, capture_output=True, text=True)
    return int(_COLLECTED.findall(counted.stderr)[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", type=Path, help="the forward program to compile (default: the 100-layer MLP)")
    parser.add_argument("--baseline", type=Path, help="a source tree holding an older `gradc`, counted alongside")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("cli_instructions.py: valgrind is not installed (apt-get install valgrind); nothing counted")
    trees = {"now": SRC, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        program = args.program
        if program is None:
            sys.path.insert(0, str(HERE))
            from perf_models import deep_mlp

            import gradc
            program = folder / "mlp100.pb"
            gradc.save(deep_mlp(100).program, program)
        compile_ = ("the whole `gradc compile`", ["-m", "gradc", "compile", str(program), "-o", str(folder / "out.pb")])
        print(f"# instructions (millions) of each stage in a new interpreter, callgrind; program {program.name}")
        print("| stage | " + " | ".join(trees) + " |\n|---|" + "---|" * len(trees))
        for stage, arguments in [*STAGES, compile_]:
            counts = [instructions(tree, arguments, folder) for tree in trees.values()]
            print(f"| {stage} | " + " | ".join(f"{count / 1e6:.1f}" for count in counts) + " |", flush=True)


if __name__ == "__main__":
    main()

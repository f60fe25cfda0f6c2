"""Every example of README.md runs as written. In document order, in one temporary directory holding the files
they name: each ```python block (in a fresh namespace; one introduced by "In `NAME.py`:" is written to that file
instead), each `gradc ...` command of the other fenced blocks (```text blocks are output, not examples;
```sh blocks are the tools section, which tests/test_readme_tools.py runs) and each `$ gradc ...` line of a
```console block, whose printed lines and exit code (1 after an error line, else 0) must be the block's. All
run in one child process, so what the examples register (an op, a pass) stays out of the test session."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import gradc
from fixtures import DATA

ROOT = Path(__file__).resolve().parent.parent
FILES = {"forward.pb": DATA / "mlp" / "forward.pb", "startup.pb": ROOT / "examples" / "mlp" / "startup.pb",
         "feed.npz": DATA / "mlp" / "feed.npz", "params.npz": DATA / "mlp" / "params.npz",
         "model.pdmodel": DATA / "inference" / "model.pdmodel",
         "model.pdiparams": DATA / "inference" / "model.pdiparams", "input.npz": DATA / "inference" / "feed.npz",
         "new.csv": DATA / "inference" / "new.csv",
         "paddle_backward.pb": DATA / "mlp" / "backward.pb"}
FENCE = re.compile(r"(?:^([^\n]*)\n\n)?^```(\w*)\n(.*?)^```", re.M | re.S)

RUNNER = """
import contextlib, io, json, shlex, sys
from gradc.cli import cli, main
from gradc.limits import limited


def console(block):
    for command, *shown in (part.splitlines() for part in ("\\n" + block).split("\\n$ ")[1:]):
        printed, code = io.StringIO(), 0
        sys.argv = shlex.split(command)
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), limited():
            try:
                main()
            except SystemExit as done:
                code = done.code
        expected = 1 if shown and shown[0].startswith("gradc: error:") else 0
        assert (printed.getvalue().splitlines(), code) == (shown, expected), (command, printed.getvalue(), code)

for kind, text in json.load(open(sys.argv[1])):
    print(f"=== {kind}: {text.splitlines()[0]}", flush=True)
    if kind == "python":
        exec(compile(text, "README.md", "exec"), {"__name__": "__readme__"})
    elif kind == "command":
        try:
            cli.main(args=shlex.split(text)[1:], prog_name="gradc", standalone_mode=False)
        except SystemExit as done:   # gradc diff answers "they differ" with exit 1
            if not (text.startswith("gradc diff") and done.code == 1):
                raise
    elif kind == "console":
        console(text)
    else:
        open(kind, "w").write(text)
"""


def readme_examples(text: str) -> list[tuple[str, str]]:
    steps = []
    for before, language, body in FENCE.findall(text):
        named = re.fullmatch(r"In `(\w+\.py)`:", (before or "").strip())
        if language == "python":
            steps.append((named[1] if named else "python", body))
        elif language == "console":
            steps.append(("console", body))
        elif language not in ("text", "sh"):   # ```sh: the tools section, run by tests/test_readme_tools.py
            steps.extend(("command", command) for command in _commands(body))
    return steps


def _commands(block: str) -> list[str]:
    joined = re.sub(r"\s*\\\n\s*", " ", block)
    lines = (re.sub(r"\s+#.*$", "", line).strip() for line in joined.splitlines())
    return [line for line in lines if line.startswith("gradc ")]


def test_every_readme_example_runs(tmp_path):
    steps = readme_examples((ROOT / "README.md").read_text())
    kinds = [kind for kind, _ in steps]
    assert kinds.count("python") >= 5 and kinds.count("command") >= 15 and "mypasses.py" in kinds, kinds
    assert "console" in kinds, kinds
    for name, source in FILES.items():
        (tmp_path / name).write_bytes(source.read_bytes())
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "tests").symlink_to(ROOT / "tests")   # the README names fixtures under tests/data too
    (tmp_path / "steps.json").write_text(json.dumps(steps))
    done = subprocess.run([sys.executable, "-c", RUNNER, "steps.json"], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": _python_path(tmp_path)})
    ran = [line for line in done.stdout.splitlines() if line.startswith("=== ")]
    assert done.returncode == 0, f"README example failed after {ran[-1:]}:\n{done.stderr[-3000:]}"
    assert len(ran) == len(steps)
    for written in ("train.pb", "results.npz", "train.pbtxt", "trained.npz", "loss.png", "digits.pdmodel",
                    "digits.pdiparams", "predictions.npz", "trained.pdparams"):
        assert (tmp_path / written).stat().st_size > 0, written


def _python_path(first: Path) -> str:
    """``first``, then the directory of the gradc under test (a checkout's src), not whichever one is installed."""
    return os.pathsep.join([str(first), str(Path(gradc.__file__).resolve().parent.parent)])


def test_the_parser_finds_commands_and_named_files():
    text = ("```\ngradc run a.pb \\\n   --feed f.npz   # one batch\n   # more comment\nls\n```\n\n"
            "In `x.py`:\n\n```python\nX = 1\n```\n```text\ngradc not an example\n```\n")
    assert readme_examples(text) == [("command", "gradc run a.pb --feed f.npz"), ("x.py", "X = 1\n")]


def test_the_readme_counts_what_the_registry_holds():
    ops = gradc.registry.OPS
    grads = sum(1 for opdef in ops.values() if opdef.grad_op_of)
    text = " ".join((ROOT / "README.md").read_text().split())
    assert f"{len(ops)} op types ({len(ops) - grads} forward ops" in text
    assert f"every one of the {grads} grad ops has a maker" in text


def test_the_readme_counts_the_coverage_rows_the_table_matches():
    summary = re.search(r"with Paddle's numbers: (\d+) rows; gradc compiles \d+, runs \d+, matches (\d+)",
                        (ROOT / "docs" / "coverage.md").read_text())
    rows, matched = (f"{int(n):,}" for n in summary.groups())
    text = " ".join((ROOT / "README.md").read_text().split())
    assert f"({matched} of {rows} rows of docs/coverage.md with Paddle's numbers)" in text

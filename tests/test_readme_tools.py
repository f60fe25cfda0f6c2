"""The README's block of tool commands runs as written, from a directory that looks like the repository."""

import re
import shlex
import shutil
from pathlib import Path

from cli_inprocess import gradc_cli

ROOT = Path(__file__).parent.parent


def test_readme_tool_commands_run(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text()
    section = text.split("## Seeing, comparing and checking programs", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    commands = [shlex.split(line) for line in block.splitlines() if line.strip()]
    assert len(commands) >= 9
    for name in ("examples", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path)
    for words in commands:
        assert words[0] == "gradc"
        if "--svg" in words and shutil.which("dot") is None:   # Graphviz missing: the DOT file alone
            del words[words.index("--svg"):words.index("--svg") + 2]
        result = gradc_cli(*words[1:])
        assert result.returncode == 0, (words, result.stderr)
    assert (tmp_path / "train.html").stat().st_size > 10_000 and (tmp_path / "docs" / "ops.md").exists()

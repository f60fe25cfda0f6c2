"""gradc show --dot/--svg/--png: valid DOT in the viewer's styles, drawn by Graphviz when it is installed, and
one clear error line when it is not."""

import re
import shutil
import subprocess

import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.pairing import pair_grad_ops
from gradc.viz.dot import program_dot
from gradc.viz.style import GRAD_LINK, KIND_COLORS

DOT = shutil.which("dot")
needs_graphviz = pytest.mark.skipif(DOT is None, reason="Graphviz's dot is not installed (apt-get install graphviz)")




def _declared_and_used(text):
    declared = set(re.findall(r"^\s*(\w+) \[label=", text, re.M))
    used = set(re.findall(r"^\s*(\w+) -> (\w+)", text, re.M))
    return declared, {name for edge in used for name in edge}


@pytest.mark.parametrize("case", ["cond", "while_loop", "transformer", "train_adam"])
def test_dot_declares_every_node_and_links_each_grad_op(case):
    path = DATA / case / ("train.pb" if case.startswith("train") else "backward.pb")
    program = gradc.load(path)
    text = program_dot(program, case)
    declared, used = _declared_and_used(text)
    assert used <= declared
    assert text.count("{") == text.count("}")
    ops = sum(len(b.ops) for b in program.blocks)
    assert sum(1 for name in declared if re.fullmatch(r"b\d+_op\d+", name)) == ops
    assert text.count(f'color="{GRAD_LINK}"') == len(pair_grad_ops(program))
    assert KIND_COLORS["forward"][0] in text and KIND_COLORS["backward"][0] in text
    assert (KIND_COLORS["optimizer"][0] in text) == (case == "train_adam")
    subs = len(program.blocks) - 1
    assert text.count("subgraph cluster_") == subs


@needs_graphviz
def test_svg_and_png_through_graphviz(tmp_path):
    result = gradc_cli("show", DATA / "cond" / "backward.pb", "--dot", tmp_path / "g.dot", "--svg", tmp_path / "g.svg",
                       "--png", tmp_path / "g.png")
    assert result.returncode == 0, result.stderr
    svg = (tmp_path / "g.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "conditional_block_grad" in svg
    assert "block 4, backward of block 1" in svg
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    checked = subprocess.run([DOT, "-Tcanon", str(tmp_path / "g.dot")], capture_output=True, text=True)
    assert checked.returncode == 0 and not checked.stderr


def test_svg_without_graphviz_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))   # nothing on PATH: no dot
    result = gradc_cli("show", DATA / "mlp" / "forward.pb", "--svg", tmp_path / "g.svg")
    assert result.returncode == 1 and not (tmp_path / "g.svg").exists()
    assert result.stderr.strip().splitlines() == [
        "gradc: error: --svg needs Graphviz's `dot` on PATH (Debian: apt-get install graphviz); "
        "--dot FILE writes the graph without it"]

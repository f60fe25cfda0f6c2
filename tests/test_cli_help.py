"""The small things a user expects of the command line: every option of every command says what it does,
-V/--version, shell completion (click's), and docs/ops.md is what `gradc ops --markdown` writes today."""

import os
import subprocess
import sys
from pathlib import Path

import click

import gradc
from cli_inprocess import gradc_cli
from gradc.cli import cli

ROOT = Path(__file__).parent.parent


def _commands(command, path):
    yield path, command
    if isinstance(command, click.Group):
        context = click.Context(command)
        for name in command.list_commands(context):
            yield from _commands(command.get_command(context, name), [*path, name])


def test_every_option_of_every_command_has_help():
    missing, commands = [], 0
    for path, command in _commands(cli, ["gradc"]):
        commands += 1
        assert command.help, f"{' '.join(path)} has no help text"
        for param in command.params:
            if isinstance(param, click.Option) and not (param.help or "").strip():
                missing.append(f"{' '.join(path)} {'/'.join(param.opts)}")
    assert commands >= 11 and not missing, missing


def test_version_short_and_long():
    for flag in ("-V", "--version"):
        shown = gradc_cli(flag)
        assert shown.returncode == 0 and shown.stdout.strip().endswith(gradc.__version__), shown


def test_bash_completion_script_and_completions():
    env = {**os.environ, "_GRADC_COMPLETE": "bash_source"}
    script = subprocess.run([sys.executable, "-m", "gradc"], env=env, capture_output=True, text=True)
    assert script.returncode == 0 and "_gradc_completion" in script.stdout
    env = {**os.environ, "_GRADC_COMPLETE": "bash_complete", "COMP_WORDS": "gradc vi", "COMP_CWORD": "1"}
    words = subprocess.run([sys.executable, "-m", "gradc"], env=env, capture_output=True, text=True)
    assert "plain,view" in words.stdout.splitlines()


def test_docs_ops_md_is_current(tmp_path):
    """Generated in a fresh interpreter, so ops other tests register do not leak in."""
    out = tmp_path / "ops.md"
    made = subprocess.run([sys.executable, "-m", "gradc", "ops", "--markdown", str(out)], capture_output=True,
                          text=True)
    assert made.returncode == 0, made.stderr
    assert out.read_text() == (ROOT / "docs" / "ops.md").read_text(), (
        "docs/ops.md is stale: run `gradc ops --markdown docs/ops.md` and commit it")

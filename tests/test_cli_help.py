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
from gradc.commands import LAZY_COMMANDS

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


def test_help_and_command_completion_list_every_command_without_importing_one():
    """`gradc --help` and the shell's completion of a command name show each lazy command by its kept help line,
    the same line as once the command is imported, and import no command module for it."""
    script = ("import sys\nfrom click.testing import CliRunner\nfrom gradc.cli import cli\n"
              "from click.shell_completion import ShellComplete\n"
              "def complete():\n"
              "    return [(i.value, i.help) for i in ShellComplete(cli, {}, 'gradc', '').get_completions([], 'v')]\n"
              "listing, completed = CliRunner().invoke(cli, ['--help']).output, complete()\n"
              "print(sorted(m for m in sys.modules if m.startswith('gradc.commands.')))\n"
              "for name in cli.list_commands(None):\n"
              "    cli.get_command(None, name)\n"
              "print(listing == CliRunner().invoke(cli, ['--help']).output, completed == complete())\n"
              "print(completed)\nprint(listing)\n")
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    imported, same, completed, *listing = shown.stdout.splitlines()
    assert imported == "[]" and same == "True True"
    assert completed == repr([(name, LAZY_COMMANDS[name].help_line) for name in ("verify", "view")])
    rows = [row for row in listing[listing.index("Commands:") + 1:] if row]
    assert [row.split()[0] for row in rows] == sorted({*LAZY_COMMANDS, "compile", "convert"})
    assert all(row.split(maxsplit=1)[1] == LAZY_COMMANDS[row.split()[0]].help_line
               for row in rows if row.split()[0] in LAZY_COMMANDS)


def test_docs_ops_md_is_current(tmp_path):
    """Generated in a fresh interpreter, so ops other tests register do not leak in."""
    out = tmp_path / "ops.md"
    made = subprocess.run([sys.executable, "-m", "gradc", "ops", "--markdown", str(out)], capture_output=True,
                          text=True)
    assert made.returncode == 0, made.stderr
    assert out.read_text() == (ROOT / "docs" / "ops.md").read_text(), (
        "docs/ops.md is stale: run `gradc ops --markdown docs/ops.md` and commit it")


def test_ops_shows_what_a_composite_maker_emits():
    """A maker that asks for temporaries shaped or typed otherwise than the var they are like (dims=, dtype=) is
    shown by its ops too (it said "the maker needs a real program (TypeError: ...)" before), each temporary named
    after the var it is like."""
    shown = gradc_cli("ops", "cholesky_solve_grad")
    assert shown.returncode == 0 and "needs a real program" not in shown.stdout
    assert "grad: x.tmp1 = cholesky_solve(X=out@GRAD, Y=y)" in shown.stdout
    assert "y.tmp14 = reduce_as(x=x.tmp13, target=y)" in shown.stdout


def test_ops_shows_a_maker_that_reads_shapes_on_sample_vars():
    """A maker that reads its vars' shapes (std's second derivative counts elements) is shown on sample vars of a
    rank it takes, and says so; one that needs more than shapes (a loop's block) says why without an exception."""
    shown = gradc_cli("ops", "std_grad")
    assert shown.returncode == 0 and "needs a real program" not in shown.stdout
    assert "(for sample vars of rank 2: the maker reads their shapes)" in shown.stdout
    assert "x.tmp8 = reduce_mean(X=x)" in shown.stdout
    sparse = gradc_cli("ops", "sparse_mv")   # its maker declares temporaries and reads their var types
    assert sparse.returncode == 0 and "x.tmp1 = sparse_to_dense(x=x)" in sparse.stdout
    loop = gradc_cli("ops", "while_grad")   # differentiates its loop's block: no sample has one
    assert loop.returncode == 0
    assert "the maker needs a real program: it reads shapes or vars that sample inputs of rank 2, 3, 4, 1 do not " \
           "give" in loop.stdout and "Error" not in loop.stdout

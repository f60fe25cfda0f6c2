"""The first hour on a fresh machine (docs/tools.md): a new user installs gradc outside the repository (pip install,
a wheel, -e, the [plot] extra) and follows README.md; each fault found, as the behaviour it has now, and the
wheel's contents guarded without building one."""

import fnmatch
import re
from pathlib import Path

import pytest

from cli_inprocess import gradc_cli
from gradc.cli import cli
from gradc.viz import html

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "gradc"


def test_bare_gradc_prints_the_help_as_written_each_command_on_its_line():
    done = gradc_cli()
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == "Usage: gradc [OPTIONS] COMMAND [ARGS]..." and "gradc: error:" not in done.stderr
    listed = {line.split()[0]: line.split(None, 1)[1] for line in lines[lines.index("Commands:") + 1:] if line}
    assert sorted(listed) == sorted(cli.list_commands(None))
    assert all(text.endswith(".") for text in listed.values()), listed


def test_a_usage_error_points_at_the_help_of_the_command_it_is_in():
    assert gradc_cli("compile").stderr == "gradc: error: Missing argument 'PROGRAM'. (see gradc compile --help)\n"
    assert gradc_cli("train", "t.pb", "--frobnicate").stderr in (   # click 8.4's wording, and 8.2's and 8.3's
        "gradc: error: No such option '--frobnicate'. (see gradc train --help)\n",
        "gradc: error: No such option: --frobnicate (see gradc train --help)\n")
    misspelt = gradc_cli("complie", "x.pb")
    assert misspelt.returncode == 2 and misspelt.stderr == (
        "gradc: error: No such command 'complie'. Did you mean 'compile'? (see gradc --help)\n")


def _package_data_globs() -> dict[str, list[str]]:
    tomllib = pytest.importorskip("tomllib")   # Python 3.11+; the wheel is the same on 3.10
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return setuptools.get("package-data", {})


def test_every_file_the_package_holds_besides_python_is_in_the_wheel_by_package_data():
    globs = _package_data_globs()
    data = [path for path in PACKAGE.rglob("*") if path.is_file() and path.suffix not in (".py", ".pyc")]
    assert data, "the viewer's assets at least"
    for path in data:
        package = ".".join(path.parent.relative_to(PACKAGE.parent).parts)
        patterns = globs.get(package, []) + globs.get("*", []) + globs.get("", [])
        assert any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns), f"{path} is left out of the wheel"
    assert {f"{name}" for name in (*html.SCRIPTS, "viewer.css")} <= {path.name for path in data}


def test_every_folder_of_python_modules_is_a_package_that_find_packages_ships():
    folders = {path.parent for path in PACKAGE.rglob("*.py")}
    assert all((folder / "__init__.py").is_file() for folder in folders), sorted(
        str(folder) for folder in folders if not (folder / "__init__.py").is_file())


def test_readme_names_where_each_file_of_its_command_line_examples_comes_from():
    text = (ROOT / "README.md").read_text()
    intro = " ".join(text.split("## Command line", 1)[1].split("```", 1)[0].split())
    assert "examples/mlp/" in intro and "cp examples/mlp/* ." in intro
    named = set(re.findall(r"`(tests/data/[^`]+)`", intro))
    assert {"tests/data/paddle/inference/", "tests/data/paddle/mlp/backward.pb"} <= named
    for name in ("forward.pb", "startup.pb", "feed.npz", "params.npz"):
        assert (ROOT / "examples" / "mlp" / name).is_file()
    for name in ("model.pdmodel", "model.pdiparams", "feed.npz"):
        assert (ROOT / "tests" / "data" / "paddle" / "inference" / name).is_file()
    assert "pip install" in text.split("## Command line", 1)[0]


def test_the_license_pyproject_names_is_the_file_setuptools_ships_beside_the_wheel():
    declared = re.search(r'^license = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert declared and declared.group(1) == "Apache-2.0"
    text = " ".join((ROOT / "LICENSE").read_text().split())   # setuptools >= 77 ships LICEN[CS]E* by default
    assert text.startswith("Apache License Version 2.0, January 2004") and text.endswith("END OF TERMS AND CONDITIONS")

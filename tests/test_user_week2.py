"""Two users' week (docs/tools.md, 'An MLOps engineer's and a researcher's week'): each fault found, as the
behaviour it has now."""

import os
import subprocess
import sys
import threading

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA

MLP = DATA / "mlp"


def _drain(fifo, into: list) -> None:
    with open(fifo, "rb") as reader:
        into.append(reader.read())


def test_output_to_a_pipe_or_device_is_written_in_place_not_replaced(tmp_path):
    """Before, `-o /dev/null` (or any device or pipe) as root renamed a temp file over it: /dev/null became a file."""
    fifo = tmp_path / "out.pipe"
    os.mkfifo(fifo)
    got: list = []
    reader = threading.Thread(target=_drain, args=(fifo, got), daemon=True)
    reader.start()
    done = gradc_cli("convert", MLP / "forward.pb", fifo, "--format", "pbtxt")
    reader.join(timeout=60)
    assert done.returncode == 0, done.stderr
    assert fifo.is_fifo() and [p.name for p in tmp_path.iterdir()] == ["out.pipe"]   # no temp file left either
    assert gradc.io.parse_program(got[0], "pbtxt").num_ops() == gradc.load(MLP / "forward.pb").num_ops()


def test_output_through_a_symlink_replaces_the_file_it_points_to(tmp_path):
    """Before, `-o link.pb` replaced the link with a file and left the file it pointed to as it was."""
    (tmp_path / "real.pb").write_bytes(b"old")
    (tmp_path / "link.pb").symlink_to("real.pb")
    done = gradc_cli("compile", MLP / "forward.pb", "-o", tmp_path / "link.pb")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "link.pb").is_symlink()
    assert gradc.load(tmp_path / "real.pb").num_ops() == 15


def test_output_to_stdout_keeps_the_status_lines_off_it(tmp_path):
    """Before, `gradc compile forward.pb -o /dev/stdout | ...` got the (param, grad) table and 'wrote' line after the
    program's bytes, and `convert ... /dev/stdout` its 'wrote' line: the piped program did not load."""
    stdout = "/proc/self/fd/1"   # /dev/stdout's target: a regression cannot rename a file over /proc
    for command in (["compile", MLP / "forward.pb", "-o", stdout, "--no-verify"],
                    ["convert", MLP / "forward.pb", stdout, "--format", "pb"]):
        done = subprocess.run([sys.executable, "-m", "gradc", *map(str, command)], capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert f"wrote {stdout}".encode() in done.stderr
        (tmp_path / "piped.pb").write_bytes(done.stdout)
        assert gradc.load(tmp_path / "piped.pb").num_ops() in (7, 15)

"""Run the gradc command line inside the test process (no interpreter start-up per call): the same main()
a user runs, its exit code, stdout and stderr; numpy's error state and the warning filters it sets are put
back afterwards."""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from dataclasses import dataclass

import numpy as np

from gradc.cli import main


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def gradc_cli(*args) -> Result:
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_err = sys.argv, np.geterr()
    code = 0
    try:
        sys.argv = ["gradc", *map(str, args)]
        with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    finally:
        sys.argv = saved_argv
        np.seterr(**saved_err)
    return Result(code, out.getvalue(), err.getvalue())

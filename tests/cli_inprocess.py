"""Run the gradc command line inside the test process (no interpreter start-up per call): the same main()
a user runs, its exit code, stdout and stderr; numpy's error state, the warning filters, the limits
(--max-memory, --max-iterations), --debug and the Ctrl-C handler it sets are put back afterwards."""

from __future__ import annotations

import contextlib
import io
import signal
import sys
import warnings
from dataclasses import dataclass

import numpy as np

from gradc.cli import _DEBUG, main
from gradc.limits import limited


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def gradc_cli(*args) -> Result:
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_err, saved_debug = sys.argv, np.geterr(), _DEBUG[0]
    saved_interrupt = signal.getsignal(signal.SIGINT)
    code = 0
    try:
        sys.argv = ["gradc", *map(str, args)]
        with warnings.catch_warnings(), limited(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    finally:
        sys.argv = saved_argv
        np.seterr(**saved_err)
        _DEBUG[0] = saved_debug
        signal.signal(signal.SIGINT, saved_interrupt)
    return Result(code, out.getvalue(), err.getvalue())

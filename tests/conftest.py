import faulthandler
import gc
import math
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # lets tests import gradcheck_cases and helpers

# xdist's workers share the cores: a BLAS thread per core in each worker oversubscribes them, and a product then
# waits for its thread that another worker holds off its core (the zoo trainings: 3x the CPU and 2.9x the wall time
# with two workers on two busy cores). Set before numpy loads OpenBLAS; the tests' child processes inherit it.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _threads = str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(_name, _threads)

# A hung test prints where it hangs, also inside an xdist worker: faulthandler's watchdog, armed as a test starts at
# most once a REARM_SECONDS (pytest's faulthandler_timeout starts and joins a watchdog thread for every test: about
# 0.5 ms of CPU a test with -n 2 on a busy machine). A test still running after 4 to 5 minutes prints every stack.
HANG_SECONDS, REARM_SECONDS = 300, 60
_watchdog = {"armed_at": -math.inf, "file": None}


# The collector's young generation collected every 10,000 new container objects, not 700 (the older ones as before):
# the tests make millions of short-lived containers, and each pass also walks what the previous ones promoted; the
# 25% rule still bounds full passes. With the freeze below: 3.8% less
# CPU for the registry gradcheck, test_higher_order and a user week, 4.3% for six user weeks and the fixture files.
GC_THRESHOLDS = (10_000, 10, 10)


def pytest_configure(config):
    _watchdog["file"] = os.dup(sys.__stderr__.fileno())   # the terminal's stderr, not a test's captured one
    gc.set_threshold(*GC_THRESHOLDS)


def pytest_collection_finish(session):
    """The collected tests (17,000 items, their parameters and modules) live to the end: frozen, no full pass scans
    them again. gradc.gcpause then leaves what its pauses make to the interpreter's passes (its mode for a caller that
    froze its heap); tests/test_gcpause.py runs its default mode in child processes."""
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config):
    faulthandler.cancel_dump_traceback_later()
    if _watchdog["file"] is not None:
        os.close(_watchdog["file"])
        _watchdog["file"] = None


def pytest_runtest_setup(item):
    now = time.monotonic()
    if now - _watchdog["armed_at"] >= REARM_SECONDS:
        faulthandler.dump_traceback_later(HANG_SECONDS, file=_watchdog["file"])
        _watchdog["armed_at"] = now


@pytest.hookimpl(trylast=True)
def pytest_exception_interact():
    """pytest's faulthandler plugin cancels the watchdog on a failure: the next test arms it again."""
    _watchdog["armed_at"] = -math.inf

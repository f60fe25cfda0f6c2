"""Ctrl-C during training: the first one lets the current step finish (so the checkpoint written next holds a
consistent state) and says so, a second one stops at once, as the handler installed before would."""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager

from ..errors import Interrupted


class StopRequest:
    requested = False


class Stopped(Interrupted):
    """Training stopped by Ctrl-C between two steps, its state whole: what it holds can still be saved."""

    def __init__(self, message: str, step: int, where: str):
        super().__init__(message)
        self.step, self.where = step, where


@contextmanager
def deferred_interrupt():
    """Yield a StopRequest whose ``requested`` turns True on the first SIGINT (main thread only)."""
    stop = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum, frame):
        if not stop.requested:
            stop.requested = True   # said at once: a step may take minutes, and a second Ctrl-C loses it
            sys.stderr.write("gradc: stopping after the step under way (Ctrl-C again stops at once, without it)\n")
            sys.stderr.flush()
            return
        signal.signal(signal.SIGINT, previous)
        if callable(previous):
            previous(signum, frame)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)

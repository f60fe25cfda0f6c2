"""The cyclic garbage collector paused while gradc builds, copies or converts a program.

Loading, compiling and saving allocate hundreds of thousands of small, long-lived, acyclic objects; with
the collector running, every allocation burst rescans a heap that only grows (measured: a third of a
9,000-op compile, and time per op growing with the program). While paused nothing is scanned; at the
end the new objects join the oldest generation without a scan (gc.freeze then gc.unfreeze), so the
next full collection, when the interpreter decides on one, looks at them once.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def gc_paused():
    if not gc.isenabled():   # nested, or the caller manages the collector
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        gc.enable()

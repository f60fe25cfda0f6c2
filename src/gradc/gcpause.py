"""The cyclic garbage collector paused while gradc builds, copies or converts a program.

Loading, compiling and saving allocate hundreds of thousands of small, long-lived, acyclic objects; with
the collector running, every allocation burst rescans a heap that only grows (measured: a third of a
9,000-op compile, and time per op growing with the program). While paused nothing is scanned; at the
end the new objects join the oldest generation without a scan (gc.freeze then gc.unfreeze).

Objects moved so are not counted towards the interpreter's next full collection, so cyclic garbage made during a
pause would wait for one that may never come. gradc's IR makes none (a Block refers to its Program weakly: a dropped
program is freed at once), but an executor's plans or a caller's objects may. So the heap is measured as it grows
(pymalloc's allocated blocks, which a freed program gives back), and a full collection runs once it holds more than
GROWTH + 1 times the mark: the most any full collection (whoever ran it) has left, or any read of a program has made
(alive at the read's end, as a collection's left-over is: a large program read and compiled at once pays none). A
process that keeps compiling program after program, each dropped, pays none after the first (a gc.collect() between
them, which finds the heap small, does not lower the mark); one that keeps making cyclic garbage frees it at a cost
per object that stays constant, holding at most GROWTH + 1 times its largest live heap.

A caller that froze objects of its own (gc.freeze: a fork server keeping its heap's pages shared, a test runner its
collected tests) would have them thawed by the unfreeze, and every full collection would scan them again. Once a
pause finds frozen objects, pauses leave what they made to the interpreter's own passes (as without gradc), which
scan no frozen object. The check is free while nothing is frozen (our unfreeze empties the frozen set).
"""

from __future__ import annotations

import gc
import sys
from contextlib import contextmanager

GROWTH = 3   # the heap's growth since the last full collection, in multiples of what it left
_alive: int | None = None   # the mark, in allocated blocks (None: until the first pause ends)
_caller_freezes = False


@contextmanager
def gc_paused(keeps: bool = False):
    """``keeps``: what the pause makes is acyclic and alive at its end (a program read from bytes): its growth is
    live heap, which raises the mark as a full collection's left-over does, also where the pause is nested."""
    # the heap's size is a walk over pymalloc's arenas (0.14 ms in a test runner's heap); a caller's freeze leaves the
    # collections to the interpreter, so the mark is never read again
    before = sys.getallocatedblocks() if keeps and not _caller_freezes else None
    if not gc.isenabled():   # nested, or the caller manages the collector
        yield
        _kept(before)
        return
    gc.disable()
    try:
        yield
        _kept(before)
    finally:
        _move_to_oldest()
        gc.enable()


def _kept(before: int | None) -> None:
    global _alive
    if before is not None and _alive is not None:   # None: the outermost pause's end measures the heap, the read in it
        _alive = max(_alive, sys.getallocatedblocks() - before)


def _move_to_oldest() -> None:
    global _alive, _caller_freezes
    if _caller_freezes or gc.get_freeze_count():
        _caller_freezes = True
        return
    gc.freeze()
    gc.unfreeze()
    heap = sys.getallocatedblocks()
    if _alive is None:
        _alive = heap
    elif heap > (GROWTH + 1) * _alive:
        gc.collect()   # _counted_anew measures what it left


def _counted_anew(phase: str, info: dict) -> None:
    """After any full collection (ours, the interpreter's or a caller's gc.collect()), what it left raises the mark."""
    global _alive
    if phase == "stop" and info["generation"] == 2:
        _alive = max(_alive or 0, sys.getallocatedblocks())


gc.callbacks.append(_counted_anew)

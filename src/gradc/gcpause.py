"""The cyclic garbage collector paused while gradc builds, copies or converts a program.

Loading, compiling and saving allocate hundreds of thousands of small, long-lived, acyclic objects; with
the collector running, every allocation burst rescans a heap that only grows (measured: a third of a
9,000-op compile, and time per op growing with the program). While paused nothing is scanned; at the
end the new objects join the oldest generation without a scan (gc.freeze then gc.unfreeze).

Objects moved so are not counted towards the interpreter's next full collection, so a program dropped afterwards
(a Program and its Blocks refer to each other: only the collector frees them) would wait for one that may never
come: a process loading and compiling program after program grew without bound. So the objects moved are counted
here, and a full collection runs once they outnumber three times the objects alive after the last one (whoever ran
it): a load-compile-save, which about triples what its load made, pays no full pass; a process that keeps
compiling frees its dropped programs, at a cost per object that stays constant.

A caller that froze objects of its own (gc.freeze: a fork server keeping its heap's pages shared, a test runner its
collected tests) would have them thawed by the unfreeze, and every full collection would scan them again. Once a
pause finds frozen objects, pauses leave what they made to the interpreter's own passes (as without gradc), which
scan no frozen object. The check is free while nothing is frozen (our unfreeze empties the frozen set).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

GROWTH = 3   # objects moved since the last full collection, in multiples of those alive after it
_moved = 0
_alive: int | None = None   # after the last full collection (None: until the first pause ends, what it moved)
_caller_freezes = False


@contextmanager
def gc_paused():
    if not gc.isenabled():   # nested, or the caller manages the collector
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        _move_to_oldest()
        gc.enable()


def _move_to_oldest() -> None:
    global _moved, _alive, _caller_freezes
    if _caller_freezes or gc.get_freeze_count():
        _caller_freezes = True
        return
    _moved += gc.get_count()[0]   # tracked objects made (less those freed) since the youngest generation's last pass
    gc.freeze()
    gc.unfreeze()
    if _alive is None:
        _alive = _moved
    elif _moved > GROWTH * _alive:
        gc.collect()   # _counted_anew starts the count again


def _counted_anew(phase: str, info: dict) -> None:
    """After any full collection (ours, the interpreter's or a caller's gc.collect()), count from what it left."""
    global _moved, _alive
    if phase == "stop" and info["generation"] == 2:
        _moved, _alive = 0, len(gc.get_objects())


gc.callbacks.append(_counted_anew)

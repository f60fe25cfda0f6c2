"""glibc's malloc, told once per process to keep the memory a training step frees for the next step.

A step allocates and frees the same arrays every time. By default glibc returns freed memory at the top of its
heap to the system as soon as 128 KiB of it is free, and maps a fresh region for each array above its (adaptive)
mmap threshold. The next step then page-faults all of it in again, zeroed by the kernel. Keeping up to 64 MiB
free at the top of the heap, and serving arrays up to 32 MiB from it, made a ShuffleNet x0.25 step (batch 2) 25%
faster and ResNet-18's and DenseNet-121's 4-7%, with the same peak resident memory (benchmarks/README.md). A
ResNet-50 step (batch 2) frees more than 128 MiB at the top of the heap: with 64 MiB kept it still faulted 75 MB in
a step, 4-6% of its time. So the heap keeps up to 1 GiB, or an eighth of the machine's memory where that is less:
a process holds on to what its steps free, as Paddle's allocator does, never more than its largest step used.

Setting glibc's own MALLOC_TRIM_THRESHOLD_ or MALLOC_MMAP_THRESHOLD_ keeps the user's choice, and
GRADC_MALLOC_TUNING=0 leaves malloc alone. Other C libraries are left alone.
"""

from __future__ import annotations

import ctypes
import functools
import os

TRIM_BYTES = 1 << 30    # free memory kept at the top of the heap, at most an eighth of the machine's (kept_bytes)
MMAP_BYTES = 32 << 20   # arrays up to this size come from the heap (glibc's largest adaptive threshold)
LEAST_KEPT = 64 << 20   # kept on any machine: twice the largest array the heap serves
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3   # mallopt's parameter numbers (glibc's malloc.h)


@functools.cache
def keep_freed_memory() -> bool:
    """Tune glibc's malloc as above, the first time; whether it is tuned."""
    if os.environ.get("GRADC_MALLOC_TUNING") == "0" or not _glibc():
        return False
    if "MALLOC_TRIM_THRESHOLD_" in os.environ or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):   # an allocator preloaded in glibc's place may not have it
        return False
    return bool(mallopt(_M_TRIM_THRESHOLD, kept_bytes())) and bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES))


def kept_bytes() -> int:
    """The free memory the heap keeps: TRIM_BYTES, or an eighth of the machine's memory where that is less (but
    LEAST_KEPT)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return LEAST_KEPT
    return max(LEAST_KEPT, min(TRIM_BYTES, memory // 8))


def _glibc() -> bool:
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (AttributeError, ValueError, OSError):
        return False

"""Resource limits that keep a hostile or broken program from exhausting the machine. Defaults are
generous; the CLI's --max-memory and --max-iterations (or these setters) change them."""

from __future__ import annotations

import math
import os
import re
from contextlib import contextmanager


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


class Limits:
    """max_bytes: the largest single tensor (or file member) gradc allocates, default half the machine's
    memory; max_iterations: the most iterations one while loop may run."""

    def __init__(self):
        self.max_bytes = _physical_memory() // 2
        self.max_iterations = 1_000_000


LIMITS = Limits()


@contextmanager
def limited(max_bytes: int | None = None, max_iterations: int | None = None):
    """Run a block with other limits (None keeps the current one)."""
    saved = LIMITS.max_bytes, LIMITS.max_iterations
    LIMITS.max_bytes = saved[0] if max_bytes is None else max_bytes
    LIMITS.max_iterations = saved[1] if max_iterations is None else max_iterations
    try:
        yield LIMITS
    finally:
        LIMITS.max_bytes, LIMITS.max_iterations = saved


def check_allocation(count: int, itemsize: int, what: str) -> None:
    """Raise ValueError before allocating ``count`` items of ``itemsize`` bytes beyond the limit."""
    if count < 0:
        raise ValueError(f"{what}: a negative size ({count} elements)")
    if count * itemsize > LIMITS.max_bytes:
        raise ValueError(f"{what} would need {count * itemsize:,} bytes ({count:,} elements), more than the "
                         f"limit of {LIMITS.max_bytes:,} bytes (--max-memory)")


def check_shape(shape, dtype, what: str) -> tuple[int, ...]:
    """``shape`` (an output a kernel is about to allocate, sized by attributes or tensors) if it fits the limit."""
    import numpy as np  # here, not above: the compiler reads LIMITS and does not import numpy

    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"{what}: the shape {list(shape)} has a negative dim")
    check_allocation(math.prod(shape), np.dtype(dtype).itemsize, f"{what} of shape {list(shape)}")
    return shape


def parse_bytes(text: str) -> int:
    """'512M', '2G', '1000' -> bytes (for --max-memory)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    size = re.fullmatch(r"(\d+\.?\d*|\.\d+)([KMGT]?)B?", text.strip().upper())
    if size is None:   # float() would take 'inf' and 'nan', and its message names no unit
        raise ValueError(f"'{text}' is not a size: a number of bytes, or with K, M, G or T (e.g. 512M, 4G)")
    number = float(size[1]) * units[size[2]]
    if number < 1:
        raise ValueError(f"a memory limit must be positive, not {text}")
    return int(number)

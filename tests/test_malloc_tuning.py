"""The executor tunes glibc's malloc once per process (gradc.executor.malloc): an array it frees stays in the heap
for the next step instead of going back to the system. The user's own malloc settings and GRADC_MALLOC_TUNING=0
leave it alone."""

import os
import subprocess
import sys

import pytest

from gradc.executor import malloc

# arrays of 20 MiB each, made and freed after the first Executor(): the resident memory they leave behind, and the
# tuning
PROBE = """
import sys
import numpy as np
import gradc
from gradc.executor import malloc
gradc.Executor()
def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
before = resident()
blocks = [np.ones(20 << 18, np.float32) for _ in range(int(sys.argv[1]))]
del blocks
print(resident() - before, malloc.keep_freed_memory())
"""

pytestmark = pytest.mark.skipif(not malloc._glibc(), reason="the tuning is glibc's; other C libraries are left alone")


def probe(arrays: int = 1, **env) -> tuple[int, bool]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GRADC_MALLOC"))}
    out = subprocess.run([sys.executable, "-c", PROBE, str(arrays)], env={**environment, **env}, capture_output=True,
                         text=True, check=True).stdout.split()
    return int(out[0]), out[1] == "True"


def test_a_freed_array_stays_in_the_heap_once_an_executor_exists():
    kept, tuned = probe()
    assert tuned and kept >= 19 << 20


MEMORY = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(MEMORY < 2 << 30, reason="a machine with under 2 GiB of memory keeps less")
def test_more_than_a_resnet50_step_frees_stays_in_the_heap():
    """A ResNet-50 step (batch 2) frees over 128 MiB at the top of the heap: 140 MiB freed at once stays."""
    kept, tuned = probe(arrays=7)
    assert tuned and kept >= 139 << 20


@pytest.mark.parametrize("memory, kept", [(24 << 30, 1 << 30), (2 << 30, 256 << 20), (256 << 20, 64 << 20)])
def test_the_heap_keeps_at_most_an_eighth_of_the_machines_memory(monkeypatch, memory, kept):
    pages = {"SC_PHYS_PAGES": memory // 4096, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(malloc.os, "sysconf", pages.__getitem__)
    assert malloc.kept_bytes() == kept

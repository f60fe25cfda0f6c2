"""The executor tunes glibc's malloc once per process (gradc.executor.malloc): an array it frees stays in the heap
for the next step instead of going back to the system. The user's own malloc settings and GRADC_MALLOC_TUNING=0
leave it alone."""

import os
import subprocess
import sys

import pytest

from gradc.executor import malloc

# a 20 MiB array made and freed after the first Executor(): the resident memory it leaves behind, and the tuning
PROBE = """
import numpy as np
import gradc
from gradc.executor import malloc
gradc.Executor()
def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
before = resident()
block = np.ones(20 << 18, np.float32)
del block
print(resident() - before, malloc.keep_freed_memory())
"""

pytestmark = pytest.mark.skipif(not malloc._glibc(), reason="the tuning is glibc's; other C libraries are left alone")


def probe(**env) -> tuple[int, bool]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GRADC_MALLOC"))}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**environment, **env}, capture_output=True, text=True,
                         check=True).stdout.split()
    return int(out[0]), out[1] == "True"


def test_a_freed_array_stays_in_the_heap_once_an_executor_exists():
    kept, tuned = probe()
    assert tuned and kept >= 19 << 20


@pytest.mark.parametrize("env", [{"GRADC_MALLOC_TUNING": "0"}, {"MALLOC_TRIM_THRESHOLD_": "131072"}])
def test_an_opt_out_or_the_users_own_setting_leaves_malloc_alone(env):
    kept, tuned = probe(**env)
    assert not tuned and kept < 1 << 20   # glibc's default: an array this size is unmapped when freed

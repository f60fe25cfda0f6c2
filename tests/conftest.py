import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # lets tests import gradcheck_cases and helpers

# xdist's workers share the cores: a BLAS thread per core in each worker oversubscribes them, and a product then
# waits for its thread that another worker holds off its core (the zoo trainings: 3x the CPU and 2.9x the wall time
# with two workers on two busy cores). Set before numpy loads OpenBLAS; the tests' child processes inherit it.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _threads = str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(_name, _threads)

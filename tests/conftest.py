import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # lets tests import gradcheck_cases and helpers
# before numpy loads OpenBLAS: `pytest -n 2` runs a worker per core, and a second BLAS thread in each only spins
# against the other worker (a [2, 32768] @ [32768, 64] product took 0.2-0.8 s of CPU so, 1 ms with one thread);
# the interpreters the tests start inherit it
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

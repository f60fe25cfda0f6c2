"""gradc compiles every Paddle fixture (the coverage rows of tests/data/paddle/layers, the top-level fixtures, the
op families of tests/data/paddle/ops, the vision training fixtures) into cases Paddle's executor runs:

    .venv/bin/python tools/compile_for_paddle.py /tmp/interop
    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/run_in_paddle.py --fixtures /tmp/interop

(tools/interop/export.py describes the case layout.)
"""

import sys
from pathlib import Path

from interop.export import export

if __name__ == "__main__":
    export(Path(sys.argv[1]))

"""Write the programs of tests/interop_cases.py for Paddle to run (tools/run_in_paddle.py --higher): per case a
directory with program.pb, feed.npz, params.npz, fetch.json and gradc's own values (gradc.npz).

    .venv/bin/python tools/higher_order_programs.py /tmp/gradc_higher
    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/run_in_paddle.py --higher /tmp/gradc_higher \\
        --save tests/data/paddle/higher_order
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import gradc  # noqa: E402
from gradc import registry  # noqa: E402
from interop_cases import CASES  # noqa: E402


def with_all_attrs(program: gradc.Program) -> None:
    """Every op carries each attribute its definition declares (Paddle fills in defaults only for ops that have
    a proto: forward ops, not grad ops)."""
    for block in program.blocks:
        for op in block.ops:
            opdef = registry.get(op.type)
            for name, default in (opdef.attrs.items() if opdef is not None else ()):
                if name not in op.attrs:
                    op.set_attr(name, default, opdef.attr_types[name])


def main(out: str) -> None:
    for name, build in CASES.items():
        program, feed, params, fetch = build()
        scope = gradc.Scope()
        for var, value in params.items():
            scope[var] = value.copy()
        values = gradc.Executor().run(program, feed, fetch, scope)
        case = Path(out) / name
        case.mkdir(parents=True, exist_ok=True)
        with_all_attrs(program)
        gradc.save(program, str(case / "program.pb"))
        np.savez(case / "feed.npz", **feed)
        np.savez(case / "params.npz", **params)
        np.savez(case / "gradc.npz", **dict(zip(fetch, values)))
        (case / "fetch.json").write_text(json.dumps(fetch))
        print(f"{name}: {program.num_ops()} ops, {len(fetch)} gradients")


if __name__ == "__main__":
    main(sys.argv[1])

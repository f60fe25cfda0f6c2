"""Record which indices Paddle 3.3.1's CPU top_k and top_k_v2 give among equal values (and NaNs): rows of a few
repeated values, every k from 1 to the width, largest and smallest, sorted or not, so that both of its algorithms
run (std::partial_sort for a small k, std::nth_element then std::sort otherwise). Writes
tests/data/paddle/topk_ties.npz: per case a row of ``cases`` (top_k_v2 or not, k, largest, sorted, width), its
X ([3, width], the next values of ``x``) and Paddle's indices ([3, k], the next values of ``indices``). Not part
of the package: it needs paddlepaddle 3.3.1.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_topk_ties.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import paddle
from paddle.base.layer_helper import LayerHelper

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "topk_ties.npz"


def paddle_indices(op: str, x: np.ndarray, k: int, largest: bool, ordered: bool) -> np.ndarray:
    main = paddle.static.Program()
    with paddle.static.program_guard(main):
        helper = LayerHelper(op)
        out, indices = (helper.create_variable_for_type_inference(t) for t in ("float32", "int64"))
        attrs = {"k": k, "axis": -1, "largest": largest, "sorted": ordered} if op == "top_k_v2" else {"k": k}
        helper.append_op(type=op, inputs={"X": paddle.static.data("x", x.shape, "float32")},
                         outputs={"Out": out, "Indices": indices}, attrs=attrs)
    return paddle.static.Executor(paddle.CPUPlace()).run(main, feed={"x": x}, fetch_list=[indices])[0]


def main() -> None:
    paddle.enable_static()
    rng = np.random.default_rng(0)
    cases, xs, indices = [], [], []
    for width in (4, 7, 20, 70, 200):
        for k in sorted({1, 2, 3, max(1, width // 3), width}):
            for largest in (True, False):
                for ordered in (True, False):
                    x = rng.integers(0, 3, (3, width)).astype("float32")
                    if width >= 20:
                        x[1, ::5] = np.nan
                    for op in ("top_k_v2", "top_k") if largest and ordered else ("top_k_v2",):   # v1: largest, sorted
                        cases.append([op == "top_k_v2", k, largest, ordered, width])
                        xs.append(x.ravel())
                        indices.append(paddle_indices(op, x, k, largest, ordered).ravel())
    np.savez_compressed(OUT, cases=np.array(cases, np.int16), x=np.concatenate(xs),
                        indices=np.concatenate(indices).astype(np.int16))
    case = len(cases)
    print(f"{OUT}: {case} cases")


if __name__ == "__main__":
    main()

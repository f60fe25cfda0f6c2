"""PIR programs of Paddle 3.3.1's further GPU-only MoE ops (moe_combine_no_weight and its grad op), written as
tools/paddle_gpu_only_translated.py writes its cases (legacy ops put into a ProgramDesc, named by Paddle's
translator) into tests/data/paddle/pir_gpu_only/<case>/; tests/test_moe_more.py runs them against the CUDA kernels'
formulas. Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_moe_translated.py [case ...]
"""

from __future__ import annotations

import sys
import warnings

import paddle
import paddle_gpu_only_translated as translated

F32 = translated.F32


def _combine_no_weight() -> dict:
    """moe_combine_no_weight of 6 dispatched rows back to 3 tokens (top 2; combine_weight fed, which the kernel
    ignores) and its grad op at a fed dy; scatter_index [s, k] a permutation of the rows (routes)."""
    tokens, k, dim = 3, 2, 4
    feeds = {"expert_rows": ([tokens * k, dim], F32), "combine_weights": ([tokens, k], F32),
             "routes": ([tokens, k], "int32"), "dcombined": ([tokens, dim], F32)}
    ins = {"x": ["expert_rows"], "combine_weight": ["combine_weights"], "scatter_index": ["routes"]}
    return {"feeds": feeds, "ops": [
        ("moe_combine_no_weight", ins, {"y": ("combined", [tokens, dim])}, {"epsilon": 1e-15}),
        ("moe_combine_no_weight_grad", {**ins, "y@GRAD": ["dcombined"]},
         {"x@GRAD": ("expert_rows@GRAD", [tokens * k, dim])}, {"epsilon": 1e-15})]}


CASES = {"moe_combine_no_weight": _combine_no_weight()}

if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    translated.CASES.update(CASES)
    for index, case in enumerate(CASES):   # the cases named on the command line, or all
        if not sys.argv[1:] or case in sys.argv[1:]:
            print(f"{case}: {translated.write(case, 400 + index)}")
    sys.exit(0)

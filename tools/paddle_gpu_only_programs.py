"""PIR programs of paddle.incubate's GPU-only ops, as Paddle 3.3.1 builds them in its default PIR mode on a machine
without a GPU (it builds them but has no CPU kernel to run them): fused_linear and fused_matmul_bias
(pd_op.fused_gemm_epilogue) with the training program Paddle's backward writes (pd_op.fused_gemm_epilogue_grad),
fused_linear_activation (relu, gelu: Paddle's PIR backward of those fails to build) and
softmax_mask_fuse_upper_triangle (forward only: building its grad needs the GPU kernel's dtype), each as
tests/data/paddle/pir_gpu_only/<case>/program.json, fetching "out" and, where Paddle built the backward, "loss" and
"<input>@GRAD", with feed.npz (inputs drawn here; Paddle computed no numbers) and meta.json. tests/test_pir_sweep.py
runs them against the ops' formulas. Not part of the package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_gpu_only_programs.py
"""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import paddle
import paddle.incubate.nn.functional as IF
from coverage.pir_build import _with_fetches, op_names
from paddle_gpu_only_translated import saved

# case: (inputs {name: shape}, the layer, whether Paddle's backward builds)
CASES = {
    "fused_linear": ({"x": [2, 3, 4], "w": [4, 5], "b": [5]}, lambda x, w, b: IF.fused_linear(x, w, b), True),
    "fused_linear_transpose_weight": ({"x": [3, 4], "w": [5, 4], "b": [5]},
                                      lambda x, w, b: IF.fused_linear(x, w, b, transpose_weight=True), True),
    "fused_matmul_bias_transpose_x": ({"x": [4, 3], "w": [4, 5], "b": [5]},
                                      lambda x, w, b: IF.fused_matmul_bias(x, w, b, transpose_x=True), True),
    "fused_linear_relu": ({"x": [2, 4], "w": [4, 128], "b": [128]},   # relu wants N a multiple of 128
                          lambda x, w, b: IF.fused_linear_activation(x, w, b, activation="relu"), False),
    "fused_linear_gelu": ({"x": [2, 3, 4], "w": [4, 8], "b": [8]},
                          lambda x, w, b: IF.fused_linear_activation(x, w, b, activation="gelu"), False),
    "softmax_mask_fuse_upper_triangle": ({"x": [1, 2, 4, 4]},
                                         lambda x: paddle.incubate.softmax_mask_fuse_upper_triangle(x), False),
}


def write(case: str, seed: int) -> str:
    shapes, layer, with_backward = CASES[case]
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        inputs = []
        for name, shape in shapes.items():
            value = paddle.static.data(name, shape, "float32")
            value.stop_gradient = False
            inputs.append(value)
        out = layer(*inputs)
        fetches = [(out, "out")]
        if with_backward:
            loss = paddle.mean(out * out)
            grads = paddle.static.gradients([loss], inputs)
            fetches += [(loss, "loss")] + [(g, f"{name}@GRAD") for name, g in zip(shapes, grads)]
    program = _with_fetches(main, fetches)
    directory = saved(program, case)
    rng = np.random.default_rng(seed)
    feed = {name: rng.standard_normal(shape).astype("float32") for name, shape in shapes.items()}
    np.savez_compressed(directory / "feed.npz", **feed)
    ops = [name for name in op_names(program.global_block().ops) if name != "pd_op.fetch"]
    meta = {"case": case, "paddle_version": paddle.__version__, "fetches": [name for _, name in fetches],
            "pir_ops": ops}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{ops}"


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    for index, case in enumerate(CASES):
        print(f"{case}: {write(case, 100 + index)}")
    sys.exit(0)

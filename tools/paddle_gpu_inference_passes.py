"""Programs Paddle's own fuse passes write with the ops of Paddle Inference's GPU pass list and BuildStrategy's
elementwise-activation fusion (tests/data/paddle/gpu_inference_passes/<case>): each case builds Paddle layers in a
pattern a pass fuses, runs the startup program, applies the passes to the program's graph (core.get_pass(...).apply,
the parameter scope attached, ``use_gpu`` set where a pass fuses for the GPU only; the Predictor would run the same
passes, but a CPU build's Predictor refuses a GPU config) and saves the rewritten program. Per case: model.pdmodel,
params.npz (every persistable var the rewritten program reads, from the scope, so also the weights a pass combined),
feed.npz, expected.npz (Paddle's CPU run of the unfused program) and meta.json (the ops before and after). Where
Paddle's CPU build has the fused op's kernel (fused_elemwise_add_activation), the rewritten program's own CPU run must
agree and is checked here. Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 PYTHONPATH=tools /work/paddle-venv/bin/python tools/paddle_gpu_inference_passes.py [case ...]
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import paddle
import paddle_legacy_shim
from paddle.base import core
from paddle.base.framework import IrGraph
from paddle.base.layer_helper import LayerHelper
from paddle.base.proto import framework_pb2

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "gpu_inference_passes"
MHA_PASSES = ["simplify_with_basic_ops_pass", "multihead_matmul_fuse_pass_v2", "gpu_cpu_map_matmul_v2_to_mul_pass",
              "gpu_cpu_map_matmul_v2_to_matmul_pass", "matmul_scale_fuse_pass", "multihead_matmul_fuse_pass_v3",
              "gpu_cpu_map_matmul_to_mul_pass", "fc_fuse_pass"]


def _elewise_add_relu():
    x, y = paddle.static.data("x", [2, 3, 4], "float32"), paddle.static.data("y", [2, 3, 4], "float32")
    x.stop_gradient = y.stop_gradient = False
    out = paddle.nn.functional.relu(x + y)
    paddle.static.append_backward(paddle.mean(out))
    return [out.name, "x@GRAD", "y@GRAD"]


def _add_relu_of_y():
    """x + relu(y): the pass fuses only the backward (the forward stays elementwise_add and relu)."""
    x, y = paddle.static.data("x", [2, 3, 4], "float32"), paddle.static.data("y", [2, 3, 4], "float32")
    x.stop_gradient = y.stop_gradient = False
    out = x + paddle.nn.functional.relu(y)
    paddle.static.append_backward(paddle.mean(out * out))
    return [out.name, "x@GRAD", "y@GRAD"]


def _skip_layernorm():
    x, y = paddle.static.data("x", [2, 3, 8], "float32"), paddle.static.data("y", [2, 3, 8], "float32")
    return [paddle.nn.LayerNorm(8)(x + y).name]


def _fc_layernorm():
    x, y = paddle.static.data("x", [6, 4], "float32"), paddle.static.data("y", [6, 8], "float32")
    h = paddle.static.nn.fc(x, 8, activation="relu")
    return [paddle.nn.LayerNorm(8)(h + y).name]


def _attention():
    x, mask = paddle.static.data("x", [2, 3, 8], "float32"), paddle.static.data("mask", [2, 1, 1, 3], "float32")
    return [paddle.nn.MultiHeadAttention(8, 2)(x, attn_mask=mask).name]


def _transpose_flatten_concat():
    helper, flat = LayerHelper("flatten2"), []
    for i, channels in enumerate((2, 3)):   # flatten2, the legacy op the pattern matches
        moved = paddle.transpose(paddle.static.data(f"x{i}", [2, channels, 4, 2], "float32"), [0, 2, 3, 1])
        out, shape = (helper.create_variable_for_type_inference("float32") for _ in range(2))
        helper.append_op(type="flatten2", inputs={"X": moved}, outputs={"Out": out, "XShape": shape}, attrs={"axis": 1})
        flat.append(out)
    return [paddle.concat(flat, 1).name]


CASES = {   # case -> (layers returning the fetched names, passes, pass attributes)
    "elewise_add_relu": (_elewise_add_relu, ["fuse_elewise_add_act_pass"], {}),
    "skip_layernorm": (_skip_layernorm, ["skip_layernorm_fuse_pass"], {}),
    "add_relu_of_y_backward": (_add_relu_of_y, ["fuse_elewise_add_act_pass"], {}),
    "fc_elementwise_layernorm": (_fc_layernorm, ["fc_fuse_pass", "fc_elementwise_layernorm_fuse_pass"],
                                 {"use_gpu": True}),
    "multihead_attention": (_attention, MHA_PASSES, {"use_gpu": True}),
    "transpose_flatten_concat": (_transpose_flatten_concat, ["transpose_flatten_concat_fuse_pass"], {}),
}


# the pass rewrites x + relu(y)'s backward into a fused grad op with add's x in its Y slot and the grads sent to the
# other input's var (tests/test_gpu_inference.py pins what gradc and Paddle compute of it)
MISWIRED = {"add_relu_of_y_backward"}


def _fused(main, scope, passes: list[str], attrs: dict):
    graph = core.Graph(main.desc)
    graph.set_not_owned("__param_scope__", scope)
    for name in passes:
        fuse = core.get_pass(name)
        for key, value in attrs.items():
            fuse.set(key, value)
        fuse.apply(graph)
    return IrGraph(graph, for_test=True).to_program()


def _feed(rng, var):
    return rng.standard_normal([d for d in var.shape]).astype(np.float32)


def write(case: str, seed: int) -> str:
    layers, passes, attrs = CASES[case]
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        fetches = layers()
    scope, exe = paddle.static.global_scope(), paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    rng = np.random.default_rng(seed)
    feed = {var.name: _feed(rng, var) for var in main.global_block().vars.values() if var.is_data}
    expected = dict(zip(fetches, exe.run(main, feed=feed, fetch_list=fetches)))
    fused = _fused(main, scope, passes, attrs)
    before = [op.type for op in main.global_block().ops]
    after = [op.type for op in fused.global_block().ops]
    assert after != before, f"{case}: {passes} fused nothing"
    fused_run = {}
    if {"fused_elemwise_add_activation", "fused_elemwise_add_activation_grad"} & set(after):   # a CPU kernel
        fused_run = dict(zip(fetches, exe.run(fused, feed=feed, fetch_list=fetches)))
        for name, value in fused_run.items():   # agrees with the unfused run, but where the pass miswires
            if case not in MISWIRED:
                np.testing.assert_allclose(value, expected[name], rtol=1e-5, atol=1e-6)
    params = {var.name: np.array(scope.find_var(var.name).get_tensor()) for var in fused.global_block().vars.values()
              if var.persistable and scope.find_var(var.name) is not None and var.name not in ("feed", "fetch")}
    directory = OUT / case
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    desc = framework_pb2.ProgramDesc.FromString(fused.desc.serialize_to_string())
    for block in desc.blocks:   # the graph's var order varies from run to run: by name, so a rerun writes the same
        block.vars.sort(key=lambda var: var.name)
    (directory / "model.pdmodel").write_bytes(desc.SerializeToString())
    np.savez_compressed(directory / "params.npz", **params)
    np.savez_compressed(directory / "feed.npz", **feed)
    np.savez_compressed(directory / "expected.npz", **expected)
    if case in MISWIRED:   # Paddle's own CPU run of the miswired program, which differs from expected
        np.savez_compressed(directory / "paddle_fused_run.npz", **fused_run)
    meta = {"case": case, "paddle_version": paddle.__version__, "passes": passes, "pass_attrs": attrs,
            "ops_before": before, "ops_after": after, "fetches": fetches}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{before} -> {after}"


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    paddle_legacy_shim.install()
    for index, case in enumerate(CASES):   # the cases named on the command line, or all; seed 700 + place in list
        if sys.argv[1:] and case not in sys.argv[1:]:
            continue
        paddle.seed(700 + index)
        print(f"{case}: {write(case, 700 + index)}")
    sys.exit(0)

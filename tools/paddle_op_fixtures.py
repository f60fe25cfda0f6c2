"""Paddle fixtures for the resize, vision, pooling, normalisation and padding ops and cumprod, broadcast_tensors,
index_put: each case (tools/op_cases) builds Paddle's own layers or functional calls (or, where 3.3.1 builds
only PIR ops, the legacy op appended directly) in legacy static mode; loss = sum(out_i * w_i) over its
outputs with random fed weights; Paddle's append_backward gives the gradients. Writes, per family,
tests/data/paddle/ops/<family>/: <case>.pb (the forward program with its loss, op_callstack stripped),
values.npz (feed, parameters, loss, gradients, persistables after the run) and cases.json. Test:
tests/test_ops_vs_paddle.py. Not part of the package: it needs paddlepaddle 3.3.1.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_op_fixtures.py [FAMILY ...]
"""

from __future__ import annotations

import importlib
import json
import sys
import zlib
from pathlib import Path

import numpy as np
import paddle
from paddle.base.backward import append_backward
from paddle.base.layer_helper import LayerHelper

sys.path.insert(0, str(Path(__file__).parent))
import op_cases  # noqa: E402
import paddle_legacy_shim  # noqa: E402

FAMILIES = ("interp", "vision", "pool", "norm", "pad", "dropout", "broadcast_put")
OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "ops"


def _persistables(program, scope) -> dict[str, np.ndarray]:
    return {v.name: np.array(scope.find_var(v.name).get_tensor()) for v in program.list_vars()
            if v.persistable and v.name not in ("feed", "fetch") and scope.find_var(v.name) is not None}


def _restore(scope, values: dict[str, np.ndarray]) -> None:
    for name, value in values.items():
        scope.find_var(name).get_tensor().set(value, paddle.CPUPlace())


def _stripped(program) -> bytes:
    copy = program.clone()
    for op in copy.global_block().ops:
        op.desc.remove_attr("op_callstack")
    return copy.desc.serialize_to_string()


def legacy_op(op_type: str, inputs: dict, attrs: dict, dtype: str):
    """A legacy op appended directly (several 3.3.1 Python APIs build only PIR ops)."""
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def weighted_sum(out, weight, dtype: str):
    prod = legacy_op("elementwise_mul", {"X": out, "Y": weight}, {"axis": -1}, dtype)
    return legacy_op("reduce_sum", {"X": prod}, {"reduce_all": True, "dim": [], "keep_dim": False}, dtype)


def run_case(case: op_cases.Case, seed: int) -> tuple[dict, dict[str, np.ndarray], bytes]:
    op_cases.begin_case(seed)
    paddle.set_default_dtype(case.dtype)
    main, startup = paddle.static.Program(), paddle.static.Program()
    executor, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    with paddle.static.program_guard(main, startup), paddle.static.scope_guard(scope):
        outs = case.build()
        feed = dict(op_cases.FEED)
        executor.run(startup)
        params = _persistables(main, scope)
        shapes = [o.shape for o in executor.run(main, feed=feed, fetch_list=outs)]
        _restore(scope, params)   # the shape run updated running statistics
        terms = []
        for i, (out, shape) in enumerate(zip(outs, shapes)):
            feed[f"w{i}"] = op_cases.RNG.standard_normal(shape).astype(case.dtype)
            weight = paddle.static.data(f"w{i}", list(shape), case.dtype)
            terms.append(weighted_sum(out, weight, case.dtype))
        loss = legacy_op("sum", {"X": terms}, {}, case.dtype) if len(terms) > 1 else terms[0]
        forward = _stripped(main)
        params_grads = append_backward(loss)
        inputs = [n for n in op_cases.FEED if not main.global_block().var(n).stop_gradient]
        grads = [g.name for _, g in params_grads] + [f"{n}@GRAD" for n in inputs]
        values = executor.run(main, feed=feed, fetch_list=[loss.name, *grads])
        after = _persistables(main, scope)   # running statistics are updated in place
    arrays = {f"feed/{k}": v for k, v in feed.items()} | {f"param/{k}": v for k, v in params.items()}
    arrays |= {f"grad/{k}": v for k, v in zip(grads, values[1:])} | {f"after/{k}": v for k, v in after.items()}
    arrays["loss"] = values[0]
    ops = sorted({op.type for op in paddle.static.Program.parse_from_string(forward).global_block().ops})
    meta = {"name": case.name, "dtype": case.dtype, "loss": loss.name, "ops": ops,
            "params_grads": [[p.name, g.name] for p, g in params_grads], "inputs": inputs}
    if case.note:
        meta["note"] = case.note
    if case.random:
        meta["random"] = case.random
    return meta, arrays, forward


def build_family(family: str) -> None:
    module = importlib.import_module(f"op_cases.{family}")
    out = OUT / family
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.pb"):
        stale.unlink()
    metas, arrays = [], {}
    for case in module.CASES:
        meta, values, forward = run_case(case, zlib.crc32(case.name.encode()))
        metas.append(meta)
        arrays |= {f"{case.name}/{k}": v for k, v in values.items()}
        (out / f"{case.name}.pb").write_bytes(forward)
        print(f"{family}/{case.name}: loss {float(values['loss']):.6f}, ops {meta['ops']}", flush=True)
    lines = ",\n  ".join(json.dumps(m) for m in metas)
    (out / "cases.json").write_text(f'{{"paddle_version": "{paddle.__version__}", "cases": [\n  {lines}\n]}}\n')
    np.savez_compressed(out / "values.npz", **arrays)


if __name__ == "__main__":
    paddle.enable_static()
    paddle_legacy_shim.install()   # LocalResponseNorm calls paddle.multiply, which 3.3.1 builds only as PIR
    for name in sys.argv[1:] or FAMILIES:
        build_family(name)

"""Fixtures of paddle.static.gradients with several targets (tests/test_gradients_targets.py): per case a legacy
forward program (program.pb), feed.npz (the target gradients' values too), params.npz, meta.json (targets, target
gradients, inputs) and the inputs' gradients Paddle computes for the same program built in PIR mode (grads.npz) and
in legacy mode (legacy.npz). Float64, small. Needs paddlepaddle 3.x, which gradc does not depend on.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_gradients_targets.py tests/data/paddle/targets

Paddle 3's legacy gradients drop a seed where one target depends on another (its seed of the earlier target is
overwritten by the grad flowing back, or the other way round with a target gradient); PIR's sum both, as the
gradient of sum_i <target_i, seed_i> does: grads.npz holds PIR's numbers, legacy.npz legacy's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle.base.layer_helper import LayerHelper

paddle.enable_static()


def _op(op_type: str, inputs: dict, attrs: dict):
    """A legacy op appended directly: in 3.3.1 paddle.matmul, paddle.tanh build PIR ops only."""
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference("float64")
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def matmul(x, y):
    return paddle.matmul(x, y) if paddle.framework.in_pir_mode() else _op("matmul_v2", {"X": x, "Y": y}, {})


def tanh(x):
    return paddle.tanh(x) if paddle.framework.in_pir_mode() else _op("tanh", {"X": x}, {})


def _inputs():
    x = paddle.static.data("x", [3, 4], "float64")
    x.stop_gradient = False
    w = paddle.create_parameter([4, 2], "float64", name="w")
    b = paddle.create_parameter([2], "float64", name="b")
    return x, w, b


def independent():
    """Three targets of different shapes, none computed from another: tanh(x @ w + b), mean(x^2), log_softmax(x)."""
    x, w, b = _inputs()
    targets = [tanh(matmul(x, w) + b), paddle.mean(paddle.square(x)), paddle.nn.functional.log_softmax(x)]
    return targets, [None] * 3, [x, w, b]


def dependent():
    """h = tanh(x @ w + b), t2 = 3 h^2 from it, t3 = mean(t2) from that; given as [t3, h, t2], not in program order."""
    x, w, b = _inputs()
    h = tanh(matmul(x, w) + b)
    t2 = paddle.scale(h * h, 3.0)
    return [paddle.mean(t2), h, t2], [None] * 3, [x, w, b]


def weighted():
    """The dependent targets [h, t2, t3] with target gradients [v1, v2, None]."""
    x, w, b = _inputs()
    h = tanh(matmul(x, w) + b)
    t2 = paddle.scale(h * h, 3.0)
    v1, v2 = paddle.static.data("v1", [3, 2], "float64"), paddle.static.data("v2", [3, 2], "float64")
    return [h, t2, paddle.mean(t2)], [v1, v2, None], [x, w, b]


CASES = {"independent": independent, "dependent": dependent, "weighted": weighted}


def _values(rng) -> tuple[dict, dict]:
    feed = {"x": rng.standard_normal((3, 4)), "v1": rng.standard_normal((3, 2)), "v2": rng.standard_normal((3, 2))}
    return feed, {"w": rng.standard_normal((4, 2)), "b": rng.standard_normal(2)}


def _gradients(build, feed: dict, params: dict):
    """Paddle's gradients of the case built in the current IR mode, and the program before paddle.static.gradients
    appended its ops (as the targets' and target gradients' names)."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        targets, given, inputs = build()
        pir = paddle.framework.in_pir_mode()   # a PIR value computed by an op has no name
        forward = None if pir else main.desc.serialize_to_string()
        names = (None if pir else [t.name for t in targets], [None if g is None else g.name for g in given],
                 [v.name for v in inputs])
        grads = paddle.static.gradients(targets, inputs, target_gradients=given)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for name, value in params.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        fed = {name: value for name, value in feed.items() if name in ("x", *filter(None, names[1]))}
        values = paddle.static.Executor(paddle.CPUPlace()).run(main, feed=fed, fetch_list=grads)
    return forward, names, fed, dict(zip(names[2], values))


def main(out: Path) -> None:
    for case, build in CASES.items():
        feed, params = _values(np.random.default_rng(7))
        forward, (targets, given, inputs), fed, legacy = _gradients(build, feed, params)
        with paddle.pir_utils.IrGuard():
            pir = _gradients(build, feed, params)[3]
        where = out / case
        where.mkdir(parents=True, exist_ok=True)
        (where / "program.pb").write_bytes(forward)
        np.savez(where / "feed.npz", **fed)
        np.savez(where / "params.npz", **params)
        np.savez(where / "grads.npz", **pir)
        np.savez(where / "legacy.npz", **legacy)
        meta = {"case": case, "paddle_version": paddle.__version__, "description": build.__doc__,
                "targets": targets, "target_gradients": given, "inputs": inputs}
        (where / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        apart = max(float(np.abs(legacy[name] - pir[name]).max()) for name in inputs)
        print(f"{case}: targets {targets}, legacy and PIR gradients apart by {apart:.3g}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/targets"))

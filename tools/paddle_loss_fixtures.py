"""Fixtures for every loss of paddle.nn (and paddle.nn.functional's extra ones): each case builds one
loss with Paddle's own layer or function, in legacy static mode and float64 where Paddle allows it,
appends Paddle's backward, and records the forward and backward programs, the inputs, the parameters,
and the loss and gradients Paddle computes. A loss that is not a scalar is weighted by a fixed random
tensor and summed, so the output grads are not uniform. Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_loss_fixtures.py [CASE ...]

Writes tests/data/paddle/ops/loss/: cases.json, and per case NAME.forward.pb, NAME.backward.pb and
NAME.npz (feed/*, param/*, grad/*, loss). Test: tests/test_losses_vs_paddle.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle_legacy_shim
import paddle_loss_cases
from paddle.base.backward import append_backward
from paddle.base.data_feeder import convert_dtype
from paddle_programs import without_callstacks

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "ops" / "loss"

paddle.enable_static()
paddle_legacy_shim.install()


class Inputs:
    """The data vars a case declares, with the values fed and which get gradients."""

    def __init__(self, rng: np.random.Generator, dtype: str):
        self.rng = rng
        self.dtype = dtype  # of the float inputs
        self.feed: dict[str, np.ndarray] = {}
        self.wrt: list[str] = []

    def data(self, name: str, value, grad: bool = False):
        value = np.asarray(value)
        var = paddle.static.data(name, list(value.shape), str(value.dtype))
        var.stop_gradient = not grad
        self.feed[name] = value
        if grad:
            self.wrt.append(name)
        return var

    def randn(self, name: str, *shape, scale: float = 1.0, grad: bool = True):
        return self.data(name, (self.rng.standard_normal(shape) * scale).astype(self.dtype), grad)

    def uniform(self, name: str, *shape, low: float = 0.05, high: float = 0.95, grad: bool = True):
        return self.data(name, self.rng.uniform(low, high, shape).astype(self.dtype), grad)

    def probs(self, name: str, *shape, axis: int = -1, grad: bool = True):
        """Rows summing to 1 along ``axis``."""
        e = np.exp(self.rng.standard_normal(shape))
        return self.data(name, (e / e.sum(axis=axis, keepdims=True)).astype(self.dtype), grad)

    def ints(self, name: str, values, dtype: str = "int64"):
        return self.data(name, np.asarray(values, dtype=dtype))

    def classes(self, name: str, high: int, *shape, dtype: str = "int64"):
        return self.ints(name, self.rng.integers(0, high, shape), dtype)


def _weighted_sum(out, inputs: Inputs):
    """A non-scalar loss times a fixed random weight, summed."""
    dtype = convert_dtype(out.dtype)
    weight = inputs.data("loss_weight", inputs.rng.uniform(0.5, 1.5, out.shape).astype(dtype))
    return paddle.sum(paddle.multiply(out, weight))


def build(name: str, make, seed: int = 2024) -> dict:
    """A case named *_float32 runs in float32 (some losses have no float64 kernel), the others in float64."""
    dtype = "float32" if name.endswith("_float32") else "float64"
    paddle.seed(seed)
    paddle.set_default_dtype(dtype)
    inputs = Inputs(np.random.default_rng(seed), dtype)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        out = make(inputs)
        loss = out if len(out.shape) == 0 else _weighted_sum(out, inputs)
        forward = without_callstacks(main)
        params_grads = append_backward(loss)
    executor = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        params = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()}
        grads = [g.name for _, g in params_grads] + [f"{n}@GRAD" for n in inputs.wrt]
        values = executor.run(main, feed=inputs.feed, fetch_list=[loss.name, *grads])
    arrays = {f"feed/{k}": v for k, v in inputs.feed.items()}
    arrays |= {f"param/{k}": v for k, v in params.items()}
    arrays |= {f"grad/{k}": v for k, v in zip(grads, values[1:])}
    arrays["loss"] = values[0]
    np.savez_compressed(OUT / f"{name}.npz", **arrays)
    (OUT / f"{name}.forward.pb").write_bytes(forward)
    (OUT / f"{name}.backward.pb").write_bytes(without_callstacks(main))
    ops = sorted({op.type for op in main.global_block().ops})
    print(f"{name}: loss {float(values[0]):.6g}; {' '.join(ops)}")
    return {"name": name, "loss": loss.name, "grads": grads,
            "params_grads": [[p.name, g.name] for p, g in params_grads], "op_types": ops, "dtype": dtype}


def main(names: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    meta_file = OUT / "cases.json"
    meta = json.loads(meta_file.read_text()) if meta_file.exists() and names else {"cases": [], "unbuildable": {}}
    cases = {c["name"]: c for c in meta["cases"]}
    unbuildable = dict(meta["unbuildable"])
    for name, make in paddle_loss_cases.CASES.items():
        if names and name not in names:
            continue
        try:
            cases[name] = build(name, make)
            unbuildable.pop(name, None)
        except Exception as e:  # noqa: BLE001 - a loss Paddle cannot build in legacy mode is recorded, not fatal
            unbuildable[name] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:240]}"
            print(f"{name}: Paddle cannot build it: {unbuildable[name]}")
    order = list(paddle_loss_cases.CASES)
    rows = ",\n  ".join(json.dumps(cases[n]) for n in order if n in cases)
    meta_file.write_text(f'{{"paddle_version": "{paddle.__version__}",\n "unbuildable": '
                         f'{json.dumps(unbuildable, indent=1, sort_keys=True)},\n "cases": [\n  {rows}\n]}}\n')


if __name__ == "__main__":
    main(sys.argv[1:])

"""float8 fixtures from a real PaddlePaddle 3.3.1 CPU build: its rounding of float32 to float8_e4m3fn and
float8_e5m2 (paddle.cast in dygraph), its values of every float8 bit pattern, a legacy program of casts, and a PIR
model with float8 buffers saved by paddle.jit.save and paddle.save.

    /path/to/paddle/python tools/paddle_float8_fixtures.py tests/data/float8

rounding.npz: x, float32 values (every finite number of both formats, the midpoints between neighbours, the float32
numbers either side of each midpoint, the edges, 2,000 random values over 14 decades); e4m3fn and e5m2, Paddle's
bits of each (uint8); values_e4m3fn and values_e5m2, Paddle's float32 of each of the 256 bit patterns.
cast.pb, cast.npz: a legacy program x -> cast to each format -> cast back to float32 -> sum, with x and Paddle's out;
backward.pb, backward.npz: a legacy forward program through a float8 cast, with Paddle's loss and w@GRAD.
model.json, model.pdiparams, model.npz (x, out): a Layer with a float8_e4m3fn and a float8_e5m2 buffer, saved by
paddle.jit.save; state.pdparams the same buffers saved by paddle.save (int8 bits).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

FORMATS = ("float8_e4m3fn", "float8_e5m2")
SEED = 2030


def bit_values(paddle, fmt: str) -> np.ndarray:
    """Paddle's float32 of each of the 256 bit patterns of ``fmt``."""
    return paddle.cast(paddle.to_tensor(np.arange(256, dtype=np.uint8)).view(getattr(paddle, fmt)), "float32").numpy()


def sweep(tables: list[np.ndarray]) -> np.ndarray:
    """float32 inputs that reach every rounding decision of both formats."""
    values = np.concatenate(tables).astype(np.float64)
    finite = np.unique(values[np.isfinite(values)])
    mid = ((finite[1:] + finite[:-1]) / 2).astype(np.float32)
    edges = [np.inf, -np.inf, np.nan, -np.nan, 464, 465, 479, 480, 1e9, 61440, 61439, 65536, 1e-9, -0.0, 2.0 ** -10]
    rng = np.random.default_rng(SEED)
    noise = rng.standard_normal(2000) * 10.0 ** rng.integers(-9, 6, 2000)
    return np.concatenate([finite, mid, np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(-np.inf)),
                           edges, noise]).astype(np.float32)


def rounding(paddle, out: Path) -> None:
    tables = [bit_values(paddle, fmt) for fmt in FORMATS]
    x = sweep(tables)
    bits = {fmt.split("_")[1]: paddle.cast(paddle.to_tensor(x), fmt).numpy().view(np.uint8) for fmt in FORMATS}
    np.savez(out / "rounding.npz", x=x, **bits, values_e4m3fn=tables[0], values_e5m2=tables[1])


def legacy_cast_program(out: Path) -> None:
    """The legacy program, in a child process: legacy static mode must be chosen before paddle is imported."""
    env = {**os.environ, "FLAGS_enable_pir_api": "0"}
    subprocess.run([sys.executable, __file__, "--legacy", str(out)], env=env, check=True)


def _legacy(out: Path) -> None:
    import paddle
    from paddle_optimizer_fixtures import serialize  # without op_callstack: the tool's line numbers
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [4, 8], "float32")
        total = sum(paddle.cast(paddle.cast(x, fmt), "float32") for fmt in FORMATS)
    x_value = (np.random.default_rng(SEED).standard_normal((4, 8)) * 200).astype(np.float32)
    x_value[0, :4] = [500.0, -70000.0, 2.0 ** -10, -0.0]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    (result,) = exe.run(main, feed={"x": x_value}, fetch_list=[total])
    (out / "cast.pb").write_bytes(serialize(main))
    np.savez(out / "cast.npz", x=x_value, out=result, out_name=np.array(total.name))
    _legacy_backward(paddle, serialize, out)


def _legacy_backward(paddle, serialize, out: Path) -> None:
    """loss = mean(float32(float8_e4m3fn(x w))^2), differentiated by Paddle's append_backward: its cast grads carry
    the gradient through the float8 var (rounded to float8_e4m3fn there)."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [4, 8], "float32")
        w = paddle.static.create_parameter([4, 8], "float32", name="w")
        y = paddle.cast(paddle.cast(x * w, "float8_e4m3fn"), "float32")
        loss = paddle.mean(y * y)
    forward = main.clone()
    paddle.static.append_backward(loss)
    exe = paddle.static.Executor(paddle.CPUPlace())
    rng = np.random.default_rng(SEED + 1)
    x_value, w_value = (rng.standard_normal((2, 4, 8)) * 3).astype(np.float32)
    exe.run(startup)
    paddle.static.global_scope().find_var("w").get_tensor().set(w_value, paddle.CPUPlace())
    loss_value, w_grad = exe.run(main, feed={"x": x_value}, fetch_list=[loss, "w@GRAD"])
    (out / "backward.pb").write_bytes(serialize(forward))
    np.savez(out / "backward.npz", x=x_value, w=w_value, loss=loss_value, w_grad=w_grad,
             loss_name=np.array(loss.name))


def model(paddle, out: Path) -> None:
    class Buffers(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            w = paddle.to_tensor(np.array([[0.3, -1.7, 449.0], [3e-3, 100.0, -0.0]], np.float32))
            self.register_buffer("w8", paddle.cast(w, "float8_e4m3fn"))
            self.register_buffer("w5", paddle.cast(w, "float8_e5m2"))

        def forward(self, x):
            rounded = paddle.cast(paddle.cast(x, "float8_e4m3fn"), "float32")
            return rounded + paddle.cast(self.w8, "float32") * paddle.cast(self.w5, "float32")

    layer = Buffers()
    spec = [paddle.static.InputSpec([2, 3], "float32", "x")]
    paddle.jit.save(paddle.jit.to_static(layer, input_spec=spec, full_graph=True), str(out / "model"))
    paddle.save(layer.state_dict(), str(out / "state.pdparams"))
    x = np.array([[1.1, 2.3, 500.0], [-3.3, 0.01, 7.0]], np.float32)
    np.savez(out / "model.npz", x=x, out=layer(paddle.to_tensor(x)).numpy())


def main() -> None:
    if sys.argv[1] == "--legacy":
        _legacy(Path(sys.argv[2]))
        return
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    import paddle
    rounding(paddle, out)
    model(paddle, out)
    legacy_cast_program(out)


if __name__ == "__main__":
    main()

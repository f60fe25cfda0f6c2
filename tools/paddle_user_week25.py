"""The time-series forecaster's programs of docs/tools.md's 'A time-series forecaster's week', written with Paddle
3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), on sliding windows of synthetic series:

- forecast.pb: windows x [-1, 24, 1] scaled inside the program (mean and std over time, epsilon 1e-5), a TCN of two
  residual blocks of dilated causal Conv1D whose weights are weight-normed by hand (w = g * v / ||v||:
  paddle.nn.utils.weight_norm fails in legacy static mode, meta.json keeps its error) -- block 1 pads on the left
  and convolves (dilation 1), block 2 convolves with padding and crops the right end (dilation 2) -- then a
  TransformerEncoderLayer under a causal mask over the 24 steps, the last step's features to 3 horizons x 3
  quantiles, the scaling inverted; the pinball loss of quantiles 0.1/0.5/0.9 by maximum (and the same by where,
  fetched). Trained by Paddle's Adam with ReduceOnPlateau (stepped after each epoch with the epoch's mean training
  loss) and ClipGradByValue(0.5): 6 epochs of 4 batches of 16 windows.
- forecast_infer.pdmodel: the net alone saved by save_inference_model from the trained scope, run by Paddle's
  Predictor for an autoregressive rollout of 12 steps (each step's median forecast of the next value appended to
  the window).

Written (programs gzipped): forecast.pb, forecast_startup.pb, forecast_infer.pdmodel, data.npz (x, y),
trained.npz, rollout.npz (the windows and the Predictor's 12-step forecasts), meta.json (Paddle's losses per step,
its learning rates per epoch, the vars' names, ReduceOnPlateau's rates over a list of metrics, the weight_norm
error, Paddle's float64 gradients' errors against central differences). tools/paddle_user_week25_pir.py adds the
PIR export of the scaling.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week25.py tests/data/paddle/user_week25
    FLAGS_enable_pir_api=1 /work/paddle-venv/bin/python tools/paddle_user_week25_pir.py tests/data/paddle/user_week25

With ``--float64`` after the folder, only paddle64.npz (no other file rewritten): the same training in float64 (the
net built in float64, started from the committed forecast_startup.pb's values and fed the committed data.npz, both
cast; the same ReduceOnPlateau, Adam and clipping, epochs and batches), its 24 losses ("losses") and trained weights
by name: the reference that float32 results, Paddle's and gradc's, are judged against (Adam's normalisation of small
gradients amplifies float32 rounding, which differs by CPU: numpy's SIMD dispatch, OpenBLAS's kernels).
"""

import gzip
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import without_callstacks, write_gz

WINDOW, HORIZON, QUANTILES, CHANNELS, BATCH, EPOCHS, ROLLOUT = 24, 3, (0.1, 0.5, 0.9), 8, 16, 6, 12
RNG = np.random.default_rng(25)
PLATEAU = {"learning_rate": 0.02, "factor": 0.5, "patience": 0, "threshold": 0.1}
CLIP = 0.5


def series(count: int, length: int) -> np.ndarray:
    """Daily-like series of different levels and scales: a trend, a period-12 wave and noise."""
    t = np.arange(length)
    level, scale, trend = RNG.uniform(-50, 50, count), RNG.uniform(1, 20, count), RNG.uniform(-0.05, 0.05, count)
    phase = RNG.uniform(0, 2 * np.pi, count)
    wave = np.sin(2 * np.pi * t[None] / 12 + phase[:, None]) + 0.3 * RNG.standard_normal((count, length))
    return (level[:, None] + scale[:, None] * (wave + trend[:, None] * t[None])).astype(np.float32)


def windows(values: np.ndarray, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """The sliding windows a user cuts in numpy: 24 steps in, the next 3 out."""
    xs, ys = [], []
    for row in values:
        for start in range(0, len(row) - WINDOW - HORIZON + 1, stride):
            xs.append(row[start:start + WINDOW, None])
            ys.append(row[start + WINDOW:start + WINDOW + HORIZON])
    return np.stack(xs), np.stack(ys)


def weight_normed(name: str, channels_in: int, kernel: int):
    """v [out, in, k] and g [out, 1, 1] as parameters; w = g * v / ||v|| (each output channel's norm)."""
    dtype = paddle.get_default_dtype()
    v = paddle.static.create_parameter([CHANNELS, channels_in, kernel], dtype, attr=paddle.ParamAttr(
        name=f"{name}.v", initializer=paddle.nn.initializer.KaimingNormal()))
    g = paddle.static.create_parameter([CHANNELS, 1, 1], dtype, attr=paddle.ParamAttr(
        name=f"{name}.g", initializer=paddle.nn.initializer.Constant(1.0)))
    bias = paddle.static.create_parameter([CHANNELS], dtype, attr=paddle.ParamAttr(
        name=f"{name}.b", initializer=paddle.nn.initializer.Constant(0.0)))
    norm = paddle.sqrt(paddle.sum(paddle.square(v), axis=[1, 2], keepdim=True))
    return g * v / norm, bias


def causal_padded(x, name: str, channels_in: int, dilation: int):
    """Left padding of (k - 1) d zeros, then a valid convolution (block 1's way)."""
    weight, bias = weight_normed(name, channels_in, 2)
    return F.conv1d(F.pad(x, [dilation, 0], data_format="NCL"), weight, bias, dilation=dilation)


def causal_cropped(x, name: str, channels_in: int, dilation: int):
    """Padding of (k - 1) d on both sides, then the last (k - 1) d steps cropped (block 2's way)."""
    weight, bias = weight_normed(name, channels_in, 2)
    return F.conv1d(x, weight, bias, padding=dilation, dilation=dilation)[:, :, :-dilation]


def forecaster(x):
    """x [N, 24, 1] -> the quantile forecasts [N, 3, 3] in the series' own scale."""
    mean = paddle.mean(x, axis=1, keepdim=True)
    std = paddle.sqrt(paddle.mean(paddle.square(x - mean), axis=1, keepdim=True) + 1e-5)
    h = paddle.transpose((x - mean) / std, [0, 2, 1])
    skip = paddle.nn.Conv1D(1, CHANNELS, 1, weight_attr=paddle.ParamAttr(name="skip.w"),
                            bias_attr=paddle.ParamAttr(name="skip.b"))(h)
    h = F.relu(causal_padded(F.relu(causal_padded(h, "tcn1a", 1, 1)), "tcn1b", CHANNELS, 1)) + skip
    h = F.relu(causal_cropped(F.relu(causal_cropped(h, "tcn2a", CHANNELS, 2)), "tcn2b", CHANNELS, 2)) + h
    encoder = paddle.nn.TransformerEncoderLayer(CHANNELS, 2, 16, dropout=0.0)
    mask = paddle.full([WINDOW, WINDOW], -np.inf, paddle.get_default_dtype())
    causal = paddle.triu(mask, 1)   # Transformer's square mask
    h = encoder(paddle.transpose(h, [0, 2, 1]), src_mask=causal)
    head = paddle.nn.Linear(CHANNELS, HORIZON * len(QUANTILES), weight_attr=paddle.ParamAttr(name="head.w"),
                            bias_attr=paddle.ParamAttr(name="head.b"))
    scaled = paddle.reshape(head(h[:, -1, :]), [-1, HORIZON, len(QUANTILES)])
    return scaled * std + mean


def pinball(forecast, y, by_where: bool = False):
    """The mean over examples, horizons and quantiles of max(q e, (q - 1) e), e = y - forecast."""
    quantiles = np.array(QUANTILES, paddle.get_default_dtype())
    q = paddle.to_tensor(quantiles) if paddle.in_dynamic_mode() else paddle.assign(quantiles)
    error = paddle.unsqueeze(y, -1) - forecast
    if by_where:
        return paddle.mean(paddle.where(error >= 0, q * error, (q - 1) * error))
    return paddle.mean(paddle.maximum(q * error, (q - 1) * error))


def programs():
    """The training program, its forward, the startup, the scheduler and the fetched vars' names, in Paddle's default
    dtype (float32 unless --float64 set it; the layers take theirs from it too)."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 25
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [-1, WINDOW, 1], paddle.get_default_dtype())
        y = paddle.static.data("y", [-1, HORIZON], paddle.get_default_dtype())
        forecast = forecaster(x)
        loss = pinball(forecast, y)
        by_where = pinball(forecast, y, by_where=True)
    forward = main.clone()
    scheduler = paddle.optimizer.lr.ReduceOnPlateau(**PLATEAU)
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.Adam(scheduler, grad_clip=paddle.nn.ClipGradByValue(CLIP)).minimize(loss)
    return main, forward, startup, scheduler, {"loss": loss.name, "forecast": forecast.name,
                                               "loss_by_where": by_where.name}


def weight_norm_error() -> str:
    """What paddle.nn.utils.weight_norm says of a Conv1D in legacy static mode."""
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()):
        try:
            paddle.nn.utils.weight_norm(paddle.nn.Conv1D(1, 4, 2))
        except Exception as exc:   # noqa: BLE001 - recorded whatever Paddle raises
            return f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return ""


def train(out: Path, exe, meta: dict) -> None:
    x, y = windows(series(8, 48), 3)
    np.savez_compressed(out / "data.npz", x=x, y=y)
    main, forward, startup, scheduler, names = programs()
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        losses, rates = fit(exe, main, scheduler, names["loss"], x, y)
        trained = {param.name: np.array(scope.var(param.name).get_tensor())
                   for param in main.global_block().all_parameters()}
        export(out, exe, forward, names["forecast"], x, meta)
    write_gz(out / "forecast.pb", without_callstacks(forward))
    write_gz(out / "forecast_startup.pb", without_callstacks(startup))
    np.savez(out / "trained.npz", **trained)
    meta["forecast"] = {**names, "losses": losses, "learning_rates": rates, "plateau": PLATEAU, "clip": CLIP,
                        "examples": len(x), "batch": BATCH, "epochs": EPOCHS}


def fit(exe, main, scheduler, loss: str, x: np.ndarray, y: np.ndarray) -> tuple[list[float], list[float]]:
    """EPOCHS epochs of the batches in order, ReduceOnPlateau stepped after each with the epoch's mean loss: (the
    losses per step, the rate of each epoch)."""
    losses, rates = [], []
    for _ in range(EPOCHS):
        rates.append(scheduler())
        epoch = [float(exe.run(main, feed={"x": x[i:i + BATCH], "y": y[i:i + BATCH]}, fetch_list=[loss])[0])
                 for i in range(0, len(x), BATCH)]
        losses.extend(epoch)
        scheduler.step(float(np.mean(epoch)))
    return losses, rates


def committed_start(out: Path, exe) -> dict[str, np.ndarray]:
    """The parameters as the committed forecast_startup.pb initialises them in Paddle (float32), by name."""
    startup = paddle.static.Program.parse_from_string(gzip.decompress((out / "forecast_startup.pb.gz").read_bytes()))
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
    return {name: np.array(scope.find_var(name).get_tensor()) for name in np.load(out / "trained.npz").files}


def float64_training(out: Path, exe) -> None:
    """The plateau training again in float64 from the committed start on the committed batches: paddle64.npz. Its
    rates must be the float32 run's (else it is not the same run) and its losses near the float32 ones."""
    data = np.load(out / "data.npz")
    x, y = data["x"].astype(np.float64), data["y"].astype(np.float64)
    start = committed_start(out, exe)
    paddle.set_default_dtype("float64")
    main, _, startup, scheduler, names = programs()
    params = {param.name for param in main.global_block().all_parameters()}
    assert params == set(start), sorted(params ^ set(start))
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for name, value in start.items():
            scope.var(name).get_tensor().set(value.astype(np.float64), paddle.CPUPlace())
        losses, rates = fit(exe, main, scheduler, names["loss"], x, y)
        trained = {name: np.array(scope.find_var(name).get_tensor()) for name in start}
    forecast = json.loads((out / "meta.json").read_text())["forecast"]
    assert rates == forecast["learning_rates"], (rates, forecast["learning_rates"])
    print("float64 losses' largest relative difference from the float32 fixture's:",
          np.abs(np.array(losses) / forecast["losses"] - 1).max())
    np.savez_compressed(out / "paddle64.npz", losses=np.array(losses), **trained)


def export(out: Path, exe, forward, forecast_name: str, train_x: np.ndarray, meta: dict) -> None:
    """The net alone (the forward program pruned to the forecast) from the trained scope, saved for inference; the
    Predictor's 12-step rollout of 2 windows."""
    x, forecast = forward.global_block().var("x"), forward.global_block().var(forecast_name)
    start = train_x[[5, 40]]
    with tempfile.TemporaryDirectory() as saved:
        paddle.static.save_inference_model(f"{saved}/forecast", [x], [forecast], exe, program=forward)
        write_gz(out / "forecast_infer.pdmodel", Path(f"{saved}/forecast.pdmodel").read_bytes())
        predictor = paddle.inference.create_predictor(paddle.inference.Config(f"{saved}/forecast.pdmodel",
                                                                              f"{saved}/forecast.pdiparams"))
        (output,) = predictor.get_output_names()
        window, medians = start.copy(), []
        for _ in range(ROLLOUT):
            predictor.get_input_handle("x").copy_from_cpu(window)
            predictor.run()
            median = predictor.get_output_handle(output).copy_to_cpu()[:, 0, 1]
            medians.append(median)
            window = np.concatenate([window[:, 1:], median[:, None, None]], axis=1).astype(np.float32)
    np.savez(out / "rollout.npz", x=start, forecast=np.stack(medians, axis=1))
    meta["infer"] = {"forecast": output}


def central_differences(function, x0: np.ndarray) -> np.ndarray:
    numeric = np.zeros(x0.size)
    for i in range(x0.size):
        step = np.zeros(x0.size)
        step[i] = 1e-6
        plus = float(function(paddle.to_tensor(x0 + step.reshape(x0.shape))))
        minus = float(function(paddle.to_tensor(x0 - step.reshape(x0.shape))))
        numeric[i] = (plus - minus) / 2e-6
    return numeric.reshape(x0.shape)


def float64_gradients(meta: dict) -> None:
    """Paddle's float64 gradients (dygraph autograd of the same ops) of the pinball loss (by maximum and by where,
    with respect to the forecast) and of the hand-written weight norm (with respect to v and g) against central
    differences: the largest absolute difference of each."""
    paddle.disable_static()
    y = paddle.to_tensor(RNG.standard_normal((4, HORIZON)))
    weights = paddle.to_tensor(RNG.standard_normal((CHANNELS, 3, 2)))
    v0, g0 = RNG.standard_normal((CHANNELS, 3, 2)), RNG.uniform(0.5, 2, (CHANNELS, 1, 1))

    def normed(v, g):
        return paddle.sum(weights * (g * v / paddle.sqrt(paddle.sum(paddle.square(v), axis=[1, 2], keepdim=True))))

    cases = {
        "pinball_maximum": (lambda f: pinball(f, y), RNG.standard_normal((4, HORIZON, 3))),
        "pinball_where": (lambda f: pinball(f, y, by_where=True), RNG.standard_normal((4, HORIZON, 3))),
        "weight_norm_v": (lambda v: normed(v, paddle.to_tensor(g0)), v0),
        "weight_norm_g": (lambda g: normed(paddle.to_tensor(v0), g), g0),
    }
    errors = {}
    for name, (function, x0) in cases.items():
        x = paddle.to_tensor(x0, stop_gradient=False)
        (grad,) = paddle.grad(function(x), [x])
        errors[name] = float(np.abs(grad.numpy() - central_differences(function, x0)).max())
    meta["paddle_float64_gradient_errors"] = errors
    paddle.enable_static()


PLATEAU_METRICS = [5.0, 4.0, 4.5, 4.2, 4.1, 3.0, 3.5, 3.5, 3.6, 2.0, 2.1, 2.2, 2.3]
PLATEAU_CASES = {"defaults": {"learning_rate": 0.1, "patience": 2},
                 "cooldown_min_lr": {"learning_rate": 1.0, "factor": 0.5, "patience": 1, "cooldown": 1, "min_lr": 0.2},
                 "max_abs": {"learning_rate": 1.0, "mode": "max", "threshold_mode": "abs", "threshold": 0.5,
                             "patience": 0}}


def plateau_rates(meta: dict) -> None:
    """Paddle's ReduceOnPlateau over a fixed list of metrics: its rate after each step(metric), per case."""
    rates = {}
    for name, arguments in PLATEAU_CASES.items():
        scheduler = paddle.optimizer.lr.ReduceOnPlateau(**arguments)
        rates[name] = []
        for metric in PLATEAU_METRICS:
            scheduler.step(metric)
            rates[name].append(scheduler())
    meta["plateau"] = {"metrics": PLATEAU_METRICS, "cases": PLATEAU_CASES, "rates": rates}


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {"weight_norm_static_error": weight_norm_error()}
    train(out, exe, meta)
    float64_gradients(meta)
    plateau_rates(meta)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
    if sys.argv[2:] == ["--float64"]:   # the float64 reference alone, the committed fixtures left as they are
        paddle_legacy_shim.install()
        paddle.enable_static()
        float64_training(Path(sys.argv[1]), paddle.static.Executor(paddle.CPUPlace()))
        sys.exit()
    main(Path(sys.argv[1]))

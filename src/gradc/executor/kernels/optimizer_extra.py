"""Kernels of gradc.ops.optimizer_extra, as Paddle 3.3.1's CPU kernels compute: arithmetic in the parameter's
dtype, attributes cast to it, in the kernels' order of operations."""

from __future__ import annotations

import time

import numpy as np

from ...ops.optimizer_amp import check_one_value
from ...ops.optimizer_extra import AVERAGE_COUNTERS, AVERAGE_SUMS, check_average_windows, check_sparse_momentum
from . import kernel
from .optimizer import check, update
from .optimizer_amp import fail, plus_one


def _check_floats(k, *slots: str) -> None:
    """Paddle registers these kernels for floating dtypes only; numpy would compute on ints and fail on bools."""
    for slot in slots:
        if not np.issubdtype(np.asarray(k.x(slot)).dtype, np.floating):
            fail(f"{slot} is {np.asarray(k.x(slot)).dtype}, but {k.op.type} updates floating-point tensors")


def _scalar(value, like: np.ndarray):
    return like.dtype.type(np.asarray(value).reshape(()))


@kernel("asgd")
def asgd(k):
    """d = d - y + g (y: the gradient this parameter had n batches ago), y = g, Param -= lr / n * d."""
    check(k)
    _check_floats(k, "param", "grad")
    lr, n = k.x("learning_rate"), k.x("n")

    def rule(param, grad):
        d = k.x("d") - k.x("y") + grad
        return param - _scalar(lr, param) / _scalar(n, param) * d, d, grad

    return update(k, rule, ["param_out", "d_out", "y_out"], "param", "grad", "master_param")


@kernel("ftrl")
def ftrl(k):
    """FTRL-proximal: the squared accumulator s adds g^2; with sigma = (s'^-p - s^-p) / lr (p = lr_power, the
    square root for p = -0.5) the linear one adds g - sigma * Param; the parameter is 0 where |linear| <= l1,
    else (l1 sign(linear) - linear) / (s'^-p / lr + 2 l2). Paddle adds 1e-10 to l1 and l2 (so l1 = 0 still
    zeroes a parameter whose linear accumulator is exactly 0)."""
    check(k)
    _check_floats(k, "Param", "Grad")
    param, grad = k.x("Param"), k.x("Grad")
    squared, linear = k.x("SquaredAccumulator"), k.x("LinearAccumulator")
    lr = _scalar(k.x("LearningRate"), param)
    tiny = param.dtype.type(1e-10)
    l1, l2 = _scalar(k.attr("l1"), param) + tiny, _scalar(k.attr("l2"), param) + tiny
    power = _scalar(k.attr("lr_power"), param)
    new_squared = squared + grad * grad

    def root(s):
        return np.sqrt(s) if power == param.dtype.type(-0.5) else np.power(s, -power)

    linear = linear + grad - (root(new_squared) - root(squared)) / lr * param
    shrunk = (l1 * np.sign(linear) - linear) / (root(new_squared) / lr + param.dtype.type(2) * l2)
    param_out = np.where(np.abs(linear) > l1, shrunk, param.dtype.type(0)).astype(param.dtype, copy=False)
    return {"ParamOut": param_out, "SquaredAccumOut": new_squared, "LinearAccumOut": linear}


@kernel("decayed_adagrad")
def decayed_adagrad(k):
    """m = decay m + (1 - decay) g^2; Param -= lr g / (sqrt(m) + epsilon)."""
    check(k)
    _check_floats(k, "Param", "Grad")
    param, grad = k.x("Param"), k.x("Grad")
    decay, epsilon = _scalar(k.attr("decay"), param), _scalar(k.attr("epsilon"), param)
    moment = decay * k.x("Moment") + (param.dtype.type(1) - decay) * grad * grad
    step = _scalar(k.x("LearningRate"), param) * grad / (np.sqrt(moment) + epsilon)
    return {"ParamOut": param - step, "MomentOut": moment}


MINSTD_MODULUS, MINSTD_MULTIPLIER = 2**31 - 1, 48271


def _uniforms(seed: int, dtype):
    """std::uniform_real_distribution<dtype>(0, 1) over std::minstd_rand seeded with ``seed``, as libstdc++
    draws them (generate_canonical: one engine draw per float32, two per float64)."""
    state = seed % MINSTD_MODULUS or 1
    span = MINSTD_MODULUS - 1   # the engine's max - min + 1

    def draw() -> int:
        nonlocal state
        state = state * MINSTD_MULTIPLIER % MINSTD_MODULUS
        return state - 1

    while True:
        if dtype == np.float32:
            value = np.float32(draw()) / np.float32(span)
        else:
            low = np.float64(draw())
            value = (low + np.float64(draw()) * np.float64(span)) / np.float64(span * span)
        yield value if value < 1 else np.nextafter(dtype(1), dtype(0))


def gaussian_noise(seed: int, sigma: float, dtype) -> np.float32:
    """Paddle's one Gaussian draw per dpsgd op run (the polar Box-Muller method on float32 uniforms); seed 0 is
    the clock's seconds, as in Paddle."""
    if seed == 0:
        seed = int(time.time())
    uniforms = _uniforms(seed & 0xFFFFFFFF, dtype)
    one, two = np.float32(1), np.float32(2)
    while True:
        v1, v2 = two * np.float32(next(uniforms)) - one, two * np.float32(next(uniforms)) - one
        s = v1 * v1 + v2 * v2
        if 0 < s < 1:
            return v1 * np.sqrt(-two * np.log(s) / s) * np.float32(sigma)


@kernel("dpsgd")
def dpsgd(k):
    """Param -= lr (g / max(1, |g| / clip) + noise / batch_size), noise one N(0, sigma^2) draw for the whole
    parameter. A nonzero seed draws the same noise at every step (Paddle seeds a new engine each run)."""
    check(k)
    _check_floats(k, "Param", "Grad")
    param, grad = k.x("Param"), k.x("Grad")
    if grad.size != param.size:
        fail(f"Grad has {grad.size} values, but Param has {param.size}")
    norm = np.float32(np.sqrt(np.float32(np.sum(np.square(grad, dtype=np.float64)))))
    clip = _scalar(k.attr("clip"), param)
    scale = np.float32(norm / np.float32(clip)) if norm > clip else np.float32(1)
    noise = gaussian_noise(k.attr("seed"), k.attr("sigma"), param.dtype.type)
    step = grad / param.dtype.type(scale) + param.dtype.type(noise) / _scalar(k.attr("batch_size"), param)
    return {"ParamOut": param - _scalar(k.x("LearningRate"), param) * step}


@kernel("sparse_momentum")
def sparse_momentum(k):
    """Momentum on the gradient Grad scatters into Param's rows (axis 0) or columns (axis 1) at Index (repeated
    indices add up; out-of-range ones are dropped), times rescale_grad; every element then steps, also those
    no index names (their velocity decays)."""
    def shape(slot: str):
        return np.shape(k.x(slot)) if k.op.input(slot) else None

    check_one_value(k.op.input, shape, fail, "Axis")
    axis_tensor = k.optional("Axis")
    axis = int(np.asarray(axis_tensor).reshape(())) if axis_tensor is not None else k.attr("axis")
    check_sparse_momentum(k.op.input, shape, k.attr, axis, fail)
    _check_floats(k, "Param", "Grad", "Velocity")
    if np.asarray(k.x("Index")).dtype not in (np.int32, np.int64):
        fail(f"Index is {np.asarray(k.x('Index')).dtype}, but Paddle's kernel reads int32 or int64 indices")
    param, grad, velocity = k.x("Param"), k.x("Grad"), k.x("Velocity")
    master = k.optional("MasterParam") if k.attr("multi_precision") else None
    weight = master if master is not None else param   # the arithmetic's dtype: the master's, else Param's
    dtype = weight.dtype.type
    index = np.asarray(k.x("Index")).reshape(-1).astype(np.int64)
    inside = (index >= 0) & (index < param.shape[axis])
    scattered = np.zeros(param.shape, weight.dtype)
    rescaled = grad.astype(weight.dtype) * dtype(k.attr("rescale_grad"))
    if axis == 0:
        np.add.at(scattered, index[inside], rescaled[inside])
    else:
        np.add.at(scattered.T, index[inside], rescaled.T[inside])
    if k.attr("regularization_method") == "l2_decay":
        scattered = scattered + dtype(k.attr("regularization_coeff")) * weight
    mu = dtype(k.attr("mu"))
    velocity = velocity.astype(weight.dtype) * mu + scattered
    step = scattered + velocity * mu if k.attr("use_nesterov") else velocity
    updated = weight - step * dtype(np.asarray(k.x("LearningRate")).reshape(-1)[0])
    results = {"ParamOut": updated.astype(param.dtype), "VelocityOut": velocity.astype(k.x("Velocity").dtype)}
    if master is not None:
        results["MasterParamOut"] = updated
    return results


def _to_int64(value: np.float32) -> int:
    """C's float-to-int64 conversion as x86 does it: nan, infinities and values out of range become INT64_MIN
    (so Paddle's window fills at once when num_updates * average_window overflows)."""
    return int(value) if -(2.0**63) <= value < 2.0**63 else -(2**63)


@kernel("average_accumulates")
def average_accumulates(k):
    """sum_1 += param; every 16384th update moves sum_1 into sum_2; once the count of accumulated steps reaches
    both min_average_window and min(max_average_window, num_updates * average_window), sum_3 becomes sum_1 +
    sum_2 and they and the count restart from 0. Paddle's kernel reads an input after writing its output: in
    place (as ModelAverage writes the op) the moves take the sums as this step left them."""
    check_one_value(k.op.input, lambda slot: np.shape(k.x(slot)), fail, *(f"in_{c}" for c in AVERAGE_COUNTERS))
    check_average_windows(k.attr, fail)
    _check_floats(k, "param")
    for counter in AVERAGE_COUNTERS:
        if np.asarray(k.x(f"in_{counter}")).dtype != np.int64:
            fail(f"in_{counter} is {np.asarray(k.x(f'in_{counter}')).dtype}, but Paddle's kernel reads it as int64")
    param = k.x("param")
    for name in AVERAGE_SUMS:
        if np.shape(k.x(f"in_{name}")) != np.shape(param):
            fail(f"in_{name} has shape {list(np.shape(k.x(f'in_{name}')))}, but param has shape "
                 f"{list(np.shape(param))}")
    accumulates, old_accumulates, updates = (int(np.asarray(k.x(f"in_{c}")).reshape(())) for c in AVERAGE_COUNTERS)
    updates, accumulates = plus_one(updates, 64), plus_one(accumulates, 64)
    sums = {name: k.x(f"in_{name}") for name in AVERAGE_SUMS}
    sums["sum_1"] = sums["sum_1"] + param

    def read(name: str):
        return sums[name] if k.op.output(f"out_{name}") == k.op.input(f"in_{name}") else k.x(f"in_{name}")

    if updates % 16384 == 0:
        sums["sum_2"], sums["sum_1"] = read("sum_2") + read("sum_1"), np.zeros_like(param)
    window = min(k.attr("max_average_window"), _to_int64(np.float32(updates) * np.float32(k.attr("average_window"))))
    if accumulates >= k.attr("min_average_window") and accumulates >= window:
        sums["sum_3"] = read("sum_1") + read("sum_2")
        sums["sum_1"], sums["sum_2"] = np.zeros_like(param), np.zeros_like(param)
        old_accumulates, accumulates = accumulates, 0

    def counter(value: int, slot: str):
        return np.full(np.shape(k.x(slot)), value, np.int64)

    return {**{f"out_{name}": value for name, value in sums.items()},
            **{f"out_{c}": counter(v, f"in_{c}") for c, v in zip(AVERAGE_COUNTERS,
                                                                   (accumulates, old_accumulates, updates))}}

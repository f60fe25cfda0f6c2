"""Run a built row in Paddle's executor: Paddle's loss and gradients, and a float64 check of
Paddle's gradients against central differences."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import paddle

from .paddle_run import Built, with_lods


@dataclass
class Values:
    params: dict[str, np.ndarray]   # every persistable before the run (batch norm's running stats too)
    loss: np.ndarray
    grads: dict[str, np.ndarray]    # param grads and input grads
    random: dict[str, np.ndarray]   # outputs of random ops


def cast_floats(values: dict[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    return {k: v.astype(dtype) if v.dtype.kind == "f" else v for k, v in values.items()}


def persistables(program: paddle.static.Program, scope) -> dict[str, np.ndarray]:
    return {v.name: np.array(scope.find_var(v.name).get_tensor()) for v in program.list_vars()
            if v.persistable and v.name not in ("feed", "fetch") and scope.find_var(v.name) is not None}


def set_values(scope, values: dict[str, np.ndarray]) -> None:
    for name, value in values.items():
        scope.var(name).get_tensor().set(value, paddle.CPUPlace())


def run(built: Built, feed: dict, seed: int, params: dict | None = None) -> Values:
    """Initialise with the startup program (seeded), or with ``params`` when given, and run once."""
    executor = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        paddle.seed(seed)
        executor.run(built.startup)
        if params is not None:
            set_values(scope, params)
        before = persistables(built.main, scope)
        grads = [g for _, g in built.params_grads] + list(built.input_grads.values())
        block = built.main.global_block()
        sparse = [g for g in grads if block.var(g).type == paddle.base.core.VarDesc.VarType.SELECTED_ROWS]
        dense = [g for g in grads if g not in sparse]
        fetch = [built.loss, *dense, *built.random_outputs]
        for name in sparse:  # Paddle cannot fetch SelectedRows: kept in the scope, read after the run
            block.var(name).persistable = True
        try:
            values = fetched(executor.run(built.main, feed=with_lods(built, feed), fetch_list=fetch,
                                          return_numpy=False))
        finally:
            for name in sparse:
                block.var(name).persistable = False
        n = 1 + len(dense)
        grads = dict(zip(dense, values[1:n])) | {g: densify(scope.find_var(g), block.var(g).shape) for g in sparse}
    return Values(before, values[0], grads, dict(zip(built.random_outputs, values[n:])))


def fetched(values: list) -> list[np.ndarray]:
    """Paddle's fetched tensors as arrays (fetched as tensors: numpy refuses those with a LoD)."""
    return [np.array(value) for value in values]


def densify(var, shape) -> np.ndarray:
    """A SelectedRows gradient (rows, values) as the dense tensor it stands for; repeated rows add up."""
    rows = var.get_selected_rows()
    values = np.array(rows.get_tensor())
    dense = np.zeros(shape, values.dtype)
    np.add.at(dense, np.array(rows.rows(), dtype=np.int64), values)
    return dense


def output_shapes(built: Built, feed: dict, seed: int) -> dict[str, tuple[int, ...]]:
    """The shapes of the row's outputs, computed by running the part of the program that makes them."""
    executor = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(paddle.static.Scope()):
        paddle.seed(seed)
        executor.run(built.startup)
        values = fetched(executor.run(built.forward, feed=with_lods(built, feed), fetch_list=built.outputs,
                                      use_prune=True, return_numpy=False))
    return {name: value.shape for name, value in zip(built.outputs, values)}


def central_differences(built: Built, feed: dict, params: dict, grads: dict, samples: int = 4,
                        h: float = 1e-4, seed: int = 0) -> dict[str, float]:
    """Per gradient, the largest |analytic - numeric| / (1 + |numeric|) over a few sampled elements
    of its var, the loss being evaluated by the forward program in float64. At a kink (the one-sided
    slopes differ: relu of an exact zero, as zero-initialised biases make) any value between them counts."""
    executor = paddle.static.Executor(paddle.CPUPlace())
    rng = np.random.default_rng(seed)
    base_loss = forward_loss(executor, built, feed, params)
    errors = {}
    var_of = {g: p for p, g in built.params_grads} | {g: x for x, g in built.input_grads.items()}
    for grad_name, analytic in grads.items():
        var = var_of[grad_name]
        base = feed[var] if var in feed else params[var]
        worst = 0.0
        for flat in rng.choice(base.size, min(samples, base.size), replace=False):
            moved_losses = []
            for step in (h, -h):
                moved = base.copy()
                moved.reshape(-1)[flat] += step
                moved_losses.append(forward_loss(executor, built, {**feed, var: moved} if var in feed else feed,
                                                 {**params, var: moved} if var in params else params))
            right, left = (moved_losses[0] - base_loss) / h, (base_loss - moved_losses[1]) / h
            numeric, value = (right + left) / 2, float(analytic.reshape(-1)[flat])
            if abs(right - left) > 1e-3 * (1 + abs(numeric)):  # a kink: any slope between the two sides
                numeric = min(max(value, min(left, right)), max(left, right))
            worst = max(worst, abs(value - numeric) / (1 + abs(numeric)))
        errors[grad_name] = worst
    return errors


def numeric_gradient(built: Built, feed: dict, params: dict, grad_name: str, h: float = 1e-6) -> np.ndarray:
    """Every element of one gradient by central differences of the float64 forward program."""
    var = {g: p for p, g in built.params_grads}.get(grad_name) or grad_name.removesuffix("@GRAD")
    executor = paddle.static.Executor(paddle.CPUPlace())
    base = feed[var] if var in feed else params[var]
    gradient = np.zeros_like(base)
    for flat in range(base.size):
        losses = []
        for step in (h, -h):
            moved = base.copy()
            moved.reshape(-1)[flat] += step
            losses.append(forward_loss(executor, built, {**feed, var: moved} if var in feed else feed,
                                       {**params, var: moved} if var in params else params))
        gradient.reshape(-1)[flat] = (losses[0] - losses[1]) / (2 * h)
    return gradient


def forward_loss(executor, built: Built, feed: dict, params: dict) -> float:
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        set_values(scope, params)
        (loss,) = fetched(executor.run(built.forward, feed=with_lods(built, feed), fetch_list=[built.loss],
                                       return_numpy=False))
    return float(loss)

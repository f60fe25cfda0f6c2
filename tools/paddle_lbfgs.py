"""Fixtures for gradc's L-BFGS (src/gradc/training/lbfgs.py): paddle.optimizer.LBFGS, which Paddle 3.3.1 runs in
dygraph only, on a small regression net whose forward program is built in legacy static mode from the same weights.

- net.pb, net_startup.pb: Linear(3, 8), tanh, Linear(8, 1) and the mean squared error against y, in float64 and
  float32 (net32.pb, net32_startup.pb); batches.npz: x, y (two batches of 16); init.npz: the initial weights.
- meta.json: per case (its LBFGS arguments), the loss each step() returned and, in cases.npz, the weights after
  every step (CASE.stepN.PARAM). The float32 case is run in float64 too, the reference its rounding is judged by.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_lbfgs.py tests/data/paddle/lbfgs
"""

import json
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle_programs import without_callstacks

RNG = np.random.default_rng(31)
BATCH, HIDDEN = 16, 8
CASES = {   # name -> (dtype, LBFGS arguments, steps): steps alternate the two batches
    "fixed_step": ("float64", {"learning_rate": 0.5, "max_iter": 6, "history_size": 3}, 3),
    "strong_wolfe": ("float64", {"max_iter": 20, "history_size": 10, "line_search_fn": "strong_wolfe"}, 2),
    "wolfe_short_history": ("float64", {"max_iter": 12, "history_size": 2, "line_search_fn": "strong_wolfe",
                                        "tolerance_change": 1e-12}, 2),
    "max_eval": ("float64", {"max_iter": 10, "max_eval": 4, "line_search_fn": "strong_wolfe"}, 2),
    "float32": ("float32", {"max_iter": 8, "history_size": 5, "line_search_fn": "strong_wolfe"}, 2),
    "float32_in_float64": ("float64", {"max_iter": 8, "history_size": 5, "line_search_fn": "strong_wolfe"}, 2),
}


def forward_program(dtype: str):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        x = paddle.static.data("x", [-1, 3], dtype)
        y = paddle.static.data("y", [-1, 1], dtype)
        hidden = paddle.static.nn.fc(x, HIDDEN, activation="tanh")
        pred = paddle.static.nn.fc(hidden, 1)
        paddle.nn.functional.mse_loss(pred, y)
    return main, startup


def dygraph_loss(params, x, y):
    w1, b1, w2, b2 = params
    pred = paddle.matmul(paddle.tanh(paddle.matmul(x, w1) + b1), w2) + b2
    return ((pred - y) ** 2).mean()


def run_case(init: dict, names: list, batches: list, dtype: str, arguments: dict, steps: int) -> tuple:
    params = [paddle.to_tensor(init[name].astype(dtype), stop_gradient=False) for name in names]
    optimizer = paddle.optimizer.LBFGS(parameters=params, **arguments)
    losses, weights = [], {}
    for step in range(steps):
        x, y = (paddle.to_tensor(a.astype(dtype)) for a in batches[step % 2])

        def closure(x=x, y=y):
            optimizer.clear_grad()
            loss = dygraph_loss(params, x, y)
            loss.backward()
            return loss
        losses.append(float(optimizer.step(closure)))
        weights.update({f"step{step}.{name}": p.numpy() for name, p in zip(names, params)})
    return losses, weights


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    paddle.enable_static()
    for suffix, dtype in (("", "float64"), ("32", "float32")):
        main_program, startup = forward_program(dtype)
        (out / f"net{suffix}.pb").write_bytes(without_callstacks(main_program))
        (out / f"net{suffix}_startup.pb").write_bytes(without_callstacks(startup))
    names = [p.name for p in main_program.all_parameters()]
    shapes = {p.name: p.shape for p in main_program.all_parameters()}
    init = {name: RNG.uniform(-0.8, 0.8, shapes[name]) for name in names}
    x = RNG.uniform(-1, 1, (2 * BATCH, 3))
    y = np.sin(x @ np.array([[1.0], [-2.0], [0.5]])) + 0.1 * x[:, :1] ** 2
    batches = [(x[:BATCH], y[:BATCH]), (x[BATCH:], y[BATCH:])]
    np.savez(out / "init.npz", **init)
    np.savez(out / "batches.npz", x=x, y=y)
    paddle.disable_static()
    meta, arrays = {"params": names, "cases": {}}, {}
    for name, (dtype, arguments, steps) in CASES.items():
        losses, weights = run_case(init, names, batches, dtype, arguments, steps)
        meta["cases"][name] = {"dtype": dtype, "arguments": arguments, "losses": losses}
        arrays.update({f"{name}.{key}": value for key, value in weights.items()})
    np.savez_compressed(out / "cases.npz", **arrays)
    (out / "meta.json").write_text(json.dumps(meta, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

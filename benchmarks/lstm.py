"""Forward + backward of a fused 2-layer bidirectional LSTM (Paddle's ``rnn`` op) through gradc's executor:
gradc compiles the static program nn.LSTM writes (gradc's own backward) and runs it, vs Paddle's executor
running that program with Paddle's backward, and vs a hand-written numpy LSTM doing the same math. The row
"gradc rnn_math" is the op's numpy math called directly (no program, no executor), for reference.

gradc's math runs every direction of a layer in one loop of batched matmuls and folds the backward's
per-step coefficients into a few vectorised passes; the hand-written LSTM loops over layers, directions and
steps the textbook way. All agree on the outputs and gradients before any time is reported.
With --paddle-python, gradc runs the very program Paddle builds (nn.LSTM(time_major=True) + the loss);
without it (or when that interpreter cannot import paddle) the same ops built with gradc's IR, and the
Paddle row is skipped. BLAS and OpenMP run one thread unless OPENBLAS_NUM_THREADS / OMP_NUM_THREADS /
MKL_NUM_THREADS say otherwise (Paddle's subprocess inherits them): on a shared machine threaded BLAS makes
the per-step matmuls 10x slower and the ratios meaningless. Targets: gradc <= 1.5x Paddle, <= 1.3x numpy.

    python benchmarks/lstm.py --paddle-python /work/paddle-venv/bin/python --out benchmarks/results/lstm.txt
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # before numpy loads its BLAS
    os.environ.setdefault(_threads, "1")

import numpy as np  # noqa: E402

import gradc  # noqa: E402
from gradc.executor.kernels.rnn_math import RnnShape, rnn_backward, rnn_forward  # noqa: E402
from gradc.ir import VarType  # noqa: E402
from gradc.ops.infer import InferContext  # noqa: E402

# Runs under the Paddle interpreter: nn.LSTM in static mode (one fused rnn op), Paddle's append_backward,
# then the best wall time of running the whole program. Values come from an .npz written by this script.
# Runs under the Paddle interpreter: nn.LSTM in static mode (one fused rnn op) and the loss, saved as the forward
# program gradc compiles; then Paddle's append_backward and the best wall time of running the whole program
# (none with 0 repeats). Values come from an .npz written by this script.
PADDLE_SCRIPT = """
import json, sys, time
import numpy as np
import paddle
paddle.enable_static()
from paddle.base.backward import append_backward
path, repeats = sys.argv[1], int(sys.argv[2])
data = dict(np.load(path))
steps, batch, inp = data["x"].shape
hidden, layers = int(data["hidden"]), int(data["layers"])
main, startup = paddle.static.Program(), paddle.static.Program()
with paddle.static.program_guard(main, startup):
    x = paddle.static.data("x", data["x"].shape, "float32")
    x.stop_gradient = False
    h0 = paddle.static.data("h0", data["h0"].shape, "float32")
    c0 = paddle.static.data("c0", data["c0"].shape, "float32")
    w_out = paddle.static.data("w_out", data["w_out"].shape, "float32")
    lstm = paddle.nn.LSTM(inp, hidden, num_layers=layers, direction="bidirect", time_major=True)
    out, (h, c) = lstm(x, (h0, c0))
    loss = paddle.mean(out * w_out) + paddle.mean(h) + paddle.mean(c)
    open(path + ".forward.pb", "wb").write(main.desc.serialize_to_string())
    append_backward(loss)
block = startup.global_block()
for index in reversed(range(len(block.ops))):
    if block.ops[index].type == "coalesce_tensor":  # weights must not share one buffer: we set them
        block._remove_op(index)
exe = paddle.static.Executor(paddle.CPUPlace())
exe.run(startup)
rnn = [op for op in main.global_block().ops if op.type == "rnn"][0]
names = rnn.input("WeightList")
scope = paddle.static.global_scope()
for k, name in enumerate(names):
    scope.find_var(name).get_tensor().set(data[f"w{k}"], paddle.CPUPlace())
feed = {k: data[k] for k in ("x", "h0", "c0", "w_out")}
fetch = [out.name, "x@GRAD"] + [n + "@GRAD" for n in names]
values = exe.run(main, feed=feed, fetch_list=fetch)
best = float("inf")
for _ in range(repeats):
    start = time.perf_counter()
    exe.run(main, feed=feed, fetch_list=fetch)
    best = min(best, time.perf_counter() - start)
np.savez(path + ".out.npz", *values)
print(json.dumps({"seconds": best, "version": paddle.__version__, "loss": loss.name, "out": out.name,
                  "weights": names}))
"""


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def reference_lstm(x, h0, c0, weights, layers, directions, out_grad, h_grad, c_grad):
    """Out, dx and every weight grad of a multi-layer LSTM, written plainly: per layer, direction and step."""
    hidden = h0.shape[-1]
    shape = RnnShape("LSTM", layers, directions, x.shape[-1], hidden)
    grads = [None] * len(weights)
    inputs, caches = [x], []
    for layer in range(layers):
        outs = []
        for d in range(directions):
            w_ih, w_hh, b_ih, b_hh = (weights[shape.weight_index(layer, d, k)] for k in range(4))
            order = range(x.shape[0]) if d == 0 else range(x.shape[0] - 1, -1, -1)
            h, c = h0[layer * directions + d], c0[layer * directions + d]
            proj = inputs[-1] @ w_ih.T + b_ih + b_hh
            out, cache = np.zeros(x.shape[:2] + (hidden,), x.dtype), {}
            for t in order:
                g = proj[t] + h @ w_hh.T
                i, f, gg, o = (sigmoid(g[:, :hidden]), sigmoid(g[:, hidden:2 * hidden]),
                               np.tanh(g[:, 2 * hidden:3 * hidden]), sigmoid(g[:, 3 * hidden:]))
                cache[t] = (h, c, i, f, gg, o)
                c = f * c + i * gg
                h = o * np.tanh(c)
                out[t] = h
            outs.append(out)
            caches.append((layer, d, order, cache, h, c))
        inputs.append(np.concatenate(outs, axis=-1))
    d_in = out_grad
    for layer in reversed(range(layers)):
        d_below = np.zeros_like(inputs[layer])
        for d in range(directions):
            _, _, order, cache, h_last, c_last = caches[layer * directions + d]
            w_ih, w_hh = weights[shape.weight_index(layer, d, 0)], weights[shape.weight_index(layer, d, 1)]
            dh, dc = h_grad[layer * directions + d].copy(), c_grad[layer * directions + d].copy()
            d_gates = np.zeros(x.shape[:2] + (4 * hidden,), x.dtype)
            dw_hh = np.zeros_like(w_hh)
            for t in reversed(list(order)):
                h_prev, c_prev, i, f, gg, o = cache[t]
                c = f * c_prev + i * gg
                dh = dh + d_in[t, :, d * hidden:(d + 1) * hidden]
                tanh_c = np.tanh(c)
                dc = dc + dh * o * (1 - tanh_c ** 2)
                d_gates[t] = np.concatenate([dc * gg * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - gg ** 2),
                                             dh * tanh_c * o * (1 - o)], axis=-1)
                dw_hh += d_gates[t].T @ h_prev
                dh, dc = d_gates[t] @ w_hh, dc * f
            flat = d_gates.reshape(-1, 4 * hidden)
            grads[shape.weight_index(layer, d, 0)] = flat.T @ inputs[layer].reshape(-1, inputs[layer].shape[-1])
            grads[shape.weight_index(layer, d, 1)] = dw_hh
            grads[shape.weight_index(layer, d, 2)] = grads[shape.weight_index(layer, d, 3)] = flat.sum(axis=0)
            d_below += d_gates @ w_ih
        d_in = d_below
    return inputs[-1], d_in, grads


def best_interleaved(fns: dict, repeats: int) -> dict:
    """Each function's best time, the functions taking turns so that load on a shared machine hits all alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def run_paddle(python: str, values: dict, repeats: int):
    """(report, results, forward program bytes) of Paddle's run, or (None, reason) when that interpreter
    has no paddle."""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "lstm.npz")
        np.savez(path, **values)
        env = {**os.environ, "FLAGS_enable_pir_api": "0", "GLOG_minloglevel": "2"}
        try:
            result = subprocess.run([python, "-c", PADDLE_SCRIPT, path, str(repeats)], capture_output=True, text=True,
                                    env=env, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as error:
            return None, str(error)
        if result.returncode != 0:
            return None, (result.stderr.strip().splitlines() or ["no output"])[-1]
        report = json.loads(result.stdout.strip().splitlines()[-1])
        with np.load(path + ".out.npz") as archive:
            results = [archive[f"arr_{k}"] for k in range(len(archive.files))]
        return (report, results, Path(path + ".forward.pb").read_bytes()), None


def _op(block, type: str, inputs: dict, attrs: dict | None = None, outputs: dict | None = None) -> dict:
    """Append an op; output vars not named in ``outputs`` are declared from its shape inference."""
    op = block.append_op(type, inputs, dict(outputs or {}), attrs)
    for slot, result in gradc.registry.get(type).infer(InferContext(op, block)).items():
        if slot not in op.outputs:
            results = result if isinstance(result, list) else [result]
            op.outputs[slot] = [f"{type}_{len(block.ops)}.{slot}{k}" for k in range(len(results))]
            for name, (shape, dtype) in zip(op.outputs[slot], results):
                block.create_var(name, shape, dtype)
    return op.outputs


def gradc_forward(shape: RnnShape, values: dict) -> tuple[gradc.Program, str, str, list[str]]:
    """The ops nn.LSTM(time_major=True) and the loss write, built with gradc's IR (when Paddle is absent):
    (program, loss, Out, weight names)."""
    program = gradc.Program()
    block = program.global_block
    for name in ("x", "h0", "c0", "w_out"):
        block.create_var(name, list(values[name].shape), VarType.FP32, need_check_feed=True,
                         stop_gradient=name == "w_out")
    weights = [f"w{k}" for k in range(len(shape.weight_shapes()))]
    for name, dims in zip(weights, shape.weight_shapes()):
        block.create_var(name, list(dims), VarType.FP32, persistable=True, is_parameter=True)
    attrs = {"mode": "LSTM", "num_layers": shape.num_layers, "is_bidirec": True, "input_size": shape.input_size,
             "hidden_size": shape.hidden_size}
    rnn = _op(block, "rnn", {"Input": ["x"], "PreState": ["h0", "c0"], "WeightList": weights}, attrs)
    mean = {"reduce_all": True, "dim": []}
    terms = [_op(block, "reduce_mean", {"X": _op(block, "elementwise_mul", {"X": rnn["Out"], "Y": ["w_out"]})["Out"]},
                 mean)["Out"]] + [_op(block, "reduce_mean", {"X": [state]}, mean)["Out"] for state in rnn["State"]]
    loss = _op(block, "elementwise_add", {"X": _op(block, "elementwise_add", {"X": terms[0], "Y": terms[1]})["Out"],
                                          "Y": terms[2]})["Out"]
    return program, loss[0], rnn["Out"][0], weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--input", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--paddle-python", help="an interpreter with paddlepaddle installed")
    parser.add_argument("--out", help="also write the results to this file")
    args = parser.parse_args()

    directions, hidden = 2, args.hidden
    shape = RnnShape("LSTM", args.layers, directions, args.input, hidden)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.steps, args.batch, args.input), dtype=np.float32)
    h0, c0 = (0.5 * rng.standard_normal((args.layers * directions, args.batch, hidden), dtype=np.float32)
              for _ in range(2))
    bound = hidden ** -0.5
    weights = [rng.uniform(-bound, bound, s).astype(np.float32) for s in shape.weight_shapes()]
    w_out = rng.standard_normal((args.steps, args.batch, directions * hidden), dtype=np.float32)
    # seeds of mean(out * w_out) + mean(h) + mean(c), Paddle's loss
    out_grad = w_out / np.float32(w_out.size)
    state_grad = np.full_like(h0, 1 / h0.size)

    def ours():
        out, states, reserve = rnn_forward(shape, x, [h0, c0], weights)
        return out, *rnn_backward(shape, x, [h0, c0], weights, reserve, out_grad, [state_grad, state_grad])

    def reference():
        return reference_lstm(x, h0, c0, weights, args.layers, directions, out_grad, state_grad, state_grad)

    ref_out, ref_dx, ref_dweights = reference()
    out, dx, _, dweights = ours()
    agree("gradc rnn_math", [out, dx, *dweights], [ref_out, ref_dx, *ref_dweights])

    values = {"x": x, "h0": h0, "c0": c0, "w_out": w_out, "hidden": hidden, "layers": args.layers,
              **{f"w{k}": w for k, w in enumerate(weights)}}
    paddle_note, paddle_run = "skipped: no --paddle-python given", None
    if args.paddle_python:   # Paddle's program and results first; its timing below, between gradc's
        paddle_run, reason = run_paddle(args.paddle_python, values, 0)
        paddle_note = f"skipped: {reason}" if paddle_run is None else "the same static program, Paddle's backward"
    if paddle_run is not None:
        report, paddle_results, forward = paddle_run
        agree("paddle", paddle_results, [ref_out, ref_dx, *ref_dweights])
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "forward.pb").write_bytes(forward)
            program = gradc.load(Path(tmp) / "forward.pb")
        loss, out_name, weight_names = report["loss"], report["out"], report["weights"]
    else:
        program, loss, out_name, weight_names = gradc_forward(shape, values)
    gradc.append_backward(program, loss)
    scope = gradc.Scope()
    for name, w in zip(weight_names, weights):
        scope[name] = w
    executor, feed = gradc.Executor(), {k: values[k] for k in ("x", "h0", "c0", "w_out")}
    fetch = [out_name, "x@GRAD", *(name + "@GRAD" for name in weight_names)]

    def through_executor():
        return executor.run(program, feed, fetch, scope)

    agree("gradc executor", through_executor(), [ref_out, ref_dx, *ref_dweights])
    runs = {"gradc executor": through_executor, "gradc rnn_math": ours, "hand-written numpy": reference}
    times = best_interleaved(runs, args.repeats)
    if paddle_run is not None:
        report = run_paddle(args.paddle_python, values, args.repeats)[0][0]
        after = best_interleaved(runs, args.repeats)  # before and after Paddle: load shifts hit all alike
        times = {name: min(seconds, after[name]) for name, seconds in times.items()}
        times[f"paddle {report['version']} executor"] = report["seconds"]
    mine = times["gradc executor"]
    lines = [f"# LSTM forward+backward: batch {args.batch}, {args.steps} steps, input {args.input}, hidden {hidden}, "
             f"{args.layers} layers, bidirectional, float32, best of {args.repeats}",
             f"# numpy {np.__version__}, Python {platform.python_version()}, {platform.machine()}, "
             f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, "
             f"BLAS threads {os.environ['OPENBLAS_NUM_THREADS']}; "
             f"paddle: {paddle_note}",
             f"{'implementation':<28} {'ms':>9} {'gradc executor / it':>20}"]
    lines += [f"{name:<28} {1e3 * seconds:>9.2f} {mine / seconds:>20.2f}" for name, seconds in times.items()]
    targets = [("hand-written numpy", 1.3)] + [(name, 1.5) for name in times if name.startswith("paddle")]
    lines.append("# targets: " + "; ".join(f"gradc executor / {name} = {mine / times[name]:.2f} "
                                          f"({'met' if mine / times[name] <= limit else 'MISSED'}: <= {limit})"
                                          for name, limit in targets))
    print("\n".join(lines))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines) + "\n")


def agree(what: str, values: list, expected: list) -> None:
    """Out, x@GRAD and every weight grad agree with the hand-written LSTM's (float32 all along)."""
    assert len(values) == len(expected), what
    for k, (a, b) in enumerate(zip(values, expected)):
        assert a.dtype == np.float32, (what, k)
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5, err_msg=f"{what}: value {k}")


if __name__ == "__main__":
    sys.exit(main())

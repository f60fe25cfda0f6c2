"""Recurrent-network fixtures built with a real PaddlePaddle from its own layers: the fused ``rnn`` op
(nn.LSTM / nn.GRU / nn.SimpleRNN), nn.RNN / nn.BiRNN over cells (while loops over tensor arrays),
paddle.static.nn.while_loop over array_write / array_read, and a small LSTM language model.

Same layout as tools/paddle_fixtures.py's ``build`` (forward.pb, backward.pb, feed.npz, params.npz,
grads.npz, loss.npy, meta.json). Parameters and inputs come from numpy (float32-rounded), so the float64
build of the same case differs only in arithmetic: its grads64.npz / loss64.npy are kept when float32
rounding exceeds rtol 1e-5 / atol 1e-6. Every case is also checked against float64 central differences
of Paddle's own forward; where Paddle's gradient is wrong, grads_fd64.npz holds the differences and
meta.json lists the wrong grads under "paddle_wrong_grads".

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_rnn_fixtures.py tests/data/paddle/rnn [case ...]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle.base.backward import append_backward
from paddle_rnn_cases import CASES, LEGACY_NOTE, legacy_math

paddle.enable_static()
SEED = 2024


def _serialized(program) -> bytes:
    """The program's bytes with every op_callstack emptied (Python tracebacks: 90% of the size), attribute kept."""
    for block in program.blocks:
        for op in block.ops:
            if op.has_attr("op_callstack"):
                op.desc._set_attr("op_callstack", [])
    return program.desc.serialize_to_string()


def _rounded(value):
    return value.astype(np.float32) if value.dtype.kind == "f" else value


def _program_ops(program, distinct=False) -> dict[str, list[str]]:
    """Op types per block, in order (or the distinct ones, sorted)."""
    types = {str(block.idx): [op.type for op in block.ops] for block in program.blocks}
    return {k: sorted(set(v)) for k, v in types.items()} if distinct else types


def _rnn_ops(program) -> list[dict]:
    """Slots and attributes of each fused rnn op, so tests can rerun its math without parsing programs."""
    keep = ("mode", "num_layers", "is_bidirec", "input_size", "hidden_size", "dropout_prob", "is_test", "seed")
    return [{"inputs": {slot: op.input(slot) for slot in op.input_names},
             "outputs": {slot: op.output(slot) for slot in op.output_names},
             "attrs": {name: op.attr(name) for name in keep}}
            for block in program.blocks for op in block.ops if op.type == "rnn"]


def _drop_coalesce(startup) -> None:
    """nn.LSTM/GRU/SimpleRNN's startup makes every weight a view of one flat buffer (coalesce_tensor, for
    cuDNN); setting one weight then overwrites others. The main program never reads the flat buffer."""
    block = startup.global_block()
    for index in reversed(range(len(block.ops))):
        if block.ops[index].type == "coalesce_tensor":
            block._remove_op(index)


class Run:
    """One build of a case in one dtype: the program after append_backward, its executor and scope."""

    def __init__(self, case: str, dtype: str, param_values: dict | None = None):
        paddle.seed(SEED)
        paddle.set_default_dtype(dtype)
        self.main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.utils.unique_name.guard(), legacy_math(), paddle.static.program_guard(self.main, startup):
            self.loss, feed, self.description, self.extra = CASES[case](np.random.default_rng(SEED), dtype)
            self.forward = _serialized(self.main)
            self.params_grads = append_backward(self.loss)
        paddle.set_default_dtype("float32")
        self.feed32 = {k: _rounded(v) for k, v in feed.items()}
        self.feed = {k: (v.astype(dtype) if v.dtype.kind == "f" else v) for k, v in self.feed32.items()}
        self.exe = paddle.static.Executor(paddle.CPUPlace())
        self.scope = paddle.static.Scope()
        _drop_coalesce(startup)
        with paddle.static.scope_guard(self.scope):
            self.exe.run(startup)
        read = {name for block in self.main.blocks for op in block.ops for name in op.input_arg_names}
        self.params = sorted(v.name for v in self.main.list_vars() if v.persistable and v.name in read)
        values = param_values or self._fresh_params()
        for name in self.params:
            self._set(name, values[name].astype(dtype))
        for name in self.params:  # each value must read back as set: no buffer shared between parameters
            assert np.array_equal(np.array(self.scope.find_var(name).get_tensor()), values[name].astype(dtype)), name
        self.param_values = {name: values[name] for name in self.params}
        inputs = [n for n in self.feed if not self.main.global_block().var(n).stop_gradient]
        self.fetch = [g.name for _, g in self.params_grads] + [f"{n}@GRAD" for n in inputs]

    def _fresh_params(self):
        rng = np.random.default_rng(SEED + 1)
        return {name: rng.uniform(-0.6, 0.6, np.array(self.scope.find_var(name).get_tensor()).shape).astype(np.float32)
                for name in self.params}

    def _set(self, name, value):
        self.scope.find_var(name).get_tensor().set(value, paddle.CPUPlace())

    def run(self, fetch=None, feed=None):
        with paddle.static.scope_guard(self.scope):
            return self.exe.run(self.main, feed=feed or self.feed, fetch_list=[self.loss.name] + (fetch or []))

    def central_differences(self, names: list[str], eps: float = 1e-6) -> dict[str, np.ndarray]:
        """d loss / d (each grad's var), by perturbing parameters in the scope and inputs in the feed."""
        grads = {}
        for grad_name in names:
            var = grad_name[:-len("@GRAD")]
            base = self.feed[var].copy() if var in self.feed else np.array(self.scope.find_var(var).get_tensor())
            numeric = np.zeros_like(base)
            for idx in np.ndindex(base.shape):
                losses = []
                for step in (eps, -eps):
                    value = base.copy()
                    value[idx] += step
                    if var in self.feed:
                        losses.append(float(self.run(feed={**self.feed, var: value})[0]))
                    else:
                        self._set(var, value)
                        losses.append(float(self.run()[0]))
                numeric[idx] = (losses[0] - losses[1]) / (2 * eps)
            if var not in self.feed:
                self._set(var, base)
            grads[grad_name] = numeric
        return grads


def _close(a, b, rtol=1e-5, atol=1e-6) -> bool:
    return bool(np.all(np.abs(a - b) <= atol + rtol * np.abs(b)))


def build(case: str, out_dir: Path) -> None:
    run32 = Run(case, "float32")
    feed32 = run32.feed32
    saved = run32.extra.pop("save_outputs", {})  # random outputs (dropout masks): kept, no float64 or fd run
    values32 = run32.run(run32.fetch + list(saved.values()))
    grads32 = dict(zip(run32.fetch, values32[1:]))
    outputs = dict(zip(saved, values32[1 + len(run32.fetch):]))
    check_fd, needs64, wrong, numeric = not saved, False, [], {}
    if check_fd:
        run64 = Run(case, "float64", run32.param_values)
        values64 = run64.run(run64.fetch)
        grads64 = dict(zip(run64.fetch, values64[1:]))
        needs64 = not _close(values32[0], values64[0]) or not all(_close(grads32[k], grads64[k]) for k in grads32)
        numeric = run64.central_differences(run64.fetch)
        wrong = sorted(k for k in grads64 if not _close(grads64[k], numeric[k], rtol=1e-5, atol=1e-7))

    out = out_dir / case
    out.mkdir(parents=True, exist_ok=True)
    (out / "forward.pb").write_bytes(run32.forward)
    (out / "backward.pb").write_bytes(_serialized(run32.main))
    np.savez_compressed(out / "feed.npz", **feed32)
    np.savez_compressed(out / "params.npz", **run32.param_values)
    np.savez_compressed(out / "grads.npz", **grads32)
    np.save(out / "loss.npy", values32[0])
    for name, value in outputs.items():
        np.save(out / f"{name}.npy", value)
    for stale in ("grads64.npz", "loss64.npy", "grads_fd64.npz"):
        (out / stale).unlink(missing_ok=True)
    if needs64 or wrong:
        np.savez_compressed(out / "grads64.npz", **grads64)
        np.save(out / "loss64.npy", values64[0])
    if wrong:
        np.savez_compressed(out / "grads_fd64.npz", **numeric)
    forward = paddle.static.Program.parse_from_string(run32.forward)
    meta = {"case": case, "seed": SEED, "paddle_version": paddle.__version__, "description": run32.description,
            "loss": run32.loss.name, "params_grads": [[p.name, g.name] for p, g in run32.params_grads],
            "input_grads": {g[:-len("@GRAD")]: g for g in run32.fetch if g[:-len("@GRAD")] in feed32},
            "feed": {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in feed32.items()},
            "float64": needs64 or bool(wrong), "paddle_wrong_grads": wrong,
            "fd64_checked": check_fd, "ops_forward": _program_ops(forward),
            "ops_backward_distinct": _program_ops(run32.main, distinct=True),
            "rnn_ops": _rnn_ops(forward), "notes": [LEGACY_NOTE] + run32.extra.pop("notes", []), **run32.extra}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{case}: loss {float(values32[0]):.6f}, {len(run32.fetch)} grads, float64 kept: {meta['float64']}, "
          f"paddle wrong: {wrong or 'none'}")


if __name__ == "__main__":
    if os.environ.get("PYTHONHASHSEED") != "0":  # while_loop orders the while op's X and Out by a Python set
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/rnn")
    for name in sys.argv[2:] or CASES:
        build(name, target)

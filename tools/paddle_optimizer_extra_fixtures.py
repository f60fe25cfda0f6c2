"""Fixtures of the optimizer ops of gradc.ops.optimizer_amp / optimizer_extra from a real PaddlePaddle: Paddle's
legacy training programs with dynamic loss scaling (paddle.static.amp.decorate, levels O1 and O2, batches with an
inf so steps are skipped and the scale shrinks and grows), ModelAverage (with its apply and restore programs),
and the optimizer ops no current class writes in a legacy program (ftrl, decayed_adagrad, dpsgd, asgd,
sparse_momentum), appended by a minimal paddle.optimizer.Optimizer subclass or after append_backward.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_optimizer_extra_fixtures.py \
        tests/data/paddle/optim_extra [case ...]

Files as tools/paddle_optimizer_fixtures.py writes them (train.pb, startup.pb, init/feeds/states/final.npz,
losses.npy, lrs.npy, meta.json); ModelAverage cases add apply.pb, restore.pb, applied.npz (every persistable
after the apply program ran on the final state) and restored.npz (after restore then ran).

bf16/ holds the programs of paddle.static.amp.bf16 on the linear model, which Paddle 3.3.1 cannot run on CPU
(its bfloat16 matmul_v2_grad crashes): forward.pb (rewrite_program_bf16: the casts to bfloat16 and back) and
train.pb (decorate_bf16(SGD).minimize), loss mean_0.tmp_0.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle.static import amp
from paddle.static.amp import bf16
from paddle_optimizer_fixtures import SEED, run_steps, serialize, stacked, write

paddle.enable_static()
OPTIMIZE = 0x0002


class AppendedOptimizer(paddle.optimizer.Optimizer):
    """Appends one ``op_type`` op per parameter: Param/Grad/LearningRate slots (named by ``slots``), the
    accumulators (input slot, output slot, initial value, shape or None for the parameter's) and attributes."""

    def __init__(self, op_type, learning_rate, accumulators, attrs, slots=("Param", "Grad", "LearningRate")):
        super().__init__(learning_rate=learning_rate)
        self.type, self.accumulators, self.attrs, self.slots = op_type, accumulators, attrs, slots

    def _create_accumulators(self, block, parameters):
        for param in parameters:
            for slot, (_, value, shape) in self.accumulators.items():
                self._add_accumulator(slot, param, fill_value=value, shape=shape)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        param_slot, grad_slot, lr_slot = self.slots
        inputs = {param_slot: param, grad_slot: grad, lr_slot: self._create_param_lr(param_and_grad)}
        outputs = {param_slot + ("_out" if param_slot.islower() else "Out"): param}
        for slot, (out_slot, _, _) in self.accumulators.items():
            accumulator = self._get_accumulator(slot, param)
            inputs[slot] = accumulator
            if out_slot:
                outputs[out_slot] = accumulator
        return block.append_op(type=self.type, inputs=inputs, outputs=outputs, attrs=dict(self.attrs),
                               stop_gradient=True)


def linear():
    """x [4, 3] -> fc(2) -> mean squared error against y [4, 2]."""
    x = paddle.static.data("x", [4, 3], "float32")
    y = paddle.static.data("y", [4, 2], "float32")
    return F.mse_loss(paddle.nn.Linear(3, 2)(x), y)


def batches(rng, steps, bad=()):
    """Normal batches; at the steps in ``bad`` one x is inf (its gradients are inf or nan)."""
    out = []
    for step in range(steps):
        x = rng.standard_normal((4, 3)).astype("float32")
        if step in bad:
            x[1, 2] = np.inf
        out.append({"x": x, "y": rng.standard_normal((4, 2)).astype("float32")})
    return out


def amp_case(level, inner, bad, **scaling):
    def build():
        optimizer = amp.decorate(inner(), init_loss_scaling=1024.0, use_dynamic_loss_scaling=True, level=level,
                                 **scaling)
        loss = linear()
        optimizer.minimize(loss)
        return loss, {"bad_steps": list(bad), "level": level, **scaling}
    return build, bad


def appended_case(op_type, lr, accumulators, attrs, slots=("Param", "Grad", "LearningRate")):
    def build():
        loss = linear()
        AppendedOptimizer(op_type, lr, accumulators, attrs, slots).minimize(loss)
        return loss, {"op": op_type, "attrs": attrs}
    return build, ()


def sparse_momentum_case(axis, **attrs):
    """w [6, 3] (axis 0) or [3, 6] (axis 1): a gather of its rows / columns at ids (repeated, some left out)
    -> mean squared error; sparse_momentum steps w by the gathered slice's gradient at the ids."""
    def build():
        block = paddle.static.default_main_program().global_block()
        ids = paddle.static.data("ids", [5], "int64")
        target = paddle.static.data("y", [5, 3] if axis == 0 else [3, 5], "float32")
        weight = paddle.create_parameter([6, 3] if axis == 0 else [3, 6], "float32", name="w")
        picked = paddle.gather(weight, ids, axis=axis)
        loss = paddle.mean(paddle.square(picked - target))
        paddle.static.append_backward(loss)
        velocity = paddle.static.create_global_var(weight.shape, 0.0, "float32", persistable=True, name="velocity")
        lr = paddle.static.create_global_var([1], 0.1, "float32", persistable=True, name="learning_rate_0")
        op = block.append_op(type="sparse_momentum",
                             inputs={"Param": weight, "Grad": block.var(picked.name + "@GRAD"), "Velocity": velocity,
                                     "Index": ids, "LearningRate": lr},
                             outputs={"ParamOut": weight, "VelocityOut": velocity},
                             attrs={"mu": 0.8, "axis": axis, **attrs})
        op._set_attr("op_role", OPTIMIZE)
        return loss, {"op": "sparse_momentum", "axis": axis, **attrs}

    def feeds(rng, steps):
        ids = [[0, 2, 2, 5, 1], [4, 0, 3, 3, 3], [5, 4, 3, 2, 1], [1, 1, 0, 0, 2]]
        shape = (5, 3) if axis == 0 else (3, 5)
        return [{"ids": np.array(ids[s % 4], "int64"), "y": rng.standard_normal(shape).astype("float32")}
                for s in range(steps)]
    return build, feeds


def model_average_case():
    def build():
        loss = linear()
        paddle.optimizer.SGD(0.1).minimize(loss)
        average = paddle.incubate.optimizer.ModelAverage(0.5, min_average_window=2, max_average_window=3)
        return loss, {"average_window_rate": 0.5, "min_average_window": 2, "max_average_window": 3,
                      "programs": average}
    return build, ()


FTRL_ACCUMULATORS = {"SquaredAccumulator": ("SquaredAccumOut", 0.1, None),
                     "LinearAccumulator": ("LinearAccumOut", 0.0, None)}
CASES = {
    "amp_o1_sgd": amp_case("O1", lambda: paddle.optimizer.SGD(0.1), (2, 3, 5), incr_every_n_steps=2,
                           decr_every_n_nan_or_inf=1, incr_ratio=2.0, decr_ratio=0.5),
    "amp_o2_momentum": amp_case("O2", lambda: paddle.optimizer.Momentum(0.05, 0.9), (1, 3, 4),
                                incr_every_n_steps=1, decr_every_n_nan_or_inf=2, incr_ratio=4.0, decr_ratio=0.25),
    "amp_o1_adam": amp_case("O1", lambda: paddle.optimizer.Adam(0.01), (2,)),
    "ftrl": appended_case("ftrl", 0.1, FTRL_ACCUMULATORS, {"l1": 0.01, "l2": 0.02, "lr_power": -0.5}),
    "ftrl_power": appended_case("ftrl", 0.1, FTRL_ACCUMULATORS, {"l1": 0.0, "l2": 0.0, "lr_power": -0.7}),
    "decayed_adagrad": appended_case("decayed_adagrad", 0.05, {"Moment": ("MomentOut", 0.01, None)},
                                     {"decay": 0.9, "epsilon": 1e-3}),
    "dpsgd": appended_case("dpsgd", 0.1, {}, {"clip": 0.5, "batch_size": 4.0, "sigma": 0.3, "seed": 7}),
    "dpsgd_unclipped": appended_case("dpsgd", 0.1, {}, {"clip": 100.0, "batch_size": 8.0, "sigma": 1.0,
                                                        "seed": 123456}),
    "asgd": appended_case("asgd", 0.1, {"d": ("d_out", 0.0, None), "y": ("y_out", 0.0, None),
                                        "n": (None, 3.0, [1])}, {"multi_precision": False},
                          ("param", "grad", "learning_rate")),
    "sparse_momentum": sparse_momentum_case(0),
    "sparse_momentum_axis1_nesterov_l2": sparse_momentum_case(1, use_nesterov=True, rescale_grad=0.5,
                                                              regularization_method="l2_decay",
                                                              regularization_coeff=0.1),
    "model_average": model_average_case(),
}
STEPS = 7


def applied_and_restored(average):
    """ModelAverage's apply and restore programs, and every persistable after each (run after the last step)."""
    def after(executor, persistables) -> dict:
        executor.run(average.apply_program)
        applied = persistables.read()
        executor.run(average.restore_program)
        return {"applied": applied, "restored": persistables.read(), "apply.pb": serialize(average.apply_program),
                "restore.pb": serialize(average.restore_program)}
    return after


def train(name: str) -> dict:
    build, data = CASES[name]
    paddle.seed(SEED)
    rng = np.random.default_rng(SEED)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        loss, settings = build()
    average = settings.pop("programs", None)
    feeds = data(rng, STEPS) if callable(data) else batches(rng, STEPS, data)
    lr_name = "learning_rate_0"
    init, losses, states, lrs, extra = run_steps(main, startup, loss.name, feeds, lr_name,
                                                 None if average is None else applied_and_restored(average))
    meta = {"case": name, "seed": SEED, "paddle_version": paddle.__version__, "steps": STEPS,
            "description": (build.__doc__ or linear.__doc__).split("\n")[0], "settings": settings,
            "loss": loss.name, "feeds": sorted(feeds[0]), "learning_rate_var": lr_name,
            "ops_train": [op.type for op in main.global_block().ops]}
    files = {"train.pb": serialize(main), "startup.pb": serialize(startup), "init": init,
             "feeds": stacked(feeds), "grads": {}, "intermediates": {}, "states": stacked(states[:-1]),
             "final": states[-1], "losses": losses, "lrs": lrs, "meta": meta}
    return files, extra


def write_bf16(target: Path) -> None:
    programs = {}
    for name, rewrite in (("forward", lambda main, loss: bf16.rewrite_program_bf16(main)),
                          ("train", lambda main, loss: bf16.decorate_bf16(paddle.optimizer.SGD(0.1)).minimize(loss))):
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
            rewrite(main, linear())
        programs[name] = serialize(main)
    (target / "bf16").mkdir(parents=True, exist_ok=True)
    for name, data in programs.items():
        (target / "bf16" / f"{name}.pb").write_bytes(data)


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/optim_extra")
    names = sys.argv[2:] or ["bf16", *CASES]
    if "bf16" in names:
        write_bf16(target)
    for case_name in (name for name in names if name != "bf16"):
        files, extra = train(case_name)
        write(target / case_name, files)
        for key, value in extra.items():
            if key.endswith(".pb"):
                (target / case_name / key).write_bytes(value)
            else:
                np.savez_compressed(target / case_name / f"{key}.npz", **value)
        print(f"{case_name}: losses {np.round(files['losses'], 5).tolist()}")

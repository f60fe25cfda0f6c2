"""Build PIR training fixtures with optimizers with a real PaddlePaddle 3.x in its default PIR mode, into
tests/data/paddle/pir/optim_<name>/: Paddle's own training program (forward, backward and the update ops of
`Optimizer.minimize`, the loss fetched as "loss") as train.json.gz and its startup program as startup.json.gz;
every persistable after the startup program (init.npz: parameters, accumulators, learning rate); three
batches (feeds.npz); Paddle's loss at each step (losses.npy) and every persistable after the last (final.npz).
Not part of the package.

    /path/to/paddle/python tools/paddle_pir_optim_fixtures.py tests/data/paddle/pir [name ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import _C_ops
from paddle.incubate.optimizer import LarsMomentumOptimizer
from paddle.static.amp import amp_nn
from paddle_programs import write_pir_gz

STEPS = 3


class SGDWithModelAverage:
    """SGD, then paddle.incubate.optimizer.ModelAverage's accumulation (average_accumulates_ per parameter)."""

    def minimize(self, loss) -> None:
        paddle.optimizer.SGD(0.1).minimize(loss)
        paddle.incubate.optimizer.ModelAverage(0.5, min_average_window=1, max_average_window=2)


class DynamicLossScalingAdam:
    """Adam with dynamic loss scaling as paddle.static.amp.decorate writes it in a legacy program, built from
    Paddle's own PIR pieces (decorate itself fails in 3.3.1's PIR mode: its loss-scaling var is never made):
    scale the loss, check_finite_and_unscale_ and update_loss_scaling_ (every step changes the scale: grow by 2
    after one good step, halve after one bad) on the gradients, Adam skipping a step with an inf."""

    def minimize(self, loss) -> None:
        params = [p for p in paddle.static.default_main_program().global_block().all_parameters()
                  if not p.stop_gradient]

        def state(name, value, dtype):
            return paddle.pir.core.create_persistable_value(dtype, [1], name,
                                                            initializer=paddle.nn.initializer.Constant(value))
        scaling = state("loss_scaling_0", 1024.0, "float32")
        good, bad = state("num_good_steps_0", 0, "int32"), state("num_bad_steps_0", 0, "int32")
        params_grads = paddle.autograd.ir_backward.append_backward(loss * scaling, parameter_list=params)
        grads, found_inf = amp_nn.check_finite_and_unscale([grad for _, grad in params_grads], scaling)
        amp_nn.update_loss_scaling(grads, found_inf, scaling, good, bad, 1, 1, 2.0, 0.5)
        adam = paddle.optimizer.Adam(0.05)
        adam._set_auxiliary_var("found_inf", found_inf)
        adam._pir_create_optimization_pass([(param, grad) for (param, _), grad in zip(params_grads, grads)])


OPTIMIZERS = {
    "sgd": lambda: paddle.optimizer.SGD(0.1),
    "momentum": lambda: paddle.optimizer.Momentum(0.1, momentum=0.8, use_nesterov=True),
    "adam": lambda: paddle.optimizer.Adam(0.05, beta1=0.85, beta2=0.99, epsilon=1e-6),
    "adamw": lambda: paddle.optimizer.AdamW(0.05, weight_decay=0.02),
    "adagrad": lambda: paddle.optimizer.Adagrad(0.1),
    "adamax": lambda: paddle.optimizer.Adamax(0.05),
    "rmsprop": lambda: paddle.optimizer.RMSProp(0.02, centered=True, momentum=0.5),
    "adadelta": lambda: paddle.optimizer.Adadelta(0.5),
    "lamb": lambda: paddle.optimizer.Lamb(0.05),
    "nadam": lambda: paddle.optimizer.NAdam(0.05),
    "radam": lambda: paddle.optimizer.RAdam(0.05),
    "rprop": lambda: paddle.optimizer.Rprop(0.05),
    "lars_momentum": lambda: LarsMomentumOptimizer(0.1, momentum=0.8, exclude_from_weight_decay=["b_0"]),
    "merged_momentum": lambda: paddle.optimizer.Momentum(0.1, momentum=0.8, use_multi_tensor=True),
    "merged_adam": lambda: paddle.optimizer.Adam(0.05, beta1=0.85, use_multi_tensor=True),
    "clip_global_norm": lambda: paddle.optimizer.SGD(0.1, grad_clip=paddle.nn.ClipGradByGlobalNorm(0.5)),
    "clip_norm": lambda: paddle.optimizer.SGD(0.1, grad_clip=paddle.nn.ClipGradByNorm(0.3)),
    "asgd": lambda: paddle.optimizer.ASGD(0.1, batch_num=2),
    "model_average": SGDWithModelAverage,
    "amp_adam": DynamicLossScalingAdam,
}
INF_AT_STEP = {"amp_adam": 1}   # an inf in that step's batch: its gradients are inf or nan


def persistable_names(program) -> list[str]:
    names = []
    for op in program.global_block().ops:
        if op.name() == "builtin.parameter":
            names.append(op.attrs()["parameter_name"])
        elif op.name() == "pd_op.data" and op.result(0).persistable:
            names.append(op.attrs()["name"])
    return names


def minimize_multi_tensor(optimizer, loss) -> None:
    """Paddle's PIR minimize ignores use_multi_tensor (its PIR pass writes one op per parameter), but the
    optimizers' multi-tensor code has PIR branches: this drives them as the legacy pass does. Momentum's asserts a
    legacy block before reaching its PIR branch, so its one call (merged_momentum_ on the accumulators
    _multi_tensor_init made) is made here as that branch makes it."""
    params_grads = sorted(paddle.autograd.ir_backward.append_backward(loss), key=lambda pair: pair[0].name)
    block = paddle.static.default_main_program().global_block()
    optimizer._create_global_learning_rate()
    optimizer._multi_tensor_init(block, [param for param, _ in params_grads], 0)
    if not isinstance(optimizer, paddle.optimizer.Momentum):
        optimizer._append_optimize_multi_tensor_op(block, params_grads, 0)
        return
    key = "FP32_DenseTensor"
    _C_ops.merged_momentum_(optimizer._param_dict[key][0], [grad for _, grad in params_grads],
                            optimizer._velocity_dict[key][0], [optimizer._create_param_lr(pg) for pg in params_grads],
                            None, optimizer._momentum, optimizer._use_nesterov,
                            optimizer._regularization_method_dict[key][0], optimizer._regularization_coeff_dict[key][0],
                            False, optimizer._rescale_grad)


def programs(name: str, seed: int, multi_tensor: bool) -> tuple:
    """(main, startup) of the case: Paddle's minimize, or its multi-tensor code for the merged_* cases."""
    paddle.seed(seed)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():   # linear_0 in every case
        x = paddle.static.data("x", [4, 6], "float32")
        label = paddle.static.data("label", [4, 1], "int64")
        hidden = F.relu(paddle.nn.Linear(6, 8)(x))
        loss = paddle.mean(F.cross_entropy(paddle.nn.Linear(8, 3)(hidden), label))
        optimizer = OPTIMIZERS[name]()
        if multi_tensor:
            minimize_multi_tensor(optimizer, loss)
        else:
            optimizer.minimize(loss)
        paddle._pir_ops.fetch(loss, "loss", 0).persistable = True
    return main, startup


def build(name: str, out_dir: Path, seed: int = 2024) -> None:
    """Paddle 3.3.1's PIR executor cannot run merged_momentum_ (its kernel requires ParamOut to be the very tensor
    Param is, which PIR's vector results are not): that case keeps Paddle's merged_momentum_ program and the numbers
    of Paddle's run of the program its PIR minimize writes for the same optimizer (a momentum_ per parameter, the
    same update, the same var names)."""
    paddle.enable_static()
    rng = np.random.default_rng(seed)
    main, startup = programs(name, seed, name.startswith("merged_"))
    run_main, run_startup = programs(name, seed, False) if name == "merged_momentum" else (main, startup)
    out = out_dir / f"optim_{name}"
    out.mkdir(parents=True, exist_ok=True)
    for program, stem in ((main, "train"), (startup, "startup")):   # gzipped, as backward.json.gz (26 KB)
        write_pir_gz(program, out / f"{stem}.json")
    feeds = {"x": rng.standard_normal((STEPS, 4, 6)).astype("float32"),
             "label": rng.integers(0, 3, (STEPS, 4, 1)).astype("int64")}
    if name in INF_AT_STEP:
        feeds["x"][INF_AT_STEP[name], 0, 0] = np.inf
    executor, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    executor.run(run_startup)
    names = persistable_names(run_main)
    values = lambda: {n: np.array(scope.find_var(n).get_tensor()) for n in names}  # noqa: E731
    init, losses = values(), []
    for step in range(STEPS):
        fetched = executor.run(run_main, feed={k: v[step] for k, v in feeds.items()}, fetch_list=[])
        losses.append(float(np.asarray(fetched[0])))
    np.savez(out / "init.npz", **init)
    np.savez(out / "feeds.npz", **feeds)
    np.save(out / "losses.npy", np.array(losses, "float32"))
    np.savez(out / "final.npz", **values())
    ops = sorted({op.name() for op in main.global_block().ops})
    meta = {"case": f"optim_{name}", "seed": seed, "paddle_version": paddle.__version__, "loss": "loss",
            "steps": STEPS, "description": f"linear(6->8) -> relu -> linear(->3) -> cross entropy, {STEPS} steps "
            f"of {OPTIMIZERS[name]().__class__.__name__}", "pir_ops": ops}
    if run_main is not main:
        meta["numbers_from"] = "Paddle's PIR minimize of the same optimizer (momentum_ per parameter)"
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"optim_{name}: losses {losses}, {len(names)} persistables, ops {ops}")


if __name__ == "__main__":
    for chosen in sys.argv[2:] or OPTIMIZERS:
        build(chosen, Path(sys.argv[1]))

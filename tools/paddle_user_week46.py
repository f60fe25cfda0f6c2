"""The optimisation researcher's programs of docs/tools.md's 'An optimisation researcher's week', written with Paddle
3.3.1's layers and optimizer classes in legacy static mode (FLAGS_enable_pir_api=0):

- models: mlp (x [N, 6] -> Linear 16 -> ReLU -> Linear 3 -> cross entropy), cnn (img [N, 1, 6, 6] -> Conv2D 3x3, 3
  channels -> ReLU -> MaxPool 2 -> Flatten -> Linear 3 -> cross entropy), lstm (a language model: tokens [N, 5] ->
  Embedding 20x8 -> nn.LSTM 8 -> Linear 20 -> cross entropy against the next tokens).
- one case per optimizer / schedule / clipping / regularizer setting (CASES below), each trained STEPS steps of BATCH
  examples (a scheduler stepped after each step, as run_steps does; in the PER_EPOCH cases, 6 epochs of the same two
  batches, the scheduler stepped once an epoch: ReduceOnPlateau with the epoch's mean loss); ema:
  ExponentialMovingAverage(0.9) updated after each step, its applied weights saved.

Each model's folder: forward.pb (main.clone() before minimize, the same for every case: names under
unique_name.guard), init.npz, data.npz (data_plateau.npz: the two batches of an epoch of the PER_EPOCH cases); each
case's: train.pb (Paddle's own), startup.pb, trained.npz; its losses and learning rates in meta.json.
- program_rate: the mlp with a schedule as ops of the program (program_rate_case), its forward and startup too.
- lr_<name>.pb / .startup.pb: paddle.optimizer.lr's exponential_decay, natural_exp_decay, inverse_time_decay,
  polynomial_decay (cycle), piecewise_decay, cosine_decay, linear_lr_warmup and noam_decay, which write the schedule as
  ops of the program; their rates over 7 runs in lr_programs.json.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week46.py tests/data/paddle/user_week46
"""

import json
import math
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.optimizer import lr
from paddle_programs import legacy_persistables, script_main, without_callstacks, write_gz, write_programs_gz

BATCH, STEPS, VOCAB, TOKENS = 8, 6, 20, 5


def no_bias(name) -> bool:
    return not name.endswith(".b_0")


def is_bias(param) -> bool:
    return param.name.endswith(".b_0")


CASES = {
    "sgd_piecewise": ("mlp", lambda: paddle.optimizer.SGD(lr.PiecewiseDecay([2, 4], [0.1, 0.05, 0.01]))),
    "momentum_nesterov_l2": ("mlp", lambda: paddle.optimizer.Momentum(
        0.05, 0.9, use_nesterov=True, weight_decay=paddle.regularizer.L2Decay(0.001))),
    "adam_amsgrad": ("mlp", lambda: paddle.optimizer.Adam(0.01, amsgrad=True)),
    "adamw_no_bias": ("mlp", lambda: paddle.optimizer.AdamW(0.01, weight_decay=0.05, apply_decay_param_fun=no_bias)),
    "adamax_exponential": ("mlp", lambda: paddle.optimizer.Adamax(lr.ExponentialDecay(0.02, 0.9))),
    "adagrad_natural_exp": ("mlp", lambda: paddle.optimizer.Adagrad(lr.NaturalExpDecay(0.05, 0.2))),
    "adadelta": ("mlp", lambda: paddle.optimizer.Adadelta(1.0, rho=0.9, epsilon=1e-6)),
    "rmsprop_centered": ("mlp", lambda: paddle.optimizer.RMSProp(lr.InverseTimeDecay(0.01, 0.5), rho=0.9,
                                                                  momentum=0.5, centered=True)),
    "rmsprop": ("cnn", lambda: paddle.optimizer.RMSProp(0.01)),
    "lamb_excluded": ("mlp", lambda: paddle.optimizer.Lamb(0.01, lamb_weight_decay=0.01,
                                                            exclude_from_weight_decay_fn=is_bias)),
    "lamb_zero_bias": ("mlp", lambda: paddle.optimizer.Lamb(0.01, lamb_weight_decay=0.01)),
    "adam_multi_precision": ("mlp", lambda: paddle.optimizer.Adam(0.01, multi_precision=True)),
    "lookahead": ("mlp", lambda: paddle.incubate.LookAhead(paddle.optimizer.Adam(0.01), alpha=0.5, k=2)),
    "nadam": ("mlp", lambda: paddle.optimizer.NAdam(0.01)),
    "radam": ("mlp", lambda: paddle.optimizer.RAdam(0.01)),
    "rprop": ("mlp", lambda: paddle.optimizer.Rprop(0.01)),
    "sgd_polynomial_cycle": ("mlp", lambda: paddle.optimizer.SGD(lr.PolynomialDecay(0.1, 2, 0.01, 2.0, cycle=True))),
    "momentum_multistep": ("cnn", lambda: paddle.optimizer.Momentum(lr.MultiStepDecay(0.05, [2, 5], 0.5))),
    "sgd_step": ("mlp", lambda: paddle.optimizer.SGD(lr.StepDecay(0.1, 2, 0.5))),
    "adam_warm_restarts": ("mlp", lambda: paddle.optimizer.Adam(lr.CosineAnnealingWarmRestarts(0.01, 2, 2))),
    "sgd_cyclic": ("mlp", lambda: paddle.optimizer.SGD(lr.CyclicLR(0.01, 0.1, 2))),
    "adam_one_cycle": ("mlp", lambda: paddle.optimizer.Adam(lr.OneCycleLR(0.05, STEPS))),
    "adamw_warmup_cosine": ("lstm", lambda: paddle.optimizer.AdamW(
        lr.LinearWarmup(lr.CosineAnnealingDecay(0.01, STEPS), 2, 0.0, 0.01), weight_decay=0.01,
        grad_clip=nn.ClipGradByGlobalNorm(1.0))),
    "sgd_lambda": ("mlp", lambda: paddle.optimizer.SGD(lr.LambdaDecay(0.1, lambda epoch: 0.8 ** epoch))),
    "sgd_multiplicative": ("mlp", lambda: paddle.optimizer.SGD(lr.MultiplicativeDecay(
        0.1, lambda epoch: 0.9 if epoch < 3 else math.cos(0.5)))),
    "sgd_plateau": ("mlp", lambda: paddle.optimizer.SGD(lr.ReduceOnPlateau(0.1, factor=0.5, patience=0, threshold=0.5,
                                                                           cooldown=1))),
    "momentum_multistep_epochs": ("mlp", lambda: paddle.optimizer.Momentum(lr.MultiStepDecay(0.05, [2, 4], 0.5))),
    "clip_value": ("mlp", lambda: paddle.optimizer.SGD(0.1, grad_clip=nn.ClipGradByValue(0.05))),
    "clip_norm": ("mlp", lambda: paddle.optimizer.SGD(0.1, grad_clip=nn.ClipGradByNorm(0.1))),
    "clip_global_need_clip": ("attrs", lambda: paddle.optimizer.Momentum(0.1, grad_clip=nn.ClipGradByGlobalNorm(0.1))),
    "l1_param_l2_global": ("attrs", lambda: paddle.optimizer.SGD(0.1, weight_decay=paddle.regularizer.L2Decay(0.01))),
    "ema": ("mlp", lambda: paddle.optimizer.Adam(0.01)),
}
EPOCH_STEPS = 2  # an epoch of the cases whose scheduler the loop steps once an epoch
PER_EPOCH = ("sgd_plateau", "momentum_multistep_epochs")


def mlp(attrs: bool):
    x = paddle.static.data("x", [-1, 6], "float32")
    label = paddle.static.data("label", [-1, 1], "int64")
    first = nn.Linear(6, 16, weight_attr=paddle.ParamAttr(regularizer=paddle.regularizer.L1Decay(0.02)) if attrs
                      else None)
    last = nn.Linear(16, 3, bias_attr=paddle.ParamAttr(need_clip=False) if attrs else None)
    return F.cross_entropy(last(F.relu(first(x))), label)


def cnn():
    img = paddle.static.data("img", [-1, 1, 6, 6], "float32")
    label = paddle.static.data("label", [-1, 1], "int64")
    h = F.max_pool2d(F.relu(nn.Conv2D(1, 3, 3)(img)), 2)
    return F.cross_entropy(nn.Linear(12, 3)(paddle.flatten(h, 1)), label)


def lstm():
    tokens = paddle.static.data("tokens", [-1, TOKENS], "int64")
    target = paddle.static.data("target", [-1, TOKENS, 1], "int64")
    out, _ = nn.LSTM(8, 8)(nn.Embedding(VOCAB, 8)(tokens))
    return F.cross_entropy(nn.Linear(8, VOCAB)(out), target)


def data(model: str, rng, count: int) -> dict:
    if model == "lstm":
        seq = rng.integers(0, VOCAB, size=(count, TOKENS + 1))
        return {"tokens": seq[:, :-1].astype(np.int64), "target": seq[:, 1:, None].astype(np.int64)}
    shape = (count, 1, 6, 6) if model == "cnn" else (count, 6)
    x = rng.normal(size=shape).astype(np.float32)
    flat = x.reshape(count, -1)
    label = (flat[:, 0] > 0).astype(np.int64) + (flat[:, 1] > 0.5)
    return {"img" if model == "cnn" else "x": x, "label": label.reshape(-1, 1)}


def train_case(out: Path, name: str, exe) -> dict:
    model, make = CASES[name]
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 46
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        loss = {"cnn": cnn, "lstm": lstm}.get(model, lambda: mlp(model == "attrs"))()
        forward = main.clone()
        optimizer = make()
        optimizer.minimize(loss)
        ema = paddle.static.ExponentialMovingAverage(0.9) if name == "ema" else None
        if ema:
            ema.update()
    per_epoch = name in PER_EPOCH
    steps = 2 * STEPS if per_epoch else STEPS
    # the epochs go over the same two batches, as an epoch does
    batches = data(model, np.random.default_rng(46), (EPOCH_STEPS if per_epoch else steps) * BATCH)
    folder, shared = out / name, out / model
    folder.mkdir(parents=True, exist_ok=True)
    scope, losses, rates = paddle.static.Scope(), [], []
    schedule = getattr(optimizer, "inner_optimizer", optimizer)._learning_rate
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(shared / "init.npz", **legacy_persistables(forward, scope))
        for step in range(steps):
            at = step % EPOCH_STEPS if per_epoch else step
            feed = {k: v[at * BATCH:(at + 1) * BATCH] for k, v in batches.items()}
            (value,) = exe.run(main, feed=feed, fetch_list=[loss.name])
            losses.append(float(value))
            rates.append(float(getattr(optimizer, "inner_optimizer", optimizer).get_lr()))
            if isinstance(schedule, lr.ReduceOnPlateau) and step % EPOCH_STEPS == EPOCH_STEPS - 1:
                schedule.step(float(np.mean(losses[-EPOCH_STEPS:])))
            elif isinstance(schedule, lr.LRScheduler) and (step % EPOCH_STEPS == EPOCH_STEPS - 1 or not per_epoch):
                schedule.step()
        np.savez_compressed(folder / "trained.npz", **legacy_persistables(forward, scope))
        if ema:
            with ema.apply(exe):
                np.savez_compressed(folder / "ema.npz", **legacy_persistables(forward, scope))
    np.savez_compressed(shared / ("data_plateau.npz" if per_epoch else "data.npz"), **batches)
    write_gz(shared / "forward.pb", without_callstacks(forward))
    for program_name, program in [("train", main), ("startup", startup)]:
        write_gz(folder / f"{program_name}.pb", without_callstacks(program))
    return {"model": model, "loss": loss.name, "losses": losses, "rates": rates}


# paddle.optimizer.lr's functions that write a schedule as ops of the program (a step counter and the rate's
# arithmetic), as Paddle 1.x's fluid.layers did; Paddle 3.3.1's optimizers refuse their Variable as a learning rate
LR_PROGRAMS = {
    "exponential": lambda: lr.exponential_decay(0.1, 2, 0.5, staircase=True),
    "natural_exp": lambda: lr.natural_exp_decay(0.1, 2, 0.5),
    "inverse_time": lambda: lr.inverse_time_decay(0.1, 2, 0.5, staircase=True),
    "polynomial": lambda: lr.polynomial_decay(0.1, 2, 0.01, 2.0, cycle=True),
    "piecewise": lambda: lr.piecewise_decay([2, 4], [0.1, 0.05, 0.01]),
    "cosine": lambda: lr.cosine_decay(0.1, 2, 3),
    "warmup": lambda: lr.linear_lr_warmup(lr.exponential_decay(0.1, 2, 0.5), 2, 0.0, 0.1),
    "noam": lambda: lr.noam_decay(16, 3, 1.0),
}


def lr_programs(out: Path, exe) -> dict:
    """Each LR_PROGRAMS schedule's program and startup (lr_<name>.pb, lr_<name>.startup.pb) and its rate over 7 runs."""
    rates = {}
    for name, make in LR_PROGRAMS.items():
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup):
            rate = make()
        with paddle.static.scope_guard(paddle.static.Scope()):
            exe.run(startup)
            values = [float(exe.run(main, fetch_list=[rate])[0].reshape(-1)[0]) for _ in range(7)]
        write_gz(out / f"lr_{name}.pb", without_callstacks(main))
        write_gz(out / f"lr_{name}.startup.pb", without_callstacks(startup))
        rates[name] = {"var": rate.name, "rates": values}
    return rates


def program_rate_case(out: Path, exe) -> dict:
    """program_rate: the mlp with lr.exponential_decay(0.1, 2, 0.5, staircase=True) written after its loss, as a
    Paddle 2.x script wrote it; Adam reads that var as its rate (Paddle 2's Adam(learning_rate=<Variable>): Paddle
    3.3.1's Python refuses a Variable, so the update ops' LearningRate is set to it after minimize)."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 46
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        loss = mlp(False)
        rate = lr.exponential_decay(0.1, 2, 0.5, staircase=True)
        forward = main.clone()
        paddle.optimizer.Adam(0.1).minimize(loss)
    for op in main.global_block().ops:
        if op.type == "adam":
            op.desc.set_input("LearningRate", [rate.name])
    folder = out / "program_rate"
    folder.mkdir(parents=True, exist_ok=True)
    batches = data("mlp", np.random.default_rng(46), STEPS * BATCH)
    scope, losses, rates = paddle.static.Scope(), [], []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in batches.items()}
            value, used = exe.run(main, feed=feed, fetch_list=[loss.name, rate.name])
            losses.append(float(value))
            rates.append(float(used.reshape(-1)[0]))
        np.savez_compressed(folder / "trained.npz", **legacy_persistables(forward, scope))
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    return {"model": "mlp", "loss": loss.name, "rate": rate.name, "losses": losses, "rates": rates}


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    for model in ("mlp", "cnn", "lstm", "attrs"):
        (out / model).mkdir(parents=True, exist_ok=True)
    meta = {name: train_case(out, name, exe) for name in CASES}
    meta["program_rate"] = program_rate_case(out, exe)
    (out / "lr_programs.json").write_text(json.dumps(lr_programs(out, exe), indent=1) + "\n")
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    script_main(main, main)

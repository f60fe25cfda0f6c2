"""The computer-vision researcher's programs of docs/tools.md's 'A computer-vision researcher's week with the Python
API': a small CNN (conv without bias, batch norm, ReLU, dropout with the program's seed, fc, cross entropy) built by
Paddle 3.3.1's legacy static API, its `clone(for_test=True)` eval program, and Paddle's own optimizer programs:
Momentum with an L2 regularizer and ClipGradByGlobalNorm, Adam with ExponentialMovingAverage (its apply and restore
programs), gradient merge (k_steps 2) and float16 AMP O1 (on a CPU Paddle casts nothing: the loss scaling's ops).
Each case's directory holds main.pb, startup.pb, eval.pb (and the EMA's apply.pb / restore.pb), Paddle's initial
state as `paddle.static.save` writes it (init.pdparams, init.pdopt) and its state after the first step
(step1.pdparams, step1.pdopt); batches.npz holds the batches (flipped by numpy, the last one smaller); meta.json
Paddle's losses per step and its eval losses after each step. ClipGradByGlobalNorm's paddle.sqrt builds only PIR ops
in 3.3.1, so tools/paddle_legacy_shim.py gives it the legacy op back.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week4.py tests/data/paddle/user_week4
"""

import json
import os
import sys

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle import nn
from paddle_programs import write_stripped

SIZES = (8, 8, 8, 5)   # the last batch smaller, as a data set of 29 images gives at batch 8
EVAL_SIZE = 6
RNG = np.random.default_rng(4)


def augment(images):
    """What the researcher's loop does between steps: a random horizontal flip of each image."""
    flip = RNG.random(len(images)) < 0.5
    return np.where(flip[:, None, None, None], images[..., ::-1], images).astype(np.float32)


def batches():
    images = RNG.standard_normal((sum(SIZES), 1, 8, 8)).astype(np.float32)
    labels = RNG.integers(0, 3, (sum(SIZES), 1)).astype(np.int64)
    out, start = {}, 0
    for step, size in enumerate(SIZES):
        out[f"x{step}"] = augment(images[start:start + size])
        out[f"label{step}"] = labels[start:start + size]
        start += size
    out["eval_x"] = RNG.standard_normal((EVAL_SIZE, 1, 8, 8)).astype(np.float32)
    out["eval_label"] = RNG.integers(0, 3, (EVAL_SIZE, 1)).astype(np.int64)
    return out


def build(main, startup):
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [-1, 1, 8, 8], "float32")
        label = paddle.static.data("label", [-1, 1], "int64")
        conv, norm, fc = nn.Conv2D(1, 4, 3, padding=1, bias_attr=False), nn.BatchNorm2D(4), nn.Linear(4 * 4 * 4, 3)
        hidden = F.max_pool2d(F.relu(norm(conv(x))), 2)
        hidden = F.dropout(paddle.flatten(hidden, 1), 0.25)
        logits = fc(hidden)
        loss = F.cross_entropy(logits, label)
    return logits, loss


def optimizer(case):
    if case == "momentum":
        return paddle.optimizer.Momentum(0.05, 0.9, weight_decay=paddle.regularizer.L2Decay(1e-3),
                                         grad_clip=nn.ClipGradByGlobalNorm(1.0))
    adam = paddle.optimizer.Adam(0.01)
    if case == "merge":
        return paddle.incubate.optimizer.GradientMergeOptimizer(adam, k_steps=2, avg=True)
    if case == "amp_fp16":
        return paddle.static.amp.decorate(adam, level="O1", dtype="float16", use_dynamic_loss_scaling=False)
    return adam


def run_case(case, directory, data):
    os.makedirs(directory, exist_ok=True)
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 7   # dropout's fix_seed: Paddle's mask every step, and gradc's
    logits, loss = build(main, startup)
    evaluate = main.clone(for_test=True)
    with paddle.static.program_guard(main, startup):
        optimizer(case).minimize(loss)
        ema = paddle.static.ExponentialMovingAverage(0.9) if case == "adam_ema" else None
        if ema:
            ema.update()
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    paddle.static.save(main, os.path.join(directory, "init"))
    os.remove(os.path.join(directory, "init.pdmodel"))   # main.pb is the same program
    for name, program in (("main", main), ("startup", startup), ("eval", evaluate)):
        write_stripped(os.path.join(directory, f"{name}.pb"), program)
    if ema:
        write_stripped(os.path.join(directory, "apply.pb"), ema.apply_program)
        write_stripped(os.path.join(directory, "restore.pb"), ema.restore_program)
    eval_feed = {"x": data["eval_x"], "label": data["eval_label"]}
    losses, eval_losses, ema_losses = [], [], []
    for step in range(len(SIZES)):
        feed = {"x": data[f"x{step}"], "label": data[f"label{step}"]}
        losses.append(float(executor.run(main, feed=feed, fetch_list=[loss])[0]))
        if step == 0:   # a checkpoint mid-run (mid-accumulation for gradient merge), for resuming in gradc
            paddle.static.save(main, os.path.join(directory, "step1"))
            os.remove(os.path.join(directory, "step1.pdmodel"))
        eval_losses.append(float(executor.run(evaluate, feed=eval_feed, fetch_list=[loss])[0]))
        if ema:
            with ema.apply(executor):
                ema_losses.append(float(executor.run(evaluate, feed=eval_feed, fetch_list=[loss])[0]))
    last_logits = executor.run(evaluate, feed=eval_feed, fetch_list=[logits])[0]
    np.save(os.path.join(directory, "eval_logits.npy"), last_logits)
    meta = {"losses": losses, "eval_losses": eval_losses, "loss": loss.name, "logits": logits.name}
    if ema:
        meta["ema_eval_losses"] = ema_losses
    with open(os.path.join(directory, "meta.json"), "w") as out:
        json.dump(meta, out, indent=1)
    print(case, losses, eval_losses, ema_losses)


def main(target):
    paddle.enable_static()
    paddle_legacy_shim.install()   # ClipGradByGlobalNorm's paddle.sqrt builds only PIR ops in 3.3.1
    data = batches()
    os.makedirs(target, exist_ok=True)
    np.savez(os.path.join(target, "batches.npz"), **data)
    for case in ("momentum", "adam_ema", "merge", "amp_fp16"):
        run_case(case, os.path.join(target, case), data)


if __name__ == "__main__":
    main(sys.argv[1])

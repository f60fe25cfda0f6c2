"""The GAN trainer's model of docs/tools.md's 'A GAN trainer's week': a small plain GAN built by Paddle 3.3.1's
legacy static API. G: noise[8] -> 16 -> 4 (tanh); D: 4 -> 16 -> 1 (leaky relu, sigmoid cross-entropy). Two programs
over one scope: d_main (G's output detached by stop_gradient; D's loss on a real and a fake batch; Adam over D's
parameters only, `parameters=`) and g_main (G through D; Adam over G's parameters, D's in no_grad_set). Writes
d_forward.pb / g_forward.pb (before minimize), d_main.pb / g_main.pb, startup.pb (both networks and both
optimizers), init.npz (Paddle's startup values of the 8 parameters), batches.npz and meta.json: Paddle's executor's
losses over ROUNDS rounds of K discriminator steps and one generator step.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week9.py tests/data/paddle/user_week9
"""

import json
import os
import sys

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import write_stripped

RNG = np.random.default_rng(9)
NOISE, HIDDEN, DATA, BATCH, ROUNDS, K = 8, 16, 4, 8, 3, 2


def generator(noise):
    hidden = F.relu(paddle.static.nn.fc(noise, HIDDEN, weight_attr="g_w0", bias_attr="g_b0"))
    return paddle.tanh(paddle.static.nn.fc(hidden, DATA, weight_attr="g_w1", bias_attr="g_b1"))


def discriminator(x):
    hidden = F.leaky_relu(paddle.static.nn.fc(x, HIDDEN, weight_attr="d_w0", bias_attr="d_b0"), 0.2)
    return paddle.static.nn.fc(hidden, 1, weight_attr="d_w1", bias_attr="d_b1")


def bce(logit, target):
    return paddle.mean(F.binary_cross_entropy_with_logits(logit, paddle.full_like(logit, target)))


def build(out):
    startup, d_main, g_main = paddle.static.Program(), paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(d_main, startup):
        real = paddle.static.data("real", [-1, DATA], "float32")
        noise = paddle.static.data("noise", [-1, NOISE], "float32")
        fake = generator(noise)
        fake.stop_gradient = True   # detach: D's step leaves G alone
        d_loss = bce(discriminator(real), 1.0) + bce(discriminator(fake), 0.0)
    with paddle.static.program_guard(g_main, startup):
        noise = paddle.static.data("noise", [-1, NOISE], "float32")
        g_loss = bce(discriminator(generator(noise)), 1.0)
    write(out, "d_forward.pb", d_main)
    write(out, "g_forward.pb", g_main)
    d_params = ["d_w0", "d_b0", "d_w1", "d_b1"]
    g_params = ["g_w0", "g_b0", "g_w1", "g_b1"]
    with paddle.static.program_guard(d_main, startup):
        paddle.optimizer.Adam(2e-3, beta1=0.5).minimize(d_loss, parameters=d_params)
    with paddle.static.program_guard(g_main, startup):
        paddle.optimizer.Adam(1e-3, beta1=0.5).minimize(g_loss, parameters=g_params, no_grad_set=set(d_params))
    return startup, d_main, g_main, d_loss.name, g_loss.name, d_params, g_params


def write(out, name, program):
    write_stripped(os.path.join(out, name), program)   # Python stacks: most of the bytes, none of the meaning


def main(out):
    paddle.enable_static()
    paddle_legacy_shim.install()
    paddle.seed(9)
    startup, d_main, g_main, d_loss, g_loss, d_params, g_params = build(out)
    for name, program in (("d_main.pb", d_main), ("g_main.pb", g_main), ("startup.pb", startup)):
        write(out, name, program)
    batches = {}
    for r in range(ROUNDS):
        for k in range(K):
            batches[f"real{r}_{k}"] = (RNG.standard_normal((BATCH, DATA)) * 0.5 + 1.0).astype("float32")
            batches[f"dnoise{r}_{k}"] = RNG.standard_normal((BATCH, NOISE)).astype("float32")
        batches[f"gnoise{r}"] = RNG.standard_normal((BATCH, NOISE)).astype("float32")
    np.savez(os.path.join(out, "batches.npz"), **batches)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    exe.run(startup)
    values = {p: np.array(scope.find_var(p).get_tensor()) for p in d_params + g_params}
    np.savez(os.path.join(out, "init.npz"), **values)
    d_losses, g_losses = [], []
    for r in range(ROUNDS):
        for k in range(K):
            (loss,) = exe.run(d_main, feed={"real": batches[f"real{r}_{k}"], "noise": batches[f"dnoise{r}_{k}"]},
                              fetch_list=[d_loss])
            d_losses.append(float(loss))
        (loss,) = exe.run(g_main, feed={"noise": batches[f"gnoise{r}"]}, fetch_list=[g_loss])
        g_losses.append(float(loss))
    values = {p: np.array(scope.find_var(p).get_tensor()) for p in d_params + g_params}
    np.savez(os.path.join(out, "trained.npz"), **values)
    lrs = {v.name: float(np.array(scope.find_var(v.name).get_tensor()))
           for v in startup.list_vars() if v.name.startswith("learning_rate")}
    meta = {"d_loss": d_loss, "g_loss": g_loss, "d_params": d_params, "g_params": g_params, "rounds": ROUNDS,
            "k": K, "d_losses": d_losses, "g_losses": g_losses, "learning_rates": lrs}
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])

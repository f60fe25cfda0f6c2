"""The Bayesian / probabilistic deep-learning researcher's programs of docs/tools.md's 'A Bayesian deep-learning
researcher's week', written with Paddle 3.3.1's layers and paddle.distribution in legacy static mode
(FLAGS_enable_pir_api=0), 1-D regression data (y = sin(3x) on one of two branches, with noise):

- mdn: a mixture density network (Linear, tanh, Linear to 3 mixing logits, 3 means, 3 log-scales); the loss is
  -mean logsumexp(log_softmax(logits) + Normal(mu, exp(log_sigma)).log_prob(y)).
- bbb: Bayes by backprop: a 1-16-1 net whose weights are Normal(mu, softplus(rho)).rsample() (gaussian_random drawn
  from paddle.seed's stream), loss the Gaussian NLL of y plus kl_divergence(q, Normal(0, 1)).sum() / N.
- hetero: heteroscedastic regression: a Linear-relu-Linear to a mean and a log-variance, F.gaussian_nll_loss.
- mcdrop: a 1-32-32-1 net with Dropout(0.2) after each hidden layer, mse; mc.npz: 20 forward passes of the training
  program's forward (dropout on) on the test points after paddle.seed(38), their mean and variance.
- ensemble: 3 small nets (1-16-1, tanh) in one program, the loss the sum of their mses.

Each model: forward.pb (main.clone() before minimize), test.pb (for_test clone), train.pb (Paddle's own after
Adam(0.01).minimize), startup.pb, init.npz, data.npz, test_data.npz; 6 steps of batch 16 after paddle.seed(38):
meta.json's losses, trained.npz. dists: float64 sum of Beta / Dirichlet / LogNormal / Laplace log_probs, entropies
and (LogNormal, Laplace) rsamples of fed parameters after paddle.seed(38), with paddle.static.gradients (dists.pb,
dists_forward.pb, dists.npz: the feed, each term and each gradient). PIR half: the trained MDN's sampler (mixture
parameters and one ancestral sample per point) by paddle.jit.save, run by the Predictor (sampler_pir.npz).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week38.py tests/data/paddle/user_week38
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.distribution as D
import paddle.nn as nn
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import (
    gzip_file,
    legacy_persistables,
    pir_half,
    run_steps,
    script_main,
    without_callstacks,
    write_gz,
)

BATCH, STEPS, LR, SEED, COMPONENTS, PASSES = 16, 6, 0.01, 38, 3, 20
RNG = np.random.default_rng(38)


def regression(count: int) -> dict:
    x = RNG.uniform(-1, 1, (count, 1))
    branch = RNG.integers(0, 2, (count, 1)) * 2 - 1
    y = branch * np.sin(3 * x) + RNG.normal(0, 0.1 + 0.2 * np.abs(x))
    return {"x": x.astype(np.float32), "y": y.astype(np.float32)}


def mdn_head(x):
    params = nn.Linear(16, 3 * COMPONENTS)(paddle.tanh(nn.Linear(1, 16)(x)))
    return paddle.split(params, 3, axis=1)


def mdn():
    x, y = paddle.static.data("x", [-1, 1], "float32"), paddle.static.data("y", [-1, 1], "float32")
    logits, mu, log_sigma = mdn_head(x)
    components = D.Normal(mu, paddle.exp(log_sigma)).log_prob(y)
    loss = -paddle.mean(paddle.logsumexp(F.log_softmax(logits, axis=1) + components, axis=1))
    return mu, loss


def bayes_linear(fan_in: int, fan_out: int, name: str):
    """A Bayes-by-backprop layer's weight (reparameterised) and its KL to the standard normal prior."""
    mu = paddle.create_parameter([fan_in, fan_out], "float32", name=f"{name}_mu",
                                 default_initializer=nn.initializer.Normal(0, 0.3))
    rho = paddle.create_parameter([fan_in, fan_out], "float32", name=f"{name}_rho",
                                  default_initializer=nn.initializer.Constant(-3.0))
    posterior = D.Normal(mu, F.softplus(rho))
    prior = D.Normal(paddle.zeros([fan_in, fan_out]), paddle.ones([fan_in, fan_out]))
    return posterior.rsample([1])[0], paddle.sum(D.kl_divergence(posterior, prior))


def bbb():
    x, y = paddle.static.data("x", [-1, 1], "float32"), paddle.static.data("y", [-1, 1], "float32")
    w1, kl1 = bayes_linear(1, 16, "bbb1")
    w2, kl2 = bayes_linear(16, 1, "bbb2")
    out = paddle.matmul(paddle.tanh(paddle.matmul(x, w1)), w2)
    nll = paddle.mean(0.5 * paddle.square(out - y) / 0.04)
    return out, nll + (kl1 + kl2) / 48.0


def hetero():
    x, y = paddle.static.data("x", [-1, 1], "float32"), paddle.static.data("y", [-1, 1], "float32")
    mean, log_var = paddle.split(nn.Linear(16, 2)(F.relu(nn.Linear(1, 16)(x))), 2, axis=1)
    return mean, F.gaussian_nll_loss(mean, y, paddle.exp(log_var))


def mcdrop():
    x, y = paddle.static.data("x", [-1, 1], "float32"), paddle.static.data("y", [-1, 1], "float32")
    hidden = nn.Dropout(0.2)(F.relu(nn.Linear(1, 32)(x)))
    out = nn.Linear(32, 1)(nn.Dropout(0.2)(F.relu(nn.Linear(32, 32)(hidden))))
    return out, F.mse_loss(out, y)


def ensemble():
    x, y = paddle.static.data("x", [-1, 1], "float32"), paddle.static.data("y", [-1, 1], "float32")
    outs = [nn.Linear(16, 1)(paddle.tanh(nn.Linear(1, 16)(x))) for _ in range(3)]
    stacked = paddle.concat(outs, axis=1)
    return stacked, sum(F.mse_loss(out, y) for out in outs)


def train_model(out: Path, name: str, build, data: dict, test_data: dict, exe) -> dict:
    main, startup = paddle.static.Program(), paddle.static.Program()
    # the startup seeded alone: a main program's random_seed fixes every dropout op's seed, the same mask each run
    startup.random_seed = SEED
    with paddle.static.program_guard(main, startup):
        prediction, loss = build()
    forward, test = main.clone(), main.clone(for_test=True)
    with paddle.static.program_guard(main, startup):
        chosen = paddle.optimizer.Adam(LR)
        chosen.minimize(loss)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(folder / "init.npz", **legacy_persistables(forward, scope))
        paddle.seed(SEED)
        losses = run_steps(exe, main, loss, data, STEPS, BATCH, chosen)
        np.savez(folder / "trained.npz", **legacy_persistables(forward, scope))
        (test_out,) = exe.run(test, feed=test_data, fetch_list=[prediction.name])
        np.savez(folder / "test_out.npz", out=test_out)
        if name == "mcdrop":
            paddle.seed(SEED)
            passes = np.stack([exe.run(forward, feed=test_data, fetch_list=[prediction.name])[0]
                               for _ in range(PASSES)])
            np.savez(folder / "mc.npz", passes=passes, mean=passes.mean(0), var=passes.var(0))
    np.savez_compressed(folder / "data.npz", **data)
    np.savez_compressed(folder / "test_data.npz", **test_data)
    for program_name, program in [("forward", forward), ("test", test), ("train", main), ("startup", startup)]:
        write_gz(folder / f"{program_name}.pb", without_callstacks(program))
    return {"loss": loss.name, "prediction": prediction.name, "losses": losses}


def dists(out: Path, exe) -> dict:
    """float64 log_probs, entropies and rsamples of four distributions whose parameters are fed, and Paddle's
    gradients of their sum."""
    feed = {"a": RNG.uniform(0.5, 2.0, 3), "b": RNG.uniform(0.5, 2.0, 3), "loc": RNG.normal(size=3),
            "value": RNG.uniform(0.1, 0.9, 3)}
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        a, b, loc, value = (paddle.static.data(k, [3], "float64") for k in feed)
        # value too: Paddle's CPU broadcast_tensors_grad crashes (SIGSEGV) when an input gets no gradient
        for var in (a, b, loc, value):
            var.stop_gradient = False
        simplex = value / paddle.sum(value)
        terms = {
            "beta_log_prob": D.Beta(a, b).log_prob(value), "beta_entropy": D.Beta(a, b).entropy(),
            "dirichlet_log_prob": D.Dirichlet(a).log_prob(simplex), "dirichlet_entropy": D.Dirichlet(a).entropy(),
            "lognormal_log_prob": D.LogNormal(loc, b).log_prob(value),
            "lognormal_entropy": D.LogNormal(loc, b).entropy(),
            "lognormal_rsample": D.LogNormal(loc, b).rsample([2]),
            "laplace_log_prob": D.Laplace(loc, b).log_prob(value), "laplace_entropy": D.Laplace(loc, b).entropy(),
            "laplace_rsample": D.Laplace(loc, b).rsample([2]),
        }
        total = paddle.add_n([paddle.sum(term) for term in terms.values()])
        forward = main.clone()
        grads = paddle.static.gradients(total, [a, b, loc])
    paddle.seed(SEED)
    values = exe.run(main, feed=feed, fetch_list=[*terms.values(), total, *grads])
    names = [*terms, "total", "a@GRAD", "b@GRAD", "loc@GRAD"]
    np.savez(out / "dists.npz", **feed, **dict(zip(names, values)))
    write_gz(out / "dists.pb", without_callstacks(main))
    write_gz(out / "dists_forward.pb", without_callstacks(forward))
    return {"dists": {"total": total.name, **{k: v.name for k, v in terms.items()}}}


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {}
    for name, build in [("mdn", mdn), ("bbb", bbb), ("hetero", hetero), ("mcdrop", mcdrop), ("ensemble", ensemble)]:
        meta[name] = train_model(out, name, build, regression(BATCH * STEPS), regression(12), exe)
    meta.update(dists(out, exe))
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


class Sampler(nn.Layer):
    """The MDN's head and one ancestral sample per point: a component by Categorical, then its Normal."""

    def __init__(self, values: dict):
        super().__init__()
        self.first, self.second = nn.Linear(1, 16), nn.Linear(16, 3 * COMPONENTS)
        for layer, prefix in ((self.first, "linear_1"), (self.second, "linear_0")):  # the outer Linear made first
            layer.weight.set_value(values[f"{prefix}.w_0"])
            layer.bias.set_value(values[f"{prefix}.b_0"])

    def forward(self, x):
        logits, mu, log_sigma = paddle.split(self.second(paddle.tanh(self.first(x))), 3, axis=1)
        pick = F.one_hot(D.Categorical(F.softmax(logits)).sample([1])[0], COMPONENTS)
        noise = paddle.randn(paddle.shape(mu))
        sample = paddle.sum(pick * (mu + paddle.exp(log_sigma) * noise), axis=1, keepdim=True)
        return F.softmax(logits), mu, paddle.exp(log_sigma), sample


def main_pir(out: Path) -> None:
    model = Sampler(dict(np.load(out / "mdn" / "trained.npz")))
    model.eval()
    paddle.jit.save(model, str(out / "sampler_pir"), input_spec=[paddle.static.InputSpec([-1, 1], "float32", "x")])
    x = np.load(out / "mdn" / "test_data.npz")["x"]
    # Paddle's Predictor fails on this export, its IR passes on or off: "Ctx should have corresponding OpInfo
    # pd_op.fused_transpose": the saved model is run by paddle.jit.load instead
    loaded = paddle.jit.load(str(out / "sampler_pir"))
    loaded.eval()
    paddle.seed(SEED)
    names = ("weights", "mu", "sigma", "sample")
    predicted = {name: value.numpy() for name, value in zip(names, loaded(paddle.to_tensor(x)))}
    np.savez(out / "sampler_pir.npz", **predicted)
    gzip_file(out / "sampler_pir.json")


if __name__ == "__main__":
    script_main(main, main_pir)

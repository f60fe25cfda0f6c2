"""The generative-model researcher's programs of docs/tools.md's 'A generative-model researcher's week', written with
Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), each parameter named by a ParamAttr so that the
training, evaluation and sampling programs share it:

- vae_*: a VAE over 16 binary pixels (encoder Linear(16, 12) tanh, mu and log-variance Linear(12, 3); decoder
  Linear(3, 12) tanh Linear(12, 16) logits), z = mu + exp(logvar / 2) * eps with eps = paddle.randn(paddle.shape(mu))
  drawn in the program from paddle.seed's stream; the loss is the negative ELBO per example: the Bernoulli likelihood
  by F.binary_cross_entropy_with_logits summed over pixels plus the Gaussian KL, averaged over the batch.
  vae_forward.pb (main.clone() before minimize), vae_train.pb (Adam(0.01)'s minimize), vae_fed.pb (the same loss with
  eps fed as the var "eps"), vae_sample.pb (8 draws z = paddle.randn([8, 3]) through the decoder, sigmoid).
- flow_*: a RealNVP-like flow over 4-d data: 4 affine couplings with alternating masks (assign_value constants), each
  Linear(4, 8) tanh then a log-scale tanh(Linear(8, 4)) and a shift Linear(8, 4) on the unmasked half, the
  log-determinant summed; the loss is -mean(Normal(0, 1).log_prob(z).sum(1) + logdet) (Normal.log_prob builds in
  legacy static mode only through paddle_legacy_shim: Paddle's own `log` takes PIR values only); flow_forward.pb,
  flow_train.pb (Adam(0.005)), flow_bpd.pb (the loss's bits per dim, loss / (4 ln 2)), flow_sample.pb (8 draws
  paddle.normal(0, 1, [8, 4]) through the inverse couplings) and flow_inverse.pb (the inverse of a fed z).
- meta.json: the vars' names, Paddle's losses per step; *_init.npz the parameters after the startup program,
  *_trained.npz after 6 Adam steps of 8 examples, *_grads.npz step 1's gradients (and step 1's eps), *_eval.npz the
  evaluation (test loss / ELBO, the VAE's after paddle.seed(231); bits per dim) and the samples (paddle.seed(131)
  before each sampling run).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week31.py tests/data/paddle/user_week31
"""

import json
import math
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import without_callstacks, write_gz

PIXELS, HIDDEN, LATENT = 16, 12, 3
FLOW_DIM, FLOW_HIDDEN, COUPLINGS = 4, 8, 4
TRAIN, TEST, BATCH, STEPS, SAMPLES = 48, 16, 8, 6, 8
VAE_SEED, FLOW_SEED, SAMPLE_SEED, EVAL_SEED = 31, 32, 131, 231
MASKS = [[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1]]
RNG = np.random.default_rng(31)


def vae_data(count: int) -> np.ndarray:
    """Binary 4x4 images: one of three strokes (a row, a column, the diagonal) with one pixel in ten flipped."""
    strokes = np.zeros((3, 4, 4), np.float32)
    strokes[0, 1], strokes[1, :, 2], strokes[2] = 1, 1, np.eye(4)
    images = strokes[RNG.integers(0, 3, count)].reshape(count, PIXELS)
    return np.abs(images - (RNG.uniform(size=images.shape) < 0.1)).astype(np.float32)


def flow_data(count: int) -> np.ndarray:
    """A bent, correlated 4-d cloud: x1 ~ N(0, 1), x2 = x1^2 / 2 - 1 + noise, x3 = sin(x1) + noise, x4 = x2 x3 / 2."""
    x1 = RNG.normal(size=count)
    x2 = x1 ** 2 / 2 - 1 + 0.2 * RNG.normal(size=count)
    x3 = np.sin(x1) + 0.3 * RNG.normal(size=count)
    return np.stack([x1, x2, x3, x2 * x3 / 2 + 0.1 * RNG.normal(size=count)], 1).astype(np.float32)


def linear(fan_in: int, fan_out: int, name: str) -> paddle.nn.Linear:
    return paddle.nn.Linear(fan_in, fan_out, weight_attr=paddle.ParamAttr(name=f"{name}_w"),
                            bias_attr=paddle.ParamAttr(name=f"{name}_b"))


def decoder(z):
    return linear(HIDDEN, PIXELS, "dec2")(paddle.tanh(linear(LATENT, HIDDEN, "dec1")(z)))


def vae_loss(x, eps=None):
    """The negative ELBO per example, averaged: eps drawn by paddle.randn in the program unless given."""
    hidden = paddle.tanh(linear(PIXELS, HIDDEN, "enc")(x))
    mu, logvar = linear(HIDDEN, LATENT, "mu")(hidden), linear(HIDDEN, LATENT, "logvar")(hidden)
    if eps is None:
        eps = paddle.randn(paddle.shape(mu))
    z = mu + paddle.exp(0.5 * logvar) * eps
    recon = paddle.sum(F.binary_cross_entropy_with_logits(decoder(z), x, reduction="none"), axis=1)
    kl = -0.5 * paddle.sum(1 + logvar - paddle.square(mu) - paddle.exp(logvar), axis=1)
    return paddle.mean(recon + kl), eps


def coupling_nets(masked, k: int):
    """The k-th coupling's log-scale (tanh-bounded) and shift from the masked half."""
    hidden = paddle.tanh(linear(FLOW_DIM, FLOW_HIDDEN, f"c{k}_h")(masked))
    log_scale = paddle.tanh(linear(FLOW_HIDDEN, FLOW_DIM, f"c{k}_s")(hidden))
    return log_scale, linear(FLOW_HIDDEN, FLOW_DIM, f"c{k}_t")(hidden)


def flow_loss(x):
    """-mean(log N(z; 0, 1) summed + log |det dz/dx|), z the couplings' output."""
    z, logdet = x, None
    for k, bits in enumerate(MASKS):
        mask = paddle.assign(np.array([bits], np.float32))
        log_scale, shift = coupling_nets(z * mask, k)
        log_scale, shift = log_scale * (1 - mask), shift * (1 - mask)
        z = z * mask + (1 - mask) * (z * paddle.exp(log_scale) + shift)
        step_logdet = paddle.sum(log_scale, axis=1)
        logdet = step_logdet if logdet is None else logdet + step_logdet
    log_pz = paddle.sum(paddle.distribution.Normal(0.0, 1.0).log_prob(z), axis=1)
    return paddle.mean(-(log_pz + logdet)), z


def flow_inverse(z):
    """The couplings undone, last first: x = masked + (1 - mask) (z - shift) exp(-log_scale)."""
    for k in reversed(range(COUPLINGS)):
        mask = paddle.assign(np.array([MASKS[k]], np.float32))
        log_scale, shift = coupling_nets(z * mask, k)
        z = z * mask + (1 - mask) * (z - shift) * paddle.exp(-log_scale)
    return z


def guarded(build):
    """build() inside fresh main and startup programs: (main, startup, what build returned)."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        return main, startup, build()


def vae_programs() -> tuple[dict, dict]:
    def training():
        x = paddle.static.data("x", [-1, PIXELS], "float32")
        loss, eps = vae_loss(x)
        return loss, eps
    main, startup, (loss, eps) = guarded(training)
    forward = main.clone()
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.Adam(0.01).minimize(loss)

    def fed():
        x = paddle.static.data("x", [-1, PIXELS], "float32")
        return vae_loss(x, paddle.static.data("eps", [-1, LATENT], "float32"))[0]
    fed_prog, _, fed_loss = guarded(fed)
    sample_prog, _, probs = guarded(lambda: F.sigmoid(decoder(paddle.randn([SAMPLES, LATENT]))))
    names = {"loss": loss.name, "eps": eps.name, "fed_loss": fed_loss.name, "samples": probs.name}
    return {"train": main, "forward": forward, "startup": startup, "fed": fed_prog, "sample": sample_prog}, names


def flow_programs() -> tuple[dict, dict]:
    def training():
        return flow_loss(paddle.static.data("x", [-1, FLOW_DIM], "float32"))
    main, startup, (loss, z) = guarded(training)
    forward = main.clone()
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.Adam(0.005).minimize(loss)
    bpd_prog, _, bpd = guarded(lambda: training()[0] / (FLOW_DIM * math.log(2.0)))
    sample_prog, _, samples = guarded(lambda: flow_inverse(paddle.normal(0.0, 1.0, [SAMPLES, FLOW_DIM])))
    inverse_prog, _, inverse = guarded(lambda: flow_inverse(paddle.static.data("z", [-1, FLOW_DIM], "float32")))
    names = {"loss": loss.name, "z": z.name, "bpd": bpd.name, "samples": samples.name, "inverse": inverse.name}
    return {"train": main, "forward": forward, "startup": startup, "bpd": bpd_prog, "sample": sample_prog,
            "inverse": inverse_prog}, names


def values(scope, names) -> dict:
    return {name: np.array(scope.var(name).get_tensor()) for name in names}


def train(exe, scope, programs, names, data, seed) -> dict:
    """paddle.seed(seed), the startup, then STEPS Adam steps of BATCH examples; what the run gives."""
    params = [p.name for p in programs["train"].all_parameters()]
    paddle.seed(seed)
    exe.run(programs["startup"])
    record = {"init": values(scope, params), "losses": []}
    for step in range(STEPS):
        feed = {"x": data[step * BATCH:(step + 1) * BATCH]}
        extra = [names["eps"]] if "eps" in names else []
        fetched = exe.run(programs["train"], feed=feed, fetch_list=[names["loss"], *[p + "@GRAD" for p in params],
                                                                      *extra])
        record["losses"].append(float(fetched[0]))
        if step == 0:
            record["grads"] = {p + "@GRAD": g for p, g in zip(params, fetched[1:1 + len(params)])}
            record["grads"].update(dict(zip(["eps"], fetched[1 + len(params):])))
    record["trained"] = values(scope, params)
    return record


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {"steps": STEPS, "batch": BATCH,
            "seeds": {"vae": VAE_SEED, "flow": FLOW_SEED, "sample": SAMPLE_SEED, "eval": EVAL_SEED}}
    vae_x, flow_x = vae_data(TRAIN + TEST), flow_data(TRAIN + TEST)
    np.savez_compressed(out / "vae_data.npz", x=vae_x[:TRAIN])
    np.savez_compressed(out / "vae_test.npz", x=vae_x[TRAIN:])
    np.savez_compressed(out / "flow_data.npz", x=flow_x[:TRAIN])
    np.savez_compressed(out / "flow_test.npz", x=flow_x[TRAIN:])
    for model, (programs, names), data, seed in [("vae", vae_programs(), vae_x, VAE_SEED),
                                                 ("flow", flow_programs(), flow_x, FLOW_SEED)]:
        scope = paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            record = train(exe, scope, programs, names, data, seed)
            test = {"x": data[TRAIN:]}
            evaluated = {}
            if model == "vae":   # the negative ELBO of the test set, its noise drawn after paddle.seed(EVAL_SEED)
                paddle.seed(EVAL_SEED)
                (evaluated["test_loss"],) = exe.run(programs["forward"].clone(for_test=True), feed=test,
                                                    fetch_list=[names["loss"]])
                eps = record["grads"]["eps"]
                (evaluated["fed_loss"],) = exe.run(programs["fed"], feed={"x": data[:BATCH], "eps": eps},
                                                   fetch_list=[names["fed_loss"]])
            else:
                evaluated["test_loss"], evaluated["z"] = exe.run(programs["forward"], feed=test,
                                                                 fetch_list=[names["loss"], names["z"]])
                (evaluated["bpd"],) = exe.run(programs["bpd"], feed=test, fetch_list=[names["bpd"]])
                (evaluated["inverse"],) = exe.run(programs["inverse"], feed={"z": evaluated["z"]},
                                                  fetch_list=[names["inverse"]])
            paddle.seed(SAMPLE_SEED)
            (evaluated["samples"],) = exe.run(programs["sample"], fetch_list=[names["samples"]])
        meta[model] = {**names, "losses": record["losses"],
                       "test_loss": float(evaluated["test_loss"]),
                       "bits_per_dim": float(evaluated["bpd"]) if "bpd" in evaluated else None}
        np.savez_compressed(out / f"{model}_init.npz", **record["init"])
        np.savez_compressed(out / f"{model}_trained.npz", **record["trained"])
        np.savez_compressed(out / f"{model}_grads.npz", **record["grads"])
        np.savez_compressed(out / f"{model}_eval.npz", **evaluated)
        for name, program in programs.items():
            write_gz(out / f"{model}_{name}.pb", without_callstacks(program))
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
    main(Path(sys.argv[1]))

"""The PIR half of tools/paddle_user_week31.py (run it after that one, into the same directory): the RealNVP-like flow
in PIR static mode (Paddle 3's default), its log-likelihood by paddle.distribution.Normal.log_prob, which builds
natively in PIR: flow_pir_forward.json (the loss fetched as "loss"), flow_pir_train.json (Adam(0.005)'s minimize),
flow_pir_init.npz
(the persistables after the startup, paddle.seed(32): Adam's state too), Paddle's 6 losses and the trained parameters
(flow_pir_trained.npz) on the legacy half's data, in meta.json's "flow_pir"; the VAE with its noise by
paddle.distribution.Normal(mu, sigma).rsample() and its KL by kl_divergence, trained by Paddle's PIR Adam from
paddle.seed(331) (vae_pir_train.json, vae_pir_init.npz, vae_pir_trained.npz, meta.json's "vae_pir").

    FLAGS_enable_pir_api=1 /work/paddle-venv/bin/python tools/paddle_user_week31_pir.py tests/data/paddle/user_week31
"""

import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle_programs import write_pir_gz
from paddle_user_week31 import (
    BATCH,
    FLOW_DIM,
    FLOW_SEED,
    HIDDEN,
    LATENT,
    PIXELS,
    STEPS,
    decoder,
    flow_loss,
    linear,
)

NOISE_SEED = 331


def vae_rsample_loss(x):
    """The VAE's negative ELBO written with paddle.distribution: q = Normal(mu, exp(logvar / 2)), z = q.rsample(),
    kl_divergence(q, Normal(0, 1)) summed over the latent."""
    hidden = paddle.tanh(linear(PIXELS, HIDDEN, "enc")(x))
    mu, logvar = linear(HIDDEN, LATENT, "mu")(hidden), linear(HIDDEN, LATENT, "logvar")(hidden)
    posterior = paddle.distribution.Normal(mu, paddle.exp(0.5 * logvar))
    z = paddle.squeeze(posterior.rsample([1]), 0)
    recon = paddle.sum(F.binary_cross_entropy_with_logits(decoder(z), x, reduction="none"), axis=1)
    prior = paddle.distribution.Normal(paddle.zeros_like(mu), paddle.ones_like(mu))
    return paddle.mean(recon + paddle.sum(paddle.distribution.kl_divergence(posterior, prior), axis=1))


def built(optimize: bool, model: str = "flow"):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        if model == "flow":
            loss, _ = flow_loss(paddle.static.data("x", [-1, FLOW_DIM], "float32"))
        else:
            loss = vae_rsample_loss(paddle.static.data("x", [BATCH, PIXELS], "float32"))   # -1: rsample fails
        if optimize:
            paddle.optimizer.Adam(0.005).minimize(loss)
        paddle._pir_ops.fetch(loss, "loss", 0).persistable = True
    return main, startup


def parameter_values(program) -> dict:
    """Every persistable the program reads (a training program's: Adam's state too) as the global scope holds it."""
    scope = paddle.static.global_scope()
    names = [op.attrs()["parameter_name"] for op in program.global_block().ops if op.name() == "builtin.parameter"]
    names += [op.attrs()["name"] for op in program.global_block().ops
              if op.name() == "pd_op.data" and op.result(0).persistable]
    return {name: np.array(scope.find_var(name).get_tensor()) for name in names}


def vae_pir(out: Path, exe) -> dict:
    """vae_pir_train.json: the rsample VAE's Adam(0.01) minimize; vae_pir_init.npz its persistables after the startup
    (paddle.seed(31)); then paddle.seed(NOISE_SEED) and 6 steps: Paddle's losses, vae_pir_trained.npz."""
    train, startup = built(True, "vae")
    write_pir_gz(train, out / "vae_pir_train.json")
    data = np.load(out / "vae_data.npz")["x"]
    paddle.seed(31)
    exe.run(startup)
    np.savez_compressed(out / "vae_pir_init.npz", **parameter_values(train))
    paddle.seed(NOISE_SEED)
    losses = [float(exe.run(train, feed={"x": data[step * BATCH:(step + 1) * BATCH]}, fetch_list=[])[0])
              for step in range(STEPS)]
    np.savez_compressed(out / "vae_pir_trained.npz", **{name: value for name, value in parameter_values(train).items()
                                                        if "_moment" not in name and "_pow_acc" not in name})
    return {"losses": losses, "noise_seed": NOISE_SEED}


def main(out: Path) -> None:
    paddle.enable_static()
    data = np.load(out / "flow_data.npz")["x"]
    forward, _ = built(False)
    train, startup = built(True)
    for name, program in [("forward", forward), ("train", train)]:
        write_pir_gz(program, out / f"flow_pir_{name}.json")
    exe = paddle.static.Executor(paddle.CPUPlace())
    paddle.seed(FLOW_SEED)
    exe.run(startup)
    np.savez_compressed(out / "flow_pir_init.npz", **parameter_values(train))
    losses = [float(exe.run(train, feed={"x": data[step * BATCH:(step + 1) * BATCH]}, fetch_list=[])[0])
              for step in range(STEPS)]
    np.savez_compressed(out / "flow_pir_trained.npz", **parameter_values(forward))
    meta = json.loads((out / "meta.json").read_text())
    meta["flow_pir"] = {"losses": losses}
    meta["vae_pir"] = vae_pir(out, exe)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

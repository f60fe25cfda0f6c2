"""The normalizing-flow researcher's programs of docs/tools.md's 'A normalizing-flow researcher's week', written with
Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), on 4-dimensional data (two moons lifted by a
fixed linear map, with noise):

- flow: actnorm (a loc and a log-scale a dimension, set from the first batch by an init program), two RealNVP affine
  couplings of alternating masks (Linear, tanh, Linear to a scale and a shift, the scale through tanh), an invertible
  linear layer whose log-determinant is paddle.linalg.slogdet's, one whose log-determinant is log|det|
  (paddle.linalg.det), an LU-parameterised linear layer (a fixed permutation, tril(L, -1) + I, triu(U, 1) plus
  diag(sign * exp(log_s))), a Gaussian base of learnt covariance A A^T + 0.5 I through paddle.linalg.cholesky and
  triangular_solve; the loss the negative log-likelihood in bits per dimension; Adam(0.01).
- mdn: a mixture-density network, x [B, 1] to 3 components (Linear, tanh, Linear to logits, means and log-stds),
  log_softmax weights, logsumexp over the components, the mean negative log-likelihood; Adam(0.01).
- lu_flow: the invertible linear layer's log-determinant from paddle.linalg.lu of its weight and lu_unpack's U
  (sum of log|diag(U)|), the same data; Adam(0.01).

Each model: forward.pb (main.clone() before minimize), train.pb (Paddle's own), startup.pb, init.npz, trained.npz,
losses in meta.json, data.npz. The flow also: actnorm_init.pb (the data-dependent init: loc and log-scale assigned
from the first batch), inverse.pb (sampling: the inverse pass of z to x on the trained weights), and outputs.npz with
Paddle's samples of z.npz and the trained forward's bits per dimension and latents of the first batch.
corner_unit_lower(_t).pb and corners.npz: float64 triangular_solve(upper=False, unitriangular=True) and Paddle's
gradients, which are wrong in the upper triangle and on the diagonal (neither is read).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week57.py tests/data/paddle/user_week57
"""

import json
import math
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import (
    legacy_persistables,
    minimized,
    run_steps,
    weighted_corner,
    without_callstacks,
    write_gz,
    write_programs_gz,
)

DIM, HIDDEN, COMPONENTS, STEPS, BATCH, SAMPLES = 4, 8, 3, 5, 16, 6
RNG = np.random.default_rng(57)
PERMUTATION = np.eye(DIM, dtype=np.float32)[[2, 0, 3, 1]]
LN2 = math.log(2.0)


def parameter(name: str, value: np.ndarray):
    return paddle.static.create_parameter(list(value.shape), "float32", name=name,
                                          default_initializer=nn.initializer.Assign(value.astype(np.float32)))


class Flow:
    """The flow's parameters, made once so the forward and the inverse read the same names."""

    def __init__(self):
        self.loc = parameter("actnorm_loc", np.zeros(DIM))
        self.logscale = parameter("actnorm_logscale", np.zeros(DIM))
        self.masks = [np.array([1, 0, 1, 0], np.float32), np.array([0, 1, 0, 1], np.float32)]
        self.nets = [(nn.Linear(DIM, HIDDEN), nn.Linear(HIDDEN, 2 * DIM)) for _ in self.masks]
        self.scales = [parameter(f"coupling{i}_scale", np.ones(DIM)) for i in range(2)]
        self.w_slogdet = parameter("w_slogdet", np.linalg.qr(RNG.normal(size=(DIM, DIM)))[0])
        self.w_det = parameter("w_det", np.linalg.qr(RNG.normal(size=(DIM, DIM)))[0] * 1.1)
        self.lower = parameter("lu_lower", RNG.normal(size=(DIM, DIM)) * 0.1)
        self.upper = parameter("lu_upper", RNG.normal(size=(DIM, DIM)) * 0.1)
        self.log_s = parameter("lu_log_s", RNG.normal(size=DIM) * 0.1)
        self.sign_s = paddle.assign(np.array([1, -1, 1, 1], np.float32))
        self.base_a = parameter("base_a", np.eye(DIM) + RNG.normal(size=(DIM, DIM)) * 0.1)

    def coupling(self, i, x):
        mask = paddle.assign(self.masks[i])
        first, second = self.nets[i]
        h = second(paddle.tanh(first(x * mask)))
        s, t = paddle.split(h, 2, axis=1)
        s = paddle.tanh(s) * self.scales[i] * (1.0 - mask)
        return s, t * (1.0 - mask), mask

    def lu_weight(self):
        eye = paddle.eye(DIM, dtype="float32")
        lower = paddle.tril(self.lower, -1) + eye
        upper = paddle.triu(self.upper, 1) + paddle.diag(self.sign_s * paddle.exp(self.log_s))
        return paddle.matmul(paddle.assign(PERMUTATION), paddle.matmul(lower, upper))

    def base_factor(self):
        cov = paddle.matmul(self.base_a, self.base_a, transpose_y=True) + 0.5 * paddle.eye(DIM, dtype="float32")
        return paddle.linalg.cholesky(cov)  # lower

    def forward(self, x):
        """z and the log-determinant of each example."""
        y = (x + self.loc) * paddle.exp(self.logscale)
        logdet = paddle.sum(self.logscale) * paddle.ones([paddle.shape(x)[0]], "float32")
        for i in range(2):
            s, t, mask = self.coupling(i, y)
            y = y * paddle.exp(s) + t
            logdet = logdet + paddle.sum(s, axis=1)
        y = paddle.matmul(y, self.w_slogdet)
        logdet = logdet + paddle.reshape(paddle.linalg.slogdet(self.w_slogdet), [-1])[1]
        y = paddle.matmul(y, self.w_det)
        logdet = logdet + paddle.log(paddle.abs(paddle.linalg.det(self.w_det)))
        y = paddle.matmul(y, self.lu_weight())
        logdet = logdet + paddle.sum(self.log_s)
        return y, logdet

    def inverse(self, z):
        y = paddle.matmul(z, paddle.linalg.inv(self.lu_weight()))
        y = paddle.matmul(y, paddle.linalg.inv(self.w_det))
        y = paddle.matmul(y, paddle.linalg.inv(self.w_slogdet))
        for i in (1, 0):
            s, t, mask = self.coupling(i, y)
            y = (y - t) * paddle.exp(-s)
        return y * paddle.exp(-self.logscale) - self.loc

    def base_sample(self, noise):
        """Samples of the learnt Gaussian base: L noise."""
        return paddle.matmul(noise, self.base_factor(), transpose_y=True)


def diagonal(matrix):
    """The diagonal of a matrix (paddle.diagonal has no legacy-static path in 3.3.1)."""
    return paddle.sum(matrix * paddle.eye(DIM, dtype="float32"), axis=1)


def base_log_prob(flow, z):
    factor = flow.base_factor()
    white = paddle.linalg.triangular_solve(factor, paddle.transpose(z, [1, 0]), upper=False)  # [D, B]
    half_logdet = paddle.sum(paddle.log(diagonal(factor)))
    return -0.5 * paddle.sum(white * white, axis=0) - half_logdet - 0.5 * DIM * math.log(2 * math.pi)


def flow():
    x = paddle.static.data("x", [-1, DIM], "float32")
    model = Flow()
    z, logdet = model.forward(x)
    log_prob = base_log_prob(model, z) + logdet
    bits = -paddle.mean(log_prob) / (DIM * LN2)
    return bits, z


def lu_flow():
    x = paddle.static.data("x", [-1, DIM], "float32")
    weight = parameter("w_lu", np.linalg.qr(RNG.normal(size=(DIM, DIM)))[0] * 1.2)
    bias = parameter("b_lu", np.zeros(DIM))
    z = paddle.matmul(x, weight) + bias
    packed, pivots = paddle.linalg.lu(weight)
    _, _, upper = paddle.linalg.lu_unpack(packed, pivots)
    logdet = paddle.sum(paddle.log(paddle.abs(diagonal(upper))))
    log_prob = -0.5 * paddle.sum(z * z, axis=1) - 0.5 * DIM * math.log(2 * math.pi) + logdet
    bits = -paddle.mean(log_prob) / (DIM * LN2)
    return bits, z


def mdn():
    x = paddle.static.data("x", [-1, 1], "float32")
    y = paddle.static.data("y", [-1, 1], "float32")
    h = paddle.tanh(nn.Linear(1, HIDDEN)(x))
    logits, means, log_stds = paddle.split(nn.Linear(HIDDEN, 3 * COMPONENTS)(h), 3, axis=1)
    log_weights = F.log_softmax(logits, axis=1)
    log_normal = -0.5 * ((y - means) * paddle.exp(-log_stds)) ** 2 - log_stds - 0.5 * math.log(2 * math.pi)
    nll = -paddle.mean(paddle.logsumexp(log_weights + log_normal, axis=1))
    return nll, log_weights


MODELS = {"flow": flow, "mdn": mdn, "lu_flow": lu_flow}


def data(name: str, count: int) -> dict:
    if name == "mdn":
        x = RNG.uniform(-1, 1, size=(count, 1))
        branch = RNG.integers(0, 2, size=(count, 1))
        y = np.where(branch, np.sin(3 * x), -x) + RNG.normal(scale=0.1, size=(count, 1))
        return {"x": x.astype(np.float32), "y": y.astype(np.float32)}
    angle = RNG.uniform(0, np.pi, size=count)
    upper = RNG.integers(0, 2, size=count)
    moons = np.stack([np.cos(angle) + upper, np.sin(angle) * (1 - 2 * upper) + 0.5 * upper], 1)
    lift = np.array([[1.0, 0.5, -0.3, 0.2], [0.2, -1.0, 0.4, 0.8]])
    x = 2.0 + moons @ lift + RNG.normal(scale=0.1, size=(count, DIM))
    return {"x": x.astype(np.float32)}


def actnorm_init(x_first: np.ndarray):
    """The data-dependent init as a program: loc = -mean, log-scale = -log(std + 1e-6) of the first batch."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [-1, DIM], "float32")
        loc = parameter("actnorm_loc", np.zeros(DIM))
        logscale = parameter("actnorm_logscale", np.zeros(DIM))
        mean = paddle.mean(x, axis=0)
        std = paddle.std(x, axis=0, unbiased=False)
        paddle.assign(-mean, loc)
        paddle.assign(-paddle.log(std + 1e-6), logscale)
    return main


def sampling_program():
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):  # the flow's layer names
        noise = paddle.static.data("noise", [-1, DIM], "float32")
        model = Flow()
        z = model.base_sample(noise)
        x = model.inverse(z)
    return main, z, x


def train_model(out: Path, name: str, exe) -> dict:
    main, startup, forward, optimizer, (loss, value) = minimized(MODELS[name], lambda: paddle.optimizer.Adam(0.01),
                                                                 seed=57)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    arrays = data(name, STEPS * BATCH)
    programs = {"forward": forward, "train": main, "startup": startup}
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        if name == "flow":
            init = actnorm_init(arrays["x"][:BATCH])
            exe.run(init, feed={"x": arrays["x"][:BATCH]})
            programs["actnorm_init"] = init
        np.savez(folder / "init.npz", **legacy_persistables(forward, scope))
        losses = run_steps(exe, main, loss, arrays, STEPS, BATCH, optimizer)
        np.savez(folder / "trained.npz", **legacy_persistables(forward, scope))
        first = {k: v[:BATCH] for k, v in arrays.items()}
        bits, value_out = exe.run(forward, feed=first, fetch_list=[loss.name, value.name])
        outputs = {"loss": bits, "value": value_out}
        if name == "flow":
            sampler, z, x = sampling_program()
            programs["inverse"] = sampler
            noise = RNG.normal(size=(SAMPLES, DIM)).astype(np.float32)
            outputs["z"], outputs["samples"] = exe.run(sampler, feed={"noise": noise}, fetch_list=[z.name, x.name])
            np.savez(folder / "noise.npz", noise=noise)
    np.savez(folder / "outputs.npz", **outputs)
    np.savez(folder / "data.npz", **arrays)
    write_programs_gz(folder, programs)
    meta = {"loss": loss.name, "value": value.name, "losses": losses}
    if name == "flow":
        meta.update(z=z.name, samples=x.name)
    return meta


def unit_lower_corners(out: Path, exe) -> None:
    """float64 corners of triangular_solve with a unit lower triangle (an LU flow's L solved without forming it):
    loss sum(w * solve(a, b)) and Paddle's gradients of a and b, plain and transposed; corner_NAME.pb and
    corners.npz (NAME_a, NAME_b, NAME_w, NAME_a@GRAD, ...)."""
    results = {}
    for name, transpose in (("unit_lower", False), ("unit_lower_t", True)):
        feeds = {"a": RNG.normal(size=(DIM, DIM)), "b": RNG.normal(size=(DIM, 2))}
        forward, _, numbers = weighted_corner(exe, feeds, lambda i, t=transpose: paddle.linalg.triangular_solve(
            i["a"], i["b"], upper=False, transpose=t, unitriangular=True), lambda size: RNG.normal(size=size))
        results.update({f"{name}_{key}": value for key, value in numbers.items() if key != "value"})
        write_gz(out / f"corner_{name}.pb", without_callstacks(forward))
    np.savez(out / "corners.npz", **results)


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    out.mkdir(parents=True, exist_ok=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {name: train_model(out, name, exe) for name in MODELS}
    unit_lower_corners(out, exe)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    import sys
    main(Path(sys.argv[1]))

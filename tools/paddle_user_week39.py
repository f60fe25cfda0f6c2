"""The neural-fields researcher's programs of docs/tools.md's 'A neural-fields researcher's week', written with Paddle
3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0):

- nerf: a tiny NeRF over rays of a coloured ball: 8 stratified depths a ray (fed, sorted), points and view directions
  positionally encoded (sin / cos of 2^k-scaled coordinates, concatenated with the input), a Linear MLP giving density
  (softplus) and colour (sigmoid), volume rendering (deltas from the depths, alpha = 1 - exp(-sigma * delta), the
  transmittance by an exclusive paddle.cumprod, weights, the rendered colour, depth and opacity), a photometric mse;
  Adam under ExponentialDecay(0.01, 0.9), 6 steps of 16 rays.
- fine: the same coarse pass plus hierarchical sampling: the weights' pdf and its CDF (cumsum), paddle.searchsorted of
  fixed uniform u, the bin edges by take_along_axis, the new depths by stop_gradient, sorted with the coarse ones, and a
  second MLP rendering them; loss = coarse mse + fine mse. Same optimizer and steps.
- sdf_<act>: an implicit signed distance field of a sphere of radius 0.5 (act: sine, SIREN's init: U(-1/in, 1/in)
  first layer, U(-sqrt(6/in)/30, ...) after, omega 30; softplus (beta 10); tanh): loss = mse(f(x), |x| - 0.5) +
  0.1 * mean((|grad_x f| - 1)^2), grad_x f from paddle.static.gradients inside the program, minimized by Adam(1e-3):
  second-order gradients; 5 steps of 32 points.
- cumprod.pb: float64 sum(w * cumprod(x, dim 1)) with x fed, and paddle.static.gradients of x; cumprod.npz: feeds with
  zeros (one, two in a row) and Paddle's x@GRAD.
- double_<act>.pb: float64 sum(v * grad_x sum(w * act(x))) (x, w, v fed; act softplus beta 10, elu 0.7, celu -0.5,
  pow 2.5, tanh, sin(30 x), sigmoid), _paddle.pb with Paddle's gradients of it to x and w (its second-derivative ops);
  double.npz: the feeds and Paddle's gradients.
The PIR half (tools/paddle_user_week39_pir.py, run by this script in a second interpreter):
- nerf_pir.json / .pdiparams: a NeRF renderer in dygraph (a second interpreter, PIR mode), saved by
  paddle.jit.save and run by the Predictor on 16 rays, with its IR passes and without (plain_*), and the dygraph
  outputs (dygraph_*) (predictor_pir.npz).
- pir/<act>_train.json, _startup.json, _init.npz, losses.json: the SDFs built again in PIR static mode, Paddle's
  own minimize() programs (pd_op.sin_double_grad, softplus_double_grad, tanh_double_grad), 5 steps' losses;
  pir/double_<act>.json (cos and log too) and double.npz: the double_<act> programs in PIR (save_inference_model,
  the gradients to x and w fetched) and Paddle's values of them.

Each model: forward.pb (main.clone() before minimize), train.pb (Paddle's own, after minimize), startup.pb, init.npz,
data.npz, trained.npz, the losses in meta.json.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week39.py tests/data/paddle/user_week39
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import legacy_persistables, pir_half, run_steps, script_main, without_callstacks, write_gz

RAYS, SAMPLES, FINE, FREQS, HIDDEN, STEPS = 16, 8, 8, 3, 16, 6
POINTS, SDF_STEPS = 32, 5
RNG = np.random.default_rng(39)


def rays(count: int) -> dict:
    """Rays from a circle of cameras at radius 2 towards a ball of radius 0.6, its colour a function of the hit point;
    stratified depths in [1, 3]; the target the ball's colour (or black past it)."""
    angle = RNG.uniform(0, 2 * np.pi, count)
    origins = np.stack([2 * np.cos(angle), 2 * np.sin(angle), RNG.uniform(-0.3, 0.3, count)], 1)
    aim = RNG.uniform(-0.5, 0.5, (count, 3))
    directions = aim - origins
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    edges = np.linspace(1.0, 3.0, SAMPLES + 1)
    depths = edges[:-1] + RNG.uniform(0, 1, (count, SAMPLES)) * (edges[1] - edges[0])
    closest = -(origins * directions).sum(1)
    miss = np.linalg.norm(origins + closest[:, None] * directions, axis=1)
    hit = origins + (closest - np.sqrt(np.clip(0.36 - miss ** 2, 0, None)))[:, None] * directions
    target = np.where((miss < 0.6)[:, None], 0.5 + 0.5 * hit / 0.6, 0.0)
    return {"rays_o": origins.astype(np.float32), "rays_d": directions.astype(np.float32),
            "depths": depths.astype(np.float32), "target": target.astype(np.float32)}


def encode(x, freqs: int):
    scaled = [x * (2.0 ** k) for k in range(freqs)]
    return paddle.concat([x] + [paddle.sin(s) for s in scaled] + [paddle.cos(s) for s in scaled], axis=-1)


class Field(nn.Layer):
    """Density from the encoded point, colour from the features and the encoded view direction."""

    def __init__(self):
        super().__init__()
        width = 3 * (1 + 2 * FREQS)
        self.trunk = nn.Sequential(nn.Linear(width, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU())
        self.density = nn.Linear(HIDDEN, 1)
        self.colour = nn.Sequential(nn.Linear(HIDDEN + width, HIDDEN // 2), nn.ReLU(), nn.Linear(HIDDEN // 2, 3))

    def forward(self, points, views):
        features = self.trunk(encode(points, FREQS))
        sigma = F.softplus(self.density(features)).squeeze(-1)
        rgb = F.sigmoid(self.colour(paddle.concat([features, encode(views, FREQS)], -1)))
        return sigma, rgb


def render(field, rays_o, rays_d, depths):
    """Volume rendering: colour, depth, opacity and the weights."""
    points = rays_o.unsqueeze(1) + rays_d.unsqueeze(1) * depths.unsqueeze(-1)
    views = paddle.expand_as(rays_d.unsqueeze(1), points)
    sigma, rgb = field(points, views)
    deltas = paddle.concat([depths[:, 1:] - depths[:, :-1], paddle.full_like(depths[:, :1], 1e10)], -1)
    alpha = 1.0 - paddle.exp(-sigma * deltas)
    kept = paddle.cumprod(1.0 - alpha + 1e-10, dim=-1)
    transmittance = paddle.concat([paddle.ones_like(kept[:, :1]), kept[:, :-1]], -1)
    weights = alpha * transmittance
    colour = paddle.sum(weights.unsqueeze(-1) * rgb, axis=1)
    return colour, paddle.sum(weights * depths, axis=1), paddle.sum(weights, axis=1), weights


def fine_depths(depths, weights):
    """Hierarchical sampling: FINE depths from the coarse weights' CDF at fixed u, no gradient through them."""
    middles = 0.5 * (depths[:, 1:] + depths[:, :-1])
    pdf = weights[:, 1:-1] + 1e-5
    pdf = pdf / paddle.sum(pdf, axis=-1, keepdim=True)
    cdf = paddle.concat([paddle.zeros_like(pdf[:, :1]), paddle.cumsum(pdf, axis=-1)], -1)
    u = paddle.expand(paddle.linspace(0.0, 1.0, FINE).unsqueeze(0), [paddle.shape(cdf)[0], FINE])
    above = paddle.clip(paddle.searchsorted(cdf, u, right=True), 1, SAMPLES - 2)
    below = above - 1
    cdf_low, cdf_high = paddle.take_along_axis(cdf, below, 1), paddle.take_along_axis(cdf, above, 1)
    bin_low, bin_high = paddle.take_along_axis(middles, below, 1), paddle.take_along_axis(middles, above, 1)
    span = cdf_high - cdf_low
    span = paddle.where(span < 1e-5, paddle.ones_like(span), span)
    samples = bin_low + (u - cdf_low) / span * (bin_high - bin_low)
    samples.stop_gradient = True
    return paddle.sort(paddle.concat([depths, samples], -1), axis=-1)


def nerf_program(fine: bool):
    rays_o = paddle.static.data("rays_o", [-1, 3], "float32")
    rays_d = paddle.static.data("rays_d", [-1, 3], "float32")
    depths = paddle.static.data("depths", [-1, SAMPLES], "float32")
    target = paddle.static.data("target", [-1, 3], "float32")
    coarse = Field()
    colour, depth, opacity, weights = render(coarse, rays_o, rays_d, depths)
    loss = F.mse_loss(colour, target)
    names = {"colour": colour.name, "depth": depth.name, "opacity": opacity.name, "weights": weights.name}
    if fine:
        colour_fine, _, _, _ = render(Field(), rays_o, rays_d, fine_depths(depths, weights))
        loss = loss + F.mse_loss(colour_fine, target)
        names["colour_fine"] = colour_fine.name
    return loss, names


class Sine(nn.Layer):
    def forward(self, x):
        return paddle.sin(30.0 * x)


def sdf_program(activation: str, names: bool = True):
    points = paddle.static.data("points", [-1, 3], "float32")
    points.stop_gradient = False
    if activation == "sine":
        layers, width_in = [], 3
        for index, width in enumerate([HIDDEN, HIDDEN]):
            bound = 1 / width_in if index == 0 else np.sqrt(6 / width_in) / 30
            layers += [nn.Linear(width_in, width, weight_attr=nn.initializer.Uniform(-bound, bound)), Sine()]
            width_in = width
        last = np.sqrt(6 / width_in) / 30
        layers.append(nn.Linear(width_in, 1, weight_attr=nn.initializer.Uniform(-last, last)))
    else:
        act = {"softplus": lambda: nn.Softplus(beta=10), "tanh": nn.Tanh}[activation]
        layers = [nn.Linear(3, HIDDEN), act(), nn.Linear(HIDDEN, HIDDEN), act(), nn.Linear(HIDDEN, 1)]
    sdf = nn.Sequential(*layers)(points)
    (grad,) = paddle.static.gradients(sdf, points)
    eikonal = paddle.mean(paddle.square(paddle.linalg.norm(grad, axis=-1) - 1.0))
    truth = paddle.linalg.norm(points, axis=-1, keepdim=True) - 0.5
    loss = F.mse_loss(sdf, truth) + 0.1 * eikonal
    return (loss, {"sdf": sdf.name, "eikonal": eikonal.name, "grad": grad.name}) if names else loss


def train_model(out: Path, name: str, build, data: dict, batch: int, steps: int, optimizer, exe) -> dict:
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 39
    with paddle.static.program_guard(main, startup):
        loss, names = build()
        forward = main.clone()
        chosen = optimizer()
        chosen.minimize(loss)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(folder / "init.npz", **legacy_persistables(forward, scope))
        losses = run_steps(exe, main, loss, data, steps, batch, chosen)
        trained = legacy_persistables(forward, scope)
        np.savez(folder / "trained.npz", **trained)
        first = {k: v[:batch] for k, v in data.items()}
        outputs = exe.run(forward, feed=first, fetch_list=list(names.values()))
    np.savez(folder / "outputs.npz", **dict(zip(names, outputs)))
    np.savez_compressed(folder / "data.npz", **data)
    for program_name, program in [("forward", forward), ("train", main), ("startup", startup)]:
        write_gz(folder / f"{program_name}.pb", without_callstacks(program))
    return {**names, "loss": loss.name, "losses": losses}


def cumprod_program(out: Path, exe) -> dict:
    """float64 sum(w * cumprod(x, 1)) with Paddle's gradient of x, at x with zeros."""
    x = RNG.uniform(0.5, 1.5, (4, 5)) * RNG.choice([-1, 1], (4, 5))
    x[0, 2] = 0.0
    x[1, 1:3] = 0.0
    x[2, 0] = 0.0
    x[3, 4] = 0.0
    weight = RNG.normal(size=(4, 5))
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        xv = paddle.static.data("x", [4, 5], "float64")
        xv.stop_gradient = False
        loss = paddle.sum(paddle.cumprod(xv, dim=1) * paddle.assign(weight))
        forward = main.clone()
        (grad,) = paddle.static.gradients(loss, xv)
    (value,) = exe.run(main, feed={"x": x}, fetch_list=[grad])
    write_gz(out / "cumprod.pb", without_callstacks(main))
    write_gz(out / "cumprod_forward.pb", without_callstacks(forward))
    np.savez(out / "cumprod.npz", x=x, grad=value)
    return {"cumprod_loss": loss.name}


DOUBLE = {"softplus": lambda x: F.softplus(x, beta=10), "elu": lambda x: F.elu(x, 0.7),
          "celu": lambda x: F.celu(x, -0.5), "pow": lambda x: paddle.pow(x, 2.5), "tanh": nn.Tanh(),
          "sin": lambda x: paddle.sin(30.0 * x), "sigmoid": nn.Sigmoid()}


def double_grad_programs(out: Path, exe) -> None:
    """float64 sum(v * grad_x sum(w * act(x))) and Paddle's gradients of it to x and w: its second-derivative ops."""
    x = RNG.uniform(0.3, 1.5, (3, 4)) * RNG.choice([-1, 1], (3, 4))
    w, v = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    results = {"x": x, "w": w, "v": v}
    for name, act in DOUBLE.items():
        main = paddle.static.Program()
        feed = {"x": np.abs(x) if name == "pow" else x, "w": w, "v": v}
        with paddle.static.program_guard(main, paddle.static.Program()):
            xv, wv, vv = (paddle.static.data(n, [3, 4], "float64") for n in ("x", "w", "v"))
            xv.stop_gradient = wv.stop_gradient = False
            (grad,) = paddle.static.gradients(paddle.sum(act(xv) * wv), xv)
            loss = paddle.sum(grad * vv)
            forward = main.clone()
            grads = paddle.static.gradients(loss, [xv, wv])
        results[f"{name}_x"], results[f"{name}_w"], results[f"{name}_loss"] = exe.run(
            main, feed=feed, fetch_list=[*grads, loss])
        write_gz(out / f"double_{name}.pb", without_callstacks(forward))
        write_gz(out / f"double_{name}_paddle.pb", without_callstacks(main))
    np.savez(out / "double.npz", **results)


def sphere_points(count: int) -> dict:
    return {"points": RNG.uniform(-1, 1, (count, 3)).astype(np.float32)}


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())

    def adam_decay():
        return paddle.optimizer.Adam(paddle.optimizer.lr.ExponentialDecay(0.01, 0.9))

    meta = {}
    data = rays(RAYS * STEPS)
    for name, fine in [("nerf", False), ("fine", True)]:
        meta[name] = train_model(out, name, lambda f=fine: nerf_program(f), data, RAYS, STEPS, adam_decay, exe)
    for activation in ("sine", "softplus", "tanh"):
        meta[f"sdf_{activation}"] = train_model(
            out, f"sdf_{activation}", lambda a=activation: sdf_program(a), sphere_points(POINTS * SDF_STEPS), POINTS,
            SDF_STEPS, lambda: paddle.optimizer.Adam(1e-3), exe)
    meta.update(cumprod_program(out, exe))
    double_grad_programs(out, exe)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


if __name__ == "__main__":
    from paddle_user_week39_pir import main_pir  # its half imports this module's layers

    script_main(main, main_pir)

"""Paddle 3.3.1's legacy conv second-derivative ops (conv2d_grad_grad, depthwise_conv2d_grad_grad, conv3d_grad_grad,
conv2d_transpose_grad_grad), written by paddle.static.gradients of a gradient in legacy static mode
(FLAGS_enable_pir_api=0). Paddle's CPU build has no depthwise_conv2d or conv2d_transpose double-grad kernel (it cannot
even infer those ops' shapes), so they have no fixture here, and the critic's grouped conv is not depthwise:

- conv_<op>.pb: float64 sum(v * grad_x sum(w * tanh(conv(x, f)))) with x, f, w, v fed (the filter fed, so the
  gradient reaches it), _paddle.pb with Paddle's gradients of it to x and f (its <op>_grad_grad); conv.npz: the
  feeds and Paddle's gradients and loss.
- wgan/: a WGAN-GP critic (Conv2D stride 2, tanh, a grouped Conv2D, tanh, reshape, Linear) on 1x8x8 images whose
  gradient penalty 10 mean((|grad_interp critic| - 1)^2) goes through paddle.static.gradients, minimized by Adam(1e-3):
  Paddle's own training program (train.pb, startup.pb), init.npz, data.npz, its 4 losses in meta.json.
- pir/conv_<op>.json: the conv_<op>_paddle programs built again in PIR static mode (pd_op.conv2d_grad_grad,
  conv3d_double_grad), saved by save_inference_model with the gradients to x and f fetched; pir/conv.npz: Paddle's
  values of them (this script's second interpreter, ``OUT --pir``).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_conv_double_grad.py \
        tests/data/paddle/double_grad_ops
"""

import json
import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import pir_half, script_main, without_callstacks, write_gz

RNG = np.random.default_rng(46)
BATCH, STEPS = 4, 4


# op -> (x shape, filter shape, the conv of x and f)
CONVS = {"conv2d": ((2, 2, 5, 5), (3, 2, 3, 3), lambda x, f: F.conv2d(x, f, stride=2, padding=1)),
         "grouped_conv2d": ((2, 4, 5, 5), (4, 2, 3, 3), lambda x, f: F.conv2d(x, f, padding=1, groups=2)),
         "conv3d": ((2, 2, 4, 4, 4), (3, 2, 2, 3, 2), lambda x, f: F.conv3d(x, f, padding=[1, 1, 0], dilation=2))}


def conv_program(name: str, feed: dict | None = None):
    """(program, its forward clone, feeds, [x, f, w, v], [gradients to x and f], loss); feeds drawn unless given."""
    x_shape, f_shape, conv = CONVS[name]
    feed = feed or {"x": RNG.normal(size=x_shape), "f": RNG.normal(size=f_shape) * 0.5}
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        xv = paddle.static.data("x", x_shape, "float64")
        fv = paddle.static.data("f", f_shape, "float64")
        xv.stop_gradient = fv.stop_gradient = False
        y = conv(xv, fv)
        feed.setdefault("w", RNG.normal(size=y.shape))
        wv = paddle.static.data("w", y.shape, "float64")
        vv = paddle.static.data("v", x_shape, "float64")
        feed.setdefault("v", RNG.normal(size=x_shape))
        (grad,) = paddle.static.gradients(paddle.sum(paddle.tanh(y) * wv), xv)
        loss = paddle.sum(grad * vv)
        forward = main.clone()
        grads = paddle.static.gradients(loss, [xv, fv])
    return main, forward, feed, [xv, fv, wv, vv], grads, loss


def conv_programs(out: Path, exe) -> None:
    results = {}
    for name in CONVS:
        main, forward, feed, _, grads, loss = conv_program(name)
        types = [op.type for op in main.global_block().ops]
        assert f"{name.removeprefix('grouped_')}_grad_grad" in types, types
        results[f"{name}_x"], results[f"{name}_f"], results[f"{name}_loss"] = exe.run(
            main, feed=feed, fetch_list=[*grads, loss])
        results.update({f"{name}_feed_{k}": v for k, v in feed.items()})
        write_gz(out / f"conv_{name}.pb", without_callstacks(forward))
        write_gz(out / f"conv_{name}_paddle.pb", without_callstacks(main))
    np.savez(out / "conv.npz", **results)


class Critic(nn.Layer):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2D(1, 4, 3, stride=2, padding=1), nn.Tanh(),
                                  nn.Conv2D(4, 8, 3, padding=1, groups=2), nn.Tanh())
        self.score = nn.Linear(8 * 4 * 4, 1)

    def forward(self, x):   # reshape: flatten's grad has no double-grad maker in Paddle
        return self.score(paddle.reshape(self.body(x), [-1, 8 * 4 * 4]))


def wgan(out: Path, exe) -> None:
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 46
    with paddle.static.program_guard(main, startup):
        real = paddle.static.data("real", [-1, 1, 8, 8], "float32")
        fake = paddle.static.data("fake", [-1, 1, 8, 8], "float32")
        eps = paddle.static.data("eps", [-1, 1, 1, 1], "float32")
        critic = Critic()
        interp = eps * real + (1.0 - eps) * fake
        interp.stop_gradient = False
        (grad,) = paddle.static.gradients(paddle.sum(critic(interp)), interp)
        norm = paddle.sqrt(paddle.sum(paddle.square(grad), axis=[1, 2, 3]) + 1e-12)
        penalty = paddle.mean(paddle.square(norm - 1.0))
        loss = paddle.mean(critic(fake)) - paddle.mean(critic(real)) + 10.0 * penalty
        paddle.optimizer.Adam(1e-3).minimize(loss)
    types = [op.type for op in main.global_block().ops]
    folder = out / "wgan"
    folder.mkdir(parents=True, exist_ok=True)
    data = {"real": RNG.normal(0.5, 0.3, (BATCH * STEPS, 1, 8, 8)).astype(np.float32),
            "fake": RNG.normal(0.0, 0.3, (BATCH * STEPS, 1, 8, 8)).astype(np.float32),
            "eps": RNG.uniform(0, 1, (BATCH * STEPS, 1, 1, 1)).astype(np.float32)}
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        persistable = [v.name for v in main.list_vars() if v.persistable and v.name not in ("feed", "fetch")
                       and scope.find_var(v.name) is not None]
        np.savez(folder / "init.npz", **{n: np.array(scope.var(n).get_tensor()) for n in persistable})
        losses = [float(exe.run(main, feed={k: v[s * BATCH:(s + 1) * BATCH] for k, v in data.items()},
                                fetch_list=[loss.name])[0]) for s in range(STEPS)]
    np.savez_compressed(folder / "data.npz", **data)
    for program_name, program in [("train", main), ("startup", startup)]:
        write_gz(folder / f"{program_name}.pb", without_callstacks(program))
    meta = {"loss": loss.name, "losses": losses, "double_grad_ops": sorted({t for t in types if "grad_grad" in t})}
    (folder / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    out.mkdir(parents=True, exist_ok=True)
    conv_programs(out, exe)
    wgan(out, exe)
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    paddles = np.load(out / "conv.npz")
    (out / "pir").mkdir(exist_ok=True)
    results = {}
    for name in ("conv2d", "conv3d"):
        main, _, feed, inputs, grads, _ = conv_program(name, {v: paddles[f"{name}_feed_{v}"] for v in "xfwv"})
        results[f"{name}_x"], results[f"{name}_f"] = exe.run(main, feed=feed, fetch_list=grads)
        with tempfile.TemporaryDirectory() as tmp:
            paddle.static.save_inference_model(f"{tmp}/m", inputs, grads, exe, program=main)
            write_gz(out / "pir" / f"conv_{name}.json", Path(f"{tmp}/m.json").read_bytes())
    np.savez(out / "pir" / "conv.npz", **results)


if __name__ == "__main__":
    script_main(main, main_pir)

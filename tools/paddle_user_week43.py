"""The image-restoration / super-resolution engineer's programs of docs/tools.md's 'A super-resolution engineer's
week', written with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), 3-channel images:

- sr: an EDSR-like x2 net (a head Conv2D, two residual blocks of Conv2D-ReLU-Conv2D without BN, a Conv2D to 12
  channels, nn.PixelShuffle(2)) plus a bicubic-upsampled global skip (F.interpolate scale_factor=2, bicubic,
  align_corners False), on 8x8 inputs; loss = L1 + Charbonnier (sqrt(d^2 + 1e-6)) + 0.05 * a perceptual MSE through a
  frozen Conv2D-ReLU feature net (trainable=False); PSNR fetched; Adam under MultiStepDecay(0.01, [2, 4], 0.5),
  6 steps of 2 (the schedule stepped each step, as static mode needs).
- sr_nhwc: the same net channels-last (data_format NHWC for Conv2D, PixelShuffle) on odd 7x9 inputs, its skip
  F.interpolate by size [14, 18], bilinear, align_corners True; loss L1; same optimizer; and again from the same
  initial weights for 3 epochs with the MultiStepDecay stepped after each epoch (epoch_losses in meta.json).
- dncnn: a DnCNN-like denoiser (Conv2D padding_mode 'reflect', BatchNorm, ReLU; the noise predicted and subtracted:
  residual learning) on 12x12 noisy images; loss = (1 - SSIM) + 0.01 * total variation; SSIM with an 11-tap Gaussian
  window (sigma 1.5) by F.conv2d groups=3 over F.pad 'replicate'; PSNR and SSIM fetched; Adam(0.005), 6 steps of 2.
- baseline: F.interpolate of the low-resolution set, bilinear, bicubic and nearest (scale_factor 2), and its PSNR
  to the target (no parameters): baseline.pb, baseline.npz.

Each model: forward.pb (main.clone() before minimize), train.pb (Paddle's own), startup.pb, init.npz, data.npz (12
examples), trained.npz, outputs.npz (the first batch's outputs on the trained weights), the losses in meta.json, and
eval: Paddle's loss, PSNR and SSIM over the set in one run (batch 12) on the trained weights.
- resize.pb, bicubic.pb: the resizes of resizes() below.
The PIR half (tools/paddle_user_week43_pir.py): sr_pir.json(.gz), the sr net in dygraph saved by
paddle.jit.save with H, W dynamic, run by the Predictor on 11x13 inputs (predictor.npz); resize_pir.json(.gz), a
float64 bilinear resize by scale [1.3, 1.7] (align_mode 1) and its gradient, and an antialiased one by [0.7, 0.29],
saved by save_inference_model, with Paddle's values (resize_pir.npz).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week43.py tests/data/paddle/user_week43
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import (
    legacy_persistables,
    pir_half,
    run_steps,
    script_main,
    without_callstacks,
    write_gz,
    write_programs_gz,
)

BATCH, STEPS, SET = 2, 6, 12
RNG = np.random.default_rng(43)
SCHEDULE = dict(learning_rate=0.01, milestones=[2, 4], gamma=0.5)


def images(count: int, height: int, width: int) -> np.ndarray:
    """Smooth random 8-bit images scaled to [0, 1] (a few sinusoids a channel), NCHW float32."""
    y, x = np.mgrid[0:height, 0:width] / max(height, width)
    out = np.zeros((count, 3, height, width))
    for _ in range(3):
        fy, fx, phase = RNG.uniform(1, 4, (3, count, 3, 1, 1))
        out += np.sin(2 * np.pi * (fy * y + fx * x) + 6 * phase)
    return (np.round(255 * (0.5 + out / 6)) / 255).astype(np.float32)


def downsample(hr: np.ndarray) -> np.ndarray:
    return (hr[:, :, ::2, ::2] + hr[:, :, 1::2, ::2] + hr[:, :, ::2, 1::2] + hr[:, :, 1::2, 1::2]) / 4


class EDSR(nn.Layer):
    """Head conv, residual blocks without BN, a conv to 4x the channels, a sub-pixel x2 upsampler, a resized skip."""

    def __init__(self, layout="NCHW", features=8, blocks=2, skip=None):
        super().__init__()
        conv = lambda i, o: nn.Conv2D(i, o, 3, padding=1, data_format=layout)  # noqa: E731
        self.head = conv(3, features)
        self.blocks = nn.LayerList([nn.Sequential(conv(features, features), nn.ReLU(), conv(features, features))
                                    for _ in range(blocks)])
        self.tail = conv(features, 12)
        self.shuffle = nn.PixelShuffle(2, data_format=layout)
        self.skip, self.layout = skip, layout

    def forward(self, lr):
        body = self.head(lr)
        for block in self.blocks:
            body = body + block(body)
        return self.shuffle(self.tail(body)) + self.skip(lr)


def psnr(out, target):
    return 10.0 * paddle.log10(1.0 / F.mse_loss(paddle.clip(out, 0.0, 1.0), target))


def charbonnier(out, target):
    return paddle.mean(paddle.sqrt(paddle.square(out - target) + 1e-6))


def features(image):
    """A frozen feature net: Conv2D-ReLU-Conv2D (its parameters trainable=False)."""
    frozen = paddle.ParamAttr(trainable=False, name=None)
    net = nn.Sequential(nn.Conv2D(3, 4, 3, padding=1, weight_attr=frozen, bias_attr=False), nn.ReLU(),
                        nn.Conv2D(4, 4, 3, padding=1, weight_attr=paddle.ParamAttr(trainable=False),
                                  bias_attr=False))
    return net, net(image)


def sr_program():
    lr = paddle.static.data("lr", [-1, 3, -1, -1], "float32")
    hr = paddle.static.data("hr", [-1, 3, -1, -1], "float32")
    bicubic = lambda x: F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False)  # noqa: E731
    out = EDSR(skip=bicubic)(lr)
    net, target_features = features(hr)
    perceptual = F.mse_loss(net(out), target_features)
    loss = F.l1_loss(out, hr) + charbonnier(out, hr) + 0.05 * perceptual
    return loss, {"sr": out.name, "psnr": psnr(out, hr).name}


def sr_nhwc_program():
    lr = paddle.static.data("lr", [-1, 7, 9, 3], "float32")
    hr = paddle.static.data("hr", [-1, 14, 18, 3], "float32")
    bilinear = lambda x: F.interpolate(x, size=[14, 18], mode="bilinear", align_corners=True,  # noqa: E731
                                       data_format="NHWC")
    out = EDSR("NHWC", skip=bilinear)(lr)
    loss = F.l1_loss(out, hr)
    return loss, {"sr": out.name, "psnr": psnr(out, hr).name}


def gaussian_window(size=11, sigma=1.5) -> np.ndarray:
    taps = np.exp(-((np.arange(size) - size // 2) ** 2) / (2 * sigma ** 2))
    taps /= taps.sum()
    return np.tile(np.outer(taps, taps)[None, None], (3, 1, 1, 1)).astype(np.float32)


def ssim(a, b):
    """The mean SSIM of images in [0, 1]: local means, variances and covariance by an 11x11 Gaussian window applied
    per channel (conv2d groups=3) over a replicate-padded image."""
    window = paddle.assign(gaussian_window())
    blur = lambda x: F.conv2d(F.pad(x, [5, 5, 5, 5], mode="replicate"), window, groups=3)  # noqa: E731
    mu_a, mu_b = blur(a), blur(b)
    var_a = blur(a * a) - mu_a * mu_a
    var_b = blur(b * b) - mu_b * mu_b
    cov = blur(a * b) - mu_a * mu_b
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    return paddle.mean((2 * mu_a * mu_b + c1) * (2 * cov + c2)
                       / ((mu_a * mu_a + mu_b * mu_b + c1) * (var_a + var_b + c2)))


def total_variation(x):
    return paddle.mean(paddle.abs(x[:, :, 1:, :] - x[:, :, :-1, :])) + paddle.mean(paddle.abs(x[:, :, :, 1:] -
                                                                                             x[:, :, :, :-1]))


def dncnn_program():
    noisy = paddle.static.data("noisy", [-1, 3, -1, -1], "float32")
    clean = paddle.static.data("clean", [-1, 3, -1, -1], "float32")
    layers = [nn.Conv2D(3, 8, 3, padding=1, padding_mode="reflect"), nn.ReLU()]
    for _ in range(2):
        layers += [nn.Conv2D(8, 8, 3, padding=1, padding_mode="reflect", bias_attr=False), nn.BatchNorm2D(8),
                   nn.ReLU()]
    layers.append(nn.Conv2D(8, 3, 3, padding=1, padding_mode="reflect"))
    denoised = noisy - nn.Sequential(*layers)(noisy)
    similarity = ssim(denoised, clean)
    loss = (1.0 - similarity) + 0.01 * total_variation(denoised)
    return loss, {"denoised": denoised.name, "psnr": psnr(denoised, clean).name, "ssim": similarity.name}


def by_epochs(main, startup, exe, loss, init: dict, data: dict, epochs: int) -> list:
    """Train from ``init`` for ``epochs`` passes over ``data``, the scheduler (a fresh MultiStepDecay, milestones in
    epochs) stepped after each epoch, as an SR recipe halves the rate every so many epochs: the losses."""
    scheduler = paddle.optimizer.lr.MultiStepDecay(**SCHEDULE)
    scheduler._var_name = main.lr_scheduler._var_name
    main.lr_scheduler = scheduler
    losses, scope = [], paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for name, value in init.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        for _ in range(epochs):
            for step in range(STEPS):
                feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in data.items()}
                losses.append(float(exe.run(main, feed=feed, fetch_list=[loss.name])[0]))
            scheduler.step()
    return losses


def train_model(out: Path, name: str, build, data: dict, optimizer, exe, epochs: int = 0) -> dict:
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 43
    with paddle.static.program_guard(main, startup):
        loss, names = build()
        forward = main.clone(for_test=False)
        chosen = optimizer()
        chosen.minimize(loss)
    test = forward.clone(for_test=True)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(folder / "init.npz", **legacy_persistables(forward, scope))
        losses = run_steps(exe, main, loss, data, STEPS, BATCH, chosen)
        trained = legacy_persistables(forward, scope)
        np.savez(folder / "trained.npz", **trained)
        first = {k: v[:BATCH] for k, v in data.items()}
        outputs = exe.run(test, feed=first, fetch_list=list(names.values()))
        whole = exe.run(test, feed=data, fetch_list=[loss.name, *[names[k] for k in ("psnr", "ssim") if k in names]])
    np.savez_compressed(folder / "outputs.npz", **dict(zip(names, outputs)))
    np.savez_compressed(folder / "data.npz", **data)
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    evaluated = dict(zip(["loss", *[k for k in ("psnr", "ssim") if k in names]], map(float, whole)))
    init = dict(np.load(folder / "init.npz"))
    stepped = {"epoch_losses": by_epochs(main, startup, exe, loss, init, data, epochs)} if epochs else {}
    return {**names, "loss": loss.name, "losses": losses, "eval": evaluated, **stepped}


def baseline(out: Path, data: dict, exe) -> dict:
    """The interpolation baselines' PSNRs on the first batch (and the bicubic output), their PSNRs over the set (no
    parameters)."""
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        lr = paddle.static.data("lr", [-1, 3, -1, -1], "float32")
        hr = paddle.static.data("hr", [-1, 3, -1, -1], "float32")
        names = {}
        for mode in ("bilinear", "bicubic", "nearest"):
            up = F.interpolate(lr, scale_factor=2, mode=mode)
            names[mode], names[f"{mode}_psnr"] = up.name, psnr(up, hr).name
    first = exe.run(main, feed={k: v[:BATCH] for k, v in data.items()}, fetch_list=list(names.values()))
    whole = exe.run(main, feed=data, fetch_list=[names[f"{mode}_psnr"] for mode in ("bilinear", "bicubic", "nearest")])
    write_gz(out / "baseline.pb", without_callstacks(main))
    np.savez_compressed(out / "baseline.npz", **{name: value for name, value in zip(names, first) if name != "bilinear"
                                                 and name != "nearest"})
    return {**names, "eval": dict(zip(("bilinear", "bicubic", "nearest"), map(float, whole)))}


def resizes(out: Path, exe) -> dict:
    """float32 resizes by a scale whose product with the size is just under an integer (10 * float32(0.7) is
    6.99999988: 6 rows), resize.pb / resize.npz; float64 bicubic resizes (align_corners False) to sizes whose ratio
    float32 cannot hold, by size [7, 9] and to a reference's shape (paddle.shape(ref)[2:]), with Paddle's gradient of
    sum(y * sin(3 y)) to x, bicubic.pb / bicubic.npz."""
    rng = np.random.default_rng(43)
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        x = paddle.static.data("x", [1, 3, -1, -1], "float32")
        names = {"bilinear": F.interpolate(x, scale_factor=0.7, mode="bilinear").name,
                 "bicubic": F.interpolate(x, scale_factor=[0.7, 1.3], mode="bicubic").name}
    feed = {"x": rng.uniform(0, 1, (1, 3, 10, 10)).astype(np.float32)}
    values = exe.run(main, feed=feed, fetch_list=list(names.values()))
    write_gz(out / "resize.pb", without_callstacks(main))
    np.savez(out / "resize.npz", **feed, **dict(zip(names, values)))
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        x = paddle.static.data("x", [-1, 3, -1, -1], "float64")
        x.stop_gradient = False
        ref = paddle.static.data("ref", [-1, 3, -1, -1], "float64")
        sized = F.interpolate(x, size=[7, 9], mode="bicubic", align_corners=False)
        shaped = F.interpolate(x, size=paddle.shape(ref)[2:], mode="bicubic", align_corners=False)
        loss = paddle.sum(sized * paddle.sin(3.0 * sized)) + paddle.sum(shaped * paddle.sin(3.0 * shaped))
        forward = main.clone()
        (grad,) = paddle.static.gradients(loss, x)
    feed = {"x": rng.normal(size=(2, 3, 5, 6)), "ref": rng.normal(size=(2, 3, 9, 11))}
    (value,) = exe.run(main, feed=feed, fetch_list=[grad])
    write_gz(out / "bicubic.pb", without_callstacks(forward))
    np.savez(out / "bicubic.npz", **feed, grad=value)
    return {**names, "bicubic_loss": loss.name}


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())

    def adam_steps():
        return paddle.optimizer.Adam(paddle.optimizer.lr.MultiStepDecay(**SCHEDULE))

    hr = images(SET, 16, 16)
    sr_data = {"lr": downsample(hr), "hr": hr}
    odd = images(SET, 14, 18)
    nhwc = {"lr": downsample(odd).transpose(0, 2, 3, 1).copy(), "hr": odd.transpose(0, 2, 3, 1).copy()}
    clean = images(SET, 12, 12)
    noise = {"noisy": (np.round(255 * (clean + RNG.normal(0, 0.1, clean.shape))) / 255).astype(np.float32),
             "clean": clean}
    meta = {"sr": train_model(out, "sr", sr_program, sr_data, adam_steps, exe),
            "sr_nhwc": train_model(out, "sr_nhwc", sr_nhwc_program, nhwc, adam_steps, exe, epochs=3),
            "dncnn": train_model(out, "dncnn", dncnn_program, noise, lambda: paddle.optimizer.Adam(0.005), exe),
            "baseline": baseline(out, sr_data, exe), "schedule": SCHEDULE, "resize": resizes(out, exe)}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


if __name__ == "__main__":
    from paddle_user_week43_pir import main_pir  # its half imports this module's layers

    script_main(main, main_pir)

"""The diffusion-model researcher's programs of docs/tools.md's 'A diffusion-model researcher's week', built by Paddle
3.3.1's static API (legacy mode) and trained by Paddle's executor:

- ddpm: a tiny DDPM denoiser, a U-Net of paddle.nn layers on 3x8x8 images: Conv2D, GroupNorm, SiLU, a stride-2 conv
  down, one self-attention block at 4x4, up by nearest interpolate (then a conv) plus a Conv2DTranspose, a skip by
  concat; a sinusoidal timestep embedding (exp, sin, cos, concat) and a class embedding with a null class (labels
  dropped to it in the data, classifier-free guidance) added through Linear layers. The loss: x_t = sqrt(a_bar[t]) x0
  + sqrt(1 - a_bar[t]) eps computed in the program from the fed timestep by gather on the schedule, MSE of the
  predicted noise against eps. AdamW (weight decay 0.01) with LinearWarmup, then paddle.static.ExponentialMovingAverage
  of the weights; STEPS batches.
- the denoiser after training saved by save_inference_model (x_t, t, label -> eps), and DDIM sampling with guidance: a
  few steps, each two runs of Paddle's Predictor (conditional and null label), the update on the host.

Writes (programs gzipped) ddpm.pb (Paddle's training program), ddpm_forward.pb (before minimize), ddpm_startup.pb,
batches.npz (x0, eps, t, label of every step), first_grads.npz (Paddle's gradients of step 1 of the parameters of
GroupNorm, conv_transpose and the conv after the up-sampling), ddpm_ema.npz (the EMA weights after training, as
ema.apply gives them), sample.npz (the starting noise, the labels, each DDIM step's image from Paddle's Predictor of
the trained denoiser), meta.json (losses, learning rates, names).

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week19.py tests/data/paddle/user_week19
"""

import gzip
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle import nn
from paddle_programs import without_callstacks

RNG = np.random.default_rng(19)
CHANNELS, SIZE, WIDTH, CLASSES, EMBED = 3, 8, 8, 4, 16
TIMESTEPS, STEPS, BATCH, GUIDANCE = 50, 6, 4, 2.0
WARMUP, RATE, EMA_DECAY = 3, 2e-3, 0.9
DDIM_STEPS = (40, 20, 0)
CHECKED = ("group_norm", "conv2d_transpose", "conv2d_4")   # next to GroupNorm, interpolate, conv_transpose


def schedule() -> np.ndarray:
    """a_bar of a linear beta schedule (1e-4 to 0.02) over TIMESTEPS."""
    return np.cumprod(1 - np.linspace(1e-4, 0.02, TIMESTEPS)).astype(np.float32)


def timestep_embedding(t):
    """The sinusoidal embedding of the timestep: [sin(t f), cos(t f)] with f = exp(-log(10000) i / (half - 1))."""
    half = EMBED // 2
    freqs = paddle.exp(paddle.arange(half, dtype="float32") * float(-np.log(10000.0) / (half - 1)))
    angles = paddle.unsqueeze(paddle.cast(t, "float32"), 1) * paddle.unsqueeze(freqs, 0)
    return paddle.concat([paddle.sin(angles), paddle.cos(angles)], axis=1)


class Attention(nn.Layer):
    """Single-head self-attention over the pixels of a [B, C, H, W] map, with a residual."""

    def __init__(self, width):
        super().__init__()
        self.norm, self.qkv, self.out = nn.GroupNorm(4, width), nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.width = width

    def forward(self, x):
        batch, width, height, breadth = x.shape
        tokens = paddle.transpose(paddle.reshape(self.norm(x), [-1, width, height * breadth]), [0, 2, 1])
        q, k, v = paddle.split(self.qkv(tokens), 3, axis=-1)
        weights = F.softmax(paddle.matmul(q, k, transpose_y=True) * float(width ** -0.5), axis=-1)
        out = paddle.transpose(self.out(paddle.matmul(weights, v)), [0, 2, 1])
        return x + paddle.reshape(out, [-1, width, height, breadth])


class UNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.time = nn.Sequential(nn.Linear(EMBED, 2 * WIDTH), nn.Silu(), nn.Linear(2 * WIDTH, WIDTH))
        self.label = nn.Embedding(CLASSES + 1, WIDTH)   # the last class is the null label of guidance
        self.conv_in = nn.Conv2D(CHANNELS, WIDTH, 3, padding=1)
        self.block = nn.Sequential(nn.GroupNorm(4, WIDTH), nn.Silu(), nn.Conv2D(WIDTH, WIDTH, 3, padding=1))
        self.down = nn.Conv2D(WIDTH, 2 * WIDTH, 3, stride=2, padding=1)
        self.mid = nn.Sequential(nn.GroupNorm(4, 2 * WIDTH), nn.Silu())
        self.attention = Attention(2 * WIDTH)
        self.up_conv = nn.Conv2D(2 * WIDTH, WIDTH, 3, padding=1)
        self.up_transpose = nn.Conv2DTranspose(2 * WIDTH, WIDTH, 4, stride=2, padding=1)
        self.head = nn.Sequential(nn.GroupNorm(4, 2 * WIDTH), nn.Silu(), nn.Conv2D(2 * WIDTH, CHANNELS, 3, padding=1))

    def forward(self, x, t, label):
        condition = self.time(timestep_embedding(t)) + self.label(label)
        h = self.conv_in(x) + paddle.reshape(condition, [-1, WIDTH, 1, 1])
        skip = self.block(h)
        low = self.attention(self.mid(self.down(skip)))
        up = self.up_conv(F.interpolate(low, scale_factor=2, mode="nearest")) + self.up_transpose(low)
        return self.head(paddle.concat([up, skip], axis=1))


def ddpm(main, startup):
    with paddle.static.program_guard(main, startup):
        x0 = paddle.static.data("x0", [-1, CHANNELS, SIZE, SIZE], "float32")
        eps = paddle.static.data("eps", [-1, CHANNELS, SIZE, SIZE], "float32")
        t = paddle.static.data("t", [-1], "int64")
        label = paddle.static.data("label", [-1], "int64")
        a_bar = paddle.assign(schedule())
        signal = paddle.reshape(paddle.sqrt(paddle.gather(a_bar, t)), [-1, 1, 1, 1])
        noise = paddle.reshape(paddle.sqrt(1.0 - paddle.gather(a_bar, t)), [-1, 1, 1, 1])
        x_t = signal * x0 + noise * eps
        unet = UNet()
        pred = unet(x_t, t, label)
        loss = F.mse_loss(pred, eps)
        forward = main.clone()
        scheduler = paddle.optimizer.lr.LinearWarmup(RATE, WARMUP, RATE / 10, RATE)
        paddle.optimizer.AdamW(scheduler, weight_decay=0.01).minimize(loss)
        ema = paddle.static.ExponentialMovingAverage(EMA_DECAY)
        ema.update()
    return x_t, t, label, pred, loss, forward, scheduler, ema


def batches() -> dict:
    size = STEPS * BATCH
    labels = RNG.integers(0, CLASSES, size)
    labels[RNG.random(size) < 0.25] = CLASSES   # classifier-free guidance's label dropout
    grid = np.linspace(-1, 1, SIZE, dtype=np.float32)
    frequencies = RNG.uniform(0.5, 2, (size, CHANNELS, 1, 1))   # smooth stripes, an image per frequency
    images = np.sin(np.pi * (grid[None, None, :, None] * frequencies + grid[None, None, None, :]))
    return {"x0": images.astype(np.float32),
            "eps": RNG.standard_normal((size, CHANNELS, SIZE, SIZE)).astype(np.float32),
            "t": RNG.integers(0, TIMESTEPS, size).astype(np.int64), "label": labels.astype(np.int64)}


def predict(model: str, params: str, feed: list) -> np.ndarray:
    """Runs the saved model on feed, given in the order of its inputs."""
    predictor = paddle.inference.create_predictor(paddle.inference.Config(model, params))
    for name, value in zip(predictor.get_input_names(), feed):
        predictor.get_input_handle(name).copy_from_cpu(value)
    predictor.run()
    return predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()


def ddim_step(x, eps, t, t_next, a_bar):
    """The deterministic DDIM update from t to t_next (t_next < 0: the clean image)."""
    x0 = (x - np.sqrt(1 - a_bar[t]) * eps) / np.sqrt(a_bar[t])
    if t_next < 0:
        return x0
    return np.sqrt(a_bar[t_next]) * x0 + np.sqrt(1 - a_bar[t_next]) * eps


def sample(model: str, params: str, noise: np.ndarray, label: np.ndarray) -> list[np.ndarray]:
    """DDIM with classifier-free guidance: eps = eps(null) + GUIDANCE (eps(label) - eps(null)), two Predictor runs."""
    a_bar, x, images = schedule(), noise, []
    null = np.full_like(label, CLASSES)
    for t, t_next in zip(DDIM_STEPS, DDIM_STEPS[1:] + (-1,)):
        steps = np.full(len(x), t, np.int64)
        cond, uncond = (predict(model, params, [x, steps, which]) for which in (label, null))
        x = ddim_step(x, uncond + GUIDANCE * (cond - uncond), t, t_next, a_bar).astype(np.float32)
        images.append(x)
    return images


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    paddle_legacy_shim.install()   # the C-only APIs (paddle.exp, sin, ...) build only PIR ops in 3.3.1
    paddle.enable_static()
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    main_program, startup = paddle.static.Program(), paddle.static.Program()
    main_program.random_seed = startup.random_seed = 19
    x_t, t, label, pred, loss, forward, scheduler, ema = ddpm(main_program, startup)
    exe.run(startup)
    params = [p.name for p in main_program.global_block().all_parameters()]
    data = batches()
    np.savez_compressed(out / "batches.npz", **data)
    losses, rates = [], []
    for step in range(STEPS):
        feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in data.items()}
        rates.append(scheduler())
        fetched = exe.run(main_program, feed=feed, fetch_list=[loss] + ([f"{name}@GRAD" for name in params]
                                                                        if step == 0 else []))
        losses.append(float(fetched[0]))
        if step == 0:
            np.savez_compressed(out / "first_grads.npz", **{name: grad for name, grad in zip(params, fetched[1:])
                                                            if name.startswith(CHECKED)})
        scheduler.step()
    with ema.apply(exe):
        np.savez_compressed(out / "ddpm_ema.npz", **{name: np.array(scope.find_var(name).get_tensor())
                                                     for name in params})
    for name, program in (("ddpm", main_program), ("ddpm_forward", forward), ("ddpm_startup", startup)):
        (out / f"{name}.pb.gz").write_bytes(gzip.compress(without_callstacks(program), mtime=0))
    noise = RNG.standard_normal((2, CHANNELS, SIZE, SIZE)).astype(np.float32)
    wanted = np.array([1, 3], np.int64)
    with tempfile.TemporaryDirectory() as saved:
        test = main_program.clone(for_test=True)
        block = test.global_block()
        paddle.static.save_inference_model(f"{saved}/denoiser", [block.var(x_t.name), block.var("t"),
                                                                 block.var("label")],
                                           [block.var(pred.name)], exe, program=test)
        images = sample(f"{saved}/denoiser.pdmodel", f"{saved}/denoiser.pdiparams", noise, wanted)
    np.savez_compressed(out / "sample.npz", noise=noise, label=wanted, **{f"step{i}": x for i, x in enumerate(images)})
    meta = {"loss": loss.name, "x_t": x_t.name, "pred": pred.name, "losses": losses, "rates": rates,
            "a_bar": schedule().tolist(), "ddim_steps": list(DDIM_STEPS), "guidance": GUIDANCE, "null": CLASSES}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""The pose-estimation engineer's programs of docs/tools.md's 'A pose-estimation engineer's week', written with Paddle
3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), on 32x32 grey images of 4 keypoints (two left/right
pairs) drawn as bright blobs, targets Gaussian heatmaps 8x8 (sigma 1) and a visibility weight a keypoint (0 for one in
five):

- simplebaseline: three Conv2D(stride 2)+BatchNorm2D+ReLU down to 4x4, Conv2DTranspose(4, stride 2)+BatchNorm2D+ReLU
  up to 8x8, a 1x1 Conv2D to the 4 heatmaps; loss mean(weight * (heatmaps - target)^2); Adam(MultiStepDecay(0.01,
  [2, 4], 0.1), weight_decay=1e-4).
- hourglass: a stride-2 stem (16x16), a stride-2 conv (8x8), max-pool to 4x4, F.interpolate nearest back to 8x8 plus
  the 8x8 skip, bilinear (align_corners=False) to 16x16 plus the stem, bilinear (align_corners=True) to 8x8, a 1x1
  head; OHKM loss: each keypoint's weighted squared error, the 2 hardest of 4 by paddle.topk, their mean;
  Adam(MultiStepDecay(0.005, [3], 0.5), weight_decay=L2Decay(1e-4)).
- integral: two convs to 4 heatmaps 8x8, softmax over the 64 places, the expected (x, y) on the pixel grid
  (soft-argmax), loss mean(weight * |coords - keypoints|); Adam(0.01).

Each model: forward.pb (main.clone() before minimize), train.pb, startup.pb, init.npz, trained.npz, losses in
meta.json; infer.pb: the simplebaseline rebuilt for test (BatchNorm's running statistics) with flip test-time
augmentation (paddle.flip of the image, the heatmaps flipped back and the left/right keypoints swapped by
paddle.gather, averaged with the plain ones) and argmax coordinates; its outputs on the held-out images in
outputs.npz. data.npz holds the images, targets, weights and keypoints (x, y on the 8x8 grid); test.npz 8 held-out.
PIR half: the simplebaseline minimized in PIR mode (pir_train.json, pir_startup.json, pir_init.npz, pir_losses.json).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week54.py tests/data/paddle/user_week54
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import (
    legacy_persistables,
    minimized,
    pir_half,
    pir_minimized,
    script_main,
    write_programs_gz,
)

KEYPOINTS, SIDE, GRID, STEPS, BATCH, TEST = 4, 32, 8, 5, 4, 8
FLIP_PAIRS = [1, 0, 3, 2]   # keypoints 0/1 and 2/3 are a left/right pair
RNG = np.random.default_rng(54)


def inputs():
    image = paddle.static.data("image", [-1, 1, SIDE, SIDE], "float32")
    target = paddle.static.data("target", [-1, KEYPOINTS, GRID, GRID], "float32")
    weight = paddle.static.data("target_weight", [-1, KEYPOINTS, 1, 1], "float32")
    return image, target, weight


def baseline(training=True) -> nn.Sequential:
    """Three stride-2 Conv2D+BatchNorm2D+ReLU (32 to 4), a stride-2 Conv2DTranspose+BatchNorm2D+ReLU (to 8), a 1x1
    Conv2D to the heatmaps; BatchNorm on the batch's statistics when ``training``, on its running ones when not."""
    layers = []
    for channels_in, channels_out in ((1, 4), (4, 8), (8, 8)):
        layers += [nn.Conv2D(channels_in, channels_out, 3, 2, 1, bias_attr=False), nn.BatchNorm2D(channels_out),
                   nn.ReLU()]
    layers += [nn.Conv2DTranspose(8, 8, 4, 2, 1, bias_attr=False), nn.BatchNorm2D(8), nn.ReLU(),
               nn.Conv2D(8, KEYPOINTS, 1)]
    net = nn.Sequential(*layers)
    if not training:
        net.eval()
    return net


def simplebaseline():
    image, target, weight = inputs()
    heatmaps = baseline()(image)
    loss = paddle.mean(weight * (heatmaps - target) ** 2)
    return loss, heatmaps


def hourglass():
    image, target, weight = inputs()
    stem = F.relu(nn.Conv2D(1, 8, 3, 2, 1)(image))                     # 16x16
    skip = F.relu(nn.Conv2D(8, 8, 3, 2, 1)(stem))                      # 8x8
    low = F.relu(nn.Conv2D(8, 8, 3, 1, 1)(F.max_pool2d(skip, 2)))      # 4x4
    up = F.interpolate(low, scale_factor=2, mode="nearest") + skip
    up = F.relu(nn.Conv2D(8, 8, 3, 1, 1)(up))
    up = F.interpolate(up, size=[16, 16], mode="bilinear", align_corners=False) + stem
    up = F.interpolate(up, size=[GRID, GRID], mode="bilinear", align_corners=True)
    heatmaps = nn.Conv2D(8, KEYPOINTS, 1)(up)
    each = paddle.mean(paddle.reshape(weight * (heatmaps - target) ** 2, [-1, KEYPOINTS, GRID * GRID]), axis=2)
    hardest, _ = paddle.topk(each, 2, axis=1)
    return paddle.mean(hardest), heatmaps


def soft_argmax(heatmaps):
    """softmax over the H*W places, then the expected x and y on the pixel grid: [B, K, 2]."""
    probabilities = F.softmax(paddle.reshape(heatmaps, [-1, KEYPOINTS, GRID * GRID]), axis=2)
    columns = paddle.assign(np.tile(np.arange(GRID, dtype=np.float32), GRID))
    rows = paddle.assign(np.repeat(np.arange(GRID, dtype=np.float32), GRID))
    return paddle.stack([paddle.sum(probabilities * columns, axis=2), paddle.sum(probabilities * rows, axis=2)], -1)


def integral():
    image, _, weight = inputs()
    keypoints = paddle.static.data("keypoints", [-1, KEYPOINTS, 2], "float32")
    x = F.relu(nn.Conv2D(1, 8, 3, 2, 1)(image))
    heatmaps = nn.Conv2D(8, KEYPOINTS, 3, 2, 1)(x)
    coords = soft_argmax(heatmaps)
    loss = paddle.mean(paddle.reshape(weight, [-1, KEYPOINTS, 1]) * paddle.abs(coords - keypoints))
    return loss, coords


MODELS = {"simplebaseline": simplebaseline, "hourglass": hourglass, "integral": integral}
OPTIMIZERS = {
    "simplebaseline": lambda: paddle.optimizer.Adam(paddle.optimizer.lr.MultiStepDecay(0.01, [2, 4], 0.1),
                                                    weight_decay=1e-4),
    "hourglass": lambda: paddle.optimizer.Adam(paddle.optimizer.lr.MultiStepDecay(0.005, [3], 0.5),
                                               weight_decay=paddle.regularizer.L2Decay(1e-4)),
    "integral": lambda: paddle.optimizer.Adam(0.01)}


def argmax_coords(heatmaps):
    """Each heatmap's argmax as (x, y) on its grid: [B, K, 2] int64."""
    flat = paddle.argmax(paddle.reshape(heatmaps, [-1, KEYPOINTS, GRID * GRID]), axis=2)
    return paddle.stack([flat % GRID, flat // GRID], -1)


def flip_test():
    """The simplebaseline for test with flip test-time augmentation: (mean heatmaps, their argmax coordinates)."""
    image = paddle.static.data("image", [-1, 1, SIDE, SIDE], "float32")
    net = baseline(training=False)
    plain, flipped = net(image), net(paddle.flip(image, [3]))
    back = paddle.gather(paddle.flip(flipped, [3]), paddle.assign(np.array(FLIP_PAIRS, np.int64)), axis=1)
    heatmaps = (plain + back) * 0.5
    return heatmaps, argmax_coords(heatmaps)


def data(count: int) -> dict:
    """Images of 4 blobs at random places (keypoints 0/2 left of 1/3), Gaussian heatmap targets and visibilities."""
    keypoints = np.zeros((count, KEYPOINTS, 2), np.float32)
    keypoints[:, :, 1] = RNG.integers(1, GRID - 1, (count, KEYPOINTS))
    keypoints[:, [0, 2], 0] = RNG.integers(1, GRID // 2, (count, 2))
    keypoints[:, [1, 3], 0] = RNG.integers(GRID // 2, GRID - 1, (count, 2))
    grid = np.arange(GRID, dtype=np.float32)
    target = np.exp(-((grid[None, None, None, :] - keypoints[..., 0, None, None]) ** 2
                      + (grid[None, None, :, None] - keypoints[..., 1, None, None]) ** 2) / 2).astype(np.float32)
    pixels = (np.arange(SIDE, dtype=np.float32) + 0.5) / (SIDE / GRID) - 0.5
    blobs = np.exp(-((pixels[None, None, None, :] - keypoints[..., 0, None, None]) ** 2
                     + (pixels[None, None, :, None] - keypoints[..., 1, None, None]) ** 2) * 2)
    image = blobs * (1 + np.arange(KEYPOINTS, dtype=np.float32)[None, :, None, None] / 4)
    image = np.round(np.clip(image.sum(1, keepdims=True) / 2 + RNG.random((count, 1, SIDE, SIDE)) * 0.1, 0, 1) * 255)
    weight = (RNG.random((count, KEYPOINTS, 1, 1)) > 0.2).astype(np.float32)
    return {"image": (image / 255).astype(np.float32), "target": target, "target_weight": weight,
            "keypoints": keypoints}


def train_model(out: Path, name: str, exe, arrays: dict) -> dict:
    main, startup, forward, optimizer, (loss, output) = minimized(MODELS[name], OPTIMIZERS[name], seed=54)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    scope, losses = paddle.static.Scope(), []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(folder / "init.npz", **legacy_persistables(forward, scope))
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in arrays.items()}
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss.name])[0]))
            if isinstance(optimizer._learning_rate, paddle.optimizer.lr.LRScheduler):
                optimizer._learning_rate.step()
        trained = legacy_persistables(forward, scope)
        np.savez(folder / "trained.npz", **trained)
        first = {k: v[:BATCH] for k, v in arrays.items()}
        (first_output,) = exe.run(forward, feed=first, fetch_list=[output.name])
    np.savez(folder / "outputs.npz", output=first_output)
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    return {"loss": loss.name, "output": output.name, "losses": losses}


def write_flip_test(out: Path, exe, test: dict) -> dict:
    """infer.pb: the trained simplebaseline for test with flip TTA, run on the held-out images."""
    infer, infer_startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(infer, infer_startup):
        heatmaps, coords = flip_test()
    folder = out / "simplebaseline"
    trained = dict(np.load(folder / "trained.npz"))
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for key, value in trained.items():
            scope.var(key).get_tensor().set(value, paddle.CPUPlace())
        values = exe.run(infer, feed={"image": test["image"]}, fetch_list=[heatmaps.name, coords.name])
    np.savez(folder / "flip_outputs.npz", heatmaps=values[0], coords=values[1])
    write_programs_gz(folder, {"infer": infer})
    return {"heatmaps": heatmaps.name, "coords": coords.name}


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    out.mkdir(parents=True, exist_ok=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    arrays, test = data(STEPS * BATCH), data(TEST)
    np.savez_compressed(out / "data.npz", **arrays)
    np.savez_compressed(out / "test.npz", **test)
    meta = {name: train_model(out, name, exe, arrays) for name in MODELS}
    meta["flip_test"] = write_flip_test(out, exe, test)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    """The simplebaseline minimized in PIR static mode, trained on the legacy run's batches: pir_losses.json."""
    build, make_optimizer = (lambda: simplebaseline()[0]), OPTIMIZERS["simplebaseline"]
    main, startup, loss, optimizer = pir_minimized(out, "", build, make_optimizer, 54)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    arrays, losses = dict(np.load(out / "data.npz")), []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        names = [op.attrs()["parameter_name"] for op in main.global_block().ops if op.name() == "builtin.parameter"]
        np.savez(out / "pir_init.npz", **{key: np.array(scope.var(key).get_tensor()) for key in names})
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in arrays.items() if k != "keypoints"}
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0]))
            optimizer._learning_rate.step()
    (out / "pir_losses.json").write_text(json.dumps(losses, indent=1) + "\n")


if __name__ == "__main__":
    script_main(main, main_pir)

"""The pose-estimation engineer's programs of docs/tools.md's 'A pose-estimation engineer's week', written with Paddle
3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), on 2-channel 16x16 images and K=4 keypoints whose
Gaussian heatmaps (sigma 1) are 8x8, each keypoint with a visibility weight of 0 or 1:

- simplebaseline: two Conv2D(stride 2)+BatchNorm+ReLU, a Conv2DTranspose(4, stride 2, padding 1)+BatchNorm+ReLU back
  to 8x8, a 1x1 Conv2D to the K heatmaps; loss the mean of weight * (pred - target)^2 plus the OHKM term: the mean
  of the 2 hardest keypoints' losses (paddle.topk).
- hourglass: a Conv2D(stride 2)+ReLU to 8x8, max-pooled to 4x4 and convolved, F.interpolate back to 8x8 (nearest,
  bilinear align_corners=False) and from 2x2 (bilinear align_corners=True), each added to the skip; 1x1 Conv2D to K
  heatmaps; loss the weighted heatmap MSE plus integral regression: softmax over the 64 cells, the expectation of a
  coordinate grid, weighted L1 to the keypoints' coordinates. Its forward also holds the flip test: the image
  flipped (paddle.flip), its heatmaps flipped back with left/right keypoints swapped (paddle.gather), averaged, and
  argmax coordinates ("coords").

Both trained by Adam(MultiStepDecay(0.01, [2, 4], 0.1), weight_decay=1e-4), 5 steps of 4 images. Each model:
forward.pb, train.pb, startup.pb, init.npz, trained.npz, data.npz, losses in meta.json; outputs.npz: the heatmaps
(and for hourglass the integral and flip-test coordinates) of the first batch with the trained weights. PIR half:
hourglass built and minimized in PIR mode, hourglass_pir_train.json / _startup.json, _init.npz, pir_losses.json.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week54.py tests/data/paddle/user_week54
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import legacy_persistables, minimized, pir_half, script_main, write_pir_gz, write_programs_gz

KEYPOINTS, SIDE, HEAT, STEPS, BATCH, HARDEST = 4, 16, 8, 5, 4, 2
FLIP_PAIRS = [1, 0, 3, 2]   # keypoints 0/1 and 2/3 are left/right twins
RNG = np.random.default_rng(54)


def inputs():
    return (paddle.static.data("image", [-1, 2, SIDE, SIDE], "float32"),
            paddle.static.data("target", [-1, KEYPOINTS, HEAT, HEAT], "float32"),
            paddle.static.data("visible", [-1, KEYPOINTS], "float32"),
            paddle.static.data("joints", [-1, KEYPOINTS, 2], "float32"))


def weighted_mse(heatmaps, target, visible):
    """Each keypoint's mean squared error over its cells, weighted by its visibility: [B, K]."""
    return paddle.mean((heatmaps - target) ** 2, axis=[2, 3]) * visible


def simplebaseline():
    image, target, visible, _ = inputs()
    features = image
    for channels_in, channels_out in ((2, 8), (8, 16)):
        features = F.relu(nn.BatchNorm2D(channels_out)(nn.Conv2D(channels_in, channels_out, 3, 2, 1)(features)))
    features = F.relu(nn.BatchNorm2D(8)(nn.Conv2DTranspose(16, 8, 4, stride=2, padding=1)(features)))
    heatmaps = nn.Conv2D(8, KEYPOINTS, 1)(features)
    each = weighted_mse(heatmaps, target, visible)
    hardest, _ = paddle.topk(each, HARDEST, axis=1)
    return paddle.mean(each) + paddle.mean(hardest), heatmaps


def integral(heatmaps):
    """Soft-argmax: softmax over the H*W cells, the expected (x, y) under it: [B, K, 2]."""
    probabilities = F.softmax(paddle.reshape(heatmaps, [-1, KEYPOINTS, HEAT * HEAT]), axis=2)
    grid_y, grid_x = np.meshgrid(np.arange(HEAT), np.arange(HEAT), indexing="ij")
    grid = paddle.assign(np.stack([grid_x.ravel(), grid_y.ravel()], 1).astype(np.float32))  # [H*W, 2]
    return paddle.matmul(probabilities, grid)


def hourglass_net(image, layers):
    top = F.relu(layers[0](image))                                             # 8x8
    low = F.relu(layers[1](F.max_pool2d(top, 2)))                              # 4x4
    lowest = F.avg_pool2d(low, 2)                                              # 2x2
    merged = (top + F.interpolate(low, scale_factor=2, mode="nearest")
              + F.interpolate(low, size=[HEAT, HEAT], mode="bilinear", align_corners=False)
              + F.interpolate(lowest, size=[HEAT, HEAT], mode="bilinear", align_corners=True))
    return layers[2](merged)


def hourglass():
    image, target, visible, joints = inputs()
    layers = [nn.Conv2D(2, 8, 3, 2, 1), nn.Conv2D(8, 8, 3, 1, 1), nn.Conv2D(8, KEYPOINTS, 1)]
    heatmaps = hourglass_net(image, layers)
    coordinates = integral(heatmaps)
    regression = paddle.mean(paddle.abs(coordinates - joints) * paddle.unsqueeze(visible, 2))
    loss = paddle.mean(weighted_mse(heatmaps, target, visible)) + 0.01 * regression
    flipped = paddle.flip(hourglass_net(paddle.flip(image, [3]), layers), [3])
    averaged = (heatmaps + paddle.gather(flipped, paddle.assign(np.array(FLIP_PAIRS, np.int64)), axis=1)) / 2
    cells = paddle.argmax(paddle.reshape(averaged, [-1, KEYPOINTS, HEAT * HEAT]), axis=2)
    coords = paddle.stack([cells % HEAT, cells // HEAT], axis=2)
    return loss, heatmaps, coordinates, coords


MODELS = {"simplebaseline": simplebaseline, "hourglass": hourglass}


def optimizer():
    schedule = paddle.optimizer.lr.MultiStepDecay(0.01, [2, 4], 0.1)
    return paddle.optimizer.Adam(schedule, weight_decay=1e-4)


def data(count: int) -> dict:
    """Images with a bright blob at each keypoint, the keypoints' Gaussian heatmaps, visibility and coordinates."""
    joints = RNG.uniform(1, HEAT - 2, size=(count, KEYPOINTS, 2)).astype(np.float32)
    visible = (RNG.uniform(size=(count, KEYPOINTS)) > 0.25).astype(np.float32)
    ys, xs = np.meshgrid(np.arange(HEAT), np.arange(HEAT), indexing="ij")
    target = np.exp(-((xs - joints[..., 0, None, None]) ** 2 + (ys - joints[..., 1, None, None]) ** 2) / 2)
    image = RNG.normal(0, 0.1, size=(count, 2, SIDE, SIDE))
    big = np.kron(target.sum(1, keepdims=True), np.ones((1, 1, 2, 2)))
    image = image + np.concatenate([big, big[..., ::-1]], 1)
    return {"image": np.round(image, 3).astype(np.float32), "target": target.astype(np.float32),
            "visible": visible, "joints": joints}


def train_model(out: Path, name: str, exe) -> dict:
    main, startup, forward, opt, fetches = minimized(MODELS[name], optimizer, seed=54)
    loss = fetches[0]
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    arrays = data(STEPS * BATCH)
    scope, losses = paddle.static.Scope(), []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(folder / "init.npz", **legacy_persistables(forward, scope))
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in arrays.items()}
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss.name])[0]))
            opt._learning_rate.step()
        np.savez(folder / "trained.npz", **legacy_persistables(forward, scope))
        first = {k: v[:BATCH] for k, v in arrays.items()}
        values = exe.run(forward, feed=first, fetch_list=[f.name for f in fetches[1:]])
    keys = ("heatmaps", "integral", "coords")[:len(values)]
    np.savez(folder / "outputs.npz", **dict(zip(keys, values)))
    np.savez_compressed(folder / "data.npz", **arrays)
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    return {"loss": loss.name, "losses": losses, **{key: f.name for key, f in zip(keys, fetches[1:])}}


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    out.mkdir(parents=True, exist_ok=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {name: train_model(out, name, exe) for name in MODELS}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    """hourglass built and minimized in PIR static mode, trained on the legacy run's batches: pir_losses.json."""
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        main.random_seed = startup.random_seed = 54
        loss = hourglass()[0]
        opt = optimizer()
        opt.minimize(loss)
        paddle._pir_ops.fetch(loss, "loss", 0).persistable = True
    for program, stem in ((main, "hourglass_pir_train"), (startup, "hourglass_pir_startup")):
        write_pir_gz(program, out / f"{stem}.json")
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    arrays, losses = dict(np.load(out / "hourglass" / "data.npz")), []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        names = [op.attrs()["parameter_name"] for op in main.global_block().ops if op.name() == "builtin.parameter"]
        np.savez(out / "hourglass_pir_init.npz", **{key: np.array(scope.var(key).get_tensor()) for key in names})
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in arrays.items()}
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0]))
            opt._learning_rate.step()
    (out / "pir_losses.json").write_text(json.dumps({"hourglass": losses}, indent=1) + "\n")


if __name__ == "__main__":
    script_main(main, main_pir)

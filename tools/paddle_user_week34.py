"""The 3D / point-cloud / video researcher's programs of docs/tools.md's 'A 3D and point-cloud researcher's week',
written with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0):

- cnn3d: a 3D CNN over 1x8x8x8 volumes of 3 classes (Conv3D, BatchNorm3D, MaxPool3D, Conv3D, AvgPool3D,
  AdaptiveAvgPool3D, Linear) with a decoder head (Conv3DTranspose, F.interpolate trilinear) whose mse to the input
  is added to cross_entropy's mean.
- pointnet: a PointNet over 16 points of 4 shapes: a T-Net (Conv1D, max over the points, Linear) whose 3x3
  transform (plus the identity) is applied by bmm, a shared MLP (Conv1D), a max over the points, Linear; the loss is
  cross_entropy's mean plus 0.01 * mean ||I - A A^T||^2.
- stn: a spatial-transformer step over 1x8x8 images of 3 classes: theta from a Linear (identity bias),
  F.affine_grid (its out_shape paddle.shape(x)), F.grid_sample (bilinear, border), Linear.
- grid_<padding>_<align>.pb: float64 programs sum(w * F.grid_sample(x, grid, ...)) with x and grid fed, for each
  padding mode and align_corners, and paddle.static.gradients of x and grid (_forward.pb: without); grid.npz: their
  feeds (grid points away from pixel lines and kinks) and Paddle's x@GRAD and grid@GRAD; and Paddle's grid@GRAD at
  grid points on pixel centres (kinks_*), a third of them on the last column or row.

pointnet/tied.npz: 4 test clouds with points 1 and 2 a copy of point 0, and Paddle's gradient of the loss at them.
Each model: forward.pb (main.clone() before minimize; an accuracy op too), test.pb (for_test clone), startup.pb,
init.npz (its startup's values), data.npz / test_data.npz, 6 Adam(0.01, weight_decay=1e-3) steps of batch 8: the
losses in meta.json, trained.npz, and Paddle's test-mode logits of the test set (logits.npz).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week34.py tests/data/paddle/user_week34
"""

import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle.base.layer_helper import LayerHelper
from paddle_programs import legacy_persistables, run_steps, without_callstacks, write_gz

BATCH, STEPS, LR, DECAY = 8, 6, 0.01, 1e-3
RNG = np.random.default_rng(34)


def volumes(count: int):
    """A bright slab along depth, height or width (a moving bar in a clip, for depth as time), on noise."""
    labels = RNG.integers(0, 3, count)
    out = RNG.integers(0, 5, (count, 1, 8, 8, 8)) / 16   # noise in sixteenths: the .npz compresses
    for volume, label in zip(out, labels):
        at = RNG.integers(1, 7)
        index = [slice(None)] * 3
        index[label] = slice(at - 1, at + 1)
        volume[0][tuple(index)] += 0.625
    return {"x": out.astype(np.float32), "label": labels.reshape(-1, 1)}


def point_sets(count: int):
    """16 points on a sphere, a cube's surface, a plane or a line, scaled and shifted, with noise."""
    labels = RNG.integers(0, 4, count)
    out = []
    for label in labels:
        points = RNG.normal(size=(16, 3))
        if label == 0:
            points /= np.linalg.norm(points, axis=1, keepdims=True)
        elif label == 1:
            points = np.clip(points, -1, 1)
            points[np.arange(16), RNG.integers(0, 3, 16)] = RNG.choice([-1.0, 1.0], 16)
        elif label == 2:
            points[:, 2] = 0
        else:
            points = np.outer(points[:, 0], RNG.normal(size=3))
        out.append(points * RNG.uniform(0.5, 1.5) + RNG.normal(0, 0.05, (16, 3)))
    return {"points": np.array(out, np.float32), "label": labels.reshape(-1, 1)}


def images(count: int):
    """A horizontal bar, a vertical bar or a diagonal, on noise (as week 29's, 8x8)."""
    labels = RNG.integers(0, 3, count)
    out = RNG.uniform(0, 0.3, (count, 1, 8, 8))
    for image, label in zip(out, labels):
        at = RNG.integers(2, 6)
        if label == 0:
            image[0, at - 1:at + 1] += 0.6
        elif label == 1:
            image[0, :, at - 1:at + 1] += 0.6
        else:
            image[0] += 0.6 * np.eye(8, k=int(at) - 4)
    return {"x": out.astype(np.float32), "label": labels.reshape(-1, 1)}


def grid_sample(x, grid, padding_mode: str, align_corners: bool):
    """F.grid_sample's legacy op (bilinear): in Paddle 3.3.1's legacy static mode F.grid_sample reaches a C function
    that takes PIR Values only, so the op is appended as Paddle 2's F.grid_sample appended it."""
    helper = LayerHelper("grid_sampler")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="grid_sampler", inputs={"X": x, "Grid": grid}, outputs={"Output": out},
                     attrs={"mode": "bilinear", "padding_mode": padding_mode, "align_corners": align_corners})
    return out


def cnn3d():
    x = paddle.static.data("x", [-1, 1, 8, 8, 8], "float32")
    label = paddle.static.data("label", [-1, 1], "int64")
    hidden = F.max_pool3d(F.relu(nn.BatchNorm3D(4)(nn.Conv3D(1, 4, 3, padding=1)(x))), 2)
    hidden = F.avg_pool3d(F.relu(nn.Conv3D(4, 8, 3, padding=1)(hidden)), 2)
    logits = nn.Linear(8, 3)(paddle.flatten(F.adaptive_avg_pool3d(hidden, 1), 1))
    decoded = nn.Conv3D(4, 1, 1)(F.relu(nn.Conv3DTranspose(8, 4, 2, stride=2)(hidden)))
    decoded = F.interpolate(decoded, scale_factor=2, mode="trilinear", align_corners=False)
    loss = paddle.mean(F.cross_entropy(logits, label)) + 0.5 * F.mse_loss(decoded, x)
    return logits, label, loss


def pointnet():
    points = paddle.static.data("points", [-1, 16, 3], "float32")
    label = paddle.static.data("label", [-1, 1], "int64")
    channels_first = paddle.transpose(points, [0, 2, 1])
    tnet = paddle.max(F.relu(nn.Conv1D(3, 16, 1)(channels_first)), axis=2)
    offset = nn.Linear(16, 9, weight_attr=paddle.ParamAttr(initializer=nn.initializer.Normal(0, 0.01)))(tnet)
    transform = paddle.reshape(offset + paddle.eye(3).reshape([1, 9]), [-1, 3, 3])
    aligned = paddle.transpose(paddle.bmm(points, transform), [0, 2, 1])
    features = F.relu(nn.Conv1D(16, 32, 1)(F.relu(nn.Conv1D(3, 16, 1)(aligned))))
    logits = nn.Linear(32, 4)(paddle.max(features, axis=2))
    gram = paddle.bmm(transform, paddle.transpose(transform, [0, 2, 1]))
    orthogonality = paddle.mean(paddle.sum(paddle.square(paddle.eye(3) - gram), axis=[1, 2]))
    loss = paddle.mean(F.cross_entropy(logits, label)) + 0.01 * orthogonality
    return logits, label, loss


def stn():
    x = paddle.static.data("x", [-1, 1, 8, 8], "float32")
    x.stop_gradient = False   # Paddle's CPU grid_sampler_grad crashes (SIGSEGV) when X gets no gradient
    label = paddle.static.data("label", [-1, 1], "int64")
    identity = paddle.nn.initializer.Assign(np.array([1, 0, 0, 0, 1, 0], np.float32))
    locator = nn.Linear(64, 6, weight_attr=paddle.ParamAttr(initializer=nn.initializer.Normal(0, 0.01)),
                        bias_attr=paddle.ParamAttr(initializer=identity))
    theta = paddle.reshape(locator(paddle.flatten(x, 1)), [-1, 2, 3])
    grid = F.affine_grid(theta, paddle.shape(x), align_corners=False)
    warped = grid_sample(x, grid, "border", False)
    # reshape, not flatten: with out_shape a tensor, Paddle leaves the grid's and warped's shapes unknown
    logits = nn.Linear(64, 3)(paddle.reshape(warped, [-1, 64]))
    loss = paddle.mean(F.cross_entropy(logits, label))
    return logits, label, loss


def tied_points_gradient(exe, forward, loss_name: str, test_data: dict, folder: Path) -> None:
    """Paddle's gradient of the PointNet loss with respect to 4 test clouds whose points 1 and 2 repeat point 0: a
    three-way tie in every channel of both maxes over the points."""
    tied = {key: value[:4].copy() for key, value in test_data.items()}
    tied["points"][:, 1:3] = tied["points"][:, :1]
    program = forward.clone()
    with paddle.static.program_guard(program, paddle.static.Program()):
        points = program.global_block().var("points")
        points.stop_gradient = False
        (grad,) = paddle.static.gradients(program.global_block().var(loss_name), points)
    (value,) = exe.run(program, feed=tied, fetch_list=[grad])
    np.savez(folder / "tied.npz", **tied, grad=value)


def train_model(out: Path, name: str, build, data: dict, test_data: dict, exe) -> dict:
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 34
    with paddle.static.program_guard(main, startup):
        logits, label, loss = build()
        accuracy = paddle.static.accuracy(F.softmax(logits), label)
    forward, test = main.clone(), main.clone(for_test=True)
    with paddle.static.program_guard(main, startup):
        chosen = paddle.optimizer.Adam(LR, weight_decay=DECAY)
        chosen.minimize(loss)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    scope = paddle.static.Scope()
    names = {"loss": loss.name, "logits": logits.name, "accuracy": accuracy.name}
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(folder / "init.npz", **legacy_persistables(forward, scope))
        losses = run_steps(exe, main, loss, data, STEPS, BATCH, chosen)
        np.savez(folder / "trained.npz", **legacy_persistables(forward, scope))
        test_logits, test_accuracy = exe.run(test, feed=test_data, fetch_list=[logits.name, accuracy.name])
        if name == "pointnet":
            tied_points_gradient(exe, forward, loss.name, test_data, folder)
    np.savez(folder / "logits.npz", logits=test_logits)
    np.savez_compressed(folder / "data.npz", **data)
    np.savez_compressed(folder / "test_data.npz", **test_data)
    for program_name, program in [("forward", forward), ("test", test), ("train", main), ("startup", startup)]:
        write_gz(folder / f"{program_name}.pb", without_callstacks(program))
    return {**names, "losses": losses, "test_accuracy": float(test_accuracy)}


def grid_programs(out: Path, exe) -> dict:
    """float64 sum(w * grid_sample(x, grid)) for each padding mode and align_corners; Paddle's input gradients."""
    x = RNG.normal(size=(2, 2, 5, 6))
    # grid points inside and past [-1, 1], each at least 0.1 pixel from a pixel line, a border and a reflection kink
    pixel = RNG.uniform(-1.5, 6.5, (2, 4, 3, 2)).round() + RNG.choice([-1, 1], (2, 4, 3, 2)) * RNG.uniform(
        0.15, 0.45, (2, 4, 3, 2))
    # and points on pixel centres (kinks of every padding), a third of them on the last column or row
    on_pixels = RNG.integers(0, [6, 5], (2, 4, 3, 2)).astype(np.float64)
    on_pixels[:, :, 0, 0], on_pixels[:, 1, :, 1] = 5, 4
    feeds, grads = {"x": x}, {}
    weight = RNG.normal(size=(2, 2, 4, 3))
    for padding in ("zeros", "border", "reflection"):
        for align in (True, False):
            size = np.array([6, 5])   # grid's last axis is (x over width, y over height)
            grid, kinks = ((at * 2 / (size - 1) - 1 if align else (2 * at + 1) / size - 1) for at in (pixel, on_pixels))
            feeds[f"grid_{align}"], feeds[f"kinks_{align}"] = grid, kinks
            main = paddle.static.Program()
            with paddle.static.program_guard(main, paddle.static.Program()):
                xv = paddle.static.data("x", list(x.shape), "float64")
                gv = paddle.static.data("grid", list(grid.shape), "float64")
                xv.stop_gradient = gv.stop_gradient = False
                sampled = grid_sample(xv, gv, padding, align)
                loss = paddle.sum(sampled * paddle.assign(weight))
                forward = main.clone()
                grad_x, grad_grid = paddle.static.gradients(loss, [xv, gv])
            key = f"{padding}_{align}"
            write_gz(out / f"grid_{key}.pb", without_callstacks(main))
            write_gz(out / f"grid_{key}_forward.pb", without_callstacks(forward))
            grads[f"x_{key}"], grads[f"grid_{key}"], grads[f"loss_{key}"] = exe.run(
                main, feed={"x": x, "grid": grid}, fetch_list=[grad_x, grad_grid, loss])
            (grads[f"kinks_{key}"],) = exe.run(main, feed={"x": x, "grid": kinks}, fetch_list=[grad_grid])
    np.savez(out / "grid.npz", **feeds, **grads)
    return {"grid_loss": loss.name}


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {}
    for name, build, make in [("cnn3d", cnn3d, volumes), ("pointnet", pointnet, point_sets), ("stn", stn, images)]:
        meta[name] = train_model(out, name, build, make(BATCH * STEPS), make(12), exe)
    meta.update(grid_programs(out, exe))
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
    main(Path(sys.argv[1]))

"""The semantic-segmentation engineer's programs of docs/tools.md's 'A semantic-segmentation engineer's week', written
with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), on 3x16x16 images of 4 classes whose
label maps hold ignored pixels (255) on the shapes' borders:

- unet: a small U-Net (Conv2D, BatchNorm2D, max_pool2d, a Conv2DTranspose up, a bilinear F.interpolate up with
  align_corners=True, concatenated skips), Momentum(0.9) with L2Decay(1e-4) on PolynomialDecay(0.05, 4 steps, end
  0.001, power 0.9).
- deeplab: a DeepLab-like head (a stride-2 stem, a dilated conv, an ASPP of 1x1, dilation-2 and dilation-3 convs and
  two image-pooling branches, adaptive_avg_pool2d to 1 and to 3, upsampled bilinear, align_corners False and True),
  AdamW(weight_decay 0.01) on PolynomialDecay(0.01, 4 steps, end 0, power 1).
- Both: F.cross_entropy(logits, label, axis=1, ignore_index=255)'s mean plus a Dice loss written with Paddle ops;
  NAME_forward.pb (main.clone() before minimize), NAME_train.pb, NAME_startup.pb, NAME_eval.pb (the test clone with a
  confusion matrix by paddle.bincount), NAME_final.npz (the parameters and running statistics
  after STEPS steps of 4); meta.json Paddle's losses, learning rates, confusion matrices and mIoU, and the sum of
  |value| of each startup value (gradc's run of NAME_startup.pb gives Paddle's initial weights).
  tools/paddle_user_week30_pir.py adds the PIR exports.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week30.py tests/data/paddle/user_week30
"""

import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle import nn
from paddle_programs import without_callstacks, write_gz

SIZE, CLASSES, IGNORE, TRAIN, TEST, BATCH, STEPS = 16, 4, 255, 12, 6, 4, 5
RNG = np.random.default_rng(30)


def images(count: int) -> tuple[np.ndarray, np.ndarray]:
    """Background 0, a square 1, a disk 2, a horizontal stripe 3, each class a colour, on noise; a shape's border
    pixels are labelled 255 (ignored), as VOC's are."""
    x = RNG.normal(0, 0.3, (count, 3, SIZE, SIZE))
    label = np.zeros((count, 1, SIZE, SIZE), np.int64)
    rows, cols = np.mgrid[:SIZE, :SIZE]
    for n in range(count):
        r, c = RNG.integers(3, SIZE - 3, 2)
        square = (abs(rows - r) <= 2) & (abs(cols - c) <= 2)
        disk = (rows - (SIZE - 1 - r)) ** 2 + (cols - (SIZE - 1 - c)) ** 2 <= 6
        stripe = abs(rows - RNG.integers(1, SIZE - 1)) <= 0
        for cls, mask in ((3, stripe), (1, square), (2, disk)):
            label[n, 0][mask] = cls
            x[n, cls - 1][mask] += 1.0
        border = (square & ~((abs(rows - r) <= 1) & (abs(cols - c) <= 1)))
        label[n, 0][border & (RNG.uniform(size=border.shape) < 0.5)] = IGNORE
    return (np.round(x * 32) / 32).astype(np.float32), label   # on a grid of 1/32, as 8-bit pixels are


def conv_bn(cin, cout, **kwargs):
    return nn.Sequential(nn.Conv2D(cin, cout, 3, padding=kwargs.pop("padding", 1), **kwargs), nn.BatchNorm2D(cout),
                         nn.ReLU())


class UNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.enc1, self.enc2 = conv_bn(3, 8), conv_bn(8, 16)
        self.mid = nn.Conv2D(16, 16, 3, padding=1)
        self.up2 = nn.Conv2DTranspose(16, 16, 2, stride=2)
        self.dec2, self.dec1 = conv_bn(32, 8), nn.Conv2D(16, 8, 3, padding=1)
        self.head = nn.Conv2D(8, CLASSES, 1)

    def forward(self, x):
        skip1 = self.enc1(x)
        skip2 = self.enc2(F.max_pool2d(skip1, 2))
        mid = F.relu(self.mid(F.max_pool2d(skip2, 2)))
        up = self.dec2(paddle.concat([self.up2(mid), skip2], axis=1))
        up = F.interpolate(up, scale_factor=2, mode="bilinear", align_corners=True)
        return self.head(F.relu(self.dec1(paddle.concat([up, skip1], axis=1))))


class DeepLab(nn.Layer):
    def __init__(self):
        super().__init__()
        self.stem, self.block = conv_bn(3, 8, stride=2), conv_bn(8, 16, padding=2, dilation=2)
        self.aspp = nn.LayerList([nn.Conv2D(16, 8, 1), nn.Conv2D(16, 8, 3, padding=2, dilation=2),
                                  nn.Conv2D(16, 8, 3, padding=3, dilation=3)])
        self.pooled = nn.LayerList([nn.Conv2D(16, 8, 1), nn.Conv2D(16, 8, 1)])
        self.project = nn.Sequential(nn.Conv2D(40, 8, 1), nn.BatchNorm2D(8), nn.ReLU())
        self.head = nn.Conv2D(8, CLASSES, 1)

    def forward(self, x):
        feature = self.block(self.stem(x))
        size = feature.shape[2:]
        branches = [conv(feature) for conv in self.aspp]
        for conv, bins, corners in zip(self.pooled, (1, 3), (False, True)):
            pooled = F.relu(conv(F.adaptive_avg_pool2d(feature, bins)))
            branches.append(F.interpolate(pooled, size=size, mode="bilinear", align_corners=corners))
        logits = self.head(self.project(paddle.concat(branches, axis=1)))
        return F.interpolate(logits, size=[SIZE, SIZE], mode="bilinear", align_corners=False)


def losses(logits, label):
    """Cross entropy over the class axis, ignored pixels left out of the mean, plus 1 - the mean over classes of a
    smoothed Dice over the valid pixels."""
    ce = F.cross_entropy(logits, label, axis=1, ignore_index=IGNORE)
    valid = paddle.cast(label != IGNORE, "float32")
    clean = paddle.where(label == IGNORE, paddle.zeros_like(label), label)
    onehot = paddle.transpose(F.one_hot(paddle.squeeze(clean, 1), CLASSES), [0, 3, 1, 2]) * valid
    prob = F.softmax(logits, axis=1) * valid
    inter = paddle.sum(prob * onehot, axis=[0, 2, 3])
    union = paddle.sum(prob, axis=[0, 2, 3]) + paddle.sum(onehot, axis=[0, 2, 3])
    dice = 1.0 - paddle.mean((2.0 * inter + 1.0) / (union + 1.0))
    return ce, dice, ce + dice


def confusion(logits, label):
    """The test batch's confusion matrix [true, predicted], ignored pixels left out: bincount with the valid mask as
    weights."""
    pred = paddle.argmax(logits, axis=1, keepdim=True)
    valid = paddle.cast(label != IGNORE, "float32")
    clean = paddle.where(label == IGNORE, paddle.zeros_like(label), label)
    index = paddle.flatten(clean * CLASSES + pred)
    return paddle.reshape(paddle.bincount(index, weights=paddle.flatten(valid), minlength=CLASSES * CLASSES),
                          [CLASSES, CLASSES])


def miou(matrix: np.ndarray) -> float:
    inter = np.diag(matrix)
    union = matrix.sum(0) + matrix.sum(1) - inter
    return float(np.mean(inter[union > 0] / union[union > 0]))


def programs(model_class, make_optimizer):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 30
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [-1, 3, SIZE, SIZE], "float32")
        label = paddle.static.data("label", [-1, 1, SIZE, SIZE], "int64")
        model = model_class()
        logits = model(x)
        ce, dice, loss = losses(logits, label)
    forward, test = main.clone(), main.clone(for_test=True)
    with paddle.static.program_guard(test, paddle.static.Program()):
        matrix = confusion(test.global_block().var(logits.name), test.global_block().var("label"))
    with paddle.static.program_guard(main, startup):
        optimizer, schedule = make_optimizer()
        optimizer.minimize(loss)
    names = {"loss": loss.name, "ce": ce.name, "dice": dice.name, "logits": logits.name, "confusion": matrix.name,
             "lr": optimizer._learning_rate_map[main].name,
             "layers": {key: value.name for key, value in model.state_dict().items()}}
    return main, forward, test, startup, schedule, names


def momentum():
    schedule = paddle.optimizer.lr.PolynomialDecay(0.05, decay_steps=4, end_lr=0.001, power=0.9)
    return paddle.optimizer.Momentum(schedule, momentum=0.9, weight_decay=paddle.regularizer.L2Decay(1e-4)), schedule


def adamw():
    schedule = paddle.optimizer.lr.PolynomialDecay(0.01, decay_steps=4, end_lr=0.0, power=1.0)
    return paddle.optimizer.AdamW(schedule, weight_decay=0.01), schedule


def values(scope, names) -> dict:
    return {name: np.array(scope.var(name).get_tensor()) for name in names}


def week(out: Path, name: str, model_class, make_optimizer, data, test_data) -> dict:
    exe = paddle.static.Executor(paddle.CPUPlace())
    main, forward, test, startup, schedule, names = programs(model_class, make_optimizer)
    model_vars = [var.name for var in forward.list_vars() if var.persistable]   # parameters, running statistics
    params = [param.name for param in main.all_parameters() if param.trainable]
    record = {"names": names, "params": params, "losses": [], "ce": [], "dice": [], "lr": []}
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        record["init"] = {name: float(np.abs(value).sum()) for name, value in values(scope, model_vars).items()}
        for step in range(STEPS):
            batch = slice(step * BATCH % TRAIN, step * BATCH % TRAIN + BATCH)
            feed = {"x": data[0][batch], "label": data[1][batch]}
            fetched = exe.run(main, feed=feed, fetch_list=[names["loss"], names["ce"], names["dice"], names["lr"]])
            for key, value in zip(("losses", "ce", "dice", "lr"), fetched):
                record[key].append(float(value))
            schedule.step()
        np.savez_compressed(out / f"{name}_final.npz", **values(scope, model_vars))
        (matrix,) = exe.run(test, feed={"x": test_data[0], "label": test_data[1]}, fetch_list=[names["confusion"]])
    record["confusion"], record["miou"] = matrix.tolist(), miou(matrix)
    for kind, program in (("forward", forward), ("train", main), ("startup", startup), ("eval", test)):
        write_gz(out / f"{name}_{kind}.pb", without_callstacks(program))
    return record


def main(out: Path) -> None:
    paddle_legacy_shim.install()   # legacy static mode only: the PIR script imports the models from here
    paddle.enable_static()
    data, test_data = images(TRAIN), images(TEST)
    np.savez_compressed(out / "data.npz", x=data[0], label=data[1])
    np.savez_compressed(out / "test.npz", x=test_data[0], label=test_data[1])
    meta = {"steps": STEPS, "batch": BATCH, "ignore_index": IGNORE,
            "unet": week(out, "unet", UNet, momentum, data, test_data),
            "deeplab": week(out, "deeplab", DeepLab, adamw, data, test_data)}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
    main(Path(sys.argv[1]))

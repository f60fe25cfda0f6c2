"""The video-understanding engineer's programs of docs/tools.md's 'A video-understanding engineer's week', written
with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), clips [N, C=3, T=5, H=W=9] of 6 classes
(a bright square moving in one of six ways):

- c3d: Conv3D, BatchNorm3D, ReLU, a grouped dilated Conv3D (groups 4, dilation 2), MaxPool3D(2, 2, ceil_mode),
  AvgPool3D(3, 2, padding 1, ceil_mode, exclusive), AdaptiveAvgPool3D(1), Linear; cross entropy.
- r2p1d: the clip fed NDHWC; an R(2+1)D block (a 1x3x3 Conv3D then a 3x1x1 one, NDHWC, BatchNorm3D NDHWC, a
  residual), a Conv3DTranspose decoder (stride 2, output_size the clip's) then F.interpolate trilinear back to the
  clip (align_corners False, align_mode 0), mse to the clip plus the head's cross entropy.
- tsm: frames [N*T, 3, 9, 9]: F.temporal_shift (shift_ratio 0.25, NCHW), Conv2D, ReLU, transposed to NHWC,
  F.temporal_shift (0.125, NHWC), Conv2D NHWC, mean over H, W, a segment consensus (reshape [N, T, C] + mean), Linear.
- rnn: frame features [N, T, 8]: nn.LSTM with attention pooling (Linear scores, softmax over time, weighted sum) and
  nn.GRU with mean pooling, concatenated, Linear.
- c3d_dropout: c3d with a Dropout3D(0.3) after the grouped conv (its masks from paddle.seed(47)'s stream).
  All five: Momentum(CosineAnnealingDecay(0.05, T_max=4), 0.9, weight_decay=L2Decay(1e-3)), 4 steps of batch 4,
  the schedule stepped; top-1 / top-5 accuracy of the trained model on the first 8 clips (paddle.static.accuracy).
- corners.npz / corner_<name>.pb: float64 sum(w * f(x, ...)) and Paddle's gradients (paddle.static.gradients): conv3d
  with groups and dilation (NCDHW and NDHWC), pool3d ceil_mode with padding (max, avg exclusive and not),
  temporal_shift NCHW and NHWC, conv3d_transpose with output_size and with groups and dilation, trilinear
  align_corners True / align_mode 0 / align_mode 1, NDHWC pools (ceil_mode, adaptive) and conv3d_transpose;
  corner_<name>_paddle.pb Paddle's own gradient programs of five of them.
- c3d_pir.json / .pdiparams (PIR half): the C3D net with a Dropout3D as a dygraph Layer, eval(), paddle.jit.save'd;
  predictor_pir.npz: its dygraph outputs and the Predictor's (oneDNN off) on the first 4 clips, and the losses of
  the saved Layer fine-tuned in eval mode by the same Momentum over c3d's 4 batches.

Each model: forward.pb (main.clone() before minimize), train.pb (Paddle's own), startup.pb, init.npz, data.npz,
trained.npz, outputs.npz (first 8 clips, trained weights), the losses and accuracies in meta.json.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week47.py tests/data/paddle/user_week47
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import (
    gzip_file,
    pir_half,
    script_main,
    train_saving_values,
    weighted_corner,
    without_callstacks,
    write_gz,
    write_programs_gz,
)

BATCH, STEPS, CLASSES, T, SIZE, FEATURES = 4, 4, 6, 5, 9, 8
RNG = np.random.default_rng(47)


def clips(count: int):
    """A bright 3x3 square moving one of six ways (right, left, down, up, still, diagonal) over noise."""
    label = RNG.integers(0, CLASSES, size=count)
    moves = [(0, 1), (0, -1), (1, 0), (-1, 0), (0, 0), (1, 1)]
    x = RNG.normal(scale=0.3, size=(count, 3, T, SIZE, SIZE)).astype(np.float32)
    for i, cls in enumerate(label):
        dy, dx = moves[cls]
        y0, x0 = RNG.integers(2, SIZE - 3, size=2)
        for t in range(T):
            y, xx = int(np.clip(y0 + dy * t, 0, SIZE - 3)), int(np.clip(x0 + dx * t, 0, SIZE - 3))
            x[i, :, t, y:y + 3, xx:xx + 3] += 1.0
    # float16's values: the clips compress to a third
    return x.astype(np.float16).astype(np.float32), label.reshape(-1, 1).astype(np.int64)


def c3d_features(x, dropout: bool = False):
    h = F.relu(nn.BatchNorm3D(8)(nn.Conv3D(3, 8, 3, padding=1)(x)))
    h = F.relu(nn.Conv3D(8, 8, 3, padding=2, dilation=2, groups=4)(h))
    if dropout:
        h = nn.Dropout3D(0.3)(h)
    h = nn.MaxPool3D(2, 2, ceil_mode=True)(h)
    h = nn.AvgPool3D(3, 2, padding=1, ceil_mode=True, exclusive=True)(h)
    return nn.Linear(8, CLASSES)(paddle.flatten(nn.AdaptiveAvgPool3D(1)(h), 1))


def c3d():
    x = paddle.static.data("clip", [-1, 3, T, SIZE, SIZE], "float32")
    return c3d_features(x), {}


def c3d_dropout():
    x = paddle.static.data("clip", [-1, 3, T, SIZE, SIZE], "float32")
    return c3d_features(x, dropout=True), {}


def r2p1d():
    x = paddle.static.data("clip", [-1, T, SIZE, SIZE, 3], "float32")
    spatial = nn.Conv3D(3, 8, (1, 3, 3), padding=(0, 1, 1), data_format="NDHWC")(x)
    h = F.relu(nn.BatchNorm3D(8, data_format="NDHWC")(spatial))
    h = F.relu(h + nn.Conv3D(8, 8, (3, 1, 1), padding=(1, 0, 0), data_format="NDHWC")(h))
    down = nn.Conv3D(8, 8, 3, stride=2, padding=1, data_format="NDHWC")(h)
    decoded = nn.Conv3DTranspose(8, 3, 3, stride=2, padding=1, data_format="NDHWC")(down, output_size=[T, SIZE, SIZE])
    resized = F.interpolate(decoded, size=[T, SIZE, SIZE], mode="trilinear", align_corners=False, align_mode=0,
                            data_format="NDHWC")
    recon = F.mse_loss(resized, x)
    logits = nn.Linear(8, CLASSES)(paddle.mean(down, axis=[1, 2, 3]))
    return logits, {"recon": recon}


def tsm():
    x = paddle.static.data("clip", [-1, T, 3, SIZE, SIZE], "float32")
    frames = paddle.reshape(x, [-1, 3, SIZE, SIZE])
    h = F.relu(nn.Conv2D(3, 8, 3, padding=1)(F.temporal_shift(frames, T, 0.25)))
    h = paddle.transpose(h, [0, 2, 3, 1])
    h = F.relu(nn.Conv2D(8, 8, 3, padding=1, data_format="NHWC")(F.temporal_shift(h, T, 0.125, data_format="NHWC")))
    consensus = paddle.mean(paddle.reshape(paddle.mean(h, axis=[1, 2]), [-1, T, 8]), axis=1)
    return nn.Linear(8, CLASSES)(consensus), {}


def rnn():
    x = paddle.static.data("clip", [-1, T, FEATURES], "float32")
    seq, _ = nn.LSTM(FEATURES, 8)(x)
    weights = F.softmax(nn.Linear(8, 1)(seq), axis=1)
    attended = paddle.sum(seq * weights, axis=1)
    gru, _ = nn.GRU(FEATURES, 8)(x)
    return nn.Linear(16, CLASSES)(paddle.concat([attended, paddle.mean(gru, axis=1)], axis=1)), {}


BUILDERS = {"c3d": c3d, "r2p1d": r2p1d, "tsm": tsm, "rnn": rnn, "c3d_dropout": c3d_dropout}


CLIPS = clips(BATCH * STEPS)  # the same clips for the three clip models, laid out as each reads them


def data(name: str) -> dict:
    x, label = CLIPS
    if name == "c3d_dropout":
        return {}   # c3d's clips
    if name == "r2p1d":
        x = x.transpose(0, 2, 3, 4, 1)
    elif name == "tsm":
        x = x.transpose(0, 2, 1, 3, 4)
    elif name == "rnn":  # per-frame features: the square's centre of mass and the frame's mean, a detector's output
        x = RNG.normal(size=(BATCH * STEPS, T, FEATURES)).astype(np.float32) * 0.3
        x[:, :, 0] += label * np.arange(T)[None, :] * 0.1
    return {"clip": np.ascontiguousarray(x), "label": label}


def momentum_cosine():
    schedule = paddle.optimizer.lr.CosineAnnealingDecay(0.05, T_max=STEPS)
    return paddle.optimizer.Momentum(schedule, 0.9, weight_decay=paddle.regularizer.L2Decay(1e-3))


def train_model(out: Path, name: str, exe) -> dict:
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 47
    with paddle.static.program_guard(main, startup):
        logits, extra = BUILDERS[name]()
        label = paddle.static.data("label", [-1, 1], "int64")
        loss = F.cross_entropy(logits, label)
        if "recon" in extra:
            loss = loss + extra["recon"]
        probs = F.softmax(logits)
        top1 = paddle.static.accuracy(probs, label, k=1)
        top5 = paddle.static.accuracy(probs, label, k=5)
        forward = main.clone()
        optimizer = momentum_cosine()
        optimizer.minimize(loss)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    batches = data(name) or data("c3d")
    names = {"logits": logits.name, "top1": top1.name, "top5": top5.name}
    paddle.seed(47)   # the dropout masks' stream (its uniform_random has no seed of its own)
    scope, losses = train_saving_values(exe, folder, (forward, main, startup), loss, batches, STEPS, BATCH, optimizer)
    with paddle.static.scope_guard(scope):
        first = {k: v[:8] for k, v in batches.items()}
        outputs = exe.run(forward.clone(for_test=True), feed=first, fetch_list=list(names.values()))
    np.savez(folder / "outputs.npz", **dict(zip(names, outputs)))
    if name in ("c3d", "rnn"):  # the tests lay out c3d's clips for r2p1d and tsm (the folder's size)
        np.savez_compressed(folder / "data.npz", **batches)
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    return {**names, "loss": loss.name, "losses": losses,
            "accuracy": [float(outputs[1].item()), float(outputs[2].item())]}


def normal32(size) -> np.ndarray:
    """float64 draws that float32 holds exactly: the arrays compress to about half (the folder's size)."""
    return RNG.normal(size=size).astype(np.float32).astype(np.float64)


def corner_cases() -> dict:
    """name -> (feeds, f(feeds) whose weighted sum is the loss)."""
    x5 = normal32((1, 4, 4, 5, 6))
    pool_x = normal32((1, 1, 5, 6, 7))
    frames = normal32((8, 4, 3, 3))  # 2 clips of 4 frames
    small = normal32((1, 4, 3, 3, 4))
    pool_last = normal32((1, 4, 5, 6, 2))
    return {
        "conv3d_groups_dilation": ({"x": x5, "w": normal32((6, 2, 3, 2, 3))}, lambda f: F.conv3d(
            f["x"], f["w"], stride=(1, 2, 2), padding=(2, 1, 1), dilation=(2, 1, 2), groups=2)),
        "conv3d_ndhwc": ({"x": x5.transpose(0, 2, 3, 4, 1).copy(), "w": normal32((4, 2, 2, 3, 3))},
                         lambda f: F.conv3d(f["x"], f["w"], stride=2, padding=1, dilation=(1, 2, 1), groups=2,
                                            data_format="NDHWC")),
        "maxpool3d_ceil": ({"x": pool_x}, lambda f: F.max_pool3d(f["x"], 3, 2, padding=1, ceil_mode=True)),
        "avgpool3d_ceil_exclusive": ({"x": pool_x}, lambda f: F.avg_pool3d(f["x"], 3, 2, padding=1, ceil_mode=True)),
        "avgpool3d_ceil_inclusive": ({"x": pool_x}, lambda f: F.avg_pool3d(f["x"], (2, 3, 3), (2, 2, 3), padding=1,
                                                                          ceil_mode=True, exclusive=False)),
        "temporal_shift_nchw": ({"x": frames}, lambda f: F.temporal_shift(f["x"], 4, 0.25)),
        "temporal_shift_nhwc": ({"x": frames.transpose(0, 2, 3, 1).copy()},
                                lambda f: F.temporal_shift(f["x"], 4, 0.375, data_format="NHWC")),
        "conv3d_transpose_output_size": ({"x": small, "w": normal32((4, 3, 3, 3, 3))}, lambda f:
                                         F.conv3d_transpose(f["x"], f["w"], stride=2, padding=1,
                                                            output_size=[6, 6, 8])),
        "conv3d_transpose_groups": ({"x": small, "w": normal32((4, 1, 2, 3, 2))}, lambda f:
                                    F.conv3d_transpose(f["x"], f["w"], stride=(1, 2, 2), dilation=(2, 1, 2),
                                                       groups=2, output_padding=(0, 1, 0))),
        "trilinear_align_corners": ({"x": small}, lambda f: F.interpolate(f["x"], size=[5, 4, 7], mode="trilinear",
                                                                          align_corners=True)),
        "trilinear_align_mode0": ({"x": small}, lambda f: F.interpolate(f["x"], scale_factor=[1.5, 2.0, 1.75],
                                                                        mode="trilinear", align_mode=0)),
        "trilinear_align_mode1": ({"x": small}, lambda f: F.interpolate(f["x"], size=[2, 5, 7], mode="trilinear",
                                                                        align_mode=1)),
        "maxpool3d_ndhwc_ceil": ({"x": pool_last}, lambda f: F.max_pool3d(f["x"], 3, 2, padding=1, ceil_mode=True,
                                                                         data_format="NDHWC")),
        "avgpool3d_ndhwc_ceil": ({"x": pool_last}, lambda f: F.avg_pool3d(f["x"], (3, 2, 3), 2, padding=(1, 0, 1),
                                                                         ceil_mode=True, data_format="NDHWC")),
        "adaptive_avgpool3d_ndhwc": ({"x": pool_last}, lambda f: F.adaptive_avg_pool3d(f["x"], (2, 4, 3),
                                                                                      data_format="NDHWC")),
        "adaptive_maxpool3d": ({"x": pool_x}, lambda f: F.adaptive_max_pool3d(f["x"], (2, 4, 3))),
        "conv3d_transpose_ndhwc": ({"x": small.transpose(0, 2, 3, 4, 1).copy(), "w": normal32((4, 2, 2, 3, 3))},
                                   lambda f: F.conv3d_transpose(f["x"], f["w"], stride=2, padding=(1, 0, 1),
                                                                output_size=[5, 8, 8], data_format="NDHWC")),
    }


PADDLE_GRADIENT_PROGRAMS = ("conv3d_groups_dilation", "maxpool3d_ceil", "avgpool3d_ceil_exclusive",
                            "temporal_shift_nchw", "conv3d_transpose_output_size")


def corner_programs(out: Path, exe) -> None:
    results = {}
    for name, (feeds, build) in corner_cases().items():
        forward, main, numbers = weighted_corner(exe, feeds, build, normal32, "weights")
        results.update({f"{name}_{key}": value for key, value in numbers.items() if key != "value"})
        write_gz(out / f"corner_{name}.pb", without_callstacks(forward))
        if name in PADDLE_GRADIENT_PROGRAMS:
            write_gz(out / f"corner_{name}_paddle.pb", without_callstacks(main))
    np.savez_compressed(out / "corners.npz", **results)


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {name: train_model(out, name, exe) for name in BUILDERS}
    corner_programs(out, exe)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


class C3DLayer(nn.Layer):
    """The C3D net as a dygraph Layer (its sublayers made once), with a Dropout3D after the grouped conv."""

    def __init__(self):
        super().__init__()
        self.conv1, self.bn = nn.Conv3D(3, 8, 3, padding=1), nn.BatchNorm3D(8)
        self.conv2 = nn.Conv3D(8, 8, 3, padding=2, dilation=2, groups=4)
        self.drop = nn.Dropout3D(0.3)
        self.maxpool, self.avgpool = nn.MaxPool3D(2, 2, ceil_mode=True), nn.AvgPool3D(3, 2, padding=1, ceil_mode=True)
        self.head = nn.Linear(8, CLASSES)

    def forward(self, clip):
        h = F.relu(self.conv2(F.relu(self.bn(self.conv1(clip)))))
        h = self.avgpool(self.maxpool(self.drop(h)))
        return self.head(paddle.flatten(F.adaptive_avg_pool3d(h, 1), 1))


def main_pir(out: Path) -> None:
    """The C3D Layer (eval mode, Dropout3D in it) saved by paddle.jit.save as PIR; its dygraph outputs and Paddle
    Inference's on the first 4 clips of c3d's data."""
    paddle.seed(47)
    model = C3DLayer()
    model.eval()
    first = np.load(out / "c3d" / "data.npz")["clip"][:4]
    dygraph = model(paddle.to_tensor(first)).numpy()
    spec = [paddle.static.InputSpec([None, 3, T, SIZE, SIZE], "float32", "clip")]
    paddle.jit.save(model, str(out / "c3d_pir"), input_spec=spec)
    exported = out / "c3d_pir.json"
    config = paddle.inference.Config(str(exported), str(out / "c3d_pir.pdiparams"))
    config.disable_mkldnn()
    predictor = paddle.inference.create_predictor(config)
    predictor.get_input_handle(predictor.get_input_names()[0]).copy_from_cpu(first)
    predictor.run()
    predicted = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    gzip_file(exported)
    np.savez(out / "predictor_pir.npz", dygraph=dygraph, logits=predicted, finetune_losses=finetune(model, out))


def finetune(model, out: Path) -> np.ndarray:
    """The saved Layer fine-tuned in eval mode (running statistics, no dropout), as gradc compile --add-loss keeps a
    saved model: Momentum(CosineAnnealingDecay(0.05, 4), 0.9, L2Decay(1e-3)) over c3d's 4 batches, each step's loss."""
    data = np.load(out / "c3d" / "data.npz")
    schedule = paddle.optimizer.lr.CosineAnnealingDecay(0.05, T_max=STEPS)
    optimizer = paddle.optimizer.Momentum(schedule, 0.9, parameters=model.parameters(),
                                          weight_decay=paddle.regularizer.L2Decay(1e-3))
    losses = []
    for step in range(STEPS):
        batch = slice(step * BATCH, (step + 1) * BATCH)
        loss = F.cross_entropy(model(paddle.to_tensor(data["clip"][batch])), paddle.to_tensor(data["label"][batch]))
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        schedule.step()
        losses.append(float(loss))
    return np.array(losses)


if __name__ == "__main__":
    script_main(main, main_pir)

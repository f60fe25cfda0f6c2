"""The OCR engineer's programs of docs/tools.md's 'An OCR engineer's week', written with Paddle 3.3.1's layers in
legacy static mode (FLAGS_enable_pir_api=0), on synthetic text lines (1 x 16 x 32 images of 2 to 5 glyphs, each
class a fixed random 8 x 5 pattern at a jittered place, with noise; labels padded with 0, lengths fed as tensors,
each image's own width / 2 as its input length):

- crnn_lstm: Conv2D-BatchNorm-ReLU-MaxPool(2), again with MaxPool((2, 1)), then with MaxPool((4, 1)) so the
  height collapses, the [B, C, 1, W] map squeezed and transposed to [B, T, C], nn.LSTM(16, 8, direction='bidirect'),
  a Linear to 11 classes, F.ctc_loss over [T, B, C] (blank 0, reduction mean), greedy decoding in the program
  (argmax, ctc_align with the input lengths) and the edit distances to the labels (F.loss.edit_distance), the
  batch's CER; Adam under PiecewiseDecay([3], [0.01, 0.003]) with ClipGradByGlobalNorm(1.0), 6 steps of 8 lines.
- crnn_gru: the same stack with nn.GRU(direction='bidirect'), blank 10 (labels 0 ... 9), reduction sum,
  norm_by_times; Adam under CosineAnnealingDecay(0.01, 6) with ClipGradByNorm(1.0).
- tfm: the conv stack, nn.TransformerEncoder (1 layer of width 16, 2 heads, feed-forward 32), CTC (blank 0, mean);
  AdamW(0.003, weight decay 0.01).
Each: forward.pb (before minimize), train.pb (Paddle's), startup.pb, init.npz, data.npz, trained.npz;
outputs.npz and outputs_init.npz: the logits, decodes, distances and CER of the first batch on the trained and the
initial weights; meta.json: the losses and CERs of each step, the names, and on the initial weights in test mode the
whole set's CER and loss (one batch of all 48 lines) and each batch of 8's CER.
- ctc64_<case>.pb: float64 sum(w * ctc_loss(logits, ..., reduction='none')) with paddle.static.gradients of the
  logits [6, 5, 5] (cases: blank 0 or 4, norm_by_times or not, rows with repeats, a tight fit, an impossible label,
  an empty label); ctc64.npz: feeds and Paddle's losses and gradients.
The PIR half (this script in a second interpreter): crnn_pir.json / .pdiparams, the dygraph CRNN-LSTM saved by
paddle.jit.save, and the Predictor's and dygraph's outputs on 8 lines (predictor_pir.npz).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week40.py tests/data/paddle/user_week40
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import gzip_file, pir_half, script_main, without_callstacks, write_gz, write_programs_gz

HEIGHT, WIDTH, GLYPHS, MAX_LABEL, BATCH, STEPS = 16, 32, 10, 6, 8, 6
RNG = np.random.default_rng(40)
PATTERNS = RNG.uniform(0, 1, (GLYPHS, 8, 5)) > 0.5


def lines(count: int, first_class: int) -> dict:
    """Images of 2 to 5 glyphs of classes first_class ... first_class + 9, their padded labels and lengths; the
    input length is half the inked width rounded up (the map's time steps an image fills)."""
    images = (RNG.integers(-1, 2, (count, 1, HEIGHT, WIDTH)) * 0.125).astype(np.float32)   # noise that gzips
    labels = np.zeros((count, MAX_LABEL), np.int32)
    label_len, input_len = np.zeros(count, np.int64), np.zeros(count, np.int64)
    for i in range(count):
        size = RNG.integers(2, 6)
        glyphs = RNG.integers(0, GLYPHS, size)
        labels[i, :size], label_len[i] = glyphs + first_class, size
        for j, glyph in enumerate(glyphs):
            top = RNG.integers(2, 7)
            images[i, 0, top:top + 8, 6 * j + 1:6 * j + 6] += PATTERNS[glyph]
        input_len[i] = 3 * size + 1   # the inked columns 0 ... 6 * size, halved
    return {"image": images, "label": labels, "label_len": label_len, "input_len": input_len}


def conv_stack(image):
    x = image
    for channels_in, channels, pool in [(1, 8, (2, 2)), (8, 16, (2, 1)), (16, 16, (4, 1))]:
        x = nn.Conv2D(channels_in, channels, 3, padding=1)(x)
        x = F.relu(nn.BatchNorm2D(channels)(x))
        x = nn.MaxPool2D(pool, pool)(x)
    return paddle.transpose(paddle.squeeze(x, 2), [0, 2, 1])   # [B, T = W / 2, C]: height collapsed


def recogniser(kind: str, image):
    seq = conv_stack(image)
    if kind == "tfm":
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0)
        seq = nn.TransformerEncoder(layer, 1)(seq)
    else:
        rnn = nn.LSTM(16, 8, direction="bidirect") if kind == "crnn_lstm" else nn.GRU(16, 8, direction="bidirect")
        seq, _ = rnn(seq)
    return nn.Linear(16, GLYPHS + 1)(seq)   # [B, T, classes + blank]


def greedy(logits, input_len, blank: int):
    """argmax per step, ctc_align (merge repeats, drop the blank) within each input length: [B, T], lengths."""
    from paddle.base.layer_helper import LayerHelper
    best = paddle.argmax(logits, axis=2)
    helper = LayerHelper("ctc_align")
    tokens, lengths = (helper.create_variable_for_type_inference("int64") for _ in range(2))
    helper.append_op(type="ctc_align", inputs={"Input": [best], "InputLength": [input_len]},
                     outputs={"Output": [tokens], "OutputLength": [lengths]},
                     attrs={"blank": blank, "merge_repeated": True, "padding_value": 0})
    return tokens, lengths


CONFIG = {"crnn_lstm": {"blank": 0, "reduction": "mean", "norm": False, "first": 1},
          "crnn_gru": {"blank": 10, "reduction": "sum", "norm": True, "first": 0},
          "tfm": {"blank": 0, "reduction": "mean", "norm": False, "first": 1}}


def ocr_program(kind: str):
    cfg = CONFIG[kind]
    image = paddle.static.data("image", [-1, 1, HEIGHT, WIDTH], "float32")
    label = paddle.static.data("label", [-1, MAX_LABEL], "int32")
    label_len = paddle.static.data("label_len", [-1], "int64")
    input_len = paddle.static.data("input_len", [-1], "int64")
    logits = recogniser(kind, image)
    loss = F.ctc_loss(paddle.transpose(logits, [1, 0, 2]), label, input_len, label_len, blank=cfg["blank"],
                      reduction=cfg["reduction"], norm_by_times=cfg["norm"])
    tokens, lengths = greedy(logits, input_len, cfg["blank"])
    distance, _ = F.loss.edit_distance(tokens, paddle.cast(label, "int64"), normalized=False,
                                       input_length=paddle.squeeze(lengths, 1), label_length=label_len)
    cer = paddle.sum(distance) / paddle.sum(paddle.cast(label_len, "float32"))
    return loss, {"logits": logits.name, "tokens": tokens.name, "lengths": lengths.name,
                  "distance": distance.name, "cer": cer.name}


def train_model(out: Path, name: str, optimizer, exe) -> dict:
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 40
    with paddle.static.program_guard(main, startup):
        loss, names = ocr_program(name)
        forward = main.clone()
        chosen = optimizer()
        chosen.minimize(loss)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    data = lines(BATCH * STEPS, CONFIG[name]["first"])
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        persistable = [v.name for v in forward.list_vars() if v.persistable and v.name not in ("feed", "fetch")]
        initial = {n: np.array(scope.var(n).get_tensor()) for n in persistable}
        np.savez_compressed(folder / "init.npz", **initial)
        test = forward.clone(for_test=True)   # the initial weights' CER and loss in test mode, over the set at once
        set_cer, set_loss = exe.run(test, feed=data, fetch_list=[names["cer"], loss.name])
        batch_cers = [float(exe.run(test, feed={k: v[step * BATCH:(step + 1) * BATCH] for k, v in data.items()},
                                    fetch_list=[names["cer"]])[0]) for step in range(STEPS)]
        first = {k: v[:BATCH] for k, v in data.items()}
        fetches = [loss.name, *names.values()]
        np.savez_compressed(folder / "outputs_init.npz", **dict(zip(["loss", *names], exe.run(forward, feed=first,
                                                                                      fetch_list=fetches))))
        for name, value in initial.items():   # that run moved batch norm's running statistics: training starts anew
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        losses, cers = [], []
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in data.items()}
            value, cer = exe.run(main, feed=feed, fetch_list=[loss.name, names["cer"]])
            losses.append(float(value))
            cers.append(float(cer))
            chosen._learning_rate.step() if isinstance(chosen._learning_rate, paddle.optimizer.lr.LRScheduler) \
                else None
        np.savez_compressed(folder / "trained.npz", **{n: np.array(scope.var(n).get_tensor()) for n in persistable})
        outputs = exe.run(forward, feed=first, fetch_list=fetches)
    np.savez_compressed(folder / "outputs.npz", **dict(zip(["loss", *names], outputs)))
    np.savez_compressed(folder / "data.npz", **data)
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    return {**names, "loss": loss.name, "losses": losses, "cers": cers, "set_cer": float(set_cer),
            "set_loss": float(set_loss), "batch_cers": batch_cers}


CTC_CASES = {"blank0": (0, False), "blank0_norm": (0, True), "blank4": (4, False), "blank4_norm": (4, True)}


def ctc_float64(out: Path, exe) -> None:
    """Paddle's warpctc loss and gradient in float64 at the corners: repeats (a blank between them needed), a label
    that just fits, one longer than its input (no alignment), an empty label."""
    steps, batch, classes = 6, 5, 5
    logits = RNG.normal(0, 1.5, (steps, batch, classes))
    input_len = np.array([6, 5, 4, 3, 6], np.int64)
    label_len = np.array([3, 2, 3, 4, 0], np.int64)
    results = {"logits": logits, "input_len": input_len, "label_len": label_len, "w": RNG.uniform(0.5, 1.5, batch)}
    for case, (blank, norm) in CTC_CASES.items():
        shift = 0 if blank == 4 else 1   # labels are the classes other than the blank
        base = np.array([[0, 1, 1, 0], [2, 2, 0, 0], [0, 1, 0, 0], [0, 1, 2, 3], [0, 0, 0, 0]])
        results[f"{case}_label"] = label = (base + shift).astype(np.int32)
        main = paddle.static.Program()
        with paddle.static.program_guard(main, paddle.static.Program()):
            x = paddle.static.data("logits", [steps, batch, classes], "float64")
            x.stop_gradient = False
            lab = paddle.static.data("label", [batch, 4], "int32")
            il = paddle.static.data("input_len", [batch], "int64")
            ll = paddle.static.data("label_len", [batch], "int64")
            w = paddle.static.data("w", [batch], "float64")
            per = F.ctc_loss(x, lab, il, ll, blank=blank, reduction="none", norm_by_times=norm)
            total = paddle.sum(per * w)
            forward = main.clone()
            (grad,) = paddle.static.gradients(total, x)
        feed = {"logits": logits, "label": label, "input_len": input_len, "label_len": label_len, "w": results["w"]}
        results[f"{case}_loss"], results[f"{case}_grad"] = exe.run(main, feed=feed, fetch_list=[per, grad])
        write_gz(out / f"ctc64_{case}.pb", without_callstacks(forward))
        write_gz(out / f"ctc64_{case}_paddle.pb", without_callstacks(main))
    np.savez(out / "ctc64.npz", **results)


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    optimizers = {
        "crnn_lstm": lambda: paddle.optimizer.Adam(paddle.optimizer.lr.PiecewiseDecay([3], [0.01, 0.003]),
                                                   grad_clip=nn.ClipGradByGlobalNorm(1.0)),
        "crnn_gru": lambda: paddle.optimizer.Adam(paddle.optimizer.lr.CosineAnnealingDecay(0.01, STEPS),
                                                  grad_clip=nn.ClipGradByNorm(1.0)),
        "tfm": lambda: paddle.optimizer.AdamW(0.003, weight_decay=0.01)}
    meta = {name: train_model(out, name, make, exe) for name, make in optimizers.items()}
    ctc_float64(out, exe)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


class Crnn(nn.Layer):
    def __init__(self):
        super().__init__()
        self.convs = nn.LayerList([nn.Sequential(nn.Conv2D(a, b, 3, padding=1), nn.BatchNorm2D(b), nn.ReLU(),
                                                 nn.MaxPool2D(p, p))
                                   for a, b, p in [(1, 8, (2, 2)), (8, 16, (2, 1)), (16, 16, (4, 1))]])
        self.rnn = nn.LSTM(16, 8, direction="bidirect")
        self.head = nn.Linear(16, GLYPHS + 1)

    def forward(self, image):
        x = image
        for conv in self.convs:
            x = conv(x)
        seq, _ = self.rnn(paddle.transpose(paddle.squeeze(x, 2), [0, 2, 1]))
        logits = self.head(seq)
        return F.softmax(logits, -1), paddle.argmax(logits, -1)


def main_pir(out: Path) -> None:
    paddle.seed(40)
    model = Crnn()
    model.eval()
    images = lines(BATCH, 1)["image"]
    dygraph = [t.numpy() for t in model(paddle.to_tensor(images))]
    spec = [paddle.static.InputSpec([None, 1, HEIGHT, WIDTH], "float32", "image")]
    paddle.jit.save(model, str(out / "crnn_pir"), input_spec=spec)
    from paddle_programs import predict
    outputs = predict(str(out / "crnn_pir.json"), str(out / "crnn_pir.pdiparams"), {"image": images})
    gzip_file(out / "crnn_pir.json")
    np.savez_compressed(out / "predictor_pir.npz", image=images, **outputs,
                        **{f"dygraph_{i}": v for i, v in enumerate(dygraph)})


if __name__ == "__main__":
    script_main(main, main_pir)

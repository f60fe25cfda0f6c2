"""The OCR engineer's programs of docs/tools.md's 'An OCR engineer's week (2026-12-05)', written with Paddle 3.3.1's
layers, on synthetic text lines: 1 x 8 x 32 grey images of 3 to 5 glyphs, each of 8 classes a fixed random 6 x 4
pattern at a jittered place, with noise; labels 1 ... 8 padded with 0 to 5, their lengths fed; blank 0.

- crnn (legacy static mode, FLAGS_enable_pir_api=0): Conv2D(1, 8)-ReLU-MaxPool(2), Conv2D(8, 16)-BatchNorm-ReLU-
  MaxPool((4, 1)) so the height collapses, the [B, 16, 1, 16] map squeezed and transposed to [B, T = 16, 16] (the
  width the time axis), nn.GRU(16, 12, direction='bidirect'), a Linear to 9 classes (8 glyphs + blank); every line's
  input length T from paddle.full_like; nn.CTCLoss(blank=0, reduction='mean') over [T, B, C] and the variable label
  lengths; in the program its greedy decode (argmax, ctc_align within the input lengths), F.loss.edit_distance to the
  labels, the batch's CER (sum of distances / sum of label lengths) and sequence accuracy (distance 0); Adam(0.01),
  6 steps of 8 lines. crnn/: forward.pb (before minimize), train.pb (Paddle's), startup.pb, init.npz, trained.npz,
  data.npz (48 lines), test.npz (20 more lines); final.npz: the weights after 110 more steps on other lines, which
  read half the test lines right; outputs.npz: the final forward's probabilities, tokens, lengths,
  distances, CER and sequence accuracy on test.npz in test mode; meta.json: the names, the losses, CERs and sequence
  accuracies of each step.
- crnn/infer.pb: the inference program a user saves for deployment, image -> softmax probabilities, as PaddleOCR
  exports a recogniser (the decode is its post-processing), in test mode; meta.json's finetune_losses: Paddle's
  training program from the final weights with Adam's state anew, 6 steps of the 48 lines (a shipped model fine-tuned).
The PIR half (this script in a second interpreter): the same CRNN built in PIR static mode and minimized by Adam(0.01)
(crnn_pir_train.json, crnn_pir_startup.json), its losses (pir.json,
the legacy half's: its startup draws the same) and trained parameters (pir_trained.npz; Paddle leaves the GRU's
flat buffer gru_0.w_0 zero).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week62.py tests/data/paddle/user_week62
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
    persistable_values,
    pir_half,
    pir_minimized,
    script_main,
    write_programs_gz,
)

HEIGHT, WIDTH, GLYPHS, MAX_LABEL, BATCH, STEPS, TEST, SEED, MORE_STEPS = 8, 32, 8, 5, 8, 6, 20, 62, 110
PATTERNS = np.random.default_rng(620).uniform(0, 1, (GLYPHS, 6, 4)) > 0.5


def lines(rng, count: int) -> dict:
    """Images of 3 to 5 glyphs (classes 1 ... 8), their labels padded with 0 and their lengths."""
    images = (rng.integers(-1, 2, (count, 1, HEIGHT, WIDTH)) * 0.125).astype(np.float32)   # noise that gzips
    labels = np.zeros((count, MAX_LABEL), np.int32)
    label_len = np.zeros(count, np.int64)
    for i in range(count):
        size = rng.integers(3, 6)
        glyphs = rng.integers(0, GLYPHS, size)
        labels[i, :size], label_len[i] = glyphs + 1, size
        for j, glyph in enumerate(glyphs):
            top, left = rng.integers(0, 3), 6 * j + rng.integers(0, 3)
            images[i, 0, top:top + 6, left:left + 4] += PATTERNS[glyph]
    return {"image": images, "label": labels, "label_len": label_len}


def recogniser(image):
    """[B, T, 9] logits: the CRNN of the module's docstring."""
    x = F.relu(nn.Conv2D(1, 8, 3, padding=1)(image))
    x = nn.MaxPool2D(2, 2)(x)
    x = F.relu(nn.BatchNorm2D(16)(nn.Conv2D(8, 16, 3, padding=1)(x)))
    x = nn.MaxPool2D((4, 1), (4, 1))(x)
    seq = paddle.transpose(paddle.squeeze(x, 2), [0, 2, 1])   # [B, T = W / 2, C]: the width is the time axis
    seq, _ = nn.GRU(16, 12, direction="bidirect")(seq)
    return nn.Linear(24, GLYPHS + 1)(seq)


def time_lengths(logits):
    """Every line's input length, the map's T, as an int64 [B] (PaddleOCR's CTCLoss feeds [T] * B)."""
    return paddle.full_like(logits[:, 0, 0], logits.shape[1], dtype="int64")


def greedy(logits, input_len):
    """argmax per step and ctc_align (merge repeats, drop the blank 0) within the input lengths: tokens [B, T] padded
    with 0 and their lengths [B, 1]."""
    best = paddle.argmax(logits, axis=2)
    if paddle.framework.in_pir_mode():
        return paddle._C_ops.ctc_align(best, paddle.unsqueeze(input_len, 1), 0, True, 0)
    from paddle.base.layer_helper import LayerHelper
    helper = LayerHelper("ctc_align")
    tokens, lengths = (helper.create_variable_for_type_inference("int64") for _ in range(2))
    helper.append_op(type="ctc_align", inputs={"Input": [best], "InputLength": [paddle.unsqueeze(input_len, 1)]},
                     outputs={"Output": [tokens], "OutputLength": [lengths]},
                     attrs={"blank": 0, "merge_repeated": True, "padding_value": 0})
    return tokens, lengths


def ocr_program():
    image = paddle.static.data("image", [-1, 1, HEIGHT, WIDTH], "float32")
    label = paddle.static.data("label", [-1, MAX_LABEL], "int32")
    label_len = paddle.static.data("label_len", [-1], "int64")
    logits = recogniser(image)
    input_len = time_lengths(logits)
    loss = nn.CTCLoss(blank=0, reduction="mean")(paddle.transpose(logits, [1, 0, 2]), label, input_len, label_len)
    return loss, logits, label, label_len, input_len


def crnn_legacy():
    loss, logits, label, label_len, input_len = ocr_program()
    probs = F.softmax(logits, axis=-1)
    tokens, lengths = greedy(logits, input_len)
    distance, _ = F.loss.edit_distance(tokens, paddle.cast(label, "int64"), normalized=False,
                                       input_length=paddle.squeeze(lengths, 1), label_length=label_len)
    cer = paddle.sum(distance) / paddle.sum(paddle.cast(label_len, "float32"))
    seq_acc = paddle.mean(paddle.cast(paddle.equal(distance, paddle.zeros_like(distance)), "float32"))
    return loss, {"probs": probs.name, "tokens": tokens.name, "lengths": lengths.name, "distance": distance.name,
                  "cer": cer.name, "seq_acc": seq_acc.name}


def inference_program():
    """image -> softmax probabilities [B, T, 9] in test mode, the names the training program gives its layers."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        image = paddle.static.data("image", [-1, 1, HEIGHT, WIDTH], "float32")
        probs = F.softmax(recogniser(image), axis=-1)
    return main.clone(for_test=True), probs.name


def fine_tuned(exe, train, startup, loss, data: dict, final: Path) -> list[float]:
    """A fine-tune of the final weights as a user resumes from a shipped model: a new scope (Adam's state anew), the
    final weights set, the 48 training lines again; the losses."""
    with paddle.static.scope_guard(paddle.static.Scope()):
        exe.run(startup)
        for name, value in np.load(final).items():
            paddle.static.global_scope().var(name).get_tensor().set(value, paddle.CPUPlace())
        return [float(exe.run(train, feed={k: v[step * BATCH:(step + 1) * BATCH] for k, v in data.items()},
                              fetch_list=[loss.name])[0]) for step in range(STEPS)]


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    rng = np.random.default_rng(SEED)
    data, test = lines(rng, BATCH * STEPS), lines(rng, TEST)
    with paddle.utils.unique_name.guard():
        train, startup, forward, optimizer, (loss, names) = minimized(crnn_legacy, lambda: paddle.optimizer.Adam(0.01),
                                                                      seed=SEED)
    folder = out / "crnn"
    folder.mkdir(parents=True, exist_ok=True)
    infer, probs = inference_program()
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez_compressed(folder / "init.npz", **legacy_persistables(forward, scope))
        metrics = []
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in data.items()}
            metrics.append([float(v) for v in exe.run(train, feed=feed,
                                                      fetch_list=[loss.name, names["cer"], names["seq_acc"]])])
        np.savez_compressed(folder / "trained.npz", **legacy_persistables(forward, scope))
        more = lines(rng, BATCH * MORE_STEPS)   # on, to weights that read some lines right: the metrics' test
        for step in range(MORE_STEPS):
            exe.run(train, feed={k: v[step * BATCH:(step + 1) * BATCH] for k, v in more.items()})
        np.savez_compressed(folder / "final.npz", **legacy_persistables(forward, scope))
        fetched = exe.run(forward.clone(for_test=True), feed=test, fetch_list=[loss.name, *names.values()])
        (infer_probs,) = exe.run(infer, feed={"image": test["image"]}, fetch_list=[probs])
    np.savez_compressed(folder / "outputs.npz", **dict(zip(["loss", *names], fetched)), infer_probs=infer_probs)
    finetune = fine_tuned(exe, train, startup, loss, data, folder / "final.npz")
    np.savez_compressed(folder / "data.npz", **data)
    np.savez_compressed(folder / "test.npz", **test)
    write_programs_gz(folder, {"forward": forward, "train": train, "startup": startup, "infer": infer})
    losses, cers, accs = (list(column) for column in zip(*metrics))
    meta = {**names, "loss": loss.name, "infer_probs": probs, "losses": losses, "cers": cers, "seq_accs": accs,
            "finetune_losses": finetune}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def crnn_pir():
    return ocr_program()[0]


def main_pir(out: Path) -> None:
    rng = np.random.default_rng(SEED)
    data = lines(rng, BATCH * STEPS)
    main, startup, loss, _ = pir_minimized(out, "crnn_", crnn_pir, lambda: paddle.optimizer.Adam(0.01), SEED)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    legacy_trained = np.load(out / "crnn" / "trained.npz")
    losses = [float(exe.run(main, feed={k: v[step * BATCH:(step + 1) * BATCH] for k, v in data.items()},
                            fetch_list=[loss])[0]) for step in range(STEPS)]
    trained = {k: v for k, v in persistable_values(main).items() if k in legacy_trained}   # the model's, no state
    np.savez_compressed(out / "pir_trained.npz", **trained)
    (out / "pir.json").write_text(json.dumps({"losses": losses}, indent=1) + "\n")


if __name__ == "__main__":
    script_main(main, main_pir)

"""The text-classification engineer's programs of docs/tools.md's 'A text-classification engineer's week', written with
Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), on token ids of a vocabulary of 50 (0 the
padding), sentences 4 to 12 tokens long, each batch padded to its own longest (6, 12, 8, 10, 5 at most):

- textcnn: nn.Embedding(padding_idx=0), nn.Conv1D of widths 2, 3 and 4, each window reaching into the padding set
  to -1e9 before the max over time, Dropout(0), concat, Linear to 4 classes; F.cross_entropy with class weights and
  label_smoothing 0.1 (of a one-hot label: in legacy mode F.cross_entropy smooths float labels only);
  Adam(0.01, grad_clip=ClipGradByNorm(1.0)).
- bilstm: the embedding through nn.LSTM(direction='bidirect', sequence_length=lengths), an attention score a token
  (Linear), -1e9 past each length, softmax over time, the weighted sum, Linear to 4 classes; F.cross_entropy with
  class weights; Momentum(PiecewiseDecay([2, 4], [0.1, 0.05, 0.01]), 0.9).
- fasttext: a bag of unigram and hashed bigram ids (0 the padding), their embeddings summed (paddle.sum) and divided
  by the bag's size, Linear to 5 labels; F.binary_cross_entropy_with_logits with pos_weight; Adam(0.01).

Each model: forward.pb (main.clone() before minimize), train.pb (Paddle's own), startup.pb, init.npz, trained.npz,
losses in meta.json; outputs.npz: the logits of the first batch (padded to its longest), of every batch (all_logits)
and of one sentence of 20 tokens, longer than any trained on (trained weights). PIR half: each model built and
minimized in PIR static mode, NAME_pir_train.json / NAME_pir_startup.json, NAME_pir_init.npz, and its losses on the
same batches in pir_losses.json. data.npz holds the sentences as a data set of sequences: ids flat with their offsets
ids@LOD0 (bag, bag@LOD0 for fasttext), lengths and labels; padded.npz the same padded to the longest of all.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week52.py tests/data/paddle/user_week52
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

VOCAB, EMB, HIDDEN, CLASSES, LABELS, STEPS, BATCH, LONGEST, LONG = 50, 8, 6, 4, 5, 5, 8, 12, 20
RNG = np.random.default_rng(52)
CLASS_WEIGHTS = np.array([1.0, 2.0, 0.5, 1.5], np.float32)
POS_WEIGHT = np.array([1.0, 3.0, 2.0, 0.5, 1.5], np.float32)


def inputs(name="ids"):
    return paddle.static.data(name, [-1, -1], "int64"), paddle.static.data("lengths", [-1], "int64")


def textcnn():
    ids, lengths = inputs()
    label = paddle.static.data("label", [-1, 1], "int64")
    embedded = paddle.transpose(nn.Embedding(VOCAB, EMB, padding_idx=0)(ids), [0, 2, 1])
    pooled = []
    for width in (2, 3, 4):
        conv = F.relu(nn.Conv1D(EMB, HIDDEN, width)(embedded))  # [B, H, T - width + 1]
        positions = paddle.arange(paddle.shape(conv)[2], dtype="int64")
        inside = paddle.unsqueeze(positions, 0) <= paddle.unsqueeze(lengths - width, 1)
        masked = conv + paddle.unsqueeze(1.0 - paddle.cast(inside, "float32"), 1) * -1e9
        pooled.append(paddle.max(masked, axis=2))
    logits = nn.Linear(3 * HIDDEN, CLASSES)(nn.Dropout(0.0)(paddle.concat(pooled, axis=1)))
    target = F.one_hot(paddle.squeeze(label, -1), CLASSES)  # the legacy label_smooth takes float labels only
    loss = F.cross_entropy(logits, target, soft_label=True, weight=paddle.assign(CLASS_WEIGHTS), label_smoothing=0.1)
    return loss, logits


def bilstm():
    ids, lengths = inputs()
    label = paddle.static.data("label", [-1, 1], "int64")
    embedded = nn.Embedding(VOCAB, EMB, padding_idx=0)(ids)
    states, _ = nn.LSTM(EMB, HIDDEN, direction="bidirect")(embedded, sequence_length=lengths)
    scores = paddle.squeeze(nn.Linear(2 * HIDDEN, 1)(states), -1)  # [B, T]
    positions = paddle.arange(paddle.shape(scores)[1], dtype="int64")
    inside = paddle.unsqueeze(positions, 0) < paddle.unsqueeze(lengths, 1)
    weights = F.softmax(scores + (1.0 - paddle.cast(inside, "float32")) * -1e9, axis=1)
    context = paddle.sum(states * paddle.unsqueeze(weights, -1), axis=1)
    logits = nn.Linear(2 * HIDDEN, CLASSES)(context)
    loss = F.cross_entropy(logits, label, weight=paddle.assign(CLASS_WEIGHTS))
    return loss, logits


def fasttext():
    bag, lengths = inputs("bag")
    labels = paddle.static.data("labels", [-1, LABELS], "float32")
    summed = paddle.sum(nn.Embedding(VOCAB, EMB, padding_idx=0)(bag), axis=1)
    mean = summed / paddle.unsqueeze(paddle.cast(lengths, "float32"), 1)
    logits = nn.Linear(EMB, LABELS)(mean)
    loss = F.binary_cross_entropy_with_logits(logits, labels, pos_weight=paddle.assign(POS_WEIGHT))
    return loss, logits


MODELS = {"textcnn": textcnn, "bilstm": bilstm, "fasttext": fasttext}
OPTIMIZERS = {"textcnn": lambda: paddle.optimizer.Adam(0.01, grad_clip=nn.ClipGradByNorm(1.0)),
              "bilstm": lambda: paddle.optimizer.Momentum(paddle.optimizer.lr.PiecewiseDecay([2, 4], [0.1, 0.05, 0.01]),
                                                          0.9),
              "fasttext": lambda: paddle.optimizer.Adam(0.01)}


def sentences(count: int) -> list[np.ndarray]:
    """4 tokens (the widest filter) up to a longest that differs from batch to batch."""
    caps = np.repeat([6, LONGEST, 8, 10, 5], BATCH)
    return [RNG.integers(1, VOCAB, size=RNG.integers(4, cap + 1)) for cap in caps[:count]]


def data(name: str, count: int) -> dict:
    """Sequences (flat ids and offsets), lengths and labels; the labels follow a few marker tokens."""
    tokens = sentences(count)
    if name == "fasttext":
        bags = [np.concatenate([t, 1 + (t[:-1] * 7 + t[1:]) % (VOCAB - 1)]) for t in tokens]
        labels = np.array([[np.isin(k * 9 + np.arange(1, 10), t).any() for k in range(LABELS)] for t in tokens])
        return {"bag": np.concatenate(bags), "bag@LOD0": np.cumsum([0] + [len(b) for b in bags]),
                "lengths": np.array([len(b) for b in bags]), "labels": labels.astype(np.float32)}
    label = np.array([int(np.sum(t < 13) + 2 * np.sum(t > 37)) % CLASSES for t in tokens]).reshape(-1, 1)
    return {"ids": np.concatenate(tokens), "ids@LOD0": np.cumsum([0] + [len(t) for t in tokens]),
            "lengths": np.array([len(t) for t in tokens]), "label": label}


def padded(arrays: dict, rows: range, width: int | None = None) -> dict:
    """The examples ``rows`` of a data set of sequences, padded with 0 to their longest (or ``width``)."""
    flat = next(name for name in arrays if name + "@LOD0" in arrays)
    offsets = arrays[flat + "@LOD0"]
    pieces = [arrays[flat][offsets[i]:offsets[i + 1]] for i in rows]
    out = np.zeros((len(pieces), width or max(map(len, pieces))), np.int64)
    for row, piece in enumerate(pieces):
        out[row, :len(piece)] = piece
    rest = {k: v[rows.start:rows.stop] for k, v in arrays.items() if k not in (flat, flat + "@LOD0")}
    return {flat: out, **rest}


def train_model(out: Path, name: str, exe) -> dict:
    main, startup, forward, optimizer, (loss, logits) = minimized(MODELS[name], OPTIMIZERS[name], seed=52)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    arrays = data(name, STEPS * BATCH)
    scope, losses, widths = paddle.static.Scope(), [], []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(folder / "init.npz", **legacy_persistables(forward, scope))
        for step in range(STEPS):
            feed = padded(arrays, range(step * BATCH, (step + 1) * BATCH))
            widths.append(int(next(iter(feed.values())).shape[1]))
            (value,) = exe.run(main, feed=feed, fetch_list=[loss.name])
            losses.append(float(value))
            if isinstance(optimizer._learning_rate, paddle.optimizer.lr.LRScheduler):
                optimizer._learning_rate.step()
        np.savez(folder / "trained.npz", **legacy_persistables(forward, scope))
        first = padded(arrays, range(BATCH))
        (batch_logits,) = exe.run(forward, feed=first, fetch_list=[logits.name])
        every = np.concatenate([exe.run(forward, feed=padded(arrays, range(start, start + BATCH)),
                                        fetch_list=[logits.name])[0] for start in range(0, STEPS * BATCH, BATCH)])
        long_ids = np.asarray(RNG.integers(1, VOCAB, size=(1, LONG)), np.int64)
        extra = {"labels": np.zeros((1, LABELS), np.float32)} if name == "fasttext" else {"label": np.zeros((1, 1),
                                                                                                           np.int64)}
        long_feed = {"bag" if name == "fasttext" else "ids": long_ids, "lengths": np.array([LONG]), **extra}
        (long_logits,) = exe.run(forward, feed=long_feed, fetch_list=[logits.name])
    np.savez(folder / "outputs.npz", logits=batch_logits, long_logits=long_logits, long_ids=long_ids,
             all_logits=every)
    np.savez_compressed(folder / "data.npz", **arrays)
    np.savez_compressed(folder / "padded.npz", **padded(arrays, range(STEPS * BATCH)))
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    return {"loss": loss.name, "logits": logits.name, "losses": losses, "widths": widths}


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    out.mkdir(parents=True, exist_ok=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {name: train_model(out, name, exe) for name in MODELS}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def pir_training(out: Path, name: str) -> list[float]:
    """The model built and minimized in PIR static mode: NAME_pir_train.json (the loss fetched as "loss") /
    NAME_pir_startup.json, its initial values NAME_pir_init.npz, its losses on the legacy run's batches."""
    main, startup, loss, optimizer = pir_minimized(out, f"{name}_", lambda: MODELS[name]()[0], OPTIMIZERS[name], 52)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    arrays, losses = dict(np.load(out / name / "data.npz")), []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        names = [op.attrs()["parameter_name"] for op in main.global_block().ops if op.name() == "builtin.parameter"]
        np.savez(out / f"{name}_pir_init.npz", **{key: np.array(scope.var(key).get_tensor()) for key in names})
        for step in range(STEPS):
            feed = padded(arrays, range(step * BATCH, (step + 1) * BATCH))
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0]))
            if isinstance(optimizer._learning_rate, paddle.optimizer.lr.LRScheduler):
                optimizer._learning_rate.step()
    return losses


def main_pir(out: Path) -> None:
    """The three models trained in PIR static mode on the legacy run's batches: pir_losses.json."""
    paddle.enable_static()
    losses = {name: pir_training(out, name) for name in MODELS}
    (out / "pir_losses.json").write_text(json.dumps(losses, indent=1) + "\n")


if __name__ == "__main__":
    script_main(main, main_pir)

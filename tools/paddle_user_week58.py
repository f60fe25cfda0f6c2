"""The question-answering and distillation engineer's programs of docs/tools.md's 'A question-answering and
distillation engineer's week', written with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), on
question-context pairs of token ids (a vocabulary of 30; 0 the padding, 1 the separator), padded to 12 tokens, token
type 0 for the question and its separator, 1 for the context, the answer a span of the context:

- teacher: a BERT-style encoder: word (padding_idx=0), position (arange of the width) and token-type embeddings summed,
  LayerNorm, nn.TransformerEncoder of 2 post-norm GELU layers (width 16, 2 heads, feed-forward 32) under the additive
  mask (1 - [ids != 0]) * -1e4 of shape [B, 1, 1, T], Linear to 2 and split into start and end logits; the loss the
  mean of the two F.cross_entropy. AdamW(LinearWarmup(PolynomialDecay(0.01, 4, 0.0), 2, 0.0, 0.01), weight_decay
  0.01, biases and norms left out by apply_decay_param_fun).
- distill: the teacher built again in the same program (its names the teacher program's, its trained weights loaded),
  its logits and last hidden states under stop_gradient, and a student of one layer (width 8, 2 heads, feed-forward
  16): 0.5 * T^2 * the mean of the start and end F.kl_div(log_softmax(s / T), softmax(t / T), 'batchmean') (T = 2)
  + 0.5 * the hard loss + 0.1 * F.mse_loss(Linear(8, 16)(student hidden), teacher hidden); the same AdamW.

Each model's folder: forward.pb (main.clone() before minimize), train.pb (Paddle's own), startup.pb, init.npz,
trained.npz, data.npz (ids, types, start, end), losses and the learning rates in meta.json; outputs.npz: the start and
end logits of the first batch on the trained weights, the best span of each (start <= end, within the context),
and the logits of all 48 examples (all_start, all_end). PIR half: each model built and minimized again in PIR static
mode, NAME_pir_train.json / NAME_pir_startup.json, its losses from the same initial values in pir_losses.json (the
distillation's negative: PIR's F.kl_div(reduction='batchmean') divides the sum by the batch's static size, -1).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week58.py tests/data/paddle/user_week58
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import legacy_persistables, minimized, pir_half, pir_minimized, script_main, write_programs_gz

VOCAB, WIDTH, STEPS, BATCH, TEMPERATURE = 30, 12, 6, 8, 2.0
TEACHER, STUDENT = (16, 2, 32, 2), (8, 2, 16, 1)   # width, heads, feed-forward, layers
RNG = np.random.default_rng(58)


def inputs():
    return (paddle.static.data("ids", [-1, WIDTH], "int64"), paddle.static.data("types", [-1, WIDTH], "int64"),
            paddle.static.data("start", [-1, 1], "int64"), paddle.static.data("end", [-1, 1], "int64"))


def encoder(ids, types, shape):
    """BERT's embeddings and encoder of ``shape`` (width, heads, feed-forward, layers): the last hidden states."""
    width, heads, ffn, layers = shape
    positions = paddle.unsqueeze(paddle.arange(paddle.shape(ids)[1], dtype="int64"), 0)
    embedded = (nn.Embedding(VOCAB, width, padding_idx=0)(ids) + nn.Embedding(WIDTH, width)(positions)
                + nn.Embedding(2, width)(types))
    mask = paddle.unsqueeze((1.0 - paddle.cast(ids != 0, "float32")) * -1e4, [1, 2])
    layer = nn.TransformerEncoderLayer(width, heads, ffn, dropout=0.0, activation="gelu")
    return nn.TransformerEncoder(layer, layers)(nn.LayerNorm(width)(embedded), src_mask=mask)


def span_logits(hidden, width):
    start, end = paddle.split(nn.Linear(width, 2)(hidden), 2, axis=-1)
    return paddle.squeeze(start, -1), paddle.squeeze(end, -1)


def span_loss(start_logits, end_logits, start, end):
    return (F.cross_entropy(start_logits, start) + F.cross_entropy(end_logits, end)) / 2.0


def teacher():
    ids, types, start, end = inputs()
    start_logits, end_logits = span_logits(encoder(ids, types, TEACHER), TEACHER[0])
    return span_loss(start_logits, end_logits, start, end), start_logits, end_logits


def soft(student, teacher_logits):
    return F.kl_div(F.log_softmax(student / TEMPERATURE, axis=-1), F.softmax(teacher_logits / TEMPERATURE, axis=-1),
                    reduction="batchmean")


def distill():
    ids, types, start, end = inputs()
    teacher_hidden = encoder(ids, types, TEACHER)
    teacher_start, teacher_end = span_logits(teacher_hidden, TEACHER[0])
    for value in (teacher_hidden, teacher_start, teacher_end):
        value.stop_gradient = True
    hidden = encoder(ids, types, STUDENT)
    start_logits, end_logits = span_logits(hidden, STUDENT[0])
    kl = (soft(start_logits, teacher_start) + soft(end_logits, teacher_end)) / 2.0
    hint = F.mse_loss(nn.Linear(STUDENT[0], TEACHER[0])(hidden), teacher_hidden)
    loss = 0.5 * TEMPERATURE ** 2 * kl + 0.5 * span_loss(start_logits, end_logits, start, end) + 0.1 * hint
    return loss, start_logits, end_logits


def adamw():
    schedule = paddle.optimizer.lr.LinearWarmup(paddle.optimizer.lr.PolynomialDecay(0.01, 4, 0.0), 2, 0.0, 0.01)
    return paddle.optimizer.AdamW(schedule, weight_decay=0.01,
                                  apply_decay_param_fun=lambda name: ".b_" not in name and "layer_norm" not in name)


def data(count: int) -> dict:
    """Questions of 2 to 4 tokens, the separator, contexts of 4 to 7; the answer starts at the context's first token
    above 20 (else its first) and ends at the next token above 24 (else 1 or 2 tokens on), within the context."""
    ids, types = np.zeros((count, WIDTH), np.int64), np.zeros((count, WIDTH), np.int64)
    start, end = np.zeros((count, 1), np.int64), np.zeros((count, 1), np.int64)
    for row in range(count):
        question, context = RNG.integers(2, VOCAB, RNG.integers(2, 5)), RNG.integers(2, VOCAB, RNG.integers(4, 8))
        first = len(question) + 1
        ids[row, :first + len(context)] = np.concatenate([question, [1], context])
        types[row, first:first + len(context)] = 1
        above = np.flatnonzero(context > 20)
        begin = int(above[0]) if above.size else 0
        after = np.flatnonzero(context[begin:] > 24)
        stop = begin + (int(after[0]) if after.size else int(RNG.integers(1, 3)))
        start[row], end[row] = first + begin, first + min(stop, len(context) - 1)
    return {"ids": ids, "types": types, "start": start, "end": end}


def best_spans(start_logits, end_logits, types) -> np.ndarray:
    """Each row's (start, end) of the highest start + end logit with start <= end, both within the context."""
    scores = start_logits[:, :, None] + end_logits[:, None, :]
    allowed = np.triu(np.ones((WIDTH, WIDTH), bool))[None] & (types[:, :, None] == 1) & (types[:, None, :] == 1)
    flat = np.where(allowed, scores, -np.inf).reshape(len(scores), -1).argmax(axis=1)
    return np.stack([flat // WIDTH, flat % WIDTH], axis=1)


def train_model(out: Path, name: str, exe, arrays: dict, teacher_weights: dict | None) -> dict:
    with paddle.utils.unique_name.guard():
        main, startup, forward, optimizer, (loss, start_logits, end_logits) = minimized(
            teacher if name == "teacher" else distill, adamw, seed=58)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    scope, losses, rates = paddle.static.Scope(), [], []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for key, value in (teacher_weights or {}).items():
            scope.var(key).get_tensor().set(value, paddle.CPUPlace())
        np.savez(folder / "init.npz", **legacy_persistables(forward, scope))
        for step in range(STEPS):
            feed = {key: value[step * BATCH:(step + 1) * BATCH] for key, value in arrays.items()}
            rates.append(optimizer.get_lr())
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss.name])[0]))
            optimizer._learning_rate.step()
        trained = legacy_persistables(forward, scope)
        np.savez(folder / "trained.npz", **trained)
        first = {key: value[:BATCH] for key, value in arrays.items()}
        starts, ends = exe.run(forward, feed=first, fetch_list=[start_logits.name, end_logits.name])
        every = exe.run(forward, feed=arrays, fetch_list=[start_logits.name, end_logits.name])
    np.savez(folder / "outputs.npz", start_logits=starts, end_logits=ends,
             spans=best_spans(starts, ends, first["types"]), all_start=every[0], all_end=every[1])
    np.savez_compressed(folder / "data.npz", **arrays)
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    meta = {"loss": loss.name, "start_logits": start_logits.name, "end_logits": end_logits.name, "losses": losses,
            "rates": rates}
    return meta, trained


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    arrays = data(STEPS * BATCH)
    meta, trained = {}, {}
    meta["teacher"], trained = train_model(out, "teacher", exe, arrays, None)
    meta["distill"], _ = train_model(out, "distill", exe, arrays, trained)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def pir_training(out: Path, name: str) -> list[float]:
    """The model built and minimized in PIR static mode (the teacher's weights those the legacy run trained):
    NAME_pir_train.json (the loss fetched as "loss") / NAME_pir_startup.json, its losses on the legacy run's batches
    from its initial values, the legacy run's NAME/init.npz (asserted)."""
    build = teacher if name == "teacher" else distill
    main, startup, loss, optimizer = pir_minimized(out, f"{name}_", lambda: build()[0], adamw, 58)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    arrays, losses = dict(np.load(out / name / "data.npz")), []
    teacher_weights = dict(np.load(out / "teacher" / "trained.npz")) if name == "distill" else {}
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        names = [op.attrs()["parameter_name"] for op in main.global_block().ops if op.name() == "builtin.parameter"]
        for key in set(names) & set(teacher_weights):
            scope.var(key).get_tensor().set(teacher_weights[key], paddle.CPUPlace())
        start = dict(np.load(out / name / "init.npz"))
        assert all(np.array_equal(np.array(scope.var(key).get_tensor()), start[key]) for key in set(names) & set(start))
        for step in range(STEPS):
            feed = {key: value[step * BATCH:(step + 1) * BATCH] for key, value in arrays.items()}
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0]))
            optimizer._learning_rate.step()
    return losses


def main_pir(out: Path) -> None:
    """Both models trained in PIR static mode on the legacy run's batches: pir_losses.json."""
    paddle.enable_static()
    losses = {name: pir_training(out, name) for name in ("teacher", "distill")}
    (out / "pir_losses.json").write_text(json.dumps(losses, indent=1) + "\n")


if __name__ == "__main__":
    script_main(main, main_pir)

"""The sequential-recommendation engineer's programs of docs/tools.md's 'A sequential-recommendation engineer's week',
written with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0). Sequences of ITEMS - 1 item ids
(0 the padding), left-padded to LENGTH; each next item follows its predecessor by a noisy step, so a model can learn.

- sasrec_bpr: SASRec (item nn.Embedding(padding_idx=0) + learned positions, one causal
  nn.TransformerEncoderLayer (pre-norm, dropout 0) with a -inf upper-triangle attn_mask, LayerNorm); at every position
  the dot product with the next item's and a sampled negative's embedding; BPR loss -log sigmoid(pos - neg) masked
  over the padded positions; Adam under LinearWarmup(0.01, 3 steps from 0).
- sasrec_ce: the same with two blocks, the output layer the item table's transpose (tied), full softmax cross entropy
  over the catalogue at every position with ignore_index 0; AdamW(0.01, weight_decay 0.01).
- sasrec_sampled: sasrec_bpr's model with its negatives drawn in the program by paddle.randint, anew each step,
  after paddle.seed(50); Adam(0.01) (its losses only: no init, trained or outputs file).
- gru4rec: right-padded sequences, nn.GRU with sequence_length, the last real step's state (the GRU's final state)
  through a Linear to the catalogue, cross entropy against the next item; Adam(0.01).

Each model: forward.pb (main.clone() before minimize), train.pb (Paddle's own), startup.pb, init.npz, data.npz,
trained.npz, outputs.npz (first batch, trained weights), losses in meta.json. sasrec_ce's scorer.pb: the last
position's scores over the catalogue (a clone before the loss, pruned to them), and test.npz its held-out sequences
with their next items.
PIR half (a second interpreter): sasrec_bpr_pir_train.json, _pir_startup.json and pir_losses.json: the BPR model
built and minimized in PIR static mode (the legacy run's initial values), Paddle's losses on the legacy data.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week50.py tests/data/paddle/user_week50
"""

import json
import math
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import (
    minimized,
    pir_half,
    pir_minimized,
    script_main,
    train_saving_values,
    without_callstacks,
    write_gz,
    write_programs_gz,
)

ITEMS, LENGTH, HIDDEN, HEADS, STEPS, BATCH, TEST = 30, 6, 16, 2, 5, 8, 16
RNG = np.random.default_rng(50)


def sequences(count: int, left: bool) -> tuple[np.ndarray, np.ndarray]:
    """[count, LENGTH + 1] item walks (1 .. ITEMS - 1) of 3 to LENGTH + 1 real items, padded with 0 on the left (or
    right), and each walk's real length."""
    sizes = RNG.integers(3, LENGTH + 2, size=count)
    walks = np.zeros((count, LENGTH + 1), np.int64)
    for row, size in enumerate(sizes):
        items = [int(RNG.integers(1, ITEMS))]
        for _ in range(size - 1):
            items.append((items[-1] + int(RNG.integers(1, 3)) - 1) % (ITEMS - 1) + 1)
        if left:
            walks[row, LENGTH + 1 - size:] = items
        else:
            walks[row, :size] = items
    return walks, sizes


def named(value) -> str:
    """A var's name (PIR values have none to give)."""
    return "" if paddle.base.framework.in_pir_mode() else value.name


class SASRec(nn.Layer):
    def __init__(self, blocks: int):
        super().__init__()
        self.items = nn.Embedding(ITEMS, HIDDEN, padding_idx=0)
        self.positions = nn.Embedding(LENGTH, HIDDEN)
        self.blocks = nn.LayerList([nn.TransformerEncoderLayer(HIDDEN, HEADS, 2 * HIDDEN, dropout=0.0,
                                                               normalize_before=True) for _ in range(blocks)])
        self.norm = nn.LayerNorm(HIDDEN)

    def forward(self, seq):
        x = self.items(seq) * math.sqrt(HIDDEN) + self.positions(paddle.arange(LENGTH, dtype="int64"))
        causal = paddle.triu(paddle.full([LENGTH, LENGTH], float("-inf")), diagonal=1)
        for block in self.blocks:
            x = block(x, src_mask=causal)
        return self.norm(x)


def sasrec_bpr():
    seq = paddle.static.data("seq", [-1, LENGTH], "int64")
    pos = paddle.static.data("pos", [-1, LENGTH], "int64")
    neg = paddle.static.data("neg", [-1, LENGTH], "int64")
    model = SASRec(1)
    states = model(seq)
    pos_logit = paddle.sum(states * model.items(pos), axis=-1)
    neg_logit = paddle.sum(states * model.items(neg), axis=-1)
    real = paddle.cast(pos > 0, "float32")
    bpr = -F.log_sigmoid(pos_logit - neg_logit)
    loss = paddle.sum(bpr * real) / paddle.sum(real)
    return loss, {"pos_logit": named(pos_logit), "neg_logit": named(neg_logit)}


def sasrec_sampled():
    """The BPR SASRec with its negatives drawn in the program (paddle.randint), anew at every step."""
    seq = paddle.static.data("seq", [-1, LENGTH], "int64")
    pos = paddle.static.data("pos", [-1, LENGTH], "int64")
    model = SASRec(1)
    states = model(seq)
    neg = paddle.randint(1, ITEMS, shape=paddle.shape(pos), dtype="int64")
    pos_logit = paddle.sum(states * model.items(pos), axis=-1)
    neg_logit = paddle.sum(states * model.items(neg), axis=-1)
    real = paddle.cast(pos > 0, "float32")
    loss = paddle.sum(-F.log_sigmoid(pos_logit - neg_logit) * real) / paddle.sum(real)
    return loss, {}


def sasrec_ce(scorer_out: list | None = None):
    seq = paddle.static.data("seq", [-1, LENGTH], "int64")
    model = SASRec(2)
    states = model(seq)
    logits = paddle.matmul(states, model.items.weight, transpose_y=True)
    last = logits[:, -1, :]
    if scorer_out is not None:
        scorer_out.append(last)
    target = paddle.static.data("target", [-1, LENGTH], "int64")
    loss = F.cross_entropy(logits, target, ignore_index=0)
    return loss, {"logits": named(logits), "last": last.name}


def gru4rec():
    seq = paddle.static.data("seq", [-1, LENGTH], "int64")
    lengths = paddle.static.data("lengths", [-1], "int64")
    label = paddle.static.data("label", [-1, 1], "int64")
    embedded = nn.Embedding(ITEMS, HIDDEN, padding_idx=0)(seq)
    _, final = nn.GRU(HIDDEN, HIDDEN)(embedded, sequence_length=lengths)
    logits = nn.Linear(HIDDEN, ITEMS)(paddle.squeeze(final, 0))
    loss = F.cross_entropy(logits, label)
    return loss, {"logits": named(logits), "final": named(final)}


def data(name: str, count: int = BATCH * STEPS) -> dict:
    walks, sizes = sequences(count, left=name != "gru4rec")
    seq, nxt = walks[:, :-1], walks[:, 1:]
    if name == "gru4rec":
        label = walks[np.arange(count), sizes - 1].reshape(-1, 1)
        seq = np.where(np.arange(LENGTH) < (sizes - 1)[:, None], seq, 0)
        return {"seq": seq, "lengths": (sizes - 1).astype(np.int64), "label": label}
    nxt = np.where(seq > 0, nxt, 0)
    if name == "sasrec_ce":
        return {"seq": seq, "target": nxt}
    if name == "sasrec_sampled":
        return {"seq": seq, "pos": nxt}
    neg = RNG.integers(1, ITEMS, size=nxt.shape)
    neg = np.where(neg == nxt, neg % (ITEMS - 1) + 1, neg) * (nxt > 0)
    return {"seq": seq, "pos": nxt, "neg": neg.astype(np.int64)}


OPTIMIZERS = {
    "sasrec_bpr": lambda: paddle.optimizer.Adam(paddle.optimizer.lr.LinearWarmup(0.01, 3, 0.0, 0.01)),
    "sasrec_ce": lambda: paddle.optimizer.AdamW(0.01, weight_decay=0.01),
    "gru4rec": lambda: paddle.optimizer.Adam(0.01),
    "sasrec_sampled": lambda: paddle.optimizer.Adam(0.01),
}
MODELS = {"sasrec_bpr": sasrec_bpr, "sasrec_ce": sasrec_ce, "gru4rec": gru4rec, "sasrec_sampled": sasrec_sampled}


def train_model(out: Path, name: str, exe) -> dict:
    scorer_out: list = []
    main, startup, forward, optimizer, (loss, names) = minimized(
        lambda: MODELS[name](scorer_out) if name == "sasrec_ce" else MODELS[name](), OPTIMIZERS[name], seed=50)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    batches = data(name)
    if name == "sasrec_sampled":   # the draws of paddle.seed(50), startup and negatives alike
        paddle.seed(50)
    scope, losses = train_saving_values(exe, folder, (forward, main, startup), loss, batches, STEPS, BATCH, optimizer)
    with paddle.static.scope_guard(scope):
        first = {k: v[:BATCH] for k, v in batches.items()}
        outputs = exe.run(forward, feed=first, fetch_list=list(names.values())) if names else []
        if scorer_out:
            scorer = forward._prune([scorer_out[0]])
            test = data(name, TEST)
            walks = test["seq"]
            (scores,) = exe.run(scorer, feed={"seq": walks}, fetch_list=[scorer_out[0].name])
            np.savez(folder / "test.npz", seq=walks, next_item=test["target"][:, -1], scores=scores)
            write_gz(folder / "scorer.pb", without_callstacks(scorer))
    if names:
        np.savez(folder / "outputs.npz", **dict(zip(names, outputs)))
    np.savez_compressed(folder / "data.npz", **batches)
    if name == "sasrec_sampled":   # its losses are what it is kept for: startup.pb with paddle.seed(50) draws the rest
        (folder / "init.npz").unlink()
        (folder / "trained.npz").unlink()
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    return {**names, "loss": named(loss), "losses": losses}


def pir_training(out: Path, name: str) -> list[float]:
    """The model built and minimized in PIR static mode: NAME_pir_train.json (the loss fetched as "loss") /
    NAME_pir_startup.json, its losses on the legacy run's data from its initial values, the legacy run's."""
    main, startup, loss, optimizer = pir_minimized(out, f"{name}_", lambda: MODELS[name]()[0], OPTIMIZERS[name], 50)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    data = dict(np.load(out / name / "data.npz"))
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        names = [op.attrs()["parameter_name"] for op in main.global_block().ops if op.name() == "builtin.parameter"]
        legacy = np.load(out / name / "init.npz")   # the same draws under the same names: no file of its own
        for key in (key for key in names if not key.startswith("learning_rate")):   # the scheduler's rate aside
            np.testing.assert_array_equal(np.array(scope.var(key).get_tensor()), legacy[key])
        losses = []
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in data.items()}
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0]))
            if isinstance(optimizer._learning_rate, paddle.optimizer.lr.LRScheduler):
                optimizer._learning_rate.step()
    paddle.disable_static()
    return losses


def main_pir(out: Path) -> None:
    """The BPR SASRec (its warmup schedule) trained in PIR static mode."""
    losses = {name: pir_training(out, name) for name in ("sasrec_bpr",)}
    (out / "pir_losses.json").write_text(json.dumps(losses, indent=1) + "\n")


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    out.mkdir(parents=True, exist_ok=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {name: train_model(out, name, exe) for name in MODELS}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


if __name__ == "__main__":
    script_main(main, main_pir)

"""The recommender engineer's model of docs/tools.md's 'A recommender engineer's week': a DeepFM-style CTR model
built by Paddle 3.3.1's legacy static API (paddle.sum and F.sigmoid through tools/paddle_legacy_shim.py). Three
int64 slots (user, item, category): a first-order (wide) weight and an 8-wide factor per id, user and item through
`paddle.static.nn.embedding(is_sparse=True)` (SelectedRows gradients), the category through
`nn.Embedding(padding_idx=0)` (dense gradient); FM's second-order term, an MLP over the factors, sigmoid
cross-entropy, `paddle.static.auc` and Adam with lazy_mode (or Adagrad). Writes, per optimizer, CASE/main.pb
(Paddle's training program), CASE/startup.pb and CASE/meta.json (the names, Paddle's executor's loss and AUCs at
each of STEPS steps); adam_lazy/trained.npz (its tables after the last step), init.pdparams (Paddle's startup
values of the parameters, the same in both) and batches.npz (STEPS batches of 16: user, item, cat, label).

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week8.py tests/data/paddle/user_week8
"""

import json
import os
import sys

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle import nn
from paddle_programs import write_stripped

RNG = np.random.default_rng(8)
USERS, ITEMS, CATS, FACTOR, BATCH, STEPS = 200, 400, 12, 8, 16, 5


def slot(ids, rows, name, sparse):
    """A slot's (wide weight, factor) of each id, through paddle.static.nn.embedding."""
    wide = paddle.static.nn.embedding(ids, [rows, 1], is_sparse=sparse, param_attr=f"{name}_wide")
    factor = paddle.static.nn.embedding(ids, [rows, FACTOR], is_sparse=sparse, param_attr=f"{name}_emb")
    return wide, factor


def build(main, startup, optimizer):
    with paddle.static.program_guard(main, startup):
        user = paddle.static.data("user", [-1, 1], "int64")
        item = paddle.static.data("item", [-1, 1], "int64")
        cat = paddle.static.data("cat", [-1, 1], "int64")
        label = paddle.static.data("label", [-1, 1], "int64")
        user_wide, user_emb = slot(user, USERS, "user", True)
        item_wide, item_emb = slot(item, ITEMS, "item", True)
        cat_wide = nn.Embedding(CATS, 1, padding_idx=0, weight_attr="cat_wide")(cat)
        cat_emb = nn.Embedding(CATS, FACTOR, padding_idx=0, weight_attr="cat_emb")(cat)
        wides = paddle.concat([paddle.reshape(w, [-1, 1]) for w in (user_wide, item_wide, cat_wide)], axis=1)
        factors = paddle.concat([paddle.reshape(e, [-1, 1, FACTOR]) for e in (user_emb, item_emb, cat_emb)], axis=1)
        first = paddle.sum(wides, axis=1, keepdim=True)
        summed = paddle.sum(factors, axis=1)
        second = 0.5 * paddle.sum(summed * summed - paddle.sum(factors * factors, axis=1), axis=1, keepdim=True)
        hidden_layer = nn.Linear(3 * FACTOR, 16, weight_attr="hidden_w", bias_attr="hidden_b")
        hidden = F.relu(hidden_layer(paddle.reshape(factors, [-1, 3 * FACTOR])))
        logit = first + second + nn.Linear(16, 1, weight_attr="deep_w", bias_attr="deep_b")(hidden)
        labels = paddle.cast(label, "float32")
        loss = paddle.mean(F.binary_cross_entropy_with_logits(logit, labels))
        prob = F.sigmoid(logit)
        auc, batch_auc, _ = paddle.static.auc(paddle.concat([1 - prob, prob], axis=1), label, num_thresholds=255)
        optimizer.minimize(loss)
    return loss, auc, batch_auc


def batches():
    data = {}
    for step in range(STEPS):
        data[f"user{step}"] = RNG.integers(0, USERS, (BATCH, 1)).astype(np.int64)
        data[f"item{step}"] = RNG.integers(0, ITEMS, (BATCH, 1)).astype(np.int64)
        data[f"cat{step}"] = RNG.integers(0, CATS, (BATCH, 1)).astype(np.int64)   # 0 is the padding
        data[f"label{step}"] = RNG.integers(0, 2, (BATCH, 1)).astype(np.int64)
    return data


def case(target, name, optimizer, data):
    os.makedirs(os.path.join(target, name), exist_ok=True)
    main_program, startup = paddle.static.Program(), paddle.static.Program()
    main_program.random_seed = startup.random_seed = 8
    loss, auc, batch_auc = build(main_program, startup, optimizer)
    write_stripped(os.path.join(target, name, "main.pb"), main_program)
    write_stripped(os.path.join(target, name, "startup.pb"), startup)
    scope = paddle.static.global_scope()
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    paddle.static.save(main_program, os.path.join(target, "init"))   # the same seed: both cases' values
    for extension in ("pdmodel", "pdopt"):   # the startup program's accumulators are constants
        os.remove(os.path.join(target, f"init.{extension}"))
    losses, aucs, batch_aucs = [], [], []
    for step in range(STEPS):
        feed = {key: data[f"{key}{step}"] for key in ("user", "item", "cat", "label")}
        values = executor.run(main_program, feed=feed, fetch_list=[loss, auc, batch_auc])
        losses.append(float(values[0]))
        aucs.append(float(values[1]))
        batch_aucs.append(float(values[2]))
    tables = {t: np.array(scope.find_var(t).get_tensor()) for t in ("user_emb", "item_emb", "cat_emb")}
    if name == "adam_lazy":
        np.savez(os.path.join(target, name, "trained.npz"), **tables)
    meta = {"loss": loss.name, "auc": auc.name, "batch_auc": batch_auc.name, "losses": losses, "aucs": aucs,
            "batch_aucs": batch_aucs}
    with open(os.path.join(target, name, "meta.json"), "w") as out:
        json.dump(meta, out, indent=1)
    print(name, meta)


def main(target):
    paddle.enable_static()
    paddle_legacy_shim.install()   # paddle.sum and F.sigmoid build only PIR ops in 3.3.1
    os.makedirs(target, exist_ok=True)
    data = batches()
    np.savez(os.path.join(target, "batches.npz"), **data)
    case(target, "adam_lazy", paddle.optimizer.Adam(0.01, lazy_mode=True), data)
    case(target, "adagrad", paddle.optimizer.Adagrad(0.05), data)


if __name__ == "__main__":
    main(sys.argv[1])

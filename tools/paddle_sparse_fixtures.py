"""Sparse-gradient fixtures from a real PaddlePaddle: training programs whose embedding table has a SelectedRows
gradient (paddle.nn.Embedding(sparse=True)), trained by each optimizer that has a sparse kernel, with gradient
clipping and L2 regularization, in Paddle's legacy static mode.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_sparse_fixtures.py tests/data/paddle/optim_sparse

The batches leave some table rows untouched, repeat others, and one batch holds every id once in no order (the
merged rows of Paddle's sparse momentum and rmsprop then stay unsorted). Files as tools/paddle_optimizer_fixtures.py
writes them, without grads.npz and intermediates.npz (Paddle cannot fetch a SelectedRows).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle.base.layer_helper import LayerHelper
from paddle.regularizer import L2Decay
from paddle_optimizer_cases import Case, describe  # also restores the legacy ops ClipGradByGlobalNorm writes
from paddle_optimizer_fixtures import SEED, build_optimizer, run_steps, serialize, stacked, write, write_forward

VOCAB, WIDTH, BATCH, STEPS = 12, 4, 4, 5
SELECTED_ROWS = paddle.base.core.VarDesc.VarType.SELECTED_ROWS
opt = paddle.optimizer


def id_batches(rng, count: int, columns: int) -> list[np.ndarray]:
    """Ids of ``count`` steps: random ids from part of the table (rows left out, rows repeated), and every
    other step distinct ids, shuffled. Every batch holds the last row: Paddle's non-lazy sparse Adam reads one
    past the end of the selected rows when the last one is not the table's last, and may then take a row for
    selected, with stale values, depending on what memory holds there (docs/optimizers.md)."""
    batches = []
    for step in range(count):
        if step % 2:
            batch = rng.permutation(VOCAB)[:BATCH * columns].reshape(BATCH, columns)
        else:
            low = 2 * step % (VOCAB - 6)
            batch = rng.integers(low, low + 6, (BATCH, columns))
        if VOCAB - 1 not in batch:
            batch[-1, -1] = VOCAB - 1
        batches.append(batch.astype("int64"))
    return batches


def emb() -> tuple:
    """ids [4, 3] -> Embedding(12, 4, sparse, padding_idx 0) -> mean over the ids -> fc(3) -> softmax CE."""
    ids = paddle.static.data("ids", [BATCH, 3], "int64")
    label = paddle.static.data("label", [BATCH, 1], "int64")
    table = paddle.nn.Embedding(VOCAB, WIDTH, padding_idx=0, sparse=True)
    logits = paddle.nn.Linear(WIDTH, 3)(paddle.mean(table(ids), axis=1))
    loss = paddle.mean(F.cross_entropy(logits, label))

    def batches(rng):
        return [{"ids": ids, "label": rng.integers(0, 3, (BATCH, 1)).astype("int64")}
                for ids in id_batches(rng, STEPS, 3)]
    return loss, batches


def shared() -> tuple:
    """a, b [4, 2] -> one Embedding(12, 4, sparse) for both -> concat -> flatten -> fc(1) -> MSE: the table's
    two SelectedRows gradients are summed."""
    a = paddle.static.data("a", [BATCH, 2], "int64")
    b = paddle.static.data("b", [BATCH, 2], "int64")
    y = paddle.static.data("y", [BATCH, 1], "float32")
    table = paddle.nn.Embedding(VOCAB, WIDTH, sparse=True)
    features = paddle.flatten(paddle.concat([table(a), table(b)], axis=1), 1)
    loss = F.mse_loss(paddle.nn.Linear(4 * WIDTH, 1)(features), y)

    def batches(rng):
        return [{"a": first, "b": second, "y": rng.standard_normal((BATCH, 1)).astype("float32")}
                for first, second in zip(id_batches(rng, STEPS, 2), id_batches(rng, STEPS, 2))]
    return loss, batches


def emb_v1() -> tuple:
    """ids [4, 3, 1] -> lookup_table (v1, sparse, padding_idx 0) -> mean over the ids -> fc(3) -> softmax CE.
    No layer of Paddle 3.3.1 writes the v1 op for a local table (sparse_embedding's table is a distributed one), so
    the model appends it with LayerHelper, the way fluid 1.x's embedding did; the rest is Paddle's layers."""
    ids = paddle.static.data("ids", [BATCH, 3, 1], "int64")
    label = paddle.static.data("label", [BATCH, 1], "int64")
    helper = LayerHelper("embedding")
    table = helper.create_parameter(paddle.ParamAttr(name="embedding_0.w_0"), [VOCAB, WIDTH], "float32")
    looked_up = helper.create_variable_for_type_inference("float32")
    helper.append_op(type="lookup_table", inputs={"W": table, "Ids": ids}, outputs={"Out": looked_up},
                     attrs={"is_sparse": True, "padding_idx": 0})
    logits = paddle.nn.Linear(WIDTH, 3)(paddle.mean(looked_up, axis=1))
    loss = paddle.mean(F.cross_entropy(logits, label))

    def batches(rng):
        return [{"ids": ids[..., None], "label": rng.integers(0, 3, (BATCH, 1)).astype("int64")}
                for ids in id_batches(rng, STEPS, 3)]
    return loss, batches


MODELS = {"emb": emb, "shared": shared, "emb_v1": emb_v1}


def cases() -> dict[str, Case]:
    adam = {"learning_rate": 0.05, "beta1": 0.8, "beta2": 0.95, "epsilon": 1e-3}
    table = {
        "sgd": (opt.SGD, {"learning_rate": 0.5}),
        "momentum": (opt.Momentum, {"learning_rate": 0.2, "momentum": 0.9}),
        "adam": (opt.Adam, adam),
        "adam_lazy": (opt.Adam, {**adam, "lazy_mode": True}),
        "adam_amsgrad": (opt.Adam, {**adam, "amsgrad": True}),
        "adagrad": (opt.Adagrad, {"learning_rate": 0.2, "epsilon": 0.05, "initial_accumulator_value": 0.01}),
        "rmsprop": (opt.RMSProp, {"learning_rate": 0.02, "rho": 0.9, "epsilon": 1e-4, "momentum": 0.5}),
        "lamb": (opt.Lamb, {"learning_rate": 0.05, "lamb_weight_decay": 0.01}),
        "clip_global_norm": (opt.SGD, {"learning_rate": 0.5, "grad_clip": paddle.nn.ClipGradByGlobalNorm(0.1)}),
        "clip_norm": (opt.Adam, {**adam, "grad_clip": paddle.nn.ClipGradByNorm(0.05)}),
        "l2_decay": (opt.Adam, {**adam, "lazy_mode": True, "weight_decay": L2Decay(0.05)}),
    }
    out = {f"emb_{name}": Case("emb", cls, kwargs) for name, (cls, kwargs) in table.items()}
    for name in ("sgd", "adam", "adam_lazy", "momentum", "clip_global_norm"):
        out[f"shared_{name}"] = Case("shared", *table[name])
    for name in ("adam", "adam_lazy"):
        out[f"emb_v1_{name}"] = Case("emb_v1", *table[name])
    return out


def train(name: str, case: Case) -> dict:
    paddle.seed(SEED)
    rng = np.random.default_rng(SEED)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        loss, make_batches = MODELS[case.model]()
        forward = serialize(main)
        optimizer = build_optimizer(case)
        optimizer.minimize(loss)
    lr_name = optimizer._learning_rate_map[main].name
    feeds = make_batches(rng)
    init, losses, states, lrs, _ = run_steps(main, startup, loss.name, feeds, lr_name)
    block = main.global_block()
    meta = {
        "case": name, "model": case.model, "seed": SEED, "paddle_version": paddle.__version__, "steps": len(feeds),
        "description": MODELS[case.model].__doc__.split("\n")[0], "optimizer": case.optimizer.__name__,
        "hyperparameters": describe(case.kwargs), "param_attrs": {}, "loss": loss.name, "feeds": sorted(feeds[0]),
        "params": sorted(p.name for p in main.all_parameters()), "learning_rate_var": lr_name,
        "sparse_grads": sorted(v.name for v in block.vars.values() if v.type == SELECTED_ROWS),
        "ops_train": [op.type for op in block.ops],
        "optimize_op_types": sorted({op.type for op in block.ops if op.attr("op_role") & 0x0002}),
    }
    return {"forward.pb": forward, "train.pb": serialize(main), "startup.pb": serialize(startup), "init": init,
            "feeds": stacked(feeds), "grads": {}, "intermediates": {}, "states": stacked(states[:-1]),
            "final": states[-1], "losses": losses, "lrs": lrs, "meta": meta}


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/optim_sparse")
    table = cases()
    for case_name in sys.argv[2:] or table:
        files = train(case_name, table[case_name])
        files["meta"]["forward"] = write_forward(target, files["meta"]["model"], files["forward.pb"])
        write(target / case_name, files)
        print(f"{case_name}: losses {np.round(files['losses'], 5).tolist()}, sparse {files['meta']['sparse_grads']}, "
              f"optimize ops {files['meta']['optimize_op_types']}")

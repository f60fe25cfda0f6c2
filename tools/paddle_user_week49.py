"""The search-ranking engineer's programs of docs/tools.md's 'A search-ranking engineer's week', written with Paddle
3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0):

- pointwise: an MLP on query-document features, F.binary_cross_entropy_with_logits against click labels; Adam(0.01).
- pairwise: the same scorer on both documents of a pair; RankNet (BCE with logits of the score difference) +
  F.margin_ranking_loss(margin 0.1) + F.hinge_embedding_loss of the difference + the legacy hinge_loss op (appended
  by LayerHelper: rank_loss and margin_rank_loss are not registered in 3.3.1); Adagrad(0.05).
- listwise: lists of 6 documents a query, padded (mask 0); scores of padded entries set to -inf by paddle.where
  before softmax; ListNet (cross entropy against a softmax of the graded labels, padded entries out) + a
  LambdaRank-weighted RankNet (|delta NDCG| from argsort ranks of the scores, no gradient through them); Adam(0.01).
- twotower: a query tower (nn.Embedding(sparse=True, padding_idx=0) of term ids, mean pooled, concatenated with
  dense query features, a Linear) and a document tower (an MLP), both normalized as F.normalize's legacy branch
  writes it (its call fails in 3.3.1); cosine logits / 0.1 against in-batch documents and against 2 sampled
  negatives a query paddle.gather'ed from the batch by random ids; cross entropy; Adam(0.01, lazy_mode=True).
- clipped / decayed / adagrad: the two-tower model under Adam(lazy_mode) with ClipGradByGlobalNorm(1.0), under
  Adam(lazy_mode) with L2Decay(0.01), and under Adagrad(0.05): sparse embedding gradients through clipping, weight
  decay and another optimizer.
- corners.npz / corner_<name>.pb: float64 sum(w * f(x)) programs and Paddle's gradients (paddle.static.gradients):
  margin_ranking_loss and RankNet with tied scores, a masked softmax over -inf entries, normalize near a zero vector,
  a LambdaRank weight from argsort of tied scores.

Each model: forward.pb (main.clone() before minimize), train.pb (Paddle's own), startup.pb, init.npz, data.npz,
trained.npz, outputs.npz (first batch, trained weights), losses in meta.json.
PIR half (a second interpreter): listwise / twotower _pir_train.json, _pir_startup.json, _pir_init.npz and
pir_losses.json: the two models built and minimized in PIR static mode, Paddle's losses on the legacy data; the
document tower built in PIR mode with the trained twotower weights, paddle.jit.save'd (doc_tower.json / .pdiparams);
predictor_pir.npz: the Predictor's (oneDNN off) embeddings.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week49.py tests/data/paddle/user_week49
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.base.layer_helper import LayerHelper
from paddle_programs import (
    gzip_file,
    minimized,
    pir_half,
    pir_minimized,
    script_main,
    train_saving_values,
    weighted_corner,
    without_callstacks,
    write_gz,
    write_programs_gz,
)

FEATURES, HIDDEN, LIST, VOCAB, TERMS, EMB, STEPS, BATCH = 6, 8, 6, 20, 4, 6, 5, 8
RNG = np.random.default_rng(49)


def scorer():
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 1))


def hinge_loss_op(logits, labels):
    helper = LayerHelper("hinge_loss")
    out = helper.create_variable_for_type_inference("float32")
    helper.append_op(type="hinge_loss", inputs={"Logits": logits, "Labels": labels}, outputs={"Loss": out})
    return out


def normalize(x):
    """F.normalize(x, axis=1) as its legacy branch writes it (p_norm, full, maximum, divide): in 3.3.1 that branch
    fails at its end (paddle.assign of an unbound local), after appending these ops. In PIR mode, F.normalize."""
    if paddle.base.framework.in_pir_mode():
        return F.normalize(x, axis=1)
    helper = LayerHelper("p_norm")
    norm = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="p_norm", inputs={"X": x}, outputs={"Out": norm},
                     attrs={"axis": 1, "porder": 2.0, "keepdim": True, "epsilon": 1e-12})
    return paddle.divide(x, paddle.maximum(norm, paddle.full([1], 1e-12, x.dtype)))


def named(value) -> str:
    """A var's name (PIR values have none to give)."""
    return "" if paddle.base.framework.in_pir_mode() else value.name


def pointwise():
    feats = paddle.static.data("feats", [-1, FEATURES], "float32")
    click = paddle.static.data("click", [-1, 1], "float32")
    score = scorer()(feats)
    return F.binary_cross_entropy_with_logits(score, click), {"score": named(score)}


def pairwise():
    left = paddle.static.data("left", [-1, FEATURES], "float32")
    right = paddle.static.data("right", [-1, FEATURES], "float32")
    prefer = paddle.static.data("prefer", [-1, 1], "float32")  # 1: left better
    net = scorer()
    s_left, s_right = net(left), net(right)
    diff = s_left - s_right
    sign = prefer * 2.0 - 1.0
    ranknet = F.binary_cross_entropy_with_logits(diff, prefer)
    margin = F.margin_ranking_loss(s_left, s_right, sign, margin=0.1)
    hinge = F.hinge_embedding_loss(diff * sign, paddle.ones_like(sign) * -1.0, margin=1.0)
    legacy = paddle.mean(hinge_loss_op(diff, prefer))
    loss = ranknet + margin + 0.5 * hinge + 0.5 * legacy
    return loss, {"s_left": named(s_left), "ranknet": named(ranknet), "margin": named(margin), "hinge": named(hinge),
                  "legacy": named(legacy)}


def lambda_weights(scores, labels, mask):
    """|delta NDCG| of swapping each pair, from the ranks argsort gives the masked scores (no gradient)."""
    order = paddle.argsort(scores, axis=1, descending=True)
    ranks = paddle.cast(paddle.argsort(order, axis=1), "float32")
    discount = 1.0 / paddle.log2(ranks + 2.0)
    gain = (paddle.pow(paddle.full_like(labels, 2.0), labels) - 1.0) * mask
    ideal_gain = paddle.sort(gain, axis=1, descending=True)
    positions = paddle.arange(LIST, dtype="float32")
    ideal = paddle.sum(ideal_gain / paddle.log2(positions + 2.0), axis=1, keepdim=True)
    delta = paddle.abs((gain.unsqueeze(2) - gain.unsqueeze(1)) * (discount.unsqueeze(2) - discount.unsqueeze(1)))
    return delta / paddle.clip(ideal, min=1e-6).unsqueeze(2)


def listwise():
    feats = paddle.static.data("feats", [-1, LIST, FEATURES], "float32")
    labels = paddle.static.data("labels", [-1, LIST], "float32")
    mask = paddle.static.data("mask", [-1, LIST], "float32")
    scores = paddle.squeeze(scorer()(feats), -1)
    valid = mask > 0.5
    ninf = paddle.full_like(scores, float("-inf"))
    masked = paddle.where(valid, scores, ninf)
    target = F.softmax(paddle.where(valid, labels, ninf), axis=1)
    log_probs = paddle.where(valid, F.log_softmax(masked, axis=1), paddle.zeros_like(scores))
    listnet = paddle.mean(-paddle.sum(target * log_probs, axis=1))
    weights = lambda_weights(paddle.where(valid, scores, paddle.full_like(scores, -1e9)), labels, mask)
    better = paddle.cast(labels.unsqueeze(2) > labels.unsqueeze(1), "float32") * mask.unsqueeze(2) * mask.unsqueeze(1)
    pair = F.softplus(-(scores.unsqueeze(2) - scores.unsqueeze(1)))
    lambdarank = paddle.sum(weights * better * pair) / paddle.clip(paddle.sum(better), min=1.0)
    loss = listnet + lambdarank
    return loss, {"scores": named(scores), "listnet": named(listnet), "lambdarank": named(lambdarank)}


def doc_tower(docs):
    net = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, EMB))
    return normalize(net(docs))


def twotower():
    terms = paddle.static.data("terms", [-1, TERMS], "int64")
    query = paddle.static.data("query", [-1, FEATURES], "float32")
    docs = paddle.static.data("docs", [-1, FEATURES], "float32")
    negatives = paddle.static.data("negatives", [-1, 2], "int64")
    embedded = nn.Embedding(VOCAB, EMB, padding_idx=0, sparse=True)(terms)
    counts = paddle.clip(paddle.sum(paddle.cast(terms > 0, "float32"), axis=1, keepdim=True), min=1.0)
    pooled = paddle.sum(embedded, axis=1) / counts
    q = normalize(nn.Linear(EMB + FEATURES, EMB)(paddle.concat([pooled, query], axis=1)))
    d = doc_tower(docs)
    in_batch = paddle.matmul(q, d, transpose_y=True) / 0.1
    negative_docs = paddle.reshape(paddle.gather(d, paddle.reshape(negatives, [-1])), [-1, 2, EMB])
    sampled = paddle.sum(q.unsqueeze(1) * negative_docs, axis=2) / 0.1
    logits = paddle.concat([in_batch, sampled], axis=1)
    target = paddle.arange(paddle.shape(q)[0], dtype="int64").unsqueeze(1)
    loss = F.cross_entropy(logits, target)
    return loss, {"logits": named(logits), "q": named(q), "d": named(d)}


def data(name: str) -> dict:
    count = BATCH * STEPS
    if name == "pointwise":
        feats = RNG.normal(size=(count, FEATURES)).astype(np.float32)
        click = (feats[:, 0] + 0.5 * feats[:, 1] + RNG.normal(size=count) * 0.5 > 0).astype(np.float32)
        return {"feats": feats, "click": click.reshape(-1, 1)}
    if name == "pairwise":
        left, right = (RNG.normal(size=(count, FEATURES)).astype(np.float32) for _ in range(2))
        prefer = (left[:, 0] - right[:, 0] > 0).astype(np.float32).reshape(-1, 1)
        prefer[::5] = 1.0 - prefer[::5]
        return {"left": left, "right": right, "prefer": prefer}
    if name == "listwise":
        feats = RNG.normal(size=(count, LIST, FEATURES)).astype(np.float32)
        labels = np.clip(np.round(feats[..., 0] + 1.0), 0, 3).astype(np.float32)
        sizes = RNG.integers(2, LIST + 1, size=count)
        mask = (np.arange(LIST) < sizes[:, None]).astype(np.float32)
        return {"feats": feats, "labels": labels * mask, "mask": mask}
    terms = RNG.integers(1, VOCAB, size=(count, TERMS))
    terms[:, 2:] *= RNG.integers(0, 2, size=(count, 2))  # padding id 0 at the tail
    query = RNG.normal(size=(count, FEATURES)).astype(np.float32)
    docs = (query + 0.3 * RNG.normal(size=(count, FEATURES))).astype(np.float32)
    negatives = RNG.integers(0, BATCH, size=(count, 2))  # rows of the query's own batch
    return {"terms": terms.astype(np.int64), "query": query, "docs": docs, "negatives": negatives.astype(np.int64)}


OPTIMIZERS = {"pointwise": lambda: paddle.optimizer.Adam(0.01), "pairwise": lambda: paddle.optimizer.Adagrad(0.05),
              "listwise": lambda: paddle.optimizer.Adam(0.01),
              "twotower": lambda: paddle.optimizer.Adam(0.01, lazy_mode=True),
              "clipped": lambda: paddle.optimizer.Adam(0.01, lazy_mode=True, grad_clip=nn.ClipGradByGlobalNorm(1.0)),
              "decayed": lambda: paddle.optimizer.Adam(0.01, lazy_mode=True, weight_decay=paddle.regularizer.L2Decay(
                  0.01)),
              "adagrad": lambda: paddle.optimizer.Adagrad(0.05)}
MODELS = {"pointwise": pointwise, "pairwise": pairwise, "listwise": listwise, "twotower": twotower,
          "clipped": twotower, "decayed": twotower, "adagrad": twotower}


def train_model(out: Path, name: str, exe) -> dict:
    main, startup, forward, optimizer, (loss, names) = minimized(MODELS[name], OPTIMIZERS[name], seed=49)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    batches = data(name) if MODELS[name] is not twotower else data("twotower")
    scope, losses = train_saving_values(exe, folder, (forward, main, startup), loss, batches, STEPS, BATCH, optimizer)
    with paddle.static.scope_guard(scope):
        first = {k: v[:BATCH] for k, v in batches.items()}
        outputs = exe.run(forward, feed=first, fetch_list=list(names.values()))
    np.savez(folder / "outputs.npz", **dict(zip(names, outputs)))
    np.savez_compressed(folder / "data.npz", **batches)
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    return {**names, "loss": named(loss), "losses": losses}


def corner_cases() -> dict:
    """name -> (feeds, f(inputs) building the value whose weighted sum is the loss)."""
    tied = np.array([[1.0, 1.0, 0.5, 1.0, -0.2, 0.5]])
    labels = np.array([[2.0, 1.0, 1.0, 0.0, 3.0, 0.0]])
    masked = np.array([[0.3, -1.2, 0.8, 0.0, 0.0], [1.5, 0.1, 0.0, 0.0, 0.0]])
    near_zero = np.array([[1e-13, -2e-13, 5e-14], [0.0, 0.0, 0.0], [0.3, -0.4, 1.2]])
    return {
        "margin_ties": ({"a": np.array([0.5, 1.0, -0.3, 2.0]), "b": np.array([0.5, 0.9, -0.3, 2.5])},
                        lambda f: F.margin_ranking_loss(f["a"], f["b"], paddle.to_tensor(np.array([1.0, 1.0, -1.0,
                                                        -1.0])), margin=0.0, reduction="none")),
        "ranknet_ties": ({"s": tied}, lambda f: F.softplus(-(f["s"].unsqueeze(2) - f["s"].unsqueeze(1)))),
        "masked_softmax": ({"x": masked}, lambda f: F.softmax(paddle.where(
            paddle.to_tensor(np.array([[1, 1, 1, 0, 0], [1, 1, 0, 0, 0]]) > 0), f["x"],
            paddle.full_like(f["x"], float("-inf"))), axis=1)),
        "normalize_small": ({"x": near_zero}, lambda f: normalize(f["x"])),
        "lambda_ties": ({"s": tied}, lambda f: lambda_pairs(f["s"], paddle.to_tensor(labels))),
    }


def lambda_pairs(scores, labels):
    order = paddle.argsort(scores, axis=1, descending=True)
    ranks = paddle.cast(paddle.argsort(order, axis=1), "float64")
    discount = 1.0 / paddle.log2(ranks + 2.0)
    delta = paddle.abs((labels.unsqueeze(2) - labels.unsqueeze(1)) * (discount.unsqueeze(2) - discount.unsqueeze(1)))
    return delta * F.softplus(-(scores.unsqueeze(2) - scores.unsqueeze(1)))


def corner_programs(out: Path, exe) -> None:
    results = {}
    for name, (feeds, build) in corner_cases().items():
        forward, _, numbers = weighted_corner(exe, feeds, build, lambda size: RNG.normal(size=size))
        results.update({f"{name}_{key}": value for key, value in numbers.items()})
        write_gz(out / f"corner_{name}.pb", without_callstacks(forward))
    np.savez(out / "corners.npz", **results)


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {name: train_model(out, name, exe) for name in MODELS}
    corner_programs(out, exe)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def pir_training(out: Path, name: str) -> list[float]:
    """The model built and minimized in PIR static mode (F.normalize itself there): NAME_pir_train.json (the loss
    fetched as "loss") / NAME_pir_startup.json, its initial values NAME_pir_init.npz, its losses on the legacy run's
    data."""
    main, startup, loss, _ = pir_minimized(out, f"{name}_", lambda: MODELS[name]()[0], OPTIMIZERS[name], 49)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    data = dict(np.load(out / name / "data.npz"))
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        names = [op.attrs()["parameter_name"] for op in main.global_block().ops if op.name() == "builtin.parameter"]
        np.savez(out / f"{name}_pir_init.npz", **{key: np.array(scope.var(key).get_tensor()) for key in names})
        losses = [float(exe.run(main, feed={k: v[step * BATCH:(step + 1) * BATCH] for k, v in data.items()},
                                fetch_list=[loss])[0]) for step in range(STEPS)]
    paddle.disable_static()
    return losses


def main_pir(out: Path) -> None:
    """The listwise and two-tower models trained in PIR static mode; the document tower in PIR mode holding the
    trained twotower weights, paddle.jit.save'd, and the Predictor's embeddings of the first batch's documents."""
    losses = {name: pir_training(out, name) for name in ("listwise", "twotower")}
    (out / "pir_losses.json").write_text(json.dumps(losses, indent=1) + "\n")
    paddle.disable_static()
    trained = np.load(out / "twotower" / "trained.npz")
    tower = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, EMB))
    names = ["linear_7.w_0", "linear_7.b_0", "linear_8.w_0", "linear_8.b_0"]
    for param, name in zip(tower.parameters(), names):
        param.set_value(trained[name])

    class DocTower(nn.Layer):
        def __init__(self):
            super().__init__()
            self.net = tower

        def forward(self, docs):
            return F.normalize(self.net(docs), axis=1)

    model = DocTower()
    docs = np.load(out / "twotower" / "data.npz")["docs"][:BATCH]
    eager = model(paddle.to_tensor(docs)).numpy()
    paddle.jit.save(model, str(out / "doc_tower"), input_spec=[paddle.static.InputSpec([-1, FEATURES], "float32",
                                                                                         "docs")])
    config = paddle.inference.Config(str(out / "doc_tower.json"), str(out / "doc_tower.pdiparams"))
    config.disable_mkldnn()
    predictor = paddle.inference.create_predictor(config)
    predictor.get_input_handle("docs").copy_from_cpu(docs)
    predictor.run()
    predicted = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    exported = out / "doc_tower.json"
    gzip_file(exported)
    np.savez(out / "predictor_pir.npz", docs=docs, eager=eager, predicted=predicted)


if __name__ == "__main__":
    script_main(main, main_pir)

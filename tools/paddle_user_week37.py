"""The word-embedding and knowledge-graph engineer's programs of docs/tools.md's 'A word-embedding and knowledge-graph
engineer's week', written with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0).

- skipgram.pb: skip-gram with hand-made negatives: centre words through paddle.static.nn.embedding (is_sparse=True,
  padding_idx=0), context and 4 negatives through nn.Embedding(sparse=True), dot products, sigmoid cross-entropy
  (F.binary_cross_entropy_with_logits); Paddle's training programs of it with SGD, Adam (lazy_mode False and True) and
  Adagrad (skipgram_<opt>_train.pb), 5 steps of 8 pairs each: losses and both tables after them.
- nce.pb: skip-gram through paddle.static.nn.nce (uniform sampler, and custom_dist of the words' frequencies, seed
  fixed), SGD: Paddle's losses per step (its sampling is random).
- nce_uniform_adam_lazy_*: nce.pb's uniform case trained by Adam(lazy_mode=True) (its is_sparse weight gradient
  a SelectedRows of the sampled classes in Paddle).
- hsigmoid.pb / hsigmoid_custom.pb: F.hsigmoid_loss over the default tree and over a custom path_table/path_code
  (is_sparse=True: Paddle's sparse kernel needs a custom tree), SGD: losses and tables; the custom tree by
  Adam(lazy_mode=True) too.
- transe.pb: TransE, L1 distance of h + r - t, F.margin_ranking_loss (margin 1) against corrupted triples, SGD; between
  the steps the entities renormalised to norm <= 1 by renorm.pb (its own program assigning into the table).
- distmult.pb: DistMult with ComplEx's real/imaginary halves, F.softplus(-y * score), an entity Embedding with
  padding_idx=0, Adagrad.
- neighbours.pb: cosine nearest neighbours of query words (topk 5 of the normalised table's products);
  kg_rank.pb: filtered ranks of the true tails (the known other tails masked), mean rank and hits@10.
- embed_pir.json / .pdiparams: the trained centre-word lookup saved by paddle.jit.save (PIR) and run by the Predictor.
- pir_skipgram_*: the skip-gram (two nn.Embedding(sparse=True)) in PIR static mode with Adam(lazy_mode=True), as
  tools/paddle_pir_weeks.py saves a case: model.json, Paddle's train.json and startup.json, the start, Paddle's
  losses and trained tables (its backward writes a dense pd_op.embedding_grad whatever sparse=True says).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week37.py tests/data/paddle/user_week37
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import pir_half, script_main, without_callstacks, write_gz

VOCAB, DIM, PAIRS, NEG, BATCH, STEPS = 30, 8, 40, 4, 8, 5
ENTITIES, RELATIONS, TRIPLES = 20, 4, 40
RNG = np.random.default_rng(37)


def word_data() -> dict:
    centre = RNG.integers(1, VOCAB, PAIRS)
    context = (centre + RNG.integers(1, 3, PAIRS)) % VOCAB
    context[context == 0] = 1
    centre[3] = 0   # the padding word: its row gets no update
    return {"centre": centre.astype(np.int64).reshape(-1, 1), "context": context.astype(np.int64).reshape(-1, 1),
            "negatives": RNG.integers(1, VOCAB, (PAIRS, NEG)).astype(np.int64)}


def kg_data() -> dict:
    heads = RNG.integers(1, ENTITIES, TRIPLES)
    relations = RNG.integers(0, RELATIONS, TRIPLES)
    tails = (heads + relations + 1) % ENTITIES
    tails[tails == 0] = 1
    corrupt = RNG.integers(1, ENTITIES, TRIPLES)
    # half the negatives corrupt the head, half the tail
    neg_heads, neg_tails = heads.copy(), tails.copy()
    neg_heads[::2], neg_tails[1::2] = corrupt[::2], corrupt[1::2]
    return {name: value.astype(np.int64).reshape(-1, 1) for name, value in (
        ("head", heads), ("relation", relations), ("tail", tails), ("neg_head", neg_heads), ("neg_tail", neg_tails))}


def skipgram(feeds):
    centre, context, negatives = feeds
    vectors = paddle.static.nn.embedding(centre, [VOCAB, DIM], is_sparse=True, padding_idx=0)  # [B, 1, D]
    outside = paddle.nn.Embedding(VOCAB, DIM, sparse=True)
    targets = outside(paddle.concat([context, negatives], axis=1))                             # [B, 1 + K, D]
    logits = paddle.sum(vectors * targets, axis=-1)
    labels = paddle.concat([paddle.ones_like(logits[:, :1]), paddle.zeros_like(logits[:, 1:])], axis=1)
    return F.binary_cross_entropy_with_logits(logits, labels)


def nce_loss(sampler):
    def build(feeds):
        centre, context, _ = feeds
        vectors = paddle.squeeze(paddle.nn.Embedding(VOCAB, DIM, sparse=True)(centre), axis=1)
        counts = np.bincount(word_data_cache["context"].ravel(), minlength=VOCAB) + 1.0
        extra = {"custom_dist": list(counts / counts.sum())} if sampler == "custom_dist" else {}
        cost = paddle.static.nn.nce(vectors, context, VOCAB, num_neg_samples=NEG, sampler=sampler, seed=7,
                                    is_sparse=True, **extra)
        return paddle.mean(cost)
    return build


def hsigmoid(custom):
    def build(feeds):
        centre, context, _ = feeds
        vectors = paddle.squeeze(paddle.nn.Embedding(VOCAB, DIM, sparse=True)(centre), axis=1)
        classes = VOCAB if not custom else 8
        weight = paddle.create_parameter([classes - 1, DIM], "float32")
        bias = paddle.create_parameter([classes - 1, 1], "float32", is_bias=True)
        if not custom:
            return paddle.mean(F.hsigmoid_loss(vectors, context, VOCAB, weight, bias))
        table = paddle.static.data("path_table", [-1, 3], "int64")
        code = paddle.static.data("path_code", [-1, 3], "int64")
        return paddle.mean(F.hsigmoid_loss(vectors, context, classes, weight, bias, path_table=table,
                                           path_code=code, is_sparse=True))
    return build


def paths_of(words):
    """A custom 3-level tree over 8 leaves (a word's leaf is word % 8): the inner nodes on its path (-1 padded), the
    branch taken at each."""
    leaf = words.ravel() % 8
    table = np.stack([np.zeros_like(leaf), 1 + leaf // 4, 3 + leaf // 2], axis=1)
    code = np.stack([leaf // 4, (leaf // 2) % 2, leaf % 2], axis=1)
    return table.astype(np.int64), code.astype(np.int64)


def kg_scores(feeds, distance):
    head, relation, tail, neg_head, neg_tail = feeds
    entities = paddle.nn.Embedding(ENTITIES, DIM, padding_idx=0 if distance == "distmult" else None)
    relations = paddle.nn.Embedding(RELATIONS, DIM)
    h, r, t = entities(head), relations(relation), entities(tail)
    nh, nt = entities(neg_head), entities(neg_tail)
    if distance == "distmult":   # ComplEx: real and imaginary halves
        def score(a, b, c):
            (ar, ai), (br, bi), (cr, ci) = (paddle.split(x, 2, axis=-1) for x in (a, b, c))
            return paddle.sum(ar * br * cr + ai * br * ci + ar * bi * ci - ai * bi * cr, axis=[1, 2])
        scores = paddle.concat([score(h, r, t), score(nh, r, nt)])
        labels = paddle.concat([paddle.ones([TRIPLES // 5]), -paddle.ones([TRIPLES // 5])])
        return paddle.mean(F.softplus(-labels * scores))
    positive = paddle.sum(paddle.abs(h + r - t), axis=[1, 2])
    negative = paddle.sum(paddle.abs(nh + r - nt), axis=[1, 2])
    return F.margin_ranking_loss(negative, positive, paddle.ones_like(positive), margin=1.0)


OPTIMIZERS = {"sgd": lambda: paddle.optimizer.SGD(0.5),
              "adam": lambda: paddle.optimizer.Adam(0.05),
              "adam_lazy": lambda: paddle.optimizer.Adam(0.05, lazy_mode=True),
              "adagrad": lambda: paddle.optimizer.Adagrad(0.3)}
word_data_cache = {}


def build(loss_of, names, optimizer=None):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        main.random_seed = startup.random_seed = 37
        feeds = [paddle.static.data(name, [-1, width], "int64") for name, width in names]
        loss = loss_of(feeds)
        forward = main.clone()
        if optimizer:
            OPTIMIZERS[optimizer]().minimize(loss)
    return forward, main, startup, loss.name


def train(exe, out, name, loss_of, names, data, optimizer, renorm=None, save_forward=True):
    """Paddle's steps of one model: the forward, startup and training programs, the start, losses, trained tables."""
    forward, main, startup, loss = build(loss_of, names, optimizer)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        params = [p.name for p in main.all_parameters()]
        if save_forward:
            np.savez(out / f"{name}_start.npz", **{p: np.array(scope.var(p).get_tensor()) for p in params})
        losses = []
        for step in range(STEPS):
            feed = {key: value[step * BATCH:(step + 1) * BATCH] for key, value in data.items()}
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0]))
            if renorm:
                exe.run(renorm)
        trained = {p: np.array(scope.var(p).get_tensor()) for p in params}
    if save_forward:
        write_gz(out / f"{name}.pb", without_callstacks(forward))
        write_gz(out / f"{name}_startup.pb", without_callstacks(startup))
    write_gz(out / f"{name}_{optimizer}_train.pb", without_callstacks(main))
    np.savez_compressed(out / f"{name}_{optimizer}_trained.npz", **trained)
    return {"loss": loss, "losses": losses, "params": params}


def renorm_program():
    """Entities renormalised to norm <= 1, assigned into the table (TransE's constraint between steps)."""
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        table = main.global_block().create_parameter(name="embedding_0.w_0", shape=[ENTITIES, DIM], dtype="float32")
        norms = paddle.maximum(paddle.linalg.norm(table, axis=1, keepdim=True), paddle.full([1], 1.0))
        paddle.assign(table / norms, output=table)
    return main


def evaluation_programs():
    """neighbours.pb: the 5 nearest words by cosine of each query word; kg_rank.pb: the filtered rank of each true
    tail among all entities by TransE's score (-L1), its mean rank and hits@10."""
    neighbours = paddle.static.Program()
    with paddle.static.program_guard(neighbours, paddle.static.Program()):
        table = neighbours.global_block().create_parameter(name="embedding_0.w_0", shape=[VOCAB, DIM], dtype="float32")
        query = paddle.static.data("query", [-1], "int64")
        unit = table / paddle.linalg.norm(table, axis=1, keepdim=True)   # F.normalize fails on a parameter here
        similarity = paddle.matmul(paddle.gather(unit, query), unit, transpose_y=True)
        values, indices = paddle.topk(similarity, 5)
    rank = paddle.static.Program()
    with paddle.static.program_guard(rank, paddle.static.Program()):
        block = rank.global_block()
        entities = block.create_parameter(name="embedding_0.w_0", shape=[ENTITIES, DIM], dtype="float32")
        relations = block.create_parameter(name="embedding_1.w_0", shape=[RELATIONS, DIM], dtype="float32")
        head, relation = paddle.static.data("head", [-1], "int64"), paddle.static.data("relation", [-1], "int64")
        tail = paddle.static.data("tail", [-1], "int64")
        known = paddle.static.data("known", [-1, ENTITIES], "float32")   # 1 at the other true tails: filtered out
        moved = paddle.gather(entities, head) + paddle.gather(relations, relation)
        scores = -paddle.sum(paddle.abs(moved.unsqueeze(1) - entities.unsqueeze(0)), axis=-1)   # [B, E]
        target = paddle.take_along_axis(scores, tail.unsqueeze(1), axis=1)
        better = paddle.cast(scores > target, "float32") * (1.0 - known)
        ranks = paddle.sum(better, axis=1) + 1.0
        mean_rank = paddle.mean(ranks)
        hits = paddle.mean(paddle.cast(ranks <= 10.0, "float32"))
    return (neighbours, {"similar": values.name, "nearest": indices.name}), (
        rank, {"ranks": ranks.name, "mean_rank": mean_rank.name, "hits10": hits.name})


def evaluate(exe, out, words_trained, kg_trained, kg):
    (neighbours, fetch_nb), (rank, fetch_rank) = evaluation_programs()
    write_gz(out / "neighbours.pb", without_callstacks(neighbours))
    write_gz(out / "kg_rank.pb", without_callstacks(rank))
    scope = paddle.static.Scope()
    query = np.arange(1, 9, dtype=np.int64)
    triples = {key: kg[key][:8].ravel() for key in ("head", "relation", "tail")}
    known = np.zeros((8, ENTITIES), np.float32)
    for row, (h, r, t) in enumerate(zip(*triples.values())):
        others = kg["tail"].ravel()[(kg["head"].ravel() == h) & (kg["relation"].ravel() == r)]
        known[row, others[others != t]] = 1.0
    eval_feed = {"query": query, **triples, "known": known}
    np.savez(out / "eval_feed.npz", **eval_feed)
    results = {}
    with paddle.static.scope_guard(scope):
        scope.var("embedding_0.w_0").get_tensor().set(words_trained["embedding_0.w_0"], paddle.CPUPlace())
        got = exe.run(neighbours, feed={"query": query}, fetch_list=list(fetch_nb.values()))
        results.update(zip(fetch_nb, got))
        for name in ("embedding_0.w_0", "embedding_1.w_0"):
            scope.var(name).get_tensor().set(kg_trained[name], paddle.CPUPlace())
        got = exe.run(rank, feed={k: eval_feed[k] for k in ("head", "relation", "tail", "known")},
                      fetch_list=list(fetch_rank.values()))
        results.update(zip(fetch_rank, got))
    np.savez(out / "paddle_eval.npz", **results)
    return {**fetch_nb, **fetch_rank}


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    words, kg = word_data(), kg_data()
    word_data_cache.update(words)
    table, code = paths_of(words["context"])
    np.savez(out / "words.npz", **words)
    np.savez(out / "words_custom.npz", **words, path_table=table, path_code=code)
    np.savez(out / "kg.npz", **kg)
    word_names = (("centre", 1), ("context", 1), ("negatives", NEG))
    meta = {}
    for optimizer in OPTIMIZERS:
        meta[f"skipgram_{optimizer}"] = train(exe, out, "skipgram", skipgram, word_names, words, optimizer,
                                              save_forward=optimizer == "sgd")
    for sampler in ("uniform", "custom_dist"):
        meta[f"nce_{sampler}"] = train(exe, out, f"nce_{sampler}", nce_loss(sampler), word_names, words, "sgd")
    meta["nce_uniform_adam_lazy"] = train(exe, out, "nce_uniform", nce_loss("uniform"), word_names, words,
                                          "adam_lazy", save_forward=False)
    meta["hsigmoid"] = train(exe, out, "hsigmoid", hsigmoid(False), word_names, words, "sgd")
    custom = {**words, "path_table": table, "path_code": code}
    meta["hsigmoid_custom"] = train(exe, out, "hsigmoid_custom", hsigmoid(True), word_names, custom, "sgd")
    meta["hsigmoid_custom_adam_lazy"] = train(exe, out, "hsigmoid_custom", hsigmoid(True), word_names, custom,
                                              "adam_lazy", save_forward=False)
    kg_names = tuple((name, 1) for name in kg)
    renorm = renorm_program()
    write_gz(out / "renorm.pb", without_callstacks(renorm))
    meta["transe"] = train(exe, out, "transe", lambda f: kg_scores(f, "l1"), kg_names, kg, "sgd", renorm=renorm)
    meta["distmult"] = train(exe, out, "distmult", lambda f: kg_scores(f, "distmult"), kg_names, kg, "adagrad")
    meta["eval"] = evaluate(exe, out, dict(np.load(out / "skipgram_adam_trained.npz")),
                            dict(np.load(out / "transe_sgd_trained.npz")), kg)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    from paddle_user_week37_pir import main_pir as pir  # its own module: it imports this one's sizes
    pir(out)


if __name__ == "__main__":
    script_main(main, main_pir)

"""The graph-learning researcher's models of docs/tools.md's 'A graph-learning researcher's week': GCN, GraphSAGE
(mean and max) and GAT layers on a small random graph (an isolated node, repeated edges, self-loops, nodes with no
in-edges), built by Paddle 3.3.1's legacy static API with paddle.geometric, and a GCN with plain index_add /
put_along_axis / scatter_nd_add; each trained STEPS steps of Adam on the full graph, and the GraphSAGE-mean on
mini-batches sampled by paddle.geometric.sample_neighbors + reindex_graph (another node count every batch). Also the
aggregation ops alone, on repeated indices and tied maxima, with Paddle's static gradients (int64 and int32).

Writes <name>_forward.pb, <name>_init.npz (Paddle's startup values) per model (gat_main.pb: Paddle's
training program, gat_logits.npy: its trained test program's), graph.npz, batches.npz, agg_forward.pb with agg.npz
(its inputs, and Paddle's outputs and static gradients), sample_forward.pb with sample.npz and sample_init.npz, and
meta.json (Paddle's executor's losses, the fetched vars' names).

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week14.py tests/data/paddle/user_week14
"""

import json
import os
import sys

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import write_stripped

RNG = np.random.default_rng(14)
NODES, FEATS, HIDDEN, CLASSES, STEPS = 16, 6, 8, 3, 5
G = paddle.geometric
KINDS = ("plain", "gcn", "sage_mean", "sage_max", "gat")   # plain after the others: its norm went unfed in Paddle


def random_graph():
    """Edges sorted by dst (segment ops need sorted ids): node 15 isolated, node 14 sends but receives nothing,
    self-loops on 0 and 3, the edge 2 -> 5 three times."""
    src = RNG.integers(0, 14, 30)
    dst = RNG.integers(0, 14, 30)
    src = np.concatenate([src, [0, 3, 2, 2, 2, 14, 14]])
    dst = np.concatenate([dst, [0, 3, 5, 5, 5, 1, 7]])
    order = np.argsort(dst, kind="stable")
    return src[order].astype("int64"), dst[order].astype("int64")


def fc(x, size, name):
    return paddle.static.nn.fc(x, size, weight_attr=f"{name}_w", bias_attr=f"{name}_b")


def gcn_layer(h, src, dst, norm, name, size):
    """norm[e] = 1/sqrt(deg(src) deg(dst)) on the edge, by send_ue_recv's MUL and SUM."""
    h = fc(h, size, name)
    return G.send_ue_recv(h, norm, src, dst, "mul", "sum")


def sage_layer(h, src, dst, reduce_op, name, size):
    neighbours = G.send_u_recv(F.relu(fc(h, size, name + "_pool")) if reduce_op == "max" else h, src, dst, reduce_op)
    return fc(h, size, name + "_self") + fc(neighbours, size, name + "_neigh")


def gat_layer(h, src, dst, name, size):
    """Edge softmax by segment max shift and segment sum over dst (sorted)."""
    z = fc(h, size, name)
    a_l = paddle.create_parameter([size, 1], "float32", name=name + "_al")
    a_r = paddle.create_parameter([size, 1], "float32", name=name + "_ar")
    score = F.leaky_relu(G.send_uv(paddle.matmul(z, a_l), paddle.matmul(z, a_r), src, dst, "add"), 0.2)
    shifted = score - paddle.gather(G.segment_max(score, dst), dst)
    weight = paddle.exp(shifted)
    alpha = weight / paddle.gather(G.segment_sum(weight, dst), dst)
    return G.send_ue_recv(z, alpha, src, dst, "mul", "sum")


def plain_gcn_layer(h, src, dst, norm, name, size):
    """The same GCN layer with plain ops: index_add, put_along_axis(reduce='add') and scatter_nd_add."""
    h = fc(h, size, name)
    messages = paddle.gather(h, src) * norm
    zeros = paddle.zeros_like(h)
    by_index_add = paddle.index_add(zeros, dst, 0, messages)
    by_put = paddle.put_along_axis(zeros, paddle.expand(dst.unsqueeze(-1), [-1, size]), messages, 0, "add")
    by_nd = paddle.scatter_nd_add(zeros, dst.unsqueeze(-1), messages)
    return (by_index_add + by_put + by_nd) / 3.0


def network(kind, x, src, dst, norm):
    if kind == "gcn":
        return gcn_layer(F.relu(gcn_layer(x, src, dst, norm, "gcn0", HIDDEN)), src, dst, norm, "gcn1", CLASSES)
    if kind in ("sage_mean", "sage_max"):
        reduce_op = kind.split("_")[1]
        return sage_layer(F.relu(sage_layer(x, src, dst, reduce_op, kind + "0", HIDDEN)), src, dst, reduce_op,
                          kind + "1", CLASSES)
    if kind == "gat":
        return gat_layer(F.elu(gat_layer(x, src, dst, "gat0", HIDDEN)), src, dst, "gat1", CLASSES)
    return plain_gcn_layer(F.relu(plain_gcn_layer(x, src, dst, norm, "plain0", HIDDEN)), src, dst, norm, "plain1",
                           CLASSES)


def build_model(kind, out):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [-1, FEATS], "float32")
        src = paddle.static.data("src", [-1], "int64")
        dst = paddle.static.data("dst", [-1], "int64")
        norm = paddle.static.data("norm", [-1, 1], "float32")
        norm.stop_gradient = kind == "plain"   # Paddle 3.3.1's graph_send_ue_recv_grad fails if Y needs no grad
        train = paddle.static.data("train", [-1], "int64")
        label = paddle.static.data("label", [-1, 1], "int64")
        logits = network(kind, x, src, dst, norm)
        loss = paddle.mean(F.cross_entropy(paddle.gather(logits, train), label))
    write_stripped(os.path.join(out, f"{kind}_forward.pb"), main)
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.Adam(0.01).minimize(loss)
    if kind == "gat":   # Paddle's own training program, run by gradc as written; the others gradc compiles
        write_stripped(os.path.join(out, f"{kind}_main.pb"), main)
    return main, startup, loss.name, logits.name


def gcn_norm(src, dst, nodes):
    deg = np.bincount(dst, minlength=nodes) + np.bincount(src, minlength=nodes)
    return (1.0 / np.sqrt(np.maximum(deg[src], 1) * np.maximum(deg[dst], 1))).reshape(-1, 1).astype("float32")


def sampled_batches(src, dst, count):
    """Mini-batches of 4 seed nodes: 2 neighbours sampled per seed by Paddle, the subgraph renumbered."""
    paddle.disable_static()
    order = np.argsort(dst, kind="stable")
    row = paddle.to_tensor(src[order])
    colptr = paddle.to_tensor(np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=NODES))]).astype("int64"))
    batches = []
    for _ in range(count):
        seeds = paddle.to_tensor(RNG.choice(14, 4, replace=False).astype("int64"))
        neighbours, counts = G.sample_neighbors(row, colptr, seeds, sample_size=2)
        sub_src, sub_dst, nodes = G.reindex_graph(seeds, neighbours, counts)
        sub_src, sub_dst, nodes = (t.numpy() for t in (sub_src, sub_dst, nodes))
        keep = np.argsort(sub_dst, kind="stable")
        batches.append({"nodes": nodes, "src": sub_src[keep], "dst": sub_dst[keep], "seeds": np.arange(4)})
    paddle.enable_static()
    return batches


def aggregations(src, dst, ids, edge, inputs):
    """case -> (its input's value, the op on it); send_ue_recv and send_uv only given the edge values (int64)."""
    x, seg_x = inputs["x"], inputs["seg_x"]
    ops = {}
    for r in ("sum", "mean", "max", "min"):
        ops[f"u_recv_{r}"] = (x, lambda xv, r=r: G.send_u_recv(xv, src, dst, r, out_size=5))
        ops[f"segment_{r}"] = (seg_x, lambda xv, r=r: getattr(G, f"segment_{r}")(xv, ids))
    if edge is not None:   # int32 indices through send_u_recv and segment_* alone: the files stay small
        for r in ("sum", "mean", "max", "min"):
            ops[f"ue_recv_mul_{r}"] = (x, lambda xv, r=r: G.send_ue_recv(xv, edge, src, dst, "mul", r, out_size=5))
        ops["uv_mul"] = (x, lambda xv: G.send_uv(xv, xv, src, dst, "mul"))
    return ops


def aggregation_cases(out):
    """Each op on its own input, loss sum(out * weights): repeated (src, dst) pairs and tied maxima/minima."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    feeds, fetch = {}, {}
    x = np.array([[1, 2, 0], [1, -1, 0], [3, 2, 5], [0, 0, 5], [2, 2, 2]], "float32")
    src = np.array([0, 0, 1, 2, 3, 2, 4], "int64")
    dst = np.array([0, 0, 0, 1, 1, 3, 3], "int64")   # 0->0 twice; x rows 0, 1 tie into row 0; no edge into 2
    edge = np.array([[1, 1, 2], [1, 1, 2], [1, 1, 1], [1, 2, 1], [3, 1, 1], [1, 1, 1], [1, 1, 1]], "float32")
    seg_x = np.array([[1, 4], [4, 4], [2, 0], [2, 0], [5, 1]], "float32")
    seg_ids = np.array([0, 0, 2, 2, 3], "int64")   # segment 1 empty, ties in both columns of segments 0 and 2
    with paddle.static.program_guard(main, startup):
        def var(name, value):
            v = paddle.static.data(name, list(value.shape), str(value.dtype))
            v.stop_gradient = not name.startswith("in_")
            feeds[name] = value
            return v
        total = 0
        for itype in ("int64", "int32"):
            s, d = var(f"src_{itype}", src.astype(itype)), var(f"dst_{itype}", dst.astype(itype))
            ids = var(f"seg_{itype}", seg_ids.astype(itype))
            edge_var = var(f"in_edge_{itype}", edge) if itype == "int64" else None
            ops = aggregations(s, d, ids, edge_var, {"x": x, "seg_x": seg_x})
            outs = {case: (var(f"in_{case}_{itype}", value), op) for case, (value, op) in ops.items()}
            for case, (xv, op) in outs.items():
                result = op(xv)
                rows = {"segment": 4, "uv": len(src)}.get(case.split("_")[0], 5)   # static shapes say -1
                weights = RNG.standard_normal((rows,) + tuple(result.shape[1:])).astype("float32")
                total = total + paddle.sum(result * var(f"w_{case}_{itype}", weights))
                fetch[f"out_{case}_{itype}"] = result
        write_stripped(os.path.join(out, "agg_forward.pb"), main)
        grads = paddle.static.gradients([total], [main.global_block().var(n) for n in feeds if n.startswith("in_")])
        for name, grad in zip([n for n in feeds if n.startswith("in_")], grads):
            fetch[f"grad_{name}"] = grad
    exe = paddle.static.Executor(paddle.CPUPlace())
    values = exe.run(main, feed=feeds, fetch_list=list(fetch.values()))
    fetched = dict(zip(fetch, values))
    np.savez_compressed(os.path.join(out, "agg.npz"), **feeds, **fetched)
    return {name: var.name for name, var in fetch.items()}


def train_model(kind, out, graph, batch_feeds):
    """STEPS full-graph steps (and, for sage_mean, a step on each sampled batch), then the test program's logits."""
    main_prog, startup, loss, logits = build_model(kind, out)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    exe.run(startup)
    params = [p.name for p in main_prog.all_parameters()]
    np.savez_compressed(os.path.join(out, f"{kind}_init.npz"),
                        **{p: np.array(scope.find_var(p).get_tensor()) for p in params})
    losses = [float(exe.run(main_prog, feed=graph, fetch_list=[loss])[0]) for _ in range(STEPS)]
    batch_losses = [float(exe.run(main_prog, feed=f, fetch_list=[loss])[0]) for f in batch_feeds] \
        if kind == "sage_mean" else []
    if kind == "gat":
        np.save(os.path.join(out, f"{kind}_logits.npy"),
                exe.run(main_prog.clone(for_test=True), feed=graph, fetch_list=[logits])[0])
    result = {"loss": loss, "logits": logits, "params": params, "losses": losses, "batch_losses": batch_losses}
    if kind == "sage_max":   # the same max with each repeated edge once: Paddle's grad counts a repeat again
        once = np.unique(np.stack([graph["src"], graph["dst"]]), axis=1)
        unique_feed = {**graph, "src": once[0], "dst": once[1], "norm": gcn_norm(once[0], once[1], NODES)}
        with paddle.static.scope_guard(paddle.static.Scope()):
            exe.run(startup)
            for name, value in np.load(os.path.join(out, f"{kind}_init.npz")).items():
                paddle.static.global_scope().find_var(name).get_tensor().set(value, paddle.CPUPlace())
            result["unique_edge_losses"] = [float(exe.run(main_prog, feed=unique_feed, fetch_list=[loss])[0])
                                            for _ in range(STEPS)]
    return result


def sampling_program(out, src, dst, x):
    """sample_neighbors (every neighbour, and 2 at random) and reindex_graph in the program, before a SAGE layer."""
    main_prog, startup = paddle.static.Program(), paddle.static.Program()
    order = np.argsort(dst, kind="stable")
    feed = {"row": src[order], "colptr": np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=NODES))]),
            "seeds": np.array([5, 1, 15, 7], "int64"), "features": x}
    with paddle.static.program_guard(main_prog, startup):
        row, colptr, seeds = (paddle.static.data(n, [-1], "int64") for n in ("row", "colptr", "seeds"))
        features = paddle.static.data("features", [-1, FEATS], "float32")
        fetch = {}
        for size in (100, 2):   # 100 is past every degree: all neighbours, in order (Paddle 3.3.1 fails on -1)
            neighbours, counts = G.sample_neighbors(row, colptr, seeds, sample_size=size)
            sub_src, sub_dst, nodes = G.reindex_graph(seeds, neighbours, counts)
            logits = sage_layer(paddle.gather(features, nodes), sub_src, sub_dst, "mean", "sampled", CLASSES)
            fetch.update({f"{k}_{size}": v for k, v in
                          (("neighbours", neighbours), ("counts", counts), ("src", sub_src), ("dst", sub_dst),
                           ("nodes", nodes), ("logits", logits))})
    write_stripped(os.path.join(out, "sample_forward.pb"), main_prog)
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(paddle.static.Scope()):
        exe.run(startup)
        params = {p.name: np.array(paddle.static.global_scope().find_var(p.name).get_tensor())
                  for p in main_prog.all_parameters()}
        values = dict(zip(fetch, exe.run(main_prog, feed=feed, fetch_list=list(fetch.values()))))
    np.savez_compressed(os.path.join(out, "sample.npz"), **feed, **values)
    np.savez_compressed(os.path.join(out, "sample_init.npz"), **params)
    return {name: v.name for name, v in fetch.items()}


def main(out):
    paddle.enable_static()
    paddle_legacy_shim.install()
    paddle.seed(14)
    src, dst = random_graph()
    x = RNG.standard_normal((NODES, FEATS)).astype("float32")
    label = RNG.integers(0, CLASSES, (NODES, 1)).astype("int64")
    train = np.arange(0, NODES, 2).astype("int64")
    graph = {"x": x, "src": src, "dst": dst, "norm": gcn_norm(src, dst, NODES), "train": train,
             "label": label[train]}
    np.savez_compressed(os.path.join(out, "graph.npz"), **graph)
    batches = sampled_batches(src, dst, 3)
    batch_feeds = [{"x": x[batch["nodes"]], "src": batch["src"], "dst": batch["dst"],
                    "norm": gcn_norm(batch["src"], batch["dst"], len(batch["nodes"])), "train": batch["seeds"],
                    "label": label[batch["nodes"][:4]]} for batch in batches]
    np.savez_compressed(os.path.join(out, "batches.npz"),
                        **{f"{k}{b}": v for b, feed in enumerate(batch_feeds) for k, v in feed.items()})
    meta = {"kinds": {}, "batches": len(batch_feeds), "batch_nodes": [len(b["nodes"]) for b in batches]}
    for kind in KINDS:
        with paddle.static.scope_guard(paddle.static.Scope()):   # a shared scope left the plain model's norm unfed
            meta["kinds"][kind] = train_model(kind, out, graph, batch_feeds)
    meta["agg_fetch"] = aggregation_cases(out)
    meta["sample_fetch"] = sampling_program(out, src, dst, x)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])

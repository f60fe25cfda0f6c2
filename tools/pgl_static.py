"""Check gradc on PGL's static path: legacy training programs (FLAGS_enable_pir_api=0) of the GCN and GAT of PGL's
examples/citation_benchmark/model.py on a random graph (NODES nodes, EDGES edges, node 0 without any), built with
Paddle's optimizer minimize as PGL's examples train them (Adam, learning rate 0.01 and 0.005, weight decay 0.0005,
dropout at its config's rate: GCN's 0.5, GAT's feat_drop and attn_drop 0.6, or all 0 with DROPOUT=0; meta.json records
paddle.seed's 0, with which the gradc step replays Paddle's startup and so draws Paddle's masks), Paddle's startup
values and two steps. Two steps, one per interpreter:

    FLAGS_enable_pir_api=0 PYTHONPATH=tools /path/to/paddle/python tools/pgl_static.py paddle PGL_DIR OUT_DIR gcn
    PYTHONPATH=src .venv/bin/python tools/paddlerec_static.py gradc OUT_DIR

The Paddle step writes OUT_DIR/<model>/ as tools/paddlerec_static.py's does (forward.pb, train.pb, startup.pb,
params.npz, feed.npz, step1.npz, step2.npz, meta.json), whose gradc step checks it: it loads, verifies and runs
Paddle's two steps, and compiles forward.pb with the same optimizer (gradc.minimize) and runs that.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

NODES, EDGES, FEATURES, CLASSES, LABELED = 24, 96, 16, 3, 12
RATE = float(os.environ.get("DROPOUT", "1"))   # the configs' dropout rates times this (DROPOUT=0: off)
MODELS = {   # PGL's citation_benchmark model, its keywords (config/*.yaml's dropout), its learning rate
    "gcn": ("GCN", {"num_layers": 1, "hidden_size": 8, "dropout": 0.5 * RATE}, 0.01),
    "gat": ("GAT", {"num_layers": 2, "hidden_size": 4, "num_heads": 2, "feat_drop": 0.6 * RATE,
                    "attn_drop": 0.6 * RATE}, 0.005)}
WEIGHT_DECAY = 0.0005


def _graph_values() -> dict:
    """A random graph: edge ends in [1, NODES) (node 0 has none), features, labels, the labeled nodes."""
    rng = np.random.default_rng(0)
    return {"edges": rng.integers(1, NODES, (EDGES, 2)).astype("int64"),
            "feature": rng.standard_normal((NODES, FEATURES)).astype("float32"),
            "node_index": np.sort(rng.choice(NODES, LABELED, replace=False)).astype("int64"),
            "node_label": rng.integers(0, CLASSES, (LABELED, 1)).astype("int64")}


def paddle_step(source: Path, out: Path, name: str) -> None:
    """Build the model's static programs, minimize with Adam, and record Paddle's two steps."""
    import paddle
    sys.path[:0] = [str(source), str(source / "examples" / "citation_benchmark")]
    import model as models
    import pgl
    from paddle_legacy_shim import install
    install()   # 3.3.1's paddle.sum, exp, ... have no legacy static path of their own (GAT's edge softmax)
    paddle.enable_static()
    paddle.seed(0)
    class_name, keywords, lr = MODELS[name]
    values = _graph_values()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        inputs = {key: paddle.static.data(key, value.shape, str(value.dtype)) for key, value in values.items()}
        graph = pgl.Graph(edges=inputs["edges"], num_nodes=NODES)
        net = getattr(models, class_name)(FEATURES, CLASSES, **keywords)
        logits = paddle.gather(net(graph, inputs["feature"]), inputs["node_index"])
        loss = paddle.nn.CrossEntropyLoss()(logits, inputs["node_label"])
        forward = main.clone()
        paddle.optimizer.Adam(learning_rate=lr, weight_decay=WEIGHT_DECAY).minimize(loss)
    out.mkdir(parents=True, exist_ok=True)
    for stem, program in (("forward", forward), ("train", main), ("startup", startup)):
        (out / f"{stem}.pb").write_bytes(program.desc.serialize_to_string())
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    scope = paddle.static.global_scope()
    persistable = [v.name for v in main.list_vars() if v.persistable and v.name not in ("feed", "fetch")
                   and scope.find_var(v.name) is not None and scope.find_var(v.name).get_tensor()._is_initialized()]
    np.savez(out / "params.npz", **{n: np.array(scope.find_var(n).get_tensor()) for n in persistable})
    np.savez(out / "feed.npz", **values)
    grads = [p.name + "@GRAD" for p in main.all_parameters() if main.global_block().has_var(p.name + "@GRAD")]
    for step in (1, 2):
        value, *grad_values = exe.run(main, feed=values, fetch_list=[loss, *grads] if step == 1 else [loss])
        np.savez(out / f"step{step}.npz", **{"@loss": np.asarray(value)},
                 **{f"@grad:{g}": np.asarray(v) for g, v in zip(grads, grad_values)},
                 **{n: np.array(scope.find_var(n).get_tensor()) for n in persistable})
    adam = next(op for op in main.global_block().ops if op.type == "adam")
    optimizer = {"type": "adam", **{a: adam.attr(a) for a in ("beta1", "beta2", "epsilon", "lazy_mode")}, "lr": lr,
                 "weight_decay": WEIGHT_DECAY}
    (out / "meta.json").write_text(json.dumps({"loss": loss.name, "optimizer": optimizer, "seed": 0}))


if __name__ == "__main__":
    paddle_step(Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve() / sys.argv[4], sys.argv[4])

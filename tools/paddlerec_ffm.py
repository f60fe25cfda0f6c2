"""PaddleRec's FFM as its dygraph model trains it (models/rank/ffm: net.FFMLayer built as dygraph_model.create_model
builds it from config.yaml, 26 sparse slots and 13 dense features, so 39 fields and 741 field pairs; create_loss's
log_loss and mean; the config's Adam), built by PaddleRec's own net.py in legacy static mode: the program of 2,981
ops whose PIR export Paddle 3.3.1 had not finished running. Its embeddings are sparse (`is_sparse`, SelectedRows
gradients). The ids of the first two lines of its sample data are folded below VOCAB (its 1,000,001-id tables hold
351 floats an id). Needs PaddleRec's checkout (PADDLEREC_DIR, its models/rank/ffm). For tools/zoo_train_static.py.

Run alone, it times Paddle's first and second run of FFM's forward with FIELDS fields (its config: 39) in the current
mode (PIR unless FLAGS_enable_pir_api=0), the first building the interpreter's instructions:

    PADDLEREC_DIR=... /work/paddle-venv/bin/python tools/paddlerec_ffm.py FIELDS
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

VOCAB, DIM, SPARSE, DENSE = 101, 9, 26, 13


def _sample_lines(count: int) -> list[str]:
    folder = Path(os.environ["PADDLEREC_DIR"]) / "models/rank/ffm/data/sample_data/train"
    return next(iter(sorted(folder.iterdir()))).read_text().splitlines()[:count]


def feed(rng, batch: int = 2) -> dict:
    labels, dense, sparse = [], [], []
    for line in _sample_lines(batch):   # criteo_reader's fields: click, 13 dense_feature, slots 1..26
        pairs = [item.split(":") for item in line.split()]
        labels.append(int(pairs[0][1]))
        dense.append([float(v) for k, v in pairs if k == "dense_feature"])
        sparse.append([int(v) % VOCAB for k, v in pairs if k.isdigit()])
    values = {f"sparse_{i}": np.array([[row[i]] for row in sparse], "int64") for i in range(SPARSE)}
    return {**values, "dense": np.array(dense, "float32"), "label": np.array(labels, "int64").reshape(-1, 1)}


def build(values: dict):
    import paddle
    sys.path.insert(0, str(Path(os.environ["PADDLEREC_DIR"]) / "models/rank/ffm"))
    import net
    data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in values.items()}
    model = net.FFMLayer(VOCAB, DIM, DENSE, SPARSE + DENSE)
    pred = model([data[f"sparse_{i}"] for i in range(SPARSE)], data["dense"])
    return paddle.mean(paddle.nn.functional.log_loss(pred, paddle.cast(data["label"], "float32")))


def time_runs(fields: int) -> str:
    import paddle
    sys.path.insert(0, str(Path(os.environ["PADDLEREC_DIR"]) / "models/rank/ffm"))
    import net
    paddle.enable_static()
    dense = min(DENSE, fields // 3)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        ids = [paddle.static.data(f"sparse_{i}", [2, 1], "int64") for i in range(fields - dense)]
        out = net.FFMLayer(VOCAB, DIM, dense, fields)(ids, paddle.static.data("dense", [2, dense], "float32"))
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    feed = {**{f"sparse_{i}": np.ones((2, 1), "int64") for i in range(fields - dense)},
            "dense": np.ones((2, dense), "float32")}
    seconds = []
    for _ in range(2):
        start = time.perf_counter()
        exe.run(main, feed=feed, fetch_list=[out])
        seconds.append(time.perf_counter() - start)
    ops = len(main.global_block().ops)
    return f"fields {fields}: {ops} ops, first run {seconds[0]:.2f} s, second {seconds[1]:.3f} s"


if __name__ == "__main__":
    print(time_runs(int(sys.argv[1])))

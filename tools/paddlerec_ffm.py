"""PaddleRec's FFM as its dygraph model trains it (models/rank/ffm: net.FFMLayer built as dygraph_model.create_model
builds it from config.yaml, 26 sparse slots and 13 dense features, so 39 fields and 741 field pairs; create_loss's
log_loss and mean; the config's Adam), built by PaddleRec's own net.py in legacy static mode: the program of 2,981
ops whose PIR export Paddle 3.3.1 had not finished running. Its embeddings are sparse (`is_sparse`, SelectedRows
gradients). The ids of the first two lines of its sample data are folded below VOCAB (its 1,000,001-id tables hold
351 floats an id). Needs PaddleRec's checkout (PADDLEREC_DIR, its models/rank/ffm). For tools/zoo_train_static.py."""

from __future__ import annotations

import os
import sys
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

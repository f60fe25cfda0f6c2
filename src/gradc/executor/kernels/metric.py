"""Kernels of gradc.ops.metric."""

from __future__ import annotations

import numpy as np

from . import kernel


@kernel("accuracy")
def accuracy(k):
    """A row is correct when its label is among its top-k indices (Paddle's kernel; Out is not read)."""
    indices, label = k.x("Indices"), k.x("Label")
    if indices.ndim != 2 or label.shape[:1] != indices.shape[:1]:
        raise ValueError(f"accuracy needs Indices [batch, k] and one label per row, got Indices "
                         f"{list(indices.shape)} and Label {list(label.shape)}")
    total = indices.shape[0]
    correct = int((indices == label.reshape(total, -1)[:, :1]).any(axis=1).sum())
    return {"Accuracy": np.array(correct / total if total else 0.0, np.float32),
            "Correct": np.array(correct, np.int32), "Total": np.array(total, np.int32)}

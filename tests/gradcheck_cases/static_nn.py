"""Cases for the static_nn layers (cvm, nce, row_conv) and their grad ops. cvm's gradient of X's show and click
columns is Paddle's by design (the CVM input, not a derivative): its case checks the other columns, X built as
[fixed counts, checked embedding]. nce's samplers are seeded (the seed attribute), so every run of the central
differences draws the same negatives."""

import numpy as np

from programs import Net

from . import Case, rng
from .second_order import second_order

r = rng(83)


def randn(*shape, scale=1.0):
    return scale * r.standard_normal(shape)


def _cvm(use_cvm: bool):
    """loss = mean(cvm(concat(counts, embedding)) * w), checked in the embedding."""
    net = Net()
    counts, embedding, cvm, w = (net.data("counts", [3, 2]), net.data("embedding", [3, 4]), net.data("cvm", [3, 2]),
                                 net.data("w", [3, 6 if use_cvm else 4]))
    x = net.op("concat", {"X": [counts, embedding]}, {"axis": 1})
    y = net.op("cvm", {"X": x, "CVM": cvm}, {"use_cvm": use_cvm}, out="Y")
    loss = net.mean(net.elementwise_mul(y, w))
    feed = {"counts": r.uniform(0.5, 3.0, (3, 2)), "embedding": randn(3, 4), "cvm": r.uniform(0.5, 3.0, (3, 2)),
            "w": randn(3, 6 if use_cvm else 4)}
    return {"program": net.program, "feed": feed, "loss": loss, "wrt": ["embedding"]}


def _nce_inputs(classes=6, trues=1, weighted=False, bias=True):
    inputs = {"Input": randn(3, 4), "Label": r.integers(0, classes, (3, trues)), "Weight": randn(classes, 4)}
    if bias:
        inputs["Bias"] = randn(classes, 1)
    if weighted:
        inputs["SampleWeight"] = r.uniform(0.5, 2.0, (3, 1))
    return inputs


# the sampler's probabilities and some alias tables (the gradient reads the probabilities of the samples drawn)
CUSTOM = {"CustomDistProbs": np.array([0.1, 0.2, 0.3, 0.25, 0.15, 0.0]),
          "CustomDistAlias": np.array([2, 3, -1, 2, 3, 2], np.int32),
          "CustomDistAliasProbs": np.array([0.6, 1.0, 1.0, 0.5, 0.9, 0.0])}
SEEDED = {"num_total_classes": 6, "num_neg_samples": 3, "seed": 7}

CASES = [
    Case("cvm", {}, {"use_cvm": True}, program=lambda: _cvm(True)),
    Case("cvm", {}, {"use_cvm": False}, program=lambda: _cvm(False)),
    Case("row_conv", {"X": randn(2, 5, 3), "Filter": randn(3, 3)}),
    Case("row_conv", {"X": randn(1, 2, 4), "Filter": randn(4, 4)}),    # a context longer than the sequence
    Case("nce", _nce_inputs(), {**SEEDED, "sampler": 0}),
    Case("nce", _nce_inputs(trues=2, weighted=True), {**SEEDED, "sampler": 1}),
    Case("nce", {**_nce_inputs(bias=False), **CUSTOM}, {**SEEDED, "sampler": 2}),
    Case("nce", _nce_inputs(weighted=True), {"num_total_classes": 6, "num_neg_samples": 2,
                                             "custom_neg_classes": [1, 4]}),
    # checked in dOut only: any backward through cvm puts CVM in X's first columns, a second one too
    second_order("cvm", {"X": r.uniform(0.5, 3.0, (3, 5)), "CVM": r.uniform(0.5, 3.0, (3, 2))}, {"use_cvm": True},
                 tied=True),
    second_order("cvm", {"X": r.uniform(0.5, 3.0, (3, 5)), "CVM": r.uniform(0.5, 3.0, (3, 2))}, {"use_cvm": False},
                 tied=True),
    second_order("row_conv", {"X": randn(2, 4, 3), "Filter": randn(2, 3)}),
    second_order("nce", _nce_inputs(), {**SEEDED, "sampler": 0}),
    second_order("nce", _nce_inputs(trues=2, weighted=True), {**SEEDED, "sampler": 1}),
    second_order("nce", {**_nce_inputs(), **CUSTOM}, {**SEEDED, "sampler": 2}),
]

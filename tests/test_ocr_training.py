"""PaddleOCR's models as they train, teacher-forced with their own losses (tools/paddleocr_train_static.py, Paddle
3.3.1), compiled by gradc from the training forward with the config's Adam:
- tests/data/paddle/table_master (table_master_fixture@32@f64): TableMaster's backbone with global-context blocks,
  its decoder under a causal and padding mask, TableMasterLoss (cross entropy with PAD ignored, masked L1 of the boxes'
  even and odd coordinates); float64, where float32 rounding moves a one-channel layer norm's gradient by 1e-3 of
  itself;
- tests/data/paddle/latexocr (latexocr_fixture): LaTeX-OCR's decoder (einsum attention, attention on attention's
  GLU, GEGLU feed-forward, masks by where and a pad3d of an int32 mask) on a fed encoder output, LaTeXOCRLoss;
  latexocr/pir the same built in PIR mode (latexocr_fixture@16@pir: its forward.json, Paddle's PIR gradients; the
  feed and parameters are the legacy case's)."""

import gzip
import json

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.optimizers import minimize
from gradc.pir import load_pir

CASES = {   # the ops that set each apart, and how close its gradients are (of each one's largest)
    "table_master": ({"set_value", "strided_slice", "tril_triu", "logical_and", "lookup_table_v2"}, 1e-10),
    "latexocr": ({"einsum", "where", "pad3d", "gelu", "bitwise_not", "split"}, 1e-5),
    "latexocr/pir": ({"einsum", "where", "pad3d", "gelu", "bitwise_not", "split"}, 1e-5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradc_compiles_the_training_forward_to_paddles_loss_and_gradients(name):
    case, (ops, tolerance) = DATA / name, CASES[name]
    shared = case.parent if name.endswith("/pir") else case   # the feed and parameters
    meta = json.loads((case / "meta.json").read_text())
    forward = (load_pir(gzip.decompress((case / "forward.json.gz").read_bytes())) if name.endswith("/pir")
               else gradc.load(case / "forward.pb"))
    assert ops | {"softmax_with_cross_entropy"} <= {op.type for op in forward.global_block.ops}
    settings = dict(meta["optimizer"])
    kind, lr = settings.pop("type"), settings.pop("lr")
    startup = minimize(forward, meta["loss"], kind, lr=lr, **settings)
    grads = {op.inputs["Param"][0]: op.inputs["Grad"][0] for op in forward.global_block.ops if op.type == "adam"}
    first, second = np.load(case / "step1.npz"), np.load(case / "step2.npz")
    assert sorted(f"@grad:{param}@GRAD" for param in grads) == sorted(k for k in first.files if k != "@loss")

    scope, executor = gradc.Scope(), gradc.Executor()
    for param, value in np.load(shared / "params.npz").items():
        scope[param] = value.copy()
    executor.run(startup, {}, [], scope)
    feed = dict(np.load(shared / "feed.npz"))
    loss, *values = executor.run(forward, feed, [meta["loss"], *grads.values()], scope)
    np.testing.assert_allclose(loss, first["@loss"], rtol=tolerance)
    paddle = {param: first[f"@grad:{param}@GRAD"] for param in grads}
    # attention and context-mask biases have gradients zero but for rounding (softmax cancels them): measured
    # against 100 ulps of the largest gradient, as tools/real_models.py does
    floor = 100 * np.finfo(first["@loss"].dtype).eps * max(np.abs(value).max() for value in paddle.values())
    for (param, theirs), ours in zip(paddle.items(), values):
        distance = np.abs(ours - theirs).max()
        assert distance <= tolerance * np.abs(theirs).max() + floor, (param, distance, np.abs(theirs).max())
    (loss,) = executor.run(forward, feed, [meta["loss"]], scope)
    # Adam takes a whole step of the rounding's sign for those zero gradients, which moves the loss a little
    np.testing.assert_allclose(loss, second["@loss"], rtol=1e-6)

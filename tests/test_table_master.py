"""PaddleOCR's TableMaster as it trains (tests/data/paddle/table_master, from tools/paddleocr_train_static.py's
table_master_fixture@32@f64 with Paddle 3.3.1): its backbone with global-context blocks, its decoder teacher-forced
on the structure tokens under a causal and padding mask, its loss (cross entropy with PAD ignored, masked L1 of the
boxes' even and odd coordinates), Adam; float64, where float32 rounding moves a gradient of a one-channel layer norm
by 1e-3 of itself. gradc compiles the training forward and gives Paddle's loss and gradients."""

import json

import numpy as np

import gradc
from fixtures import DATA
from gradc.optimizers import minimize

CASE = DATA / "table_master"


def test_gradc_compiles_table_masters_training_forward_to_paddles_gradients():
    meta = json.loads((CASE / "meta.json").read_text())
    forward = gradc.load(CASE / "forward.pb")
    assert {"set_value", "strided_slice", "tril_triu", "logical_and", "softmax_with_cross_entropy",
            "lookup_table_v2"} <= {op.type for op in forward.global_block.ops}
    settings = dict(meta["optimizer"])
    kind, lr = settings.pop("type"), settings.pop("lr")
    startup = minimize(forward, meta["loss"], kind, lr=lr, **settings)
    grads = {op.inputs["Param"][0]: op.inputs["Grad"][0] for op in forward.global_block.ops if op.type == "adam"}
    first, second = np.load(CASE / "step1.npz"), np.load(CASE / "step2.npz")
    assert sorted(f"@grad:{param}@GRAD" for param in grads) == sorted(k for k in first.files if k != "@loss")

    scope, executor = gradc.Scope(), gradc.Executor()
    for name, value in np.load(CASE / "params.npz").items():
        scope[name] = value.copy()
    executor.run(startup, {}, [], scope)
    feed = dict(np.load(CASE / "feed.npz"))
    loss, *values = executor.run(forward, feed, [meta["loss"], *grads.values()], scope)
    np.testing.assert_allclose(loss, first["@loss"], rtol=1e-13)
    paddle = {param: first[f"@grad:{param}@GRAD"] for param in grads}
    # the context blocks' attention-mask biases have gradients zero but for rounding (softmax cancels them)
    floor = 100 * np.finfo(np.float64).eps * max(np.abs(value).max() for value in paddle.values())
    for (param, theirs), ours in zip(paddle.items(), values):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=floor, err_msg=param)
    (loss,) = executor.run(forward, feed, [meta["loss"]], scope)
    # Adam takes a whole step of the rounding's sign for those zero gradients, which moves the loss a little
    np.testing.assert_allclose(loss, second["@loss"], rtol=1e-6)

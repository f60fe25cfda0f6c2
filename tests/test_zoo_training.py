"""Models of Paddle's zoos as they train with their own losses, rebuilt with Paddle's layers from the zoos' source and
minimized by Paddle 3.3.1 (tools/zoo_train_static.py), compiled by gradc from the training forward with the same
optimizer:
- tests/data/paddle/conformer_ctc: PaddleSpeech's U2 Conformer encoder (conv subsampling, relative-position attention
  with pos_bias_u/v, the convolution module's GLU, depthwise conv and batch norm, macaron feed-forward) and its CTC
  loss (warpctc), over a padded batch;
- tests/data/paddle/deepspeech2_ctc: PaddleSpeech's DeepSpeech2 (conv stack with batch norm and brelu, bidirectional
  GRUs of its own cell run by nn.RNN over the sequence lengths: while loops over tensor arrays) and its CTC loss
  with norm_by_times;
- tests/data/paddle/db: PaddleOCR's DB detector's neck and head in training mode (FPN with nearest upsampling,
  transposed convs, batch norms, the step function) and DBLoss (a balance loss keeping the hardest negatives by a
  descending sort and a count made in the program, masked L1, Dice), on fed backbone features;
- tests/data/paddle/ppyoloe: PaddleDetection's PP-YOLOE head (ESE attention stems, class and distribution convs,
  the distribution decoded to boxes) with TaskAlignedAssigner (top-k of the alignment metric, gather_nd, one_hot,
  argmax) and its losses (varifocal BCE, GIoU and distribution focal loss over masked_select's positive anchors),
  Paddle's Momentum;
- tests/data/paddle/ffm: PaddleRec's FFM by its own net.py (39 fields, 741 field pairs: 2,983 ops, whose PIR export
  Paddle's interpreter takes too long to build), log_loss, Adam over sparse embeddings (SelectedRows gradients, kept
  as the parameters after the first step).
MODEL/pir: the same model built by Paddle in PIR mode (its forward.json, Paddle's PIR gradients; the legacy case's
feed and parameters)."""

import gzip
import json

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.io import parse_program
from gradc.optimizers import minimize
from gradc.pir import load_pir

CASES = {   # the ops that set each apart, and how close its gradients are (of each one's largest)
    "conformer_ctc": ({"warpctc", "batch_norm", "where", "strided_slice", "conv2d", "less_than"}, 1e-5),
    "conformer_ctc/pir": ({"warpctc", "batch_norm", "where", "strided_slice", "conv2d", "less_than"}, 1e-5),
    "db/pir": ({"argsort", "conv2d_transpose", "nearest_interp_v2", "floor", "elementwise_min", "reciprocal"}, 1e-5),
    "deepspeech2_ctc/pir": ({"warpctc", "while", "write_to_array", "sequence_mask", "elementwise_max", "flip"},
                            1e-5),
    "ppyoloe": ({"top_k_v2", "gather_nd", "masked_select", "one_hot_v2", "bce_loss", "arg_max", "pow"}, 1e-5),
    "ppyoloe/pir": ({"top_k_v2", "gather_nd", "masked_select", "one_hot_v2", "bce_loss", "arg_max", "pow"}, 1e-5),
    "ffm": ({"lookup_table_v2", "log_loss", "slice", "sum", "reduce_sum"}, 1e-5),
    "db": ({"argsort", "conv2d_transpose", "nearest_interp_v2", "floor", "elementwise_min", "reciprocal"}, 1e-5),
    "deepspeech2_ctc": ({"warpctc", "while", "write_to_array", "sequence_mask", "elementwise_max", "flip"}, 1e-5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradc_compiles_the_training_forward_to_paddles_loss_and_gradients(name):
    case, (ops, tolerance) = DATA / name, CASES[name]
    shared = case.parent if name.endswith("/pir") else case   # the feed and parameters
    meta = json.loads((case / "meta.json").read_text())
    if name.endswith("/pir"):
        forward = load_pir(gzip.decompress((case / "forward.json.gz").read_bytes()))
    elif (case / "forward.pb.gz").exists():
        forward = parse_program(gzip.decompress((case / "forward.pb.gz").read_bytes()))
    else:
        forward = gradc.load(case / "forward.pb")
    assert ops <= {op.type for op in forward.global_block.ops}
    settings = dict(meta["optimizer"])
    kind, lr = settings.pop("type"), settings.pop("lr")
    startup = minimize(forward, meta["loss"], kind, lr=lr, **settings)
    grads = {op.inputs["Param"][0]: op.inputs["Grad"][0] for op in forward.global_block.ops if op.type == kind}
    assert grads
    first, second = np.load(case / "step1.npz"), np.load(case / "step2.npz")
    after = {name.removeprefix("@after:") for name in first.files if name.startswith("@after:")}
    assert sorted(f"@grad:{param}@GRAD" for param in grads if param not in after) == sorted(
        k for k in first.files if k.startswith("@grad:"))

    scope, executor = gradc.Scope(), gradc.Executor()
    for param, value in np.load(shared / "params.npz").items():
        scope[param] = value.copy()
    executor.run(startup, {}, [], scope)
    feed = dict(np.load(shared / "feed.npz"))
    dense = {param: grad for param, grad in grads.items() if param not in after}
    loss, *values = executor.run(forward, feed, [meta["loss"], *dense.values()], scope)
    np.testing.assert_allclose(loss, first["@loss"], rtol=1e-6)
    for param in after:   # Adam's step from a sparse gradient: of the order of the learning rate
        np.testing.assert_allclose(scope[param], first[f"@after:{param}"], rtol=0, atol=lr * 1e-3)
    paddle = {param: first[f"@grad:{param}@GRAD"] for param in dense}
    # biases a batch norm or a softmax cancels have gradients zero but for rounding: measured against 100 ulps of
    # the largest gradient, as tools/real_models.py does
    floor = 100 * np.finfo(first["@loss"].dtype).eps * max(np.abs(value).max() for value in paddle.values())
    for (param, theirs), ours in zip(paddle.items(), values):
        distance = np.abs(ours - theirs).max()
        assert distance <= tolerance * np.abs(theirs).max() + floor, (param, distance, np.abs(theirs).max())
    (loss,) = executor.run(forward, feed, [meta["loss"]], scope)
    np.testing.assert_allclose(loss, second["@loss"], rtol=1e-5)

"""PaddleVideo's video transformers (TimeSformer, PP-TimeSformer, TokenShift, VideoSwin) as Paddle 3.3.1 saves them,
legacy and PIR (tools/paddlevideo_training.py: tiny configs of the suite's own, its own initial weights): the exported
model gives Paddle's scores, and a training step of its train_step loss, differentiated by gradc, gives Paddle's loss
and eager gradients. tests/data/paddle/video/<case>/ holds both formats of `infer` and `train`, their parameters,
feed.npz and paddle.npz."""

from pathlib import Path

import numpy as np
import pytest

import gradc

DATA = Path(__file__).parent / "data" / "paddle" / "video"
CASES = ["timesformer", "pptimesformer", "tokenshift", "videoswin"]
FORMATS = ["pdmodel", "json"]


def _loaded(case: str, name: str, fmt: str):
    program = gradc.load(DATA / case / f"{name}.{fmt}")
    assert not gradc.verify(program)
    params = gradc.read_params(DATA / case / "params.pdiparams", program)
    scope = gradc.Scope()
    for param, value in params.items():
        scope[param] = value
    fetched = [op.input("X")[0] for op in program.global_block.ops if op.type == "fetch"]
    return program, scope, params, fetched


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", CASES)
def test_the_exported_model_gives_paddles_scores(case, fmt):
    program, scope, _, fetched = _loaded(case, "infer", fmt)
    scores, = gradc.Executor().run(program, {"clip": np.load(DATA / case / "feed.npz")["infer"]}, fetched, scope)
    expected = np.load(DATA / case / "paddle.npz")["infer"]
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", CASES)
def test_a_training_step_of_its_loss_gives_paddles_loss_and_gradients(case, fmt):
    program, scope, params, (loss,) = _loaded(case, "train", fmt)
    paddle = np.load(DATA / case / "paddle.npz")
    feed = np.load(DATA / case / "feed.npz")
    trainable = [name for name, value in params.items() if value.dtype.kind == "f"]   # not VideoSwin's index buffer
    pairs = gradc.append_backward(program, loss, parameter_list=trainable)
    assert {param for param, _ in pairs} == set(paddle.files) - {"infer", "loss"}
    value, *grads = gradc.Executor().run(program, {"imgs": feed["train"], "labels": feed["label"]},
                                         [loss] + [grad for _, grad in pairs], scope)
    np.testing.assert_allclose(value, paddle["loss"], rtol=1e-5)
    largest = max(np.abs(paddle[param]).max() for param, _ in pairs)
    for (param, _), grad in zip(pairs, grads):
        np.testing.assert_allclose(grad, paddle[param], rtol=1e-4, atol=1e-5 * largest, err_msg=param)

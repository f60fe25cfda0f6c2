"""A BERT-base / ERNIE-base sized encoder (2 layers of hidden 768, 12 heads, intermediate 3072, GELU, a padding mask),
built by Paddle 3.3.1 in float32 and float64 (tools/paddle_bert_base.py, tests/data/paddle/bert_base): parameters are
tests/seeded_params.py's values by name (not stored), gradients kept as 32 drawn entries of each large one. gradc's
float32 must be as close to Paddle's float64 as Paddle's own float32 is, and its float64 Paddle's float64."""


import numpy as np
import pytest

from fixtures import DATA
from seeded_params import seeded_grads, stored_grad

CASE = DATA / "bert_base"


def _gradc_run(part: str) -> tuple[float, dict]:
    loss, grads = seeded_grads(CASE / part, dict(np.load(CASE / "feed.npz")))
    return float(loss), {name: stored_grad(name, grad) for name, grad in grads.items()}


def _distances(ours: dict, reference: dict, eps: float) -> dict:
    """Each gradient's largest distance from the reference, of its largest stored magnitude; a gradient zero but for
    rounding (the attention keys' biases, which softmax cancels) of 100 ulps of the largest gradient."""
    floor = 100 * eps * max(np.abs(value).max() for value in reference.values())
    return {name: np.abs(ours[name] - value).max() / max(np.abs(value).max(), floor)
            for name, value in reference.items()}


@pytest.fixture(scope="module")
def paddle64() -> tuple[float, dict]:
    return float(np.load(CASE / "f64" / "loss.npy")), dict(np.load(CASE / "f64" / "grads.npz"))


def test_gradcs_float64_compile_gives_paddles_float64_loss_and_gradients(paddle64):
    loss, grads = _gradc_run("f64")
    assert sorted(grads) == sorted(paddle64[1]) and len(grads) == 32   # 16 parameters a layer
    np.testing.assert_allclose(loss, paddle64[0], rtol=1e-13)
    assert max(_distances(grads, paddle64[1], np.finfo(np.float64).eps).values()) < 1e-4


def test_gradcs_float32_is_as_close_to_paddles_float64_as_paddles_float32_is(paddle64):
    loss, grads = _gradc_run("f32")
    paddle32 = dict(np.load(CASE / "f32" / "grads.npz"))
    eps = np.finfo(np.float32).eps
    ours, theirs = _distances(grads, paddle64[1], eps), _distances(paddle32, paddle64[1], eps)
    # measured: the furthest, the first layer's key bias, 1.25e-5 of 100 ulps (Paddle's float32: 1.13e-5); the
    # furthest other gradient 1.8e-6 of its largest (Paddle's 1.4e-6)
    assert max(ours.values()) <= 1.5 * max(theirs.values())
    assert max(ours.values()) < 1e-4
    paddle_loss = float(np.load(CASE / "f32" / "loss.npy"))
    assert abs(loss - paddle64[0]) <= max(abs(paddle_loss - paddle64[0]), 1e-7 * abs(paddle64[0]))

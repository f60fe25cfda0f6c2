"""PaddleSlim's PACT quantization-aware training (its demo/quant/pact_quant_aware: quant_aware with a learned clip
before each activation quantizer, act_preprocess_func, and the clip's own Momentum) on a conv net with batch norm,
depthwise convolution and pools (tests/data/paddle/pact_convbn, from tools/paddleslim_static.py's convbn:pact:momentum
with Paddle 3.3.1: Paddle's training program, its forward ops alone, Paddle's two steps)."""

import json

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.optimizers import L2Decay, ParamAttr, minimize

CASE = DATA / "pact_convbn"
CLIPS = ["image_tmp_input_pact", "pool2d_0.tmp_0_tmp_input_pact", "pool2d_1.tmp_0_tmp_input_pact"]


@pytest.fixture(scope="module")
def meta():
    return json.loads((CASE / "meta.json").read_text())


def _scope(startup=None) -> gradc.Scope:
    scope = gradc.Scope()
    for name, value in np.load(CASE / "params.npz").items():
        scope[name] = value.copy()
    if startup is not None:
        gradc.Executor().run(startup, {}, [], scope)
    return scope


def _feed() -> dict:
    return dict(np.load(CASE / "feed.npz"))


def test_paddles_pact_training_program_runs_to_paddles_steps(meta):
    """The transform pass builds each clip (two relus of x - u and -u - x), its backward and its Momentum update in a
    program of its own and splices them into the training program's graph: gradc runs what it spliced."""
    train = gradc.load(CASE / "train.pb")
    assert gradc.verify(train) == []
    momentum_params = {op.inputs["Param"][0] for op in train.global_block.ops if op.type == "momentum"}
    assert set(CLIPS) <= momentum_params
    scope, executor = _scope(), gradc.Executor()
    for step in (1, 2):
        paddle = np.load(CASE / f"step{step}.npz")
        grads = [key.removeprefix("@grad:") for key in paddle.files if key.startswith("@grad:")]
        loss, *values = executor.run(train, _feed(), [meta["loss"], *grads], scope)
        np.testing.assert_allclose(loss, paddle["@loss"], rtol=1e-6)
        for name, value in zip(grads, values):
            np.testing.assert_allclose(value, paddle[f"@grad:{name}"], rtol=1e-5, atol=1e-6, err_msg=name)
        for name in (key for key in paddle.files if not key.startswith("@")):
            np.testing.assert_allclose(scope[name], paddle[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert not np.array_equal(scope["pool2d_0.tmp_0_tmp_input_pact"], np.load(CASE / "params.npz")[CLIPS[1]])


def test_gradc_differentiates_the_quantized_forward_paddles_pact_pass_does_not(meta):
    """Paddle's pass points each quantized op's grad op at the clip's output (image_tmp_4) while the op itself reads
    the quantized and dequantized value: the weight gradients are not of the forward computed (1.5e-4 of the largest
    here, the quantization error). gradc's compile of the same forward ops gives the gradient of what the forward
    computed: Paddle's own program with each grad op pointed back at its forward op's input."""
    train = gradc.load(CASE / "train.pb")
    forward_inputs = {op.inputs["Filter"][0]: op.inputs["Input"] for op in train.global_block.ops
                      if op.type in ("conv2d", "depthwise_conv2d")}   # by filter: a grad op reads its forward's
    for op in train.global_block.ops:
        if op.type in ("conv2d_grad", "depthwise_conv2d_grad"):
            assert op.inputs["Input"] != forward_inputs[op.inputs["Filter"][0]]   # Paddle's: the clip's output
            op.inputs["Input"] = forward_inputs[op.inputs["Filter"][0]]
    paddle = np.load(CASE / "step1.npz")
    (repaired,) = gradc.Executor().run(train, _feed(), ["conv2d_0.w_0@GRAD"], _scope())

    forward = gradc.load(CASE / "forward.pb")
    attrs = {name: ParamAttr(regularizer=L2Decay(1e-4)) for name in CLIPS}
    startup = minimize(forward, meta["loss"], "momentum", lr=0.05, momentum=0.9, param_attrs=attrs)
    grad = next(op.inputs["Grad"][0] for op in forward.global_block.ops
                if op.type == "momentum" and op.inputs["Param"] == ["conv2d_0.w_0"])
    loss, ours = gradc.Executor().run(forward, _feed(), [meta["loss"], grad], _scope(startup))
    np.testing.assert_allclose(loss, paddle["@loss"], rtol=1e-6)
    np.testing.assert_allclose(ours, repaired, rtol=1e-5, atol=1e-7)
    theirs = paddle["@grad:conv2d_0.w_0@GRAD"]
    assert np.abs(ours - theirs).max() > 1e-5 * np.abs(theirs).max()

"""A style-transfer researcher's week (docs/tools.md): a feed-forward transformation net (reflect-padded convs,
InstanceNorm2D, stride-2 convs down, a residual block, nn.Upsample and Conv2DTranspose up, a tanh output) trained by
Adam with a perceptual loss through a small frozen VGG-style net loaded from its own vgg.pdparams (content MSE of
features, style MSE of Gram matrices of three layers, total variation), and the classic Gatys optimisation of the image
itself, against Paddle 3.3.1's (tools/paddle_user_week59.py); checked against central differences, the transformation
net exported alone and run on Paddle's stylised images. Each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from gradc.backward.frozen import recorded_frozen
from user_weeks import train_steps

WEEK = DATA / "user_week59"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("johnson", "gatys")
LR = {"johnson": 0.002, "gatys": 0.004}
VGG = ["vgg_c1_b", "vgg_c1_w", "vgg_c2_b", "vgg_c2_w", "vgg_c3_b", "vgg_c3_w"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked; first.npz the transformation net's first batch, one.npz Gatys's content image, each
    with the style image."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week59"), MODELS)
    content, style = np.load(out / "data.npz")["content"], np.load(out / "style.npz")["style"]
    np.savez(out / "first.npz", content=content[:2], style=style)
    np.savez(out / "one.npz", content=content[:1], style=style)
    return out


def _compiled(files, model: str, *extra):
    folder = files / model
    run = gradc_cli("compile", folder / "forward.pb", "-o", folder / "t.pb", "--optimizer", "adam", "--lr", LR[model],
                    *extra)
    assert run.returncode == 0, run.stderr
    return run


def _train(files, model: str, program: str = "t.pb", startup: str = "t.startup.pb"):
    folder = files / model
    loaded = ("--params", folder / "init.npz", "--params", files / "vgg.pdparams", "--save-params", folder / "mine.npz")
    if model == "johnson":   # new content images each step, the style image the same
        return train_steps(folder / program, folder / startup, files / "data.npz", 2, "--feed", files / "style.npz",
                           *loaded)
    return gradc_cli("train", folder / program, "--startup", folder / startup, "--feed", files / "one.npz", "--steps",
                     5, "--json", "--log-every", 1, *loaded)


@pytest.mark.parametrize("model", MODELS)
def test_compile_and_train_give_paddles_losses_with_the_vgg_frozen(files, model):
    """gradc compile --optimizer adam of the forward program, no --param, trained from Paddle's initial weights and
    the VGG's vgg.pdparams: Paddle's 5 losses to 1e-5 and its trained weights (the VGG's unchanged; not the biases
    an instance norm follows, whose gradient is rounding's). The VGG, which
    Paddle froze with ParamAttr(trainable=False), trained too (30 + 6 parameters, the losses Paddle's from the second
    step on no more: 0.0527 for 0.0549); now its ops' stop_gradient outputs tell it frozen, as Paddle had it, with a
    note."""
    compiled = _compiled(files, model)
    assert "parameters frozen, without a gradient: 6 (vgg_c1_b, vgg_c1_w" in compiled.stderr
    assert "not trainable in Paddle" in compiled.stderr
    np.testing.assert_allclose(step_losses(_train(files, model)), META[model]["losses"], rtol=1e-5)
    ours, paddle = np.load(files / model / "mine.npz"), np.load(files / model / "trained.npz")
    grads = np.load(files / model / "grads.npz")
    # an instance norm takes out each channel's mean: a bias a norm follows (the conv biases, the residual's) has a
    # gradient of rounding's alone (< 1e-7), which Adam's division by its own size turns into steps of any sign
    for name in [name for name in paddle.files if name not in grads.files or np.abs(grads[name]).max() > 1e-7]:
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=1e-5, err_msg=name)


def test_frozen_parameters_are_told_by_what_they_compute(files):
    """The VGG's parameters are read beside the content and style images (stop_gradient) into stop_gradient outputs:
    recorded frozen; the transformation net's and Gatys's image are not. --param still trains one named."""
    for model in MODELS:
        assert recorded_frozen(gradc.load(files / model / "forward.pb").global_block) == VGG
    program = gradc.load(files / "gatys" / "forward.pb")
    assert [p for p, _ in gradc.append_backward(program)] == ["image"]
    named = gradc.load(files / "gatys" / "forward.pb")
    assert {p for p, _ in gradc.append_backward(named, parameter_list=["image", "vgg_c1_w"])} == {"image", "vgg_c1_w"}


def test_outputs_marked_by_hand_tell_nothing():
    """A parameter one reader shows frozen and another trainable: the flags were set by hand (a paddle.no_grad
    region, as a SAC's target computes the actor's next action), so no parameter is inferred frozen."""
    program = gradc.load(DATA / "parl" / "sac_w8" / "forward.pb")
    assert recorded_frozen(program.global_block) == []


def test_paddles_own_training_programs_give_its_losses(files):
    """Paddle's minimize() programs (its adam of the trainable parameters alone) from its startup: its 5 losses."""
    for model in MODELS:
        run = _train(files, model, "train.pb", "startup.pb")
        np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-5, err_msg=model)


@pytest.mark.parametrize("model", MODELS)
def test_gradients_are_paddles_and_agree_with_central_differences(files, model):
    """gradc's gradients of the trainable parameters on the first batch from Paddle's initial weights are Paddle's
    (to 3e-7 of the largest; the conv biases before an instance norm have none but rounding's), and gradc check
    agrees with float64 central differences (instance_norm, pad3d reflect, nearest_interp, conv2d_transpose, the Gram
    matrices' matmul with transpose_y)."""
    program = gradc.load(files / model / "forward.pb")
    gradc.append_backward(program)
    scope = gradc.Scope()
    gradc.load_params(scope, files / model / "init.npz", program)
    gradc.load_params(scope, files / "vgg.pdparams", program)
    feed = files / ("first.npz" if model == "johnson" else "one.npz")
    paddle = np.load(files / model / "grads.npz")
    ours = gradc.Executor().run(program, feed=str(feed), fetch_list=[f"{n}@GRAD" for n in paddle.files], scope=scope)
    for name, value in zip(paddle.files, ours):
        np.testing.assert_allclose(value, paddle[name], rtol=0, atol=3e-7 * max(1.0, np.abs(paddle[name]).max()) + 1e-8,
                                   err_msg=name)
    run = gradc_cli("check", files / model / "forward.pb", "--params", files / model / "init.npz", "--params",
                    files / "vgg.pdparams", "--feed", feed, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["problems"] == []


def test_the_transformation_net_exports_alone_and_stylises_as_paddle(files):
    """gradc export of the forward program fetching the stylised image, fed the content image only: the VGG and the
    losses left out (30 parameters), and the export run gives Paddle's stylised first batch to 5e-6."""
    folder = files / "johnson"
    exported = gradc_cli("export", folder / "forward.pb", "-o", folder / "exp", "--fetch",
                         f"{META['johnson']['output']}=stylised", "--params", folder / "trained.npz", "--input",
                         "content")
    assert exported.returncode == 0, exported.stderr
    program = gradc.load(folder / "exp.pdmodel")
    assert not any(name.startswith("vgg") for name in program.global_block.vars)
    run = gradc_cli("run", folder / "exp.pdmodel", "--params", folder / "exp.pdiparams", "--feed", files / "first.npz",
                    "-o", folder / "out.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(folder / "out.npz")["stylised"], np.load(folder / "outputs.npz")["stylised"],
                               rtol=0, atol=5e-6)


def test_info_of_the_forward_program_says_the_vgg_is_frozen(files):
    """gradc info of the forward program listed 36 parameters alike, nothing saying the VGG's 6 would not train
    (its frozen count read the parameters' stop_gradient alone, which the file drops); now they are counted frozen,
    as compile tells them, and --json lists them."""
    run = gradc_cli("info", files / "johnson" / "forward.pb")
    assert run.returncode == 0, run.stderr
    assert "parameters: 36 (5,501 values; 6 of them frozen (trainable=False): no gradient)" in run.stdout
    facts = json.loads(gradc_cli("info", files / "johnson" / "forward.pb", "--json").stdout)
    assert facts["frozen_parameters"] == VGG

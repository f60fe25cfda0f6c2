"""Every family of paddle.vision.models (LeNet, AlexNet, VGG with and without batch norm, ResNet with basic and
bottleneck blocks, ResNeXt, Wide ResNet, MobileNet V1/V2/V3, ShuffleNetV2, SqueezeNet, DenseNet, GoogLeNet,
InceptionV3) as a tiny classifier: gradc compiles Paddle's forward program with Adam, trains it, and matches
Paddle's own training step by step (tests/data/paddle/vision_train); then `gradc compile --optimizer adam` and
`gradc train` train each for more steps and its loss goes down. Each family with a dropout trains with it on too
(<family>_dropout), from gradc's run of Paddle's startup program seeded as Paddle's: the same masks, the same steps."""

import re

import numpy as np
import pytest
from click.testing import CliRunner

from gradc.cli import cli
from vision_training import MODELS, Fixture, compare, train

FAMILIES = {"lenet", "alexnet", "vgg", "vgg_bn", "resnet_basic", "resnet_bottleneck", "resnext", "wide_resnet",
            "mobilenet_v1", "mobilenet_v2", "mobilenet_v3", "shufflenet_v2", "squeezenet", "densenet", "googlenet",
            "inception_v3"}
WITH_DROPOUT = {"alexnet", "vgg", "vgg_bn", "mobilenet_v2", "mobilenet_v3", "squeezenet", "densenet", "googlenet",
                "inception_v3"}
CLI_STEPS = 8


def test_every_family_has_a_fixture():
    assert set(MODELS) == FAMILIES | {f"{name}_dropout" for name in WITH_DROPOUT}


@pytest.mark.parametrize("name", [f"{name}_dropout" for name in sorted(WITH_DROPOUT)])
def test_paddles_startup_run_by_gradc_gives_paddles_parameters(name):
    """Seeded as paddle.seed seeds Paddle, gradc's run of Paddle's startup program draws Paddle's values exactly."""
    fixture = Fixture(name)
    assert fixture.has_dropout and fixture.meta["dropout"] > 0
    init = train(fixture).init
    for param, value in fixture.npz("init").items():
        np.testing.assert_array_equal(init[param], value, err_msg=param)


@pytest.mark.parametrize("name", MODELS)
def test_training_steps_match_paddle(name):
    """Each step's loss, the first step's gradients and every parameter (batch norm's running statistics too)
    after Paddle's steps."""
    fixture = Fixture(name)
    differ = compare(fixture, train(fixture))
    assert not differ, f"{name}: differs from Paddle's training in {differ}"


def test_other_masks_are_noticed(monkeypatch):
    """Paddle's initial parameters set, but the masks drawn from an engine not seeded as Paddle's: the steps
    differ."""
    monkeypatch.setattr(Fixture, "has_dropout", False)
    fixture = Fixture("alexnet_dropout")
    differ = compare(fixture, train(fixture))
    assert "losses" in differ


def test_the_comparison_notices_a_slightly_different_step():
    """A learning rate 1% off is caught: the comparison is sharper than the steps themselves."""
    fixture = Fixture("resnet_basic")
    fixture.meta["hyperparameters"]["learning_rate"] *= 1.01
    differ = compare(fixture, train(fixture))
    assert "losses" in differ and any(name.endswith(".w_0") for name in differ)


def cli_losses(fixture: Fixture, tmp_path, paddle_stream: bool = False) -> list[float]:
    """`gradc compile --optimizer adam` then `gradc train` from Paddle's initial parameters (``paddle_stream``: from
    Paddle's startup program run first, seeded as Paddle's with --paddle-stream): the logged losses."""
    runner, meta, program = CliRunner(), fixture.meta, tmp_path / "train.pb"
    arguments = dict(meta["hyperparameters"])
    options = ["--lr", str(arguments.pop("learning_rate"))]
    options += [a for key, value in arguments.items() for a in ("--opt", f"{key}={value}")]
    compiled = runner.invoke(cli, ["compile", str(fixture.dir / "forward.pb"), "-o", str(program), "--loss",
                                   meta["loss"], "--optimizer", "adam", *options])
    assert compiled.exit_code == 0, compiled.output
    start = (["--startup", str(fixture.dir / "startup.pb"), "--startup", str(tmp_path / "train.startup.pb"),
              "--seed", str(meta["seed"]), "--paddle-stream"] if paddle_stream else
             ["--startup", str(tmp_path / "train.startup.pb"), "--params", str(fixture.dir / "init.npz")])
    trained = runner.invoke(cli, ["train", str(program), *start, "--feed", str(fixture.dir / "feed.npz"),
                                  "--steps", str(CLI_STEPS), "--fetch", meta["loss"]])
    assert trained.exit_code == 0, trained.output
    return [float(v) for v in re.findall(rf"^step \d+: {re.escape(meta['loss'])}=(\S+)$", trained.output, re.M)]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_gradc_cli_trains_it(name, tmp_path):
    fixture = Fixture(name)
    losses = cli_losses(fixture, tmp_path)
    assert len(losses) == CLI_STEPS
    paddle_steps = fixture.meta["steps"]
    np.testing.assert_allclose(losses[:paddle_steps], fixture.npy("losses"), rtol=1e-5)   # printed with 6 digits
    assert all(np.diff(losses) < 0), f"{name}: the loss does not go down step by step: {losses}"


@pytest.mark.parametrize("name", ["alexnet_dropout", "googlenet_dropout"])
def test_gradc_cli_trains_with_paddles_masks_from_one_seed(name, tmp_path):
    """`gradc train --seed 7 --paddle-stream` with Paddle's startup program first: Paddle's initial weights and
    dropout masks, so Paddle's losses step by step (per-step seeding draws other masks)."""
    fixture = Fixture(name)
    paddle = fixture.npy("losses")
    np.testing.assert_allclose(cli_losses(fixture, tmp_path, paddle_stream=True)[:len(paddle)], paddle, rtol=1e-5)
    (tmp_path / "per_step").mkdir()
    assert not np.allclose(cli_losses(fixture, tmp_path / "per_step")[:len(paddle)], paddle, rtol=1e-5)

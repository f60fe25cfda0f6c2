"""Paddle 3.3.1's legacy conv second-derivative ops (conv2d_grad_grad, conv3d_grad_grad), as paddle.static.gradients
of a gradient writes them (tools/paddle_conv_double_grad.py): Paddle's programs run by gradc give Paddle's float64
gradients (their PIR programs too), and a WGAN-GP critic's own training program trains in gradc to Paddle's losses.
Before, gradc refused both ("op type(s) gradc does not know: conv2d_grad_grad")."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

FILES = DATA / "double_grad_ops"
CONVS = ("conv2d", "grouped_conv2d", "conv3d")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The programs unpacked, and each conv's feed (x, its filter f, w and v) on its own."""
    out = unpacked(FILES, tmp_path_factory.mktemp("conv_double"), ("wgan", "pir"))
    paddle = np.load(FILES / "conv.npz")
    for conv in CONVS:
        np.savez(out / f"{conv}_feed.npz", **{var: paddle[f"{conv}_feed_{var}"] for var in "xfwv"})
    return out


@pytest.mark.parametrize("conv", CONVS)
def test_paddles_conv_double_grad_programs_give_its_gradients(files, conv):
    """sum(v * grad_x sum(w * tanh(conv(x, f)))) differentiated to x and f in float64 (stride 2 and padding; groups 2;
    3-D with dilation): Paddle's program, its <conv>_grad_grad run by gradc, and gradc's own compilation of the
    forward give Paddle's gradients to 1e-12 (4e-15 measured)."""
    paddle, feed = np.load(FILES / "conv.npz"), files / f"{conv}_feed.npz"
    run = gradc_cli("run", files / f"conv_{conv}_paddle.pb", "--feed", feed, "--fetch", "grad/grad/x@GRAD=x",
                    "--fetch", "grad/grad/f@GRAD=f", "-o", files / f"{conv}_paddle.npz")
    assert run.returncode == 0, run.stderr
    compiled = gradc_cli("compile", files / f"conv_{conv}.pb", "-o", files / f"{conv}_gradc.pb", "--wrt", "x",
                         "--wrt", "f")
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("run", files / f"{conv}_gradc.pb", "--feed", feed, "--fetch", "x@GRAD@2=x", "--fetch",
                    "f@GRAD@2=f", "-o", files / f"{conv}_gradc.npz")
    assert run.returncode == 0, run.stderr
    for result in ("paddle", "gradc"):
        ours = np.load(files / f"{conv}_{result}.npz")
        for var in "xf":
            np.testing.assert_allclose(ours[var], paddle[f"{conv}_{var}"], rtol=1e-12, atol=1e-12, err_msg=result)


@pytest.mark.parametrize("conv", ("conv2d", "conv3d"))
def test_paddles_pir_conv_double_grad_programs_give_its_gradients(files, conv):
    """The same programs built in PIR (save_inference_model, the two gradients fetched): gradc translates and runs
    pd_op.conv2d_grad_grad and pd_op.conv3d_double_grad (before, 'gradc cannot translate' each) to Paddle's gradients
    to 1e-12."""
    run = gradc_cli("run", files / "pir" / f"conv_{conv}.json", "--feed", files / f"{conv}_feed.npz", "-o",
                    files / f"pir_{conv}.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / f"pir_{conv}.npz"), np.load(FILES / "pir" / "conv.npz")
    for index, var in enumerate("xf"):
        np.testing.assert_allclose(ours[f"fetch_name_{index}"], paddle[f"{conv}_{var}"], rtol=1e-12, atol=1e-12)


def test_wgan_gp_critic_trains_in_gradc_to_paddles_losses(files):
    """The WGAN-GP critic's training program Paddle's Adam minimize() wrote (two conv2d_grad_grad ops in its gradient
    penalty's backward) trains in gradc from Paddle's initial weights to Paddle's 4 float32 losses (1e-6 relative)."""
    folder = files / "wgan"
    meta = json.loads((folder / "meta.json").read_text())
    assert "conv2d_grad_grad" in meta["double_grad_ops"]
    run = gradc_cli("train", folder / "train.pb", "--startup", folder / "startup.pb", "--params",
                    folder / "init.npz", "--data", folder / "data.npz", "--batch-size", 4, "--json",
                    "--log-every", 1)
    assert run.returncode == 0, run.stderr
    losses = [line["values"][meta["loss"]] for line in map(json.loads, run.stdout.splitlines())
              if line["event"] == "step"]
    np.testing.assert_allclose(losses, meta["losses"], rtol=1e-6)

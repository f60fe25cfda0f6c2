"""Paddle 3.3.1's legacy second-derivative ops that gradc's week-39 set lacked (sqrt_grad_grad, rsqrt_grad_grad,
leaky_relu_grad_grad, abs_double_grad), in the programs `paddle.static.gradients` of a gradient writes
(tools/paddle_double_grad_ops.py): Paddle's own program run by gradc, and gradc's compilation of the forward, give
Paddle's gradients."""

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

OPS = DATA / "double_grad_ops"
ACTS = ("sqrt", "rsqrt", "leaky_relu", "abs")
POSITIVE = ("sqrt", "rsqrt")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    out = unpacked(OPS, tmp_path_factory.mktemp("double_grad_ops"))
    feeds = np.load(out / "double.npz")
    np.savez(out / "feed.npz", x=feeds["x"], w=feeds["w"], v=feeds["v"])
    np.savez(out / "positive_feed.npz", x=np.abs(feeds["x"]), w=feeds["w"], v=feeds["v"])
    return out


@pytest.mark.parametrize("act", ACTS)
def test_second_derivative_ops_give_paddles_gradients(files, act):
    """sum(v * grad_x sum(w * act(x))) differentiated to x and w in float64 (Paddle's program holds act's
    second-derivative op, which gradc did not know: "no kernel"); both programs give Paddle's gradients to 1e-12."""
    feed = files / ("positive_feed.npz" if act in POSITIVE else "feed.npz")
    paddle = np.load(files / "double.npz")
    run = gradc_cli("run", files / f"double_{act}_paddle.pb", "--feed", feed, "--fetch", "grad/grad/x@GRAD=x",
                    "--fetch", "grad/grad/w@GRAD=w", "-o", files / f"double_{act}_paddle.npz")
    assert run.returncode == 0, run.stderr
    assert gradc_cli("compile", files / f"double_{act}.pb", "-o", files / f"double_{act}_gradc.pb", "--wrt", "x",
                     "--wrt", "w").returncode == 0
    run = gradc_cli("run", files / f"double_{act}_gradc.pb", "--feed", feed, "--fetch", "x@GRAD@2=x", "--fetch",
                    "w@GRAD@2=w", "-o", files / f"double_{act}_gradc.npz")
    assert run.returncode == 0, run.stderr
    for result in ("paddle", "gradc"):
        ours = np.load(files / f"double_{act}_{result}.npz")
        for var in "xw":
            np.testing.assert_allclose(ours[var], paddle[f"{act}_{var}"], rtol=1e-12, atol=1e-12, err_msg=result)

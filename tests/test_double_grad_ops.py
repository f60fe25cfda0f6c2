"""Paddle 3.3.1's legacy second-derivative ops that gradc's week-39 set lacked (sqrt_grad_grad, rsqrt_grad_grad,
leaky_relu_grad_grad, abs_double_grad, clip_double_grad, matmul_grad_grad, pool2d_double_grad, pad3d_double_grad),
in the programs `paddle.static.gradients` of a gradient writes (tools/paddle_double_grad_ops.py): Paddle's own program
run by gradc, and gradc's compilation of the forward, give Paddle's gradients. Before, gradc refused each ("no
kernel"). Paddle 3.3.1 has no kernel of matmul_grad_grad: that program's gradients are the closed form."""

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

OPS = DATA / "double_grad_ops"
PADDLE = np.load(OPS / "double.npz")
ACTS = ("sqrt", "rsqrt", "leaky_relu", "abs", "clip", "matmul", "pool2d", "pad3d")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return unpacked(OPS, tmp_path_factory.mktemp("double_grad_ops"))


def _wrt(act: str) -> str:
    return "xwy" if f"{act}_y" in PADDLE else "xw"   # matmul's Y is differentiated too


def _feed(files, act: str):
    np.savez(files / f"{act}_feed.npz", **{var: PADDLE[f"{act}_{var}"] for var in "xwvy" if f"{act}_{var}" in PADDLE})
    return files / f"{act}_feed.npz"


def _assert_paddles(path, act: str, label: str) -> None:
    ours = np.load(path)
    for var in _wrt(act):
        np.testing.assert_allclose(ours[var], PADDLE[f"{act}_{var}@GRAD"], rtol=1e-12, atol=1e-12, err_msg=label)


def _run_paddles(files, act: str) -> None:
    fetches = [arg for var in _wrt(act) for arg in ("--fetch", f"grad/grad/{var}@GRAD={var}")]
    run = gradc_cli("run", files / f"double_{act}_paddle.pb", "--feed", _feed(files, act), *fetches, "-o",
                    files / f"{act}_paddle.npz")
    assert run.returncode == 0, run.stderr
    _assert_paddles(files / f"{act}_paddle.npz", act, "Paddle's program")


@pytest.mark.parametrize("act", ACTS)
def test_second_derivative_ops_give_paddles_gradients(files, act):
    """sum(v * grad_x sum(w * act(x))) differentiated to x and w in float64: Paddle's program (holding act's
    second-derivative op) run by gradc, and gradc's compilation of the forward, give Paddle's gradients to 1e-12."""
    _run_paddles(files, act)
    wrt = [arg for var in _wrt(act) for arg in ("--wrt", var)]
    assert gradc_cli("compile", files / f"double_{act}.pb", "-o", files / f"{act}_gradc.pb", *wrt).returncode == 0
    fetches = [arg for var in _wrt(act) for arg in ("--fetch", f"{var}@GRAD@2={var}")]
    run = gradc_cli("run", files / f"{act}_gradc.pb", "--feed", _feed(files, act), *fetches, "-o",
                    files / f"{act}_gradc.npz")
    assert run.returncode == 0, run.stderr
    _assert_paddles(files / f"{act}_gradc.npz", act, "gradc's compilation")


def test_pad3d_double_grad_pads_ddx_with_zeros_where_paddles_kernel_takes_the_value(files):
    """Paddle 3.3.1's pad3d_double_grad pads ddX with the constant value (0.5 here), which puts terms free of v into
    the grad to w: a wrong gradient, the value being a constant. gradc's kernel pads ddX with 0, so Paddle's program
    run by gradc gives gradc's compilation of the forward (its makers write no pad3d_double_grad; gradcheck holds
    them to central differences), and differs from Paddle's just there."""
    fetches = [arg for var in "xw" for arg in ("--fetch", f"grad/grad/{var}@GRAD={var}")]
    run = gradc_cli("run", files / "double_pad3d_value_paddle.pb", "--feed", _feed(files, "pad3d_value"), *fetches,
                    "-o", files / "pad3d_value_paddle.npz")
    assert run.returncode == 0, run.stderr
    assert gradc_cli("compile", files / "double_pad3d_value.pb", "-o", files / "pad3d_value_gradc.pb", "--wrt", "x",
                     "--wrt", "w").returncode == 0
    fetches = [arg for var in "xw" for arg in ("--fetch", f"{var}@GRAD@2={var}")]
    run = gradc_cli("run", files / "pad3d_value_gradc.pb", "--feed", files / "pad3d_value_feed.npz", *fetches, "-o",
                    files / "pad3d_value_gradc.npz")
    assert run.returncode == 0, run.stderr
    ours, compiled = np.load(files / "pad3d_value_paddle.npz"), np.load(files / "pad3d_value_gradc.npz")
    for var in "xw":
        np.testing.assert_allclose(ours[var], compiled[var], rtol=1e-12, atol=1e-12, err_msg=var)
    np.testing.assert_allclose(ours["x"], PADDLE["pad3d_value_x@GRAD"], rtol=1e-12, atol=1e-12)
    wrong = PADDLE["pad3d_value_w@GRAD"] != ours["w"]
    assert wrong.any() and np.all(PADDLE["pad3d_value_w@GRAD"][wrong] - ours["w"][wrong] == 0.5)   # the value's


def test_leaky_relu_grad_grad_takes_alpha_at_zero_as_paddles(files):
    """At x = 0 Paddle's leaky_relu_grad_grad takes the slope alpha (its leaky_relu_grad takes 1): Paddle's program
    with zeros in x gives Paddle's gradients, alpha v at the zeros of the grad to w."""
    _run_paddles(files, "leaky_relu_at_zero")
    x, v = PADDLE["leaky_relu_at_zero_x"], PADDLE["leaky_relu_at_zero_v"]
    alpha = float(np.float32(0.1))   # a float32 attribute
    np.testing.assert_allclose(PADDLE["leaky_relu_at_zero_w@GRAD"][x == 0], alpha * v[x == 0], rtol=1e-15)


def test_pool2d_double_grad_of_max_pooling_is_refused_in_one_line(files, tmp_path):
    """Paddle 3.3.1's pool2d_double_grad kernel takes average pooling only; gradc refuses max pooling the same way,
    as a one-line error naming the op, and writes no output."""
    program = gradc.load(files / "double_pool2d_paddle.pb")
    for op in program.global_block.ops:
        if op.type.startswith("pool2d"):
            op.attrs["pooling_type"] = "max"
    gradc.save(program, tmp_path / "max.pb")
    run = gradc_cli("run", tmp_path / "max.pb", "--feed", _feed(files, "pool2d"), "--fetch", "grad/grad/x@GRAD=x",
                    "-o", tmp_path / "out.npz")
    assert run.returncode == 1
    assert run.stderr.startswith("gradc: error: ") and run.stderr.count("\n") == 1, run.stderr
    assert "pool2d_double_grad" in run.stderr and "average pooling only" in run.stderr
    assert not (tmp_path / "out.npz").exists()

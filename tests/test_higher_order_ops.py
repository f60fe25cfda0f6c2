"""Paddle 3.3.1's last legacy higher-order op types gradc lacked (sin/cos/sigmoid/pow_triple_grad, acos_double_grad,
batch_norm_grad_grad, instance_norm_double_grad), in the programs `paddle.static.gradients` writes
(tools/paddle_higher_order_ops.py): Paddle's own program run by gradc, and gradc's compilation of the forward, give
Paddle's gradients to 1e-12. Before, gradc refused each as an unknown op type. Paddle 3.3.1 has no kernel of
acos_double_grad: that program's gradients are the closed form."""

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked
from gradc.executor import Executor, Scope

HIGHER = DATA / "double_grad_ops" / "higher"
PADDLE = np.load(HIGHER / "higher.npz")
WRT = {"triple": "xwu", "norm": ("x", "scale", "bias", "w"), "double": "xw"}
CASES = ("triple_sin", "triple_cos", "triple_sigmoid", "triple_pow", "double_acos", "norm_batch_norm",
         "norm_batch_norm_nhwc", "norm_batch_norm_global", "norm_instance_norm")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return unpacked(HIGHER, tmp_path_factory.mktemp("higher_order_ops"))


def _wrt(case: str):
    return WRT[case.split("_")[0]]


FED = ("x", "w", "u", "v", "scale", "bias", "mean", "variance")


def _feed(files, case: str):
    names = [name for name in FED if f"{case}_{name}" in PADDLE]
    np.savez(files / f"{case}_feed.npz", **{name: PADDLE[f"{case}_{name}"] for name in names})
    return files / f"{case}_feed.npz"


def _run(files, program, case: str, fetched: list[str], label: str) -> dict:
    fetches = [arg for name, var in zip(fetched, _wrt(case)) for arg in ("--fetch", f"{name}={var}")]
    run = gradc_cli("run", program, "--feed", _feed(files, case), *fetches, "-o", files / f"{case}_{label}.npz")
    assert run.returncode == 0, run.stderr
    return dict(np.load(files / f"{case}_{label}.npz"))


def run_paddles(files, case: str) -> dict:
    """Paddle's program of ``case`` run by gradc: its gradients."""
    return _run(files, files / f"{case}_paddle.pb", case, list(PADDLE[f"{case}@FETCH"]), "paddle")


def run_compiled(files, case: str) -> dict:
    """gradc's compilation of ``case``'s forward, run: its gradients."""
    wrt = [arg for var in _wrt(case) for arg in ("--wrt", var)]
    compiled = gradc_cli("compile", files / f"{case}.pb", "-o", files / f"{case}_gradc.pb", *wrt)
    assert compiled.returncode == 0, compiled.stderr
    return _run(files, files / f"{case}_gradc.pb", case, [f"{var}@GRAD@2" for var in _wrt(case)], "gradc")


def assert_paddles(ours: dict, case: str, label: str) -> None:
    for var in _wrt(case):
        np.testing.assert_allclose(ours[var], PADDLE[f"{case}_{var}@GRAD"], rtol=1e-12, atol=1e-12,
                                   err_msg=f"{label}: {var}")


@pytest.mark.parametrize("case", CASES)
def test_higher_order_ops_give_paddles_gradients(files, case):
    """Third derivatives (to x, w, u of sum(v * grad_x sum(u * grad_x sum(w * act(x))))), acos's second and the
    norms' (to x, scale, bias, w of sum(v * grad_x sum(w * tanh(norm(x))))), in float64: Paddle's program (holding
    the op) run by gradc, and gradc's compilation of the forward."""
    assert_paddles(run_paddles(files, case), case, "Paddle's program")
    assert_paddles(run_compiled(files, case), case, "gradc's compilation")


def test_batch_norm_grad_grad_in_test_mode_where_paddles_kernel_refuses(files):
    """Paddle 3.3.1's batch_norm_grad_grad kernel refuses is_test ("CANNOT be used in train program"), though the
    forward normalised with the running statistics. gradc takes them as constants there, as its batch_norm_grad
    does: Paddle's program run by gradc gives gradc's compilation of the forward, and at the feeds of the
    use_global_stats program (the same normalisation, which Paddle's kernel takes), Paddle's gradients of that."""
    case = "norm_batch_norm_test"
    assert f"{case}_x@GRAD" not in PADDLE
    ours, compiled = run_paddles(files, case), run_compiled(files, case)
    for var in _wrt(case):
        np.testing.assert_allclose(ours[var], compiled[var], rtol=1e-12, atol=1e-12, err_msg=var)
    fetches = [arg for name, var in zip(PADDLE[f"{case}@FETCH"], _wrt(case)) for arg in ("--fetch", f"{name}={var}")]
    run = gradc_cli("run", files / f"{case}_paddle.pb", "--feed", _feed(files, "norm_batch_norm_global"), *fetches,
                    "-o", files / "test_at_global.npz")
    assert run.returncode == 0, run.stderr
    assert_paddles(dict(np.load(files / "test_at_global.npz")), "norm_batch_norm_global", "is_test at global's feeds")


@pytest.mark.parametrize("case", [*CASES[:5], "norm_batch_norm", "norm_batch_norm_nhwc", "norm_instance_norm"])
def test_one_order_more_through_the_new_ops_matches_central_differences(files, case):
    """gradc.gradients of Paddle's program once more (of its gradient to scale for the norms, whose x gradient sums
    to 0, else to x) goes through the new op's maker: along a random direction of x (scale for batch norm), the
    derivative is the float64 central difference of gradc's run to 1e-7."""
    program = gradc.load(files / f"{case}_paddle.pb")
    target = str(PADDLE[f"{case}@FETCH"][1 if case.startswith("norm") else 0])
    wrt = "scale" if case == "norm_batch_norm" else "x"
    feed = dict(np.load(_feed(files, case)))
    (grad,) = gradc.gradients(program, target, [wrt])
    executor = Executor()

    def total(value) -> float:
        return float(np.sum(executor.run(program, {**feed, wrt: value}, [target], Scope())[0]))

    direction = np.random.default_rng(0).normal(size=feed[wrt].shape)
    along = float(np.sum(executor.run(program, feed, [grad], Scope())[0] * direction))
    numeric = (total(feed[wrt] + 1e-6 * direction) - total(feed[wrt] - 1e-6 * direction)) / 2e-6
    assert abs(along - numeric) <= 1e-7 * max(1.0, abs(numeric)), (along, numeric)


def test_a_var_in_two_differentiated_slots_is_refused_by_name():
    """sin_triple_grad reading one var as both dOut and ddX: the backward of its formula would give that var's grad,
    the sum of the two slots' grads the op writes apart; the maker refuses, naming the op and the slots."""
    program = gradc.Program()
    block = program.global_block
    for name in ("x", "d", "d_new", "out_x", "out_dout", "out_ddx"):
        block.create_var(name, [3], gradc.ir.VarType.FP64)
    block.append_op("sin_triple_grad", {"X": ["x"], "grad_out_forward": ["d"], "grad_x_grad_forward": ["d"],
                                        "grad_x@GRAD": ["d_new"]},
                    {"X@GRAD": ["out_x"], "grad_out_forward@GRAD": ["out_dout"],
                     "grad_x_grad_forward@GRAD": ["out_ddx"]}, {})
    refusal = "sin_triple_grad.*slots grad_out_forward, grad_x_grad_forward hold one var 'd'"
    with pytest.raises(gradc.errors.GradError, match=refusal):
        gradc.gradients(program, "out_x", ["x"])

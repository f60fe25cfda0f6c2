"""A Glow-style log-determinant in a loss (tools/paddle_slogdet_loss.py): Paddle 3.3.1 declares slogdeterminant's
Out with its Input's shape ([4, 4], where its kernel writes [2]), so the slice of log|det| and the loss after it are
declared [4] though the loss is one number. The docs/tools.md generative-model week left it refused as not one
value; a declaration of Input's rank is never the true one, so it is corrected and the shapes after it inferred."""

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked
from gradc.ir import VarType

WEEK = DATA / "slogdet_loss"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    out = unpacked(WEEK, tmp_path_factory.mktemp("slogdet"))
    paddle = np.load(out / "paddle.npz")
    np.savez(out / "params.npz", w=paddle["w"])
    np.savez(out / "feed.npz", x=paddle["x"])
    return out


def test_a_loss_declared_several_values_by_a_stale_slogdet_compiles_to_paddles_gradient(files):
    """Before, compile said "cannot pick the loss by itself: the last op of block 0 (elementwise_sub) writes no float
    scalar", and with --loss "loss 'tmp_1' has shape [4]: a loss is one value". Now the loss is picked, the compiled
    gradient is Paddle's (to 6e-8 of 0.39) and check agrees with central differences."""
    paddle = np.load(files / "paddle.npz")
    forward = gradc.load(files / "forward.pb")
    loss = forward.global_block.ops[-1].output("Out")[0]
    assert list(paddle["declared"]) == forward.global_block.var(loss).shape == [4]
    compiled = gradc_cli("compile", files / "forward.pb", "-o", files / "grad.pb")
    assert compiled.returncode == 0, compiled.stderr
    program = gradc.load(files / "grad.pb")
    assert program.global_block.var(loss).shape == []
    scope = gradc.Scope()
    scope["w"] = paddle["w"]
    value, grad = gradc.Executor().run(program, {"x": paddle["x"]}, [loss, "w@GRAD"], scope)
    np.testing.assert_allclose(value, paddle["loss"], rtol=1e-6)
    np.testing.assert_allclose(grad, paddle["grad"], rtol=0, atol=2e-7)
    checked = gradc_cli("check", files / "forward.pb", "--params", files / "params.npz", "--feed", files / "feed.npz")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"1 var(s) checked: compiled gradients agree with central differences (loss {loss})" in checked.stdout


def test_a_batch_of_log_determinants_left_unreduced_is_still_no_loss():
    """Corrected, a batch's log|det| ([3] from [3, 4, 4] matrices) is several values: still refused."""
    program = gradc.Program()
    block = program.global_block
    block.create_var("w", [3, 4, 4], VarType.FP32, persistable=True, is_parameter=True, stop_gradient=False)
    block.create_var("sd", [3, 4, 4], VarType.FP32)
    block.create_var("logdet", [4, 4], VarType.FP32)
    block.append_op("slogdeterminant", {"Input": ["w"]}, {"Out": ["sd"]})
    block.append_op("slice", {"Input": ["sd"]}, {"Out": ["logdet"]},
                    {"axes": [0], "starts": [1], "ends": [2], "decrease_axis": [0], "infer_flags": [1]})
    with pytest.raises(gradc.GradcError, match=r"loss 'logdet' has shape \[4, 4\]: a loss is one value"):
        gradc.append_backward(program, "logdet")

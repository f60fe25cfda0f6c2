"""Mistakes a new user makes through the Python API and the CLI, each one clear error."""

import numpy as np
import pytest

import gradc
from fixtures import DATA

MLP = DATA / "mlp"


def test_an_unknown_no_grad_name_is_an_error():
    with pytest.raises(gradc.GradError, match="no-grad var.*not declared in the program: nope"):
        gradc.append_backward(gradc.load(MLP / "forward.pb"), "mean_0.tmp_0", no_grad_set=["nope"])


def test_a_loss_of_many_values_is_an_error():
    with pytest.raises(gradc.GradError, match=r"loss 'fc_1.tmp_1' has shape \[32, 10\]: a loss is one value"):
        gradc.append_backward(gradc.load(MLP / "forward.pb"), "fc_1.tmp_1")


def test_a_fetch_list_of_one_name_is_not_read_letter_by_letter():
    program = gradc.load(MLP / "forward.pb")
    scope = gradc.Scope()
    with np.load(MLP / "params.npz") as params, np.load(MLP / "feed.npz") as feed:
        scope.vars.update(dict(params))
        (loss,) = gradc.Executor().run(program, dict(feed), fetch_list="mean_0.tmp_0", scope=scope)
    np.testing.assert_allclose(loss, np.load(MLP / "loss.npy"), rtol=1e-5)


def test_minimize_takes_a_name_or_an_optimizer_object():
    program = gradc.load(MLP / "forward.pb")
    startup = gradc.minimize(program, "mean_0.tmp_0", "momentum", lr=0.1, momentum=0.5)
    assert [op.type for op in program.global_block.ops].count("momentum") == 4
    assert any(op.outputs["Out"] == ["learning_rate_0"] for op in startup.global_block.ops)
    with pytest.raises(gradc.GradcError, match="give lr and the optimizer's arguments to the optimizer object"):
        gradc.minimize(gradc.load(MLP / "forward.pb"), optimizer=gradc.optimizers.SGD(0.1), lr=0.2)

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


def test_a_maker_reading_an_undeclared_var_names_it():
    """lerp's maker shapes a temporary like Y: a program that never declared Y gets an error naming it (found by
    the fuzz scenarios over the tensor-API fixtures: an AttributeError before)."""
    program = gradc.Program()
    block = program.global_block
    for name, shape in (("x", [2, 5]), ("w", [2, 1]), ("out", [2, 5]), ("loss", [])):
        block.create_var(name, shape)
    block.append_op("lerp", {"X": ["x"], "Y": ["no_such_var"], "Weight": ["w"]}, {"Out": ["out"]})
    block.append_op("reduce_mean", {"X": ["out"]}, {"Out": ["loss"]}, {"reduce_all": True})
    with pytest.raises(gradc.GradError, match=r"block 0, op 0 \(lerp\): var 'no_such_var' is not declared"):
        gradc.gradients(program, "loss", ["x"])


def test_the_program_builder_names_an_input_of_unknown_rank_and_leaves_the_program_as_it_was():
    from gradc.layers import ProgramBuilder
    builder = ProgramBuilder()
    x = builder.data("x", None)
    for op_type, attrs in (("logsumexp", {"axis": [0]}), ("softmax", {"axis": -1})):
        with pytest.raises(gradc.ProgramError, match=rf"^block 0, op 0 \({op_type}\): the shape of X is unknown"):
            builder.op(op_type, {"X": x}, attrs)
    assert builder.block.ops == []

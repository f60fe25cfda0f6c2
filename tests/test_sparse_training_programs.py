"""Paddle's training programs with a sparse embedding (Embedding(sparse=True): a SelectedRows gradient) run in
gradc as in Paddle: every optimizer with a sparse kernel, lazy and non-lazy Adam, clipping and L2 decay, a table
shared by two lookups (tools/paddle_sparse_fixtures.py -> tests/data/paddle/optim_sparse)."""

from pathlib import Path

import pytest
from click.testing import CliRunner

import gradc
from gradc.cli import cli
from gradc.executor import SelectedRows
from gradc.executor.kernels import optimizer_sparse
from gradc.ir import VarType
from optim_cases import OptimCase, assert_trained_like_paddle, gradc_program, train
from test_optimizer_pass_vs_paddle import Matcher, optimize_ops

DATA = Path(__file__).parent / "data" / "paddle" / "optim_sparse"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "meta.json").is_file())


@pytest.mark.parametrize("name", CASES)
def test_paddles_sparse_training_program_trains_like_paddle(name):
    case = OptimCase(name, DATA)
    assert case.meta["sparse_grads"], "the fixture has no SelectedRows gradient"
    losses, states = train(case, case.program())
    assert_trained_like_paddle(case, losses, states)


@pytest.mark.parametrize("name", CASES)
def test_gradcs_own_training_program_trains_like_paddles(name):
    """gradc's backward (the sparse lookup's table grad declared SELECTED_ROWS, as Paddle does) and its optimizer
    pass (clipping and decay of a sparse gradient written as Paddle writes them) on the same forward program
    train like Paddle's program."""
    case = OptimCase(name, DATA)
    program, _ = gradc_program(case)
    sparse = sorted(n for n, v in program.global_block.vars.items() if v.type == VarType.SELECTED_ROWS)
    assert sparse == case.meta["sparse_grads"]
    losses, states = train(case, program)
    assert_trained_like_paddle(case, losses, states)


@pytest.mark.parametrize("name", CASES)
def test_gradcs_optimizer_pass_writes_what_paddle_writes_for_sparse_grads(name):
    """The same optimize ops, slots, attributes and vars as Paddle's minimize, and the same vars SELECTED_ROWS."""
    case = OptimCase(name, DATA)
    program, theirs = gradc_program(case)[0], case.program()
    ours_ops, theirs_ops = optimize_ops(program), optimize_ops(theirs)
    assert [op.type for op in ours_ops] == [op.type for op in theirs_ops]
    matcher = Matcher(program, theirs)
    for index, (a, b) in enumerate(zip(ours_ops, theirs_ops)):
        matcher.op(a, b, f"{name}: optimize op {index}")
    for ours, paddle in matcher.pairs.items():
        assert program.global_block.var(ours).type == theirs.global_block.var(paddle).type, f"{name}: {ours}"


def _densified(case: OptimCase):
    """Paddle's program with its lookups' table grads dense (is_sparse off): the dense rules."""
    program = case.program()
    for op in program.global_block.ops:
        if op.type == "lookup_table_v2_grad":
            op.set_attr("is_sparse", False)
            for name in op.output("W@GRAD"):
                program.global_block.var(name).type = VarType.DENSE_TENSOR
    program.mark_changed()
    return program


@pytest.mark.parametrize("name", ["emb_adam", "emb_adam_lazy", "emb_momentum", "emb_rmsprop", "emb_sgd", "emb_adagrad",
                                  "emb_lamb"])
def test_the_dense_gradient_does_not_train_like_paddles_sparse_one(name):
    """Adam (lazy or not) has a sparse rule of its own, momentum and rmsprop miss rows of an unsorted batch, and
    every sparse table grad keeps the padding row that the dense one zeroes: the fixtures tell them apart."""
    case = OptimCase(name, DATA)
    losses, states = train(case, _densified(case))
    with pytest.raises(AssertionError, match=name):
        assert_trained_like_paddle(case, losses, states)


def test_gradc_compile_with_lazy_adam_trains_like_paddle(tmp_path):
    """`gradc compile --optimizer adam --opt lazy_mode=True` on the forward program of the sparse embedding."""
    case = OptimCase("emb_adam_lazy", DATA)
    hyper = case.meta["hyperparameters"]
    assert hyper["lazy_mode"] is True
    result = CliRunner().invoke(cli, [
        "compile", str(DATA / case.meta["forward"]), "-o", str(tmp_path / "train.pb"), "--loss", case.meta["loss"],
        "--optimizer", "adam", "--lr", str(hyper["learning_rate"]), "--epsilon", str(hyper["epsilon"]),
        "--opt", f"beta1={hyper['beta1']}", "--opt", f"beta2={hyper['beta2']}", "--opt", "lazy_mode=True"])
    assert result.exit_code == 0, result.output
    program = gradc.load(tmp_path / "train.pb")
    assert [op.attrs["lazy_mode"] for op in program.global_block.ops if op.type == "adam"] == [True] * 3
    losses, states = train(case, program)
    assert_trained_like_paddle(case, losses, states)


@pytest.mark.parametrize("name", ["emb_momentum", "emb_rmsprop"])
def test_momentum_and_rmsprop_miss_the_rows_paddles_binary_search_misses(name, monkeypatch):
    """With every selected row found (the whole sparse gradient), they no longer train like Paddle."""
    case = OptimCase(name, DATA)
    op_type = name.split("_")[1]
    monkeypatch.setitem(optimizer_sparse.DENSE_VIEW, op_type, SelectedRows.to_dense)
    losses, states = train(case, case.program())
    with pytest.raises(AssertionError, match=name):
        assert_trained_like_paddle(case, losses, states)


@pytest.mark.parametrize("name", ["emb_adam", "emb_adam_lazy"])
def test_sparse_adam_steps_with_the_beta_pows_of_the_next_step(name, monkeypatch):
    """Reading the pows before their in-place update (as the dense kernel does) no longer trains like Paddle."""
    case = OptimCase(name, DATA)
    rule = optimizer_sparse.sparse_adam
    monkeypatch.setattr(optimizer_sparse, "sparse_adam", lambda *args: rule(*args[:-1], False))
    losses, states = train(case, case.program())
    with pytest.raises(AssertionError, match=name):
        assert_trained_like_paddle(case, losses, states)

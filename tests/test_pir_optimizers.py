"""Training programs with optimizers as PIR. Paddle's PIR training programs (Optimizer.minimize in PIR mode:
tests/data/paddle/pir/optim_*) train in gradc as in Paddle, read as they are and written back. Paddle's own legacy
training programs (tests/data/paddle/optim: every
optimizer, clip, regularizer and schedule) written as PIR and read back train like Paddle, step by step; a program
with an op the table cannot write is refused naming the op. (Paddle runs these files:
tools/run_legacy_as_pir_in_paddle.py --optim.)"""

import gzip

import numpy as np
import pytest

import gradc
from gradc.pir import load_pir, parse_pir, serialize_pir
from gradc.pir.graph import walk_ops
from gradc.pir.reader import read_module
from gradc.pir.table.rows import TABLE
from optim_cases import CASES, OptimCase, assert_trained_like_paddle, train
from pir_fixtures import OPTIM, PIR_DATA


def train_steps(program: gradc.Program, case: str) -> tuple[list[float], gradc.Scope]:
    """From Paddle's persistables after its startup program, one step per batch of feeds.npz."""
    scope, executor = gradc.Scope(), gradc.Executor()
    with np.load(PIR_DATA / case / "init.npz") as init:
        for name in init.files:
            scope[name] = init[name]
    with np.load(PIR_DATA / case / "feeds.npz") as feeds:
        batches = [{name: feeds[name][step] for name in feeds.files} for step in range(len(feeds["x"]))]
    losses = [float(executor.run(program, feed=feed, fetch_list=["loss"], scope=scope)[0]) for feed in batches]
    return losses, scope


@pytest.mark.parametrize("written_back", [False, True])
@pytest.mark.parametrize("case", OPTIM)
def test_paddles_pir_training_program_trains_like_paddle(case, written_back):
    program = load_pir(gzip.decompress((PIR_DATA / case / "train.json.gz").read_bytes()))
    if written_back:
        program = parse_pir(serialize_pir(program))
    losses, scope = train_steps(program, case)
    np.testing.assert_allclose(losses, np.load(PIR_DATA / case / "losses.npy"), rtol=1e-5, atol=1e-6)
    with np.load(PIR_DATA / case / "final.npz") as final:
        for name in final.files:
            np.testing.assert_allclose(np.asarray(scope[name]), final[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("case", OPTIM)
def test_paddles_pir_startup_program_initialises_the_persistables(case):
    """builtin.set_parameter / shadow_output keep what the startup makes: the accumulators and the learning rate
    as Paddle's, the parameters (random in Paddle and gradc alike) with their shapes."""
    program = load_pir(gzip.decompress((PIR_DATA / case / "startup.json.gz").read_bytes()))
    scope = gradc.Scope()
    gradc.Executor().run(program, scope=scope)
    with np.load(PIR_DATA / case / "init.npz") as init:
        assert set(init.files) <= {name for name, var in program.global_block.vars.items() if var.persistable}
        for name in init.files:
            if program.global_block.vars[name].is_parameter:
                assert np.asarray(scope[name]).shape == init[name].shape
            else:
                np.testing.assert_array_equal(np.asarray(scope[name]), init[name], err_msg=name)


def test_gradcs_startup_program_written_as_pir_initialises_the_same():
    program = load_pir(PIR_DATA / "mlp" / "forward.json")
    startup = gradc.minimize(program, "loss", "adam", lr=0.05)
    again = parse_pir(serialize_pir(startup))
    made = [gradc.Scope(), gradc.Scope()]
    for each, scope in zip((startup, again), made):
        gradc.Executor().run(each, scope=scope)
    names = [name for name, var in startup.global_block.vars.items() if var.persistable]
    assert len(names) == 1 + 4 * 4   # the learning rate; moments and beta powers of 4 parameters
    for name in names:
        np.testing.assert_array_equal(np.asarray(made[1][name]), np.asarray(made[0][name]), err_msg=name)


# merged_momentum is written as one momentum_ per parameter (Paddle 3.3.1's PIR executor cannot run merged_momentum_)
WRITTEN_AS = {"merged_momentum": "momentum"}


@pytest.mark.parametrize("name", CASES)
def test_a_training_program_written_as_pir_trains_like_paddle(name):
    case = OptimCase(name)
    program = parse_pir(serialize_pir(case.program()))
    updates = {WRITTEN_AS.get(kind, kind) for kind in case.meta["optimize_op_types"]}
    assert updates and updates <= {op.type for op in program.global_block.ops}
    rate = case.meta["learning_rate_var"]
    if program.global_block.find_var(rate) is None:   # Rprop reads no global rate; PIR keeps no var nothing reads
        program.global_block.create_var(rate, list(case.arrays("init")[rate].shape))
    losses, states = train(case, program)
    assert_trained_like_paddle(case, losses, states)


def test_the_update_ops_of_every_optimizer_are_in_the_table():
    """Paddle's PIR mode writes one update op per parameter, lars_momentum_ with single-element lists; its
    multi-tensor code writes merged_adam_ and merged_momentum_ (tools/paddle_pir_optim_fixtures.py)."""
    names = ["sgd", "momentum", "adam", "adamw", "adagrad", "adamax", "rmsprop", "adadelta", "lamb", "nadam",
             "radam", "rprop", "lars_momentum", "merged_adam", "merged_momentum"]
    assert [TABLE[f"pd_op.{name}_"].legacy for name in names] == names
    assert {kind for name in CASES for kind in OptimCase(name).meta["optimize_op_types"]} <= set(names) | {
        "clip", "clip_by_norm", "elementwise_div", "elementwise_max", "elementwise_mul", "fill_constant", "scale",
        "sign", "sqrt", "squared_l2_norm", "sum", "slice", "assign_value"}


def test_merged_momentum_is_written_as_a_momentum_op_per_parameter():
    program = OptimCase("mlp_merged_momentum").program()
    merged = next(op for op in program.global_block.ops if op.type == "merged_momentum")
    names = [op.name for op in walk_ops(read_module(serialize_pir(program)).body)]
    assert "pd_op.merged_momentum_" not in names and names.count("pd_op.momentum_") == len(merged.input("Param"))


SPARSE = PIR_DATA.parent / "optim_sparse"


def test_selected_rows_ops_are_refused_by_name():
    """Export writes a sparse embedding's gradient dense, so merge_selected_rows has nothing to merge."""
    program = gradc.load(SPARSE / "emb_clip_global_norm" / "train.pb")
    with pytest.raises(gradc.ProgramError, match=r"op 15 \(merge_selected_rows\).*merge_selected_rows has no PIR "
                                                 r"export: export writes the sparse gradient it reads as a dense"):
        serialize_pir(program)


def test_a_v1_sparse_embedding_exports_as_embedding_and_squeeze():
    data = serialize_pir(gradc.load(SPARSE / "emb_v1_adam" / "train.pb"))
    names = [op.name for op in walk_ops(read_module(data).body)]
    assert {"pd_op.embedding", "pd_op.squeeze", "pd_op.unsqueeze", "pd_op.embedding_grad"} <= set(names)

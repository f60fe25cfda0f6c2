"""SelectedRows values (sparse gradients) in the executor: Paddle's MergeAdd and BinarySearch, the ops that keep a
gradient sparse, the sparse Adam rule, the optimizers Paddle has no sparse kernel for, and what a fetch gives."""

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import gradc
from gradc.cli import cli
from gradc.executor.kernels.optimizer_sparse import sparse_adam
from gradc.executor.selected_rows import SelectedRows, lookup_rows, merge_add
from gradc.ir import VarType

F32 = np.float32


def rows(ids, width=2, height=6, dtype=F32):
    ids = np.array(ids, np.int64)
    values = (np.arange(ids.size * width, dtype=dtype).reshape(ids.size, width) + 1) / 10
    return SelectedRows(ids, values, height)


def run_op(op_type, inputs: dict, attrs=None, outputs=("Out",)):
    """One op over vars holding ``inputs`` (SelectedRows or arrays) in the scope; -> {output slot: value}."""
    program, scope = gradc.Program(), gradc.Scope()
    block = program.global_block
    for slot, value in inputs.items():
        kind = VarType.SELECTED_ROWS if isinstance(value, SelectedRows) else VarType.DENSE_TENSOR
        block.create_var(slot.lower(), list(value.shape), VarType.FP32, type=kind)
        scope[slot.lower()] = value
    for slot in outputs:
        block.create_var(slot.lower() + "_out", None, None)
    block.append_op(op_type, {s: [s.lower()] for s in inputs}, {s: [s.lower() + "_out"] for s in outputs}, attrs or {})
    values = gradc.Executor().run(program, fetch_list=[s.lower() + "_out" for s in outputs], scope=scope)
    return dict(zip(outputs, values))


def test_merge_add_keeps_unrepeated_rows_in_order_and_sorts_repeated_ones():
    unrepeated = merge_add([rows([4, 1]), rows([3])])
    assert unrepeated.rows.tolist() == [4, 1, 3]
    repeated = rows([4, 1, 4]).merged()
    assert repeated.rows.tolist() == [1, 4]
    np.testing.assert_allclose(repeated.values, [[0.3, 0.4], [0.1 + 0.5, 0.2 + 0.6]], rtol=1e-6)
    assert rows([4, 1]).merged(sort=True).rows.tolist() == [1, 4]
    np.testing.assert_array_equal(repeated.to_dense(), rows([4, 1, 4]).to_dense())


def test_binary_search_misses_rows_of_an_unsorted_list_as_paddles_does():
    assert lookup_rows(np.array([3, 1, 4]), 6).tolist() == [-1, 1, -1, -1, 2, -1]
    assert lookup_rows(np.array([1, 3, 4]), 6).tolist() == [-1, 0, -1, 1, 2, -1]


def test_a_sparse_lookup_grad_has_one_row_per_id_padding_included():
    program, scope = gradc.Program(), gradc.Scope()
    block = program.global_block
    block.create_var("w", [5, 2], VarType.FP32, persistable=True)
    block.create_var("ids", [2, 2], VarType.INT64)
    block.create_var("out", [2, 2, 2], VarType.FP32)
    block.create_var("loss", [], VarType.FP32)
    block.append_op("lookup_table_v2", {"W": ["w"], "Ids": ["ids"]}, {"Out": ["out"]},
                    {"is_sparse": True, "padding_idx": 0})
    block.append_op("reduce_sum", {"X": ["out"]}, {"Out": ["loss"]}, {"reduce_all": True})
    gradc.append_backward(program, "loss")
    assert block.var("w@GRAD").type == VarType.SELECTED_ROWS
    scope["w"] = np.ones((5, 2), F32)
    grad, = gradc.Executor().run(program, {"ids": np.array([[3, 0], [1, 3]])}, ["w@GRAD"], scope)
    assert isinstance(grad, gradc.SelectedRows) and grad.rows.tolist() == [3, 0, 1, 3] and grad.height == 5
    np.testing.assert_array_equal(grad.to_dense()[:, 0], [1, 1, 0, 2, 0])


def test_scale_mul_and_clip_keep_a_gradient_sparse():
    grad = rows([4, 1, 4])
    scaled = run_op("scale", {"X": grad}, {"scale": 2.0})["Out"]
    assert isinstance(scaled, SelectedRows) and scaled.rows.tolist() == [4, 1, 4]
    np.testing.assert_allclose(scaled.values, grad.values * 2)
    multiplied = run_op("elementwise_mul", {"X": grad, "Y": np.array([0.5], F32)}, {"axis": -1})["Out"]
    np.testing.assert_allclose(multiplied.values, grad.values * 0.5)
    clipped = run_op("clip_by_norm", {"X": grad}, {"max_norm": 0.1})["Out"]
    assert clipped.rows.tolist() == [1, 4]   # merged first
    np.testing.assert_allclose(np.linalg.norm(clipped.values), 0.1, rtol=1e-6)
    merged = run_op("merge_selected_rows", {"X": grad})["Out"]
    values = run_op("get_tensor_from_selected_rows", {"X": merged})["Out"]
    np.testing.assert_array_equal(values, grad.merged().values)


def test_sum_of_sparse_grads_is_sparse_and_with_a_tensor_is_a_tensor():
    both = run_op("sum", {"X": rows([2, 1])}, outputs=("Out",))["Out"]
    assert isinstance(both, SelectedRows)
    dense = np.ones((6, 2), F32)
    program = gradc.Program()
    block = program.global_block
    block.create_var("g", [6, 2], VarType.FP32, type=VarType.SELECTED_ROWS)
    block.create_var("t", [6, 2], VarType.FP32)
    block.create_var("s", [6, 2], VarType.FP32)
    block.append_op("sum", {"X": ["g", "t"]}, {"Out": ["s"]})
    scope = gradc.Scope()
    scope["g"], scope["t"] = rows([2, 2]), dense
    total, = gradc.Executor().run(program, fetch_list=["s"], scope=scope)
    np.testing.assert_allclose(total, dense + rows([2, 2]).to_dense())


def test_sparse_adam_lazy_leaves_unselected_rows_and_non_lazy_decays_them_with_plain_eps():
    param, grad = np.ones((4, 2), F32), rows([2, 0], height=4)
    m1, m2 = np.full((4, 2), 0.1, F32), np.full((4, 2), 0.01, F32)
    args = (np.array([0.1], F32), m1, m2, np.array([0.9], F32), np.array([0.999], F32), 0.9, 0.999, 1e-3)
    lazy = sparse_adam(param, grad, *args, lazy_mode=True)
    np.testing.assert_array_equal(lazy[0][[1, 3]], param[[1, 3]])
    np.testing.assert_array_equal(lazy[1][[1, 3]], m1[[1, 3]])
    eager = sparse_adam(param, grad, *args, lazy_mode=False)
    np.testing.assert_array_equal(eager[0][[0, 2]], lazy[0][[0, 2]])
    b1, b2 = F32(0.9 * 0.9), F32(0.999 * 0.999)   # the pows advanced before the step (in place)
    lr_t = F32(0.1) * np.sqrt(1 - b2) / (1 - b1)
    expected = 1 - lr_t * (0.9 * 0.1) / (np.sqrt(0.999 * 0.01) + 1e-3)
    np.testing.assert_allclose(eager[0][[1, 3]], expected, rtol=1e-6)


def test_adamw_decays_the_whole_table_then_steps_like_sparse_adam():
    grad = rows([1], height=3)
    inputs = {"Param": np.ones((3, 2), F32), "Grad": grad, "LearningRate": np.array([0.1], F32),
              "Moment1": np.zeros((3, 2), F32), "Moment2": np.zeros((3, 2), F32),
              "Beta1Pow": np.array([0.9], F32), "Beta2Pow": np.array([0.999], F32)}
    outs = ("ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut")
    decayed = run_op("adamw", inputs, {"coeff": 0.5, "with_decay": True}, outs)["ParamOut"]
    plain = run_op("adam", {**inputs, "Param": np.full((3, 2), 0.95, F32)}, {}, outs)["ParamOut"]
    np.testing.assert_allclose(decayed, plain, rtol=1e-6)
    np.testing.assert_allclose(decayed[[0, 2]], 0.95, rtol=1e-6)


@pytest.mark.parametrize("with_decay", [False, True])
def test_adamw_lr_ratio_scales_the_sparse_step_with_or_without_decay_as_the_gpu_kernel(with_decay):
    """The CUDA kernels (dense and sparse) step with lr * lr_ratio whatever with_decay is; the CPU ones ignore it."""
    inputs = {"Param": np.ones((3, 2), F32), "Grad": rows([1], height=3), "Moment1": np.zeros((3, 2), F32),
              "Moment2": np.zeros((3, 2), F32), "Beta1Pow": np.array([0.9], F32), "Beta2Pow": np.array([0.999], F32)}
    outs = ("ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut")
    attrs = {"coeff": 0.5, "with_decay": with_decay, "lr_ratio": 0.25}
    scaled = run_op("adamw", {**inputs, "LearningRate": np.array([0.4], F32)}, attrs, outs)["ParamOut"]
    plain = run_op("adamw", {**inputs, "LearningRate": np.array([0.1], F32)}, {**attrs, "lr_ratio": 1.0},
                   outs)["ParamOut"]
    np.testing.assert_allclose(scaled, plain, rtol=1e-6)
    assert scaled[1, 0] < (0.95 if with_decay else 1.0)


def test_an_optimizer_without_a_sparse_kernel_refuses_a_sparse_grad():
    inputs = {"Param": np.ones((6, 2), F32), "Grad": rows([1]), "LearningRate": np.array([0.1], F32),
              "Moment": np.zeros((6, 2), F32), "InfNorm": np.zeros((6, 2), F32), "Beta1Pow": np.array([0.9], F32)}
    with pytest.raises(gradc.ExecutionError, match=r"op 0 \(adamax\).*SelectedRows.*no kernel"):
        run_op("adamax", inputs, {}, ("ParamOut", "MomentOut", "InfNormOut"))


def test_gradc_run_saves_a_fetched_sparse_grad_as_its_tensor(tmp_path):
    """The Python API fetches the SelectedRows; `gradc run --out` writes the tensor it stands for."""
    case = Path(__file__).parent / "data" / "paddle" / "optim_sparse" / "emb_sgd"
    feed = {name: batches[0] for name, batches in np.load(case / "feeds.npz").items()}
    np.savez(tmp_path / "feed.npz", **feed)
    scope = gradc.Scope()
    with np.load(case / "init.npz") as init:
        scope.vars.update(init)
    grad, = gradc.Executor().run(gradc.load(case / "train.pb"), feed, ["embedding_0.w_0@GRAD"], scope)
    assert isinstance(grad, gradc.SelectedRows) and grad.rows.tolist() == feed["ids"].reshape(-1).tolist()
    result = CliRunner().invoke(cli, ["run", str(case / "train.pb"), "--feed", str(tmp_path / "feed.npz"), "--params",
                                      str(case / "init.npz"), "--fetch", "embedding_0.w_0@GRAD", "--out",
                                      str(tmp_path / "out.npz")])
    assert result.exit_code == 0, result.output
    with np.load(tmp_path / "out.npz", allow_pickle=False) as saved:
        np.testing.assert_array_equal(saved["embedding_0.w_0@GRAD"], grad.to_dense())

"""Tensor-valued attributes: an attribute whose wire type is VAR (or VARS) names the var(s) holding its value, as
Paddle writes `paddle.mean(x, axis=t)` for a Tensor t. The op reads the value when it runs; every pass that asks
what an op reads sees the var; the file keeps the wire type; only attributes Paddle lets a var give
(support_tensor) accept one."""

import json

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc import opdef
from gradc.ir import AttrType, OpDesc, Program, VarType
from gradc.pir import parse_pir, serialize_pir


def _mean_over(axis_dims=(1,), attr_type=AttrType.VAR) -> Program:
    """out = reduce_mean(x, dim=<the var 'axis'>), loss = mean(out); x [2, 3], axis fed as int64."""
    program = Program()
    block = program.global_block
    block.create_var("x", [2, 3])
    block.create_var("axis", list(axis_dims), VarType.INT64, stop_gradient=True)
    block.create_var("out", [-1])
    block.create_var("loss", [])
    dim = "axis" if attr_type == AttrType.VAR else ["axis"]
    block.append_op("reduce_mean", {"X": ["x"]}, {"Out": ["out"]}, {"dim": dim, "keep_dim": False},
                    {"dim": attr_type})
    block.append_op("mean", {"X": ["out"]}, {"Out": ["loss"]})
    return program


X = np.arange(6, dtype=np.float32).reshape(2, 3)


@pytest.mark.parametrize("axis, expect", [(0, X.mean(axis=0)), (1, X.mean(axis=1))])
def test_the_op_reads_the_value_its_var_holds_when_it_runs(axis, expect):
    out, = gradc.Executor().run(_mean_over(), {"x": X, "axis": np.array([axis])}, fetch_list=["out"])
    np.testing.assert_allclose(out, expect)


def test_a_list_attribute_takes_a_var_per_element():
    program = _mean_over(attr_type=AttrType.VARS)
    out, = gradc.Executor().run(program, {"x": X, "axis": np.array([0])}, fetch_list=["out"])
    np.testing.assert_allclose(out, X.mean(axis=0))


def test_its_var_is_read_like_an_input_and_kept_until_then():
    program = _mean_over()
    op = program.global_block.ops[0]
    assert op.input_names() == ["x", "axis"] and op.attr_var_names() == ["axis"]
    assert op.copy().var_attrs == ("dim",)
    block = program.global_block   # made by an op two ops before its reader: the executor frees it after
    block.create_var("seed_axis", [1], VarType.INT64, stop_gradient=True)
    block.ops.insert(0, OpDesc("fill_constant", {}, {"Out": ["seed_axis"]},
                               {"shape": [1], "dtype": int(VarType.INT64), "value": 1.0}))
    block.ops.insert(1, OpDesc("assign", {"X": ["seed_axis"]}, {"Out": ["axis"]}))
    out, = gradc.Executor().run(program, {"x": X}, fetch_list=["out"])
    np.testing.assert_allclose(out, X.mean(axis=1))


def test_the_backward_reads_it_too_and_gives_it_no_gradient():
    program = _mean_over()
    gradc.append_backward(program, "loss")
    grad_op = next(op for op in program.global_block.ops if op.type == "reduce_mean_grad")
    assert grad_op.attrs["dim"] == "axis" and grad_op.attr_types["dim"] == AttrType.VAR
    # its role is set as on any grad op, and the attribute stays the one naming a var
    assert (grad_op.attrs["op_role"], grad_op.attrs["op_role_var"], grad_op.var_attrs) == (1, [], ("dim",))
    assert (grad_op.attr_types["op_role"], grad_op.attr_types["op_role_var"]) == (AttrType.INT, AttrType.STRINGS)
    assert "axis@GRAD" not in {name for op in program.global_block.ops for name in op.output_names()}
    dx, = gradc.Executor().run(program, {"x": X, "axis": np.array([0])}, fetch_list=["x@GRAD"])
    np.testing.assert_allclose(dx, np.full((2, 3), 1 / 6))


def test_a_file_keeps_the_wire_type(tmp_path):
    path = tmp_path / "p.pb"
    gradc.save(_mean_over(attr_type=AttrType.VARS), path)
    op = gradc.load(path).global_block.ops[0]
    assert op.attrs["dim"] == ["axis"] and op.attr_types["dim"] == AttrType.VARS and op.var_attrs == ("dim",)


def test_renaming_what_an_op_reads_renames_its_attribute_vars():
    op = _mean_over().global_block.ops[0]
    op.rename_reads({"axis": "axis@RECOMPUTE", "x": "x2"})
    assert op.input_names() == ["x2", "axis@RECOMPUTE"]


def test_only_an_attribute_paddle_lets_a_var_give_takes_one():
    program = _mean_over()
    assert gradc.verify(program) == []   # reduce_mean's dim: support_tensor in Paddle
    program.global_block.ops[0].set_attr("keep_dim", "axis", AttrType.VAR)
    problem, = gradc.verify(program)
    assert "op 0 (reduce_mean)" in problem and ("attribute 'keep_dim' is a var name, but op 'reduce_mean' takes it "
                                                "only as a value (BOOLEAN)") in problem


def test_a_var_nothing_wrote_is_an_error_naming_the_op():
    program = _mean_over()
    program.global_block.ops[0].set_attr("dim", "nowhere", AttrType.VAR)
    problems = gradc.verify(program)
    assert any("op 0 (reduce_mean)" in problem and "'nowhere'" in problem for problem in problems), problems


def test_a_var_of_several_values_for_one_value_is_an_error_naming_the_op():
    program = Program()
    block = program.global_block
    block.create_var("x", [4], VarType.INT64)
    block.create_var("n", [2], VarType.INT64)
    block.create_var("out", [-1], VarType.INT64)
    block.append_op("bincount", {"X": ["x"]}, {"Out": ["out"]}, {"minlength": "n"}, {"minlength": AttrType.VAR})
    with pytest.raises(gradc.ExecutionError, match=r"op 0 \(bincount\): attribute 'minlength' takes one value, "
                                                   r"but its var\(s\) n hold 2"):
        gradc.Executor().run(program, {"x": np.array([0, 1, 1, 3]), "n": np.array([5, 6])}, fetch_list=["out"])


def test_the_ops_that_take_a_var_are_the_ones_paddle_marks_support_tensor():
    ops = json.loads((DATA / "op_protos.json").read_text())["ops"]
    checked = 0
    for op_type, proto in ops.items():
        definition = opdef.get(op_type)
        if definition is None or proto.get("proto") is False:   # a grad op: Paddle's dump has no flags for it
            continue
        paddle = {name for name, attr in proto["attrs"].items() if attr.get("support_tensor")}
        assert definition.tensor_attrs == paddle & set(definition.attrs), op_type
        checked += bool(paddle)
    assert checked >= 20   # 24 in Paddle 3.3.1's dump


def _rows() -> list[str]:
    rows = []
    for path in (DATA / "layers").glob("*/meta.json"):
        text = path.read_text()
        if "tensor_attrs" not in text:   # most rows: not parsed, at collection in every xdist worker
            continue
        meta = json.loads(text)
        if meta["family"] == "tensor_attrs" and not meta["random_outputs"] and (path.parent / "grads.npz").exists():
            rows.append(path.parent.name)
    return sorted(rows)


ROWS = _rows()


@pytest.mark.parametrize("row", ROWS)
def test_a_paddle_program_written_as_pir_reads_the_var_as_an_operand(row):
    """Paddle's legacy program of a Tensor given for an attribute, with gradc's backward, written as PIR (the var
    becomes the op's operand) and read back: the same loss and gradients as Paddle's."""
    folder = DATA / "layers" / row
    meta = json.loads((folder / "meta.json").read_text())
    program = gradc.load(folder / "forward.pb")
    assert any(op.var_attrs for op in program.global_block.ops)
    grads = dict(np.load(folder / "grads.npz"))
    gradc.append_backward(program, meta["loss"])
    back = parse_pir(serialize_pir(program, fetch=list(grads)))
    loss, *values = gradc.Executor().run(back, dict(np.load(folder / "feed.npz")), [meta["loss"], *grads])
    np.testing.assert_allclose(loss, np.load(folder / "loss.npy"), rtol=1e-5, atol=1e-6)
    for name, value in zip(grads, values):
        np.testing.assert_allclose(value, grads[name], rtol=1e-5, atol=1e-6, err_msg=name)

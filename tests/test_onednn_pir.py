"""PIR programs Paddle 3.3.1's oneDNN passes wrote (tools/paddle_onednn_pir.py: a Predictor with enable_mkldnn and
enable_new_ir): gradc translates each onednn_op and runs the program to the Predictor's outputs."""

import json

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.errors import FormatError
from gradc.ir import Program
from one_op import run

ROOT = DATA / "onednn_pir"
CASES = sorted(p.name for p in ROOT.iterdir() if p.is_dir())
FUSED = {"onednn_op.fused_conv2d", "onednn_op.fused_elementwise_add", "onednn_op.fused_elementwise_sub",
         "onednn_op.fused_elementwise_mul", "onednn_op.fused_matmul", "onednn_op.fused_softplus",
         "onednn_op.fused_transpose", "onednn_op.fc"}


def _run(case: str, program: Program) -> tuple[dict, dict]:
    scope = gradc.Scope()
    for name, value in gradc.read_params(ROOT / case / "model.pdiparams", program).items():
        scope[name] = value
    with np.load(ROOT / case / "feed.npz") as feed, np.load(ROOT / case / "expected.npz") as expected:
        outs = gradc.Executor().run(program, dict(feed), list(expected.files), scope=scope)
        return dict(zip(expected.files, outs)), dict(expected)


def test_the_fixtures_hold_every_fused_onednn_op():
    held = set().union(*(json.loads((ROOT / c / "meta.json").read_text())["onednn_ops"] for c in CASES))
    assert FUSED <= held


@pytest.mark.parametrize("case", CASES)
def test_runs_to_the_predictors_outputs(case):
    program = gradc.load(ROOT / case / "model.json")
    assert gradc.verify(program) == []
    got, expected = _run(case, program)
    with np.load(ROOT / case / "unoptimized.npz") as unoptimized:
        for name, want in expected.items():
            np.testing.assert_allclose(unoptimized[name], want, rtol=1e-5, atol=1e-6)   # the passes kept the math
            assert got[name].dtype == want.dtype and got[name].shape == want.shape
            np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6)


def test_fused_ops_translate_to_the_legacy_fused_ops():
    types = [op.type for op in gradc.load(ROOT / "convnet" / "model.json").global_block.ops]
    assert {"fused_conv2d", "fused_elementwise_add", "fused_matmul", "fused_transpose"} <= set(types)
    assert types[types.index("fc") + 1] == "gelu"   # onednn_op.fc's fuse_activation, as the op after it


def test_fused_transpose_declares_the_reshaped_result():
    """Paddle types onednn_op.fused_transpose's result by the transpose alone; gradc declares the reshape's dims."""
    program = gradc.load(ROOT / "convnet" / "model.json")
    op = next(op for op in program.global_block.ops if op.type == "fused_transpose")
    assert op.attrs["fused_reshape2_shape"] == [-1, 36, 4]
    assert program.global_block.find_var(op.output("Out")[0]).shape == [-1, 36, 4]


def _edited(tmp_path, op_name: str, attr: str, value):
    program = json.loads((ROOT / "convnet" / "model.json").read_text())
    op = next(op for op in program["program"]["regions"][0]["blocks"][0]["ops"] if op["#"] == op_name)
    next(a for a in op["A"] if a["N"] == attr)["AT"]["D"] = value
    (tmp_path / "edited.json").write_text(json.dumps(program))
    return tmp_path / "edited.json"


@pytest.mark.parametrize(("op_name", "attr", "value", "message"), [
    ("onednn_op.softmax", "mkldnn_data_type", "bfloat16", "makes oneDNN compute in int8 or bfloat16"),
    ("onednn_op.add", "scale_x", 0.5, "attribute 'scale_x' = 0.5"),
    ("onednn_op.fc", "fuse_activation", "softsign", "fuse_activation 'softsign' is not one of"),
])
def test_int8_and_bfloat16_attributes_are_refused_by_name(tmp_path, op_name, attr, value, message):
    with pytest.raises(FormatError, match=message) as error:
        gradc.load(_edited(tmp_path, op_name, attr, value))
    assert op_name in str(error.value)


def _fused_transpose(x, **attrs):
    return run("fused_transpose", {"X": x}, attrs)["Out"]   # also checks the inferred shape


def test_fused_transpose_squeezes_transposes_and_unsqueezes_or_reshapes():
    x = np.arange(24, dtype=np.float32).reshape(2, 1, 3, 4)
    got = _fused_transpose(x, axis=[2, 0, 1], fused_squeeze2_axes=[1], fused_unsqueeze2_axes=[-1])
    np.testing.assert_array_equal(got, x.reshape(2, 3, 4).transpose(2, 0, 1)[..., None])
    got = _fused_transpose(x, axis=[0, 2, 1, 3], fused_reshape2_shape=[0, -1], scale=2.0)
    np.testing.assert_array_equal(got, 2 * x.transpose(0, 2, 1, 3).reshape(2, 12))


INPLACE = {f"onednn_op.{name}_" for name in ("abs", "add", "clip", "elu", "exp", "flatten", "leaky_relu", "multiply",
                                              "relu", "reshape", "round", "scale", "sigmoid", "softmax", "sqrt",
                                              "squeeze", "subtract", "tanh", "transpose")}


def test_in_place_ops_write_their_operands_var_unless_the_shape_changes():
    """The inplace case holds the dialect's in-place forms (and a pd_op.divide_ the passes left): an elementwise one
    writes its operand's var, a reshaping one (reshape_, squeeze_, flatten_, transpose_) a var of its own."""
    assert INPLACE <= set(json.loads((ROOT / "inplace" / "meta.json").read_text())["onednn_ops"])
    ops = gradc.load(ROOT / "inplace" / "model.json").global_block.ops
    for op_type in ("relu", "tanh", "exp", "sqrt", "abs", "elementwise_div", "softmax"):
        op = next(op for op in ops if op.type == op_type)
        assert op.input("X") == op.output("Out"), op_type
    for op_type in ("reshape2", "transpose2", "squeeze2", "flatten_contiguous_range"):
        op = next(op for op in ops if op.type == op_type)
        assert op.input("X") != op.output("Out"), op_type


@pytest.mark.parametrize("case", CASES)
def test_saves_back_to_pir_and_runs_the_same(case, tmp_path):
    """Writing a oneDNN program back as PIR JSON stopped on a KeyError (the onednn_op dialect has no compressed id
    in Paddle's map: its fused ops keep their full names, as Paddle writes them)."""
    program = gradc.load(ROOT / case / "model.json")
    gradc.save(program, tmp_path / "model.json")   # .json: PIR
    fused = {op.type for op in program.global_block.ops if op.type.startswith("fused_")}
    written = (tmp_path / "model.json").read_text()
    assert all(f'"onednn_op.{name}"' in written for name in fused), fused
    again, _ = _run(case, gradc.load(tmp_path / "model.json"))
    for name, value in _run(case, program)[0].items():
        np.testing.assert_array_equal(again[name], value)

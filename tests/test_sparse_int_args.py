"""paddle.sparse's reshape, slice and sum with the shape, starts, ends and axis computed in the program (fixture
pir_int_args, tools/paddle_sparse_pir_int_args.py): Paddle's PIR program reads them from operands, gradc from the
legacy tensor slots (ShapeTensor, StartsTensor, EndsTensor, AxisTensor). Outputs are Paddle's Executor's, gradients
its dygraph ones; the training program goes to PIR and back with the grad ops reading the same tensors."""

import json

import numpy as np

import gradc
from gradc.pir import load_pir, parse_pir, serialize_pir
from sparse_fixtures import DATA

FOLDER = DATA / "pir_int_args"


def _program():
    feed, expected = dict(np.load(FOLDER / "feed.npz")), dict(np.load(FOLDER / "expected.npz"))
    return load_pir(str(FOLDER / "model.json")), feed, expected


def test_the_tensors_set_the_shape_window_and_axis_as_in_paddle():
    program, feed, expected = _program()
    slots = {slot for op in program.global_block.ops for slot, names in op.inputs.items() if names}
    assert {"ShapeTensor", "StartsTensor", "EndsTensor", "AxisTensor"} <= slots
    inputs = {name: value for name, value in feed.items() if ":" not in name}
    outs = [op.output("out")[0] for op in program.global_block.ops if op.type == "sparse_to_dense"]
    names = [name.removeprefix("out:") for name in expected if name.startswith("out:")]
    for name, value in zip(names, gradc.Executor().run(program, inputs, outs)):
        np.testing.assert_array_equal(value, expected[f"out:{name}"], err_msg=name)


def test_their_gradients_are_paddles_and_go_to_pir_and_back():
    program, feed, expected = _program()
    inputs = {name: value for name, value in feed.items() if ":" not in name}
    outs = [op.output("out")[0] for op in program.global_block.ops if op.type == "sparse_to_dense"]
    names = [name.removeprefix("out:") for name in expected if name.startswith("out:")]
    trained = program.clone()
    block = trained.global_block
    block.var("val").stop_gradient = False
    terms = []
    for i, (name, out) in enumerate(zip(names, outs)):
        shape = [-1] * feed[f"r:{name}"].ndim   # Paddle declares slice's output with x's dims, [3, 4, 5]
        for var, var_shape in ((f"r{i}", shape), (f"p{i}", shape), (f"m{i}", [])):
            block.create_var(var, var_shape, gradc.VarType.FP32)
        block.append_op("elementwise_mul", {"X": [out], "Y": [f"r{i}"]}, {"Out": [f"p{i}"]}, {"axis": -1})
        block.append_op("reduce_mean", {"X": [f"p{i}"]}, {"Out": [f"m{i}"]}, {"reduce_all": True, "dim": []})
        inputs[f"r{i}"] = feed[f"r:{name}"]
        terms.append(f"m{i}")
    block.create_var("loss", [], gradc.VarType.FP32)
    block.append_op("sum", {"X": terms}, {"Out": ["loss"]})
    (grad,) = gradc.gradients(trained, "loss", ["val"])
    (got,) = gradc.Executor().run(trained, inputs, [grad])
    np.testing.assert_allclose(got, sum(expected[f"grad:{name}"] for name in names), rtol=1e-5, atol=1e-7)
    data = serialize_pir(trained, fetch=[grad])
    for op in ("slice_coo_grad_sp", "sum_coo_grad_sp", "reshape_coo_grad_sp"):
        assert f'"1.{op}"'.encode() in data, op
    ops = json.loads(data)["program"]["regions"][0]["blocks"][0]["ops"]
    axes = [attr["AT"]["#"] for op in ops if op["#"].startswith("1.slice_coo") for attr in op["A"]]
    assert axes == ["1.a_intarray"] * 2   # as Paddle writes it: an array of int64 crashes its Executor
    (again,) = gradc.Executor().run(parse_pir(data), inputs, [grad])
    np.testing.assert_allclose(again, got, rtol=1e-6, atol=1e-8)   # the sum of the 4 gradients in another order

"""paddle.sparse.nn's 2-D layers (SubmConv2D, Conv2D: sparse_conv3d of a [N, H, W, C] tensor with 2-D attributes).
The legacy fixture planar is checked with the others in tests/test_sparse.py; here Paddle's PIR program of the same
layers (fixture pir_planar, tools/paddle_sparse_pir_planar.py) runs to its Executor's output, differentiates to its
dygraph gradients, and goes to PIR and back with its backward."""

import numpy as np

import gradc
from gradc.ir import VarType
from gradc.pir import load_pir, parse_pir, serialize_pir
from sparse_fixtures import DATA

FOLDER = DATA / "pir_planar"


def test_paddles_pir_program_of_the_2d_layers_runs_and_differentiates_to_its_numbers():
    feed, params = dict(np.load(FOLDER / "feed.npz")), dict(np.load(FOLDER / "params.npz"))
    expected = dict(np.load(FOLDER / "expected.npz"))
    program = load_pir(str(FOLDER / "model.json"))
    block = program.global_block
    convs = [op for op in block.ops if op.type == "sparse_conv3d"]
    assert [op.attrs["subm"] for op in convs] == [True, False] and convs[1].attrs["strides"] == [2, 2]
    out = block.ops[-1].output("out")[0]
    for name, shape in (("r", list(feed["r"].shape)), ("weighted", list(feed["r"].shape)), ("loss", [])):
        block.create_var(name, shape, VarType.FP32)
    block.append_op("elementwise_mul", {"X": [out], "Y": ["r"]}, {"Out": ["weighted"]}, {"axis": -1})
    block.append_op("reduce_sum", {"X": ["weighted"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
    block.var("val").stop_gradient = False
    wrt = ["val", *params]
    grads = gradc.gradients(program, "loss", wrt)
    scope = gradc.Scope()
    for name, value in params.items():
        scope[name] = value
    dense, *values = gradc.Executor().run(program, feed, [out, *grads], scope)
    np.testing.assert_allclose(dense, expected["out"], rtol=1e-5, atol=1e-6)
    for name, grad in zip(wrt, values):
        np.testing.assert_allclose(grad, expected[f"grad:{name}"], rtol=1e-5, atol=1e-5, err_msg=name)
    again = parse_pir(serialize_pir(program, fetch=[out, *grads]))
    assert sum(op.type == "sparse_conv3d_grad" for op in again.global_block.ops) == 2
    for before, after in zip(values, gradc.Executor().run(again, feed, grads, scope)):
        np.testing.assert_array_equal(after, before)

"""paddle.sparse's functions Paddle 3.3.1 builds in PIR mode only (gradc.ops.sparse_binary, docs/sparse.md): Paddle's
PIR program of multiply, divide, divide by a number and coalesce (fixture pir_binary, tools/paddle_sparse_pir_binary.py)
runs in gradc to the outputs of Paddle's Executor, and gradc's gradient of each mean(out * r) is Paddle's dygraph one;
subtract and transpose, which abort Paddle there, against the dense arithmetic."""

import numpy as np

import gradc
from gradc.pir import load_pir, parse_pir, serialize_pir
from sparse_fixtures import DATA
from test_sparse import one_op, random_coo

FOLDER = DATA / "pir_binary"


def test_paddles_pir_program_runs_and_differentiates_to_paddles_numbers():
    feed, expected = dict(np.load(FOLDER / "feed.npz")), dict(np.load(FOLDER / "expected.npz"))
    names = [name.removeprefix("out:") for name in expected if name.startswith("out:")]
    program = load_pir(str(FOLDER / "model.json"))
    assert {"sparse_multiply", "sparse_divide", "sparse_divide_scalar", "sparse_coalesce"} <= \
        {op.type for op in program.global_block.ops}
    inputs = {name: value for name, value in feed.items() if ":" not in name}
    outs = [op.output("out")[0] for op in program.global_block.ops if op.type == "sparse_to_dense"]
    assert len(outs) == len(names) == 4
    got = gradc.Executor().run(program, inputs, outs)
    for name, value in zip(names, got):
        np.testing.assert_allclose(value, expected[f"out:{name}"], rtol=1e-6, atol=1e-7, equal_nan=True, err_msg=name)
    again = gradc.Executor().run(parse_pir(serialize_pir(program, fetch=outs)), inputs, outs)
    for value, back in zip(got, again):
        np.testing.assert_array_equal(back, value)
    checked = 0
    for i, (name, out) in enumerate(zip(names, outs)):
        wrt = [v for v in ("val", "vay", "vaz") if f"grad:{name}:{v}" in expected]
        if not wrt:   # coalesce: Paddle has no backward of it
            continue
        trained = program.clone()
        for v in wrt:
            trained.global_block.var(v).stop_gradient = False
        tb = trained.global_block
        for var, shape in ((f"r{i}", list(feed[f"r:{name}"].shape)), (f"p{i}", list(feed[f"r:{name}"].shape)),
                           (f"loss{i}", [])):
            tb.create_var(var, shape, gradc.VarType.FP32)
        tb.append_op("elementwise_mul", {"X": [out], "Y": [f"r{i}"]}, {"Out": [f"p{i}"]}, {"axis": -1})
        tb.append_op("reduce_mean", {"X": [f"p{i}"]}, {"Out": [f"loss{i}"]}, {"reduce_all": True, "dim": []})
        grads = gradc.gradients(trained, f"loss{i}", wrt)
        values = gradc.Executor().run(trained, {**inputs, f"r{i}": feed[f"r:{name}"]}, grads)
        for v, value in zip(wrt, values):
            np.testing.assert_allclose(value, expected[f"grad:{name}:{v}"], rtol=1e-5, atol=1e-7, err_msg=name)
            checked += 1
    assert checked == 5


def test_subtract_transpose_and_coalesce_are_the_dense_ones():
    rng = np.random.default_rng(4)
    x, y = random_coo(rng, 7, (2, 3, 4), 2), random_coo(rng, 6, (2, 3, 4), 2)
    np.testing.assert_allclose(one_op("sparse_subtract", {"x": x, "y": y}).to_dense(), x.to_dense() - y.to_dense())
    np.testing.assert_allclose(one_op("sparse_multiply", {"x": x, "y": y}).to_dense(), x.to_dense() * y.to_dense())
    moved = one_op("sparse_transpose", {"x": x}, {"perm": [2, 0, 1, 3]})
    np.testing.assert_allclose(moved.to_dense(), x.to_dense().transpose(2, 0, 1, 3))
    twice = gradc.executor.sparse_value.SparseCoo(np.concatenate([x.indices, x.indices[:, :3]], 1),
                                                  np.concatenate([x.values, x.values[:3]]), x.shape)
    merged = one_op("sparse_coalesce", {"x": twice})
    assert merged.nnz == 7 and (np.diff(merged.linear_sites()) > 0).all()
    np.testing.assert_allclose(merged.to_dense(), twice.to_dense())


def test_their_grads_and_subtract_and_transpose_go_to_pir_and_back():
    """The rows no Paddle program uses: subtract_coo_coo_sp, transpose_coo_sp and the grads of multiply, divide and
    transpose written as PIR read back to the same gradients."""
    rng = np.random.default_rng(6)
    program = gradc.Program()
    block = program.global_block
    feed = {"val": rng.standard_normal((24, 2)) + 3.0, "idx": np.stack(np.unravel_index(np.arange(24), (2, 3, 4))),
            "r": rng.standard_normal((4, 2, 3, 2))}
    for name, value in feed.items():
        block.create_var(name, list(value.shape), gradc.ir.to_var_type(value.dtype))
    block.var("val").stop_gradient = False
    steps = [("sparse_multiply", {"x": ["x"], "y": ["x"]}, "a", {}),
             ("sparse_divide", {"x": ["a"], "y": ["x"]}, "b", {}),
             ("sparse_subtract", {"x": ["b"], "y": ["a"]}, "c", {}),
             ("sparse_transpose", {"x": ["c"]}, "d", {"perm": [2, 0, 1, 3]})]
    for name in ("x", "a", "b", "c", "d"):
        block.create_var(name, [4, 2, 3, 2] if name == "d" else [2, 3, 4, 2], gradc.VarType.FP64,
                         type=gradc.VarType.SPARSE_COO)
    block.append_op("sparse_sparse_coo_tensor", {"values": ["val"], "indices": ["idx"]}, {"out": ["x"]},
                    {"shape": [2, 3, 4, 2]})
    for op, inputs, out, attrs in steps:
        block.append_op(op, inputs, {"out": [out]}, attrs)
    for name, shape in (("dense", [4, 2, 3, 2]), ("p", [4, 2, 3, 2]), ("loss", [])):
        block.create_var(name, shape, gradc.VarType.FP64)
    block.append_op("sparse_to_dense", {"x": ["d"]}, {"out": ["dense"]})
    block.append_op("elementwise_mul", {"X": ["dense"], "Y": ["r"]}, {"Out": ["p"]}, {"axis": -1})
    block.append_op("reduce_mean", {"X": ["p"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
    (grad,) = gradc.gradients(program, "loss", ["val"])
    data = serialize_pir(program, fetch=["loss", grad])
    for op in ("subtract_coo_coo_sp", "transpose_coo_sp", "multiply_coo_coo_grad_sp", "divide_coo_coo_grad_sp",
               "transpose_coo_grad_sp"):
        assert f'"1.{op}"'.encode() in data, op
    (got,) = gradc.Executor().run(program, feed, [grad])
    (again,) = gradc.Executor().run(parse_pir(data), feed, [grad])
    np.testing.assert_allclose(again, got, rtol=1e-12)
    # d = transpose(x*x/x - x*x) on every site: d(loss)/dval = (1 - 2 val) r at the site, over r's size
    weights = feed["r"].transpose(1, 2, 0, 3).reshape(24, 2) / feed["r"].size
    np.testing.assert_allclose(got, (1 - 2 * feed["val"]) * weights, rtol=1e-12)

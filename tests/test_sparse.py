"""paddle.sparse (gradc.ops.sparse, gradc.executor.sparse_value): Paddle's legacy programs of paddle.sparse.nn's
layers load and save unchanged, run to Paddle's outputs and running statistics, and their backward, which Paddle's
own append_backward does not write, gives the gradients of Paddle's dygraph run of the same layers
(tests/sparse_fixtures.py, docs/sparse.md). Where Paddle is wrong (an unsorted input to a submanifold conv's backward
or to an add, a dilated submanifold conv) gradc gives what central differences and a dense reference give."""

import numpy as np
import pytest

import gradc
from gradc.executor.sparse_value import SparseCoo
from gradc.gradcheck import compare_program
from gradc.io.pdiparams import read_params
from gradc.ir import VarType
from gradc.pir import load_pir, parse_pir, serialize_pir
from sparse_fixtures import CASES, DATA, TRAINED, load, pir_training, training_weights

RIGHT = [case for case in CASES if case != "subm_unsorted"]   # where Paddle's dygraph gradients are right


def run_fixture(fixture: dict):
    """(loss, the dense output, {var: gradient}, scope) of gradc's backward of the fixture."""
    program, expected = fixture["program"], fixture["expected"]
    grads = gradc.gradients(program, fixture["loss"], fixture["wrt"])
    out = next(name.removeprefix("out:") for name in expected if name.startswith("out:"))
    scope = gradc.Scope()
    for name, value in fixture["params"].items():
        scope[name] = value
    values = gradc.Executor().run(program, fixture["feed"], [fixture["loss"], out, *grads], scope)
    return values[0], values[1], dict(zip(fixture["wrt"], values[2:])), scope


def test_the_programs_declare_sparse_vars_and_save_unchanged(tmp_path):
    for case in CASES:
        raw = (DATA / case / "forward.pb").read_bytes()
        program = gradc.load(str(DATA / case / "forward.pb"))
        coo = program.global_block.var("sparse_sparse_coo_tensor_0.tmp_0")
        shape = [2, 5, 5, 2] if case == "planar" else [2, 5, 5, 5, 2]   # paddle.sparse.nn's 2-D layers' input
        assert (coo.type, coo.dtype, coo.shape) == (VarType.SPARSE_COO, VarType.FP32, shape)
        gradc.save(program, tmp_path / "p.pb")
        assert (tmp_path / "p.pb").read_bytes() == raw, case
        gradc.save(program, tmp_path / "p.pbtxt")
        again = gradc.load(str(tmp_path / "p.pbtxt")).global_block.var(coo.name)
        assert (again.type, again.dtype, again.shape) == (coo.type, coo.dtype, coo.shape)


@pytest.mark.parametrize("case", RIGHT)
def test_forward_and_gradients_match_paddle(case):
    fixture = load(case)
    expected = fixture["expected"]
    loss, out, grads, scope = run_fixture(fixture)
    np.testing.assert_allclose(loss, expected["loss"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out, next(v for k, v in expected.items() if k.startswith("out:")), rtol=1e-5,
                               atol=1e-6)
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, expected[f"grad:{name}"], rtol=1e-5, atol=1e-6, err_msg=name)
    for name in (k for k in expected if k.startswith("after:")):   # batch norms' running statistics
        np.testing.assert_allclose(scope[name.removeprefix("after:")], expected[name], rtol=1e-5, atol=1e-7)


def test_paddles_subm_backward_is_wrong_at_the_kernel_centre_for_unsorted_sites():
    """gradc's forward is Paddle's; its gradients differ from Paddle's exactly at the kernel's centre offset, where
    float64 central differences (tests/gradcheck_cases/sparse.py checks every element) side with gradc."""
    fixture = load("subm_unsorted")
    expected = fixture["expected"]
    loss, _, grads, _ = run_fixture(fixture)
    np.testing.assert_allclose(loss, expected["loss"], rtol=1e-5)
    weight = next(name for name in grads if name.endswith(".w_0"))
    wrong = np.abs(grads[weight] - expected[f"grad:{weight}"]).sum(axis=(3, 4)) > 1e-4
    assert np.argwhere(wrong).tolist() == [[1, 1, 1]]
    assert np.abs(grads["val"] - expected["grad:val"]).max() > 1e-4
    float64 = load("subm_unsorted", float64=True)
    _, (check,) = compare_program(**{k: float64[k] for k in ("program", "feed", "params", "loss")}, wrt=[weight],
                                  rtol=1e-4, atol=1e-8)
    assert check.mismatch is None


def one_op(op_type: str, inputs: dict, attrs: dict | None = None):
    """A program whose sparse inputs (SparseCoo values) are made by sparse_sparse_coo_tensor ops; runs ``op_type``
    and returns its `out` (and the program's feed)."""
    program, feed = gradc.Program(), {}
    block = program.global_block
    slots = {}
    for slot, value in inputs.items():
        name = f"{slot}_in"
        if isinstance(value, SparseCoo):
            for part, array in (("values", value.values), ("indices", value.indices)):
                block.create_var(f"{name}_{part}", list(array.shape), gradc.ir.to_var_type(array.dtype))
                feed[f"{name}_{part}"] = array
            block.create_var(name, list(value.shape), VarType.FP64, type=VarType.SPARSE_COO)
            block.append_op("sparse_sparse_coo_tensor", {"values": [f"{name}_values"], "indices": [f"{name}_indices"]},
                            {"out": [name]}, {"shape": list(value.shape)})
        else:
            block.create_var(name, list(value.shape), gradc.ir.to_var_type(value.dtype))
            feed[name] = value
        slots[slot] = [name]
    block.create_var("result", None, VarType.FP64, type=VarType.SPARSE_COO)
    block.append_op(op_type, slots, {"out": ["result"]}, attrs or {})
    return gradc.Executor().run(program, feed, ["result"])[0]


def random_coo(rng, sites: int, shape, channels: int) -> SparseCoo:
    flat = rng.choice(int(np.prod(shape)), sites, replace=False)   # in no order
    indices = np.stack(np.unravel_index(flat, shape)).astype(np.int64)
    return SparseCoo(indices, rng.standard_normal((sites, channels)), (*shape, channels))


def test_add_of_unsorted_sites_is_the_sum_where_paddles_loses_entries():
    rng = np.random.default_rng(5)
    x, y = random_coo(rng, 7, (2, 3, 3, 3), 2), random_coo(rng, 9, (2, 3, 3, 3), 2)
    out = one_op("sparse_add", {"x": x, "y": y})
    assert isinstance(out, SparseCoo)
    np.testing.assert_allclose(out.to_dense(), x.to_dense() + y.to_dense())
    assert (np.diff(out.linear_sites()) > 0).all()   # every site once, sorted


def dense_conv(x: np.ndarray, weight: np.ndarray, padding, dilation) -> np.ndarray:
    """[N, D, H, W, C] x [kd, kh, kw, C, O] -> stride-1 convolution, by shifted windows."""
    pad = np.pad(x, [(0, 0), *[(p, p) for p in padding], (0, 0)])
    dims = [s + 2 * p - dilation * (k - 1) for s, p, k in zip(x.shape[1:4], padding, weight.shape[:3])]
    out = np.zeros((x.shape[0], *dims, weight.shape[4]))
    for a, b, c in np.ndindex(*weight.shape[:3]):
        window = pad[:, a * dilation:a * dilation + dims[0], b * dilation:b * dilation + dims[1],
                     c * dilation:c * dilation + dims[2]]
        out += window @ weight[a, b, c]
    return out


def test_a_dilated_subm_conv_keeps_the_sites_and_is_the_centred_dense_conv_there():
    """Paddle's SubmConv3D with dilation 2 shrinks the output and drops sites (docs/sparse.md); gradc's keeps every
    input site, its value the dense conv's with the dilated kernel centred there."""
    rng = np.random.default_rng(8)
    x, weight = random_coo(rng, 12, (2, 5, 5, 5), 2), rng.standard_normal((3, 3, 3, 2, 3))
    out = one_op("sparse_conv3d", {"x": x, "kernel": weight},
                 {"subm": True, "dilations": [2, 2, 2], "paddings": [0, 0, 0], "strides": [1, 1, 1]})
    assert out.shape == (2, 5, 5, 5, 3)
    assert sorted(out.linear_sites()) == sorted(x.linear_sites())
    reference = dense_conv(x.to_dense(), weight, [2, 2, 2], 2)
    np.testing.assert_allclose(out.values, reference[tuple(out.indices)], atol=1e-12)


def test_gradc_trains_the_voxel_backbone_paddle_cannot_differentiate_statically():
    """The SECOND-like backbone's training program (backward and Adam): ten steps on one batch lower the loss."""
    fixture = load("second")
    program = fixture["program"]
    startup = gradc.minimize(program, fixture["loss"], "adam", lr=0.05)
    scope = gradc.Scope()
    for name, value in fixture["params"].items():
        scope[name] = value
    executor = gradc.Executor()
    executor.run(startup, {}, [], scope)
    losses = [float(executor.run(program, fixture["feed"], [fixture["loss"]], scope)[0]) for _ in range(10)]
    assert losses[0] == pytest.approx(float(fixture["expected"]["loss"]), rel=1e-5)
    assert losses[-1] < losses[0] - 0.05, losses


def test_paddles_pir_inference_program_runs_and_round_trips():
    """paddle.jit.save's PIR program of the backbone (eval mode) runs to the dygraph layer's output (Paddle's own
    Predictor gives it transposed to NHWC, docs/sparse.md), and gradc's PIR export of it reads back to the same."""
    folder = DATA / "pir_jit"
    program = load_pir(str(folder / "model.json"))
    assert program.global_block.var("sparse_conv3d_0.tmp_0").type == VarType.SPARSE_COO
    params, feed, expected = read_params(folder / "model.pdiparams", program), dict(np.load(folder / "feed.npz")), \
        dict(np.load(folder / "expected.npz"))
    out = program.global_block.ops[-1].input("X")[0]

    def run(prog):
        scope = gradc.Scope()
        for name, value in params.items():
            scope[name] = value
        return gradc.Executor().run(prog, feed, [out], scope)[0]

    np.testing.assert_allclose(run(program), expected["dygraph"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run(program).transpose(0, 2, 3, 1), expected["out"], rtol=1e-5, atol=1e-6)
    data = serialize_pir(program, fetch=[out])
    assert b'"1.t_sparse_coo_tensor"' in data and b'"1.conv3d_sp"' in data and b'"1.batch_norm_sp_"' in data
    np.testing.assert_array_equal(run(parse_pir(data)), run(program))


@pytest.mark.parametrize("case, ops, wrt", [
    ("pir_jit", ("conv3d_grad_sp", "batch_norm_grad_sp", "relu_coo_grad_sp", "to_dense_grad_sp"), 12),
    ("pir_unary", ("reshape_coo_grad_sp", "sum_coo_grad_sp", "softmax_coo_grad_sp", "add_coo_dense_grad_sp",
                   "values_grad_sp", "add_coo_coo_sp"), 1)])
def test_pir_training_programs_round_trip_and_paddle_runs_them_to_gradcs_gradients(case, ops, wrt):
    """gradc compiles Paddle's PIR inference programs to training programs (the backbone: val and its 11
    parameters; pir_unary's reshape, sum, Softmax, add of a bias and values(): val) and writes them as PIR with
    Paddle's sparse grad ops, which Paddle's own PIR backward cannot write, and the gradients of one sparse var summed
    by add_coo_coo_sp. Read back, they give the same gradients; Paddle's Executor, running those files
    (tools/paddle_sparse_pir_training.py, train.npz), computed these gradients too, and for pir_unary they are the
    sum of Paddle's dygraph gradients of each output's loss."""
    paddle = dict(np.load(DATA / case / "train.npz"))
    net = pir_training(case, training_weights(case))
    assert len(net["wrt"]) == wrt

    def run(program):
        scope = gradc.Scope()
        for name, value in net["params"].items():
            scope[name] = value
        return gradc.Executor().run(program, net["feed"], net["fetch"], scope)

    data = serialize_pir(net["program"], fetch=net["fetch"])
    for op in (*ops, "sparse_coo_tensor_grad_sp"):
        assert f'"1.{op}"'.encode() in data, op
    got, again = run(net["program"]), run(parse_pir(data))
    for name, value, back in zip(["loss", *net["wrt"]], got, again):   # sum read back as adds: another order
        np.testing.assert_allclose(back, value, rtol=1e-6, atol=1e-9, err_msg=name)
    np.testing.assert_allclose(got[0], paddle["loss"], rtol=1e-5, atol=1e-9)
    for name, value in zip(net["wrt"], got[1:]):
        np.testing.assert_allclose(value, paddle[f"grad:{name}"], rtol=1e-5, atol=1e-7, err_msg=name)
    if case == "pir_unary":
        expected = np.load(DATA / case / "expected.npz")
        dygraph = sum(expected[f"grad:{name}"] for name in TRAINED)
        np.testing.assert_allclose(got[1], dygraph, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("case, op", [("subm_relu", "add_coo_dense_sp"), ("new_sites", "add_coo_coo_sp")])
def test_a_legacy_sparse_program_exports_to_pir(case, op):
    """A legacy program's sparse_add goes to PIR by its y: a dense bias or a sparse tensor."""
    fixture = load(case)
    out = next(name.removeprefix("out:") for name in fixture["expected"] if name.startswith("out:"))
    data = serialize_pir(fixture["program"], fetch=[fixture["loss"], out])
    assert f'"1.{op}"'.encode() in data
    again = load(case)
    again["program"] = parse_pir(data)
    np.testing.assert_allclose(run_fixture(again)[0], fixture["expected"]["loss"], rtol=1e-5)


def test_paddles_pir_elementwise_functions_run_and_differentiate_to_paddles():
    """The functions and layers Paddle builds on a COO tensor's values in PIR mode only (sin, sqrt, pow, ReLU6,
    LeakyReLU, neg and deg2rad as scale, cast, isnan, ...), and add (of a sparse tensor, of a bias), reshape, sum,
    Softmax, values() and indices(): their outputs in Paddle's PIR program are the Predictor's (NaN where its are:
    sqrt and pow of negative values), and gradc's gradient of each mean(out * r) in the values is Paddle's dygraph
    one."""
    folder = DATA / "pir_unary"
    feed, expected = dict(np.load(folder / "feed.npz")), dict(np.load(folder / "expected.npz"))
    names = [name.removeprefix("out:") for name in expected if name.startswith("out:")]
    program = load_pir(str(folder / "model.json"))
    outs = [op.input("X")[0] for op in program.global_block.ops if op.type == "fetch"]
    for name, got in zip(names, gradc.Executor().run(program, {"idx": feed["idx"], "val": feed["val"]}, outs)):
        np.testing.assert_allclose(got, expected[f"out:{name}"], rtol=1e-5, atol=1e-7, err_msg=name)
    program.global_block.var("val").stop_gradient = False
    block = program.global_block
    losses = []
    differentiated = [(name, out) for name, out in zip(names, outs) if f"grad:{name}" in expected]   # not isnan
    for i, (name, out) in enumerate(differentiated):
        weight = f"r:{name}"
        dtype = gradc.ir.to_var_type(feed[weight].dtype)
        for var, shape in ((weight, list(feed[weight].shape)), (f"product{i}", list(feed[weight].shape)),
                           (f"loss{i}", [])):
            block.create_var(var, shape, dtype)
        block.append_op("elementwise_mul", {"X": [out], "Y": [weight]}, {"Out": [f"product{i}"]}, {"axis": -1})
        block.append_op("reduce_mean", {"X": [f"product{i}"]}, {"Out": [f"loss{i}"]}, {"reduce_all": True, "dim": []})
        losses.append(f"loss{i}")
    for (name, _), loss in zip(differentiated, losses):
        trained = program.clone()
        (grad,) = gradc.gradients(trained, loss, ["val"])
        (got,) = gradc.Executor().run(trained, feed, [grad])
        np.testing.assert_allclose(got, expected[f"grad:{name}"], rtol=1e-5, atol=1e-7, err_msg=name)


def test_slice_sum_and_row_softmax_are_the_dense_ones():
    """Where Paddle is wrong or has no static program to compare with: sum over several axes (Paddle's reduces the
    first only), slice of a tensor with channels (Paddle's loses them), softmax over the entries of each row of an
    all-sparse tensor (checked here against the dense softmax with the missing entries at -inf)."""
    rng = np.random.default_rng(11)
    x = random_coo(rng, 14, (2, 4, 5), 3)
    summed = one_op("sparse_sum", {"x": x}, {"axis": [0, 2], "keepdim": False})
    np.testing.assert_allclose(summed.to_dense(), x.to_dense().sum(axis=(0, 2)))
    sliced = one_op("sparse_slice", {"x": x}, {"axes": [1, -2], "starts": [1, -3], "ends": [3, 99]})
    np.testing.assert_allclose(sliced.to_dense(), x.to_dense()[:, 1:3, 2:])
    grid = random_coo(rng, 11, (4, 5), 1)
    rows = SparseCoo(grid.indices, grid.values[:, 0], (4, 5))
    soft = one_op("sparse_softmax", {"x": rows}).to_dense()
    masked = np.where(np.isin(np.arange(20).reshape(4, 5), rows.linear_sites()), rows.to_dense(), -np.inf)
    reference = np.exp(masked - masked.max(axis=1, keepdims=True))
    reference /= np.where(np.isfinite(masked).any(axis=1, keepdims=True), reference.sum(axis=1, keepdims=True), 1)
    np.testing.assert_allclose(soft, np.nan_to_num(reference))


def test_slice_and_add_grads_go_to_pir_and_back():
    """pd_op.slice_coo_grad_sp and add_coo_coo_grad_sp (no Paddle program runs them: docs/sparse.md) read back to
    the gradients gradc's own program gives: two windows of x added (on different sites) and densified."""
    rng = np.random.default_rng(3)
    x = random_coo(rng, 12, (2, 6, 3), 2)
    program = gradc.Program()
    block = program.global_block
    feed = {"values": x.values, "indices": x.indices, "r": rng.standard_normal((2, 3, 3, 2))}
    for name, value in feed.items():
        block.create_var(name, list(value.shape), gradc.ir.to_var_type(value.dtype))
    block.var("values").stop_gradient = False
    for name, shape in (("x", [2, 6, 3, 2]), ("low", [2, 3, 3, 2]), ("high", [2, 3, 3, 2]), ("both", [2, 3, 3, 2])):
        block.create_var(name, shape, VarType.FP64, type=VarType.SPARSE_COO)
    for name, shape in (("dense", [2, 3, 3, 2]), ("weighted", [2, 3, 3, 2]), ("loss", [])):
        block.create_var(name, shape, VarType.FP64)
    block.append_op("sparse_sparse_coo_tensor", {"values": ["values"], "indices": ["indices"]}, {"out": ["x"]},
                    {"shape": [2, 6, 3, 2]})
    for name, start in (("low", 0), ("high", 3)):
        block.append_op("sparse_slice", {"x": ["x"]}, {"out": [name]}, {"axes": [1], "starts": [start],
                                                                       "ends": [start + 3]})
    block.append_op("sparse_add", {"x": ["low"], "y": ["high"]}, {"out": ["both"]})
    block.append_op("sparse_to_dense", {"x": ["both"]}, {"out": ["dense"]})
    block.append_op("elementwise_mul", {"X": ["dense"], "Y": ["r"]}, {"Out": ["weighted"]}, {"axis": -1})
    block.append_op("reduce_mean", {"X": ["weighted"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
    (grad,) = gradc.gradients(program, "loss", ["values"])
    data = serialize_pir(program, fetch=["loss", grad])
    assert b'"1.slice_coo_grad_sp"' in data and b'"1.add_coo_coo_grad_sp"' in data
    (got,) = gradc.Executor().run(program, feed, [grad])
    (again,) = gradc.Executor().run(parse_pir(data), feed, [grad])
    np.testing.assert_allclose(again, got, rtol=1e-12)
    dense_r = np.concatenate([feed["r"], feed["r"]], axis=1) / feed["r"].size   # each site lies in one window
    np.testing.assert_allclose(got, dense_r[tuple(x.indices)], rtol=1e-12)

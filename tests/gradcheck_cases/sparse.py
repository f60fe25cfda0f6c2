"""Cases for paddle.sparse's ops (gradc.ops.sparse, sparse_unary, sparse_shape): Paddle's own fixture programs
(tests/sparse_fixtures.py) in float64, differentiated by gradc, against central differences in the values fed and
every parameter. Each op's case is a program that has it; subm_unsorted is the one where Paddle's own gradients are
wrong (docs/sparse.md). Ops no fixture holds in a needed form (slice, a softmax over all-sparse rows, the elementwise
ops) get a small program of their own: mean(to_dense(op(coo(val))) * r), the values kept in the op's domain.

The grad ops' cases (second derivatives) differentiate loss2 = the mean of each first gradient times a fixed random
tensor, through the program's backward."""

import numpy as np

import gradc
from sparse_fixtures import load

from . import Case, rng

r = rng(53)
F64, I64 = gradc.VarType.FP64, gradc.VarType.INT64


def _fixture(case: str, **attrs):
    """Paddle's fixture program ``case``; ``attrs`` set on every op that has them (batch norm's is_test)."""
    def build():
        fixture = load(case, float64=True)
        for op in fixture["program"].global_block.ops:
            for name, value in attrs.items():
                if name in op.attrs:
                    op.set_attr(name, value)
        return {key: fixture[key] for key in ("program", "feed", "params", "loss", "wrt")}
    return build


def _one_op(op: str, values, attrs: dict | None = None, out_shape=None, indices=None, shape=None, tensors=None):
    """mean(to_dense(op(coo(values at indices of shape))) * r): by default 5 sites of a [2, 3, 4] grid, and the
    values' dense dims; ``out_shape`` the op's (its input's by default); ``tensors``: int inputs fed to the op's
    slots (a slot -> an array, or a list of them)."""
    def build():
        sites = np.array([[0, 1, 1, 0, 1], [2, 0, 1, 1, 2], [3, 0, 1, 3, 2]]) if indices is None else indices
        dims = [2, 3, 4, *values.shape[1:]] if shape is None else shape
        out = dims if out_shape is None else out_shape
        program = gradc.Program()
        block = program.global_block
        for name, var_dims, dtype in (("val", values.shape, F64), ("idx", sites.shape, I64), ("dense", out, F64),
                                      ("r", out, F64), ("product", out, F64), ("loss", [], F64)):
            block.create_var(name, list(var_dims), dtype)
        block.create_var("x", dims, F64, type=gradc.VarType.SPARSE_COO)
        block.create_var("y", out, F64, type=gradc.VarType.SPARSE_COO)
        block.append_op("sparse_sparse_coo_tensor", {"values": ["val"], "indices": ["idx"]}, {"out": ["x"]},
                        {"shape": dims})
        ints, fed = {}, {}
        for slot, value in (tensors or {}).items():
            ints[slot] = [f"{slot}{i}" for i in range(len(value))] if isinstance(value, list) else [slot]
            for name, array in zip(ints[slot], value if isinstance(value, list) else [value]):
                block.create_var(name, list(array.shape), gradc.ir.to_var_type(array.dtype))
                fed[name] = array
        block.append_op(op, {"x": ["x"], **ints}, {"out": ["y"]}, attrs or {})
        block.append_op("sparse_to_dense", {"x": ["y"]}, {"out": ["dense"]})
        block.append_op("elementwise_mul", {"X": ["dense"], "Y": ["r"]}, {"Out": ["product"]}, {"axis": -1})
        block.append_op("reduce_mean", {"X": ["product"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
        return {"program": program, "feed": {"val": values, "idx": sites, "r": r.standard_normal(out), **fed},
                "params": {}, "loss": "loss", "wrt": ["val"]}
    return build


def _second_order(first, prefix: str = "w2"):
    """loss2 = sum over the first gradients g of mean(g * w_g), w_g fed, of the program ``first()`` builds (its vars
    named ``prefix``_...: apply it twice, with another prefix, for third derivatives)."""
    def build():
        case = first()
        program, feed = case["program"], dict(case["feed"])
        block = program.global_block
        terms = []
        for name, grad in zip(case["wrt"], gradc.gradients(program, case["loss"], case["wrt"])):
            shape = list(np.shape(case["params"].get(name, feed.get(name))))
            weight, product, term = (f"{prefix}_{name}{part}" for part in ("", "_product", "_mean"))
            for var, var_shape in ((weight, shape), (product, shape), (term, [])):
                block.create_var(var, var_shape, F64)
            feed[weight] = r.standard_normal(shape)
            block.append_op("elementwise_mul", {"X": [grad], "Y": [weight]}, {"Out": [product]}, {"axis": -1})
            block.append_op("reduce_mean", {"X": [product]}, {"Out": [term]}, {"reduce_all": True, "dim": []})
            terms.append(term)
        block.create_var(f"{prefix}_loss", [], F64)
        block.append_op("sum", {"X": terms}, {"Out": [f"{prefix}_loss"]})
        return {**case, "program": program, "feed": feed, "loss": f"{prefix}_loss"}
    return build


def _case(op: str, build) -> Case:
    return Case(op, {}, program=build, rtol=1e-4, atol=1e-8)


UNIT = r.uniform(-0.8, 0.8, (5, 2))
POSITIVE = r.uniform(0.3, 2.0, (5, 2))
AWAY = np.where(np.abs(UNIT) < 0.2, 0.5, UNIT) * 3   # away from relu6's and abs's kinks
# an all-sparse [4, 6] tensor: rows 0 and 2 hold two entries, row 3 one, in no order
ROWS = {"indices": np.array([[2, 0, 3, 0, 2], [5, 1, 0, 4, 2]]), "shape": [4, 6]}
SLICE = {"axes": [1, -2], "starts": [1, 1], "ends": [3, 10]}
RESHAPE = {"shape": [4, 0, -1, 2]}
SUM = {"axis": [0, 2], "keepdim": False}
SHAPED = [("sparse_slice", SLICE, [2, 2, 3, 2]), ("sparse_reshape", RESHAPE, [4, 3, 2, 2]),
          ("sparse_sum", SUM, [3, 2])]
# the same given as tensors (the attributes another, wrong, window, shape or axis)
TENSORS = [("sparse_slice", {"axes": [1, -2], "starts": [0, 0], "ends": [1, 1]}, [2, 2, 3, 2],
            {"StartsTensor": np.array([1, 1]), "EndsTensorList": [np.array([3], np.int32), np.array([10])]}),
           ("sparse_reshape", {"shape": [2, 3, 4, 2]}, [4, 3, 2, 2],
            {"ShapeTensorList": [np.array([4]), np.array([0]), np.array([-1], np.int32), np.array([2])]}),
           ("sparse_sum", {"axis": [1], "keepdim": False}, [3, 2], {"AxisTensor": np.array([0, 2])})]

CASES = [_case(op, _fixture(case)) for op, case in [
    ("sparse_sparse_coo_tensor", "subm_unsorted"), ("sparse_relu", "subm_relu"), ("sparse_to_dense", "dilated"),
    ("sparse_conv3d", "values"), ("sparse_batch_norm", "strided_bn"), ("sparse_add", "new_sites"),
    ("sparse_values", "values")]]
CASES += [_case("sparse_conv3d", _fixture("planar"))]   # SubmConv2D and a strided Conv2D: 2-D attributes
CASES += [_case(op, _second_order(_fixture(case))) for op, case in [
    ("sparse_conv3d_grad", "planar"),
    ("sparse_sparse_coo_tensor_grad", "values"), ("sparse_relu_grad", "subm_relu"),
    ("sparse_to_dense_grad", "residual"), ("sparse_conv3d_grad", "dilated"), ("sparse_add_grad", "new_sites"),
    ("sparse_values_grad", "values")]]
CASES += [_case(f"sparse_{op}", _one_op(f"sparse_{op}", values)) for op, values in [
    ("abs", AWAY), ("acos", UNIT), ("acosh", POSITIVE + 1.0), ("asin", UNIT), ("asinh", AWAY), ("atan", AWAY),
    ("atanh", UNIT), ("expm1", UNIT), ("log1p", POSITIVE), ("sin", AWAY), ("sinh", UNIT), ("sqrt", POSITIVE),
    ("square", AWAY), ("tan", UNIT), ("tanh", AWAY), ("relu6", AWAY * 2.5)]]
CASES += [_case("sparse_leaky_relu", _one_op("sparse_leaky_relu", AWAY, {"alpha": 0.1})),
          _case("sparse_pow", _one_op("sparse_pow", POSITIVE, {"factor": 2.5})),
          _case("sparse_scale", _one_op("sparse_scale", AWAY, {"scale": -2.0, "bias": 0.5,
                                                               "bias_after_scale": False}))]
CASES += [_case("sparse_cast", _one_op("sparse_cast", AWAY, {"index_dtype": int(gradc.VarType.INT32),
                                                               "value_dtype": int(F64)}))]
CASES += [_case(op, _one_op(op, AWAY, attrs, out_shape)) for op, attrs, out_shape in SHAPED]
CASES += [_case(f"{op}_grad", _second_order(_one_op(op, AWAY, attrs, out_shape))) for op, attrs, out_shape in SHAPED]
CASES += [_case(op, _one_op(op, AWAY, attrs, out_shape, tensors=tensors)) for op, attrs, out_shape, tensors in TENSORS]
CASES += [_case(f"{op}_grad", _second_order(_one_op(op, AWAY, attrs, out_shape, tensors=tensors)))
          for op, attrs, out_shape, tensors in TENSORS]
CASES += [_case("sparse_softmax", _one_op("sparse_softmax", UNIT[:, 0], **ROWS)),
          _case("sparse_softmax", _one_op("sparse_softmax", UNIT))]   # rows of entries; the values' last axis
CASES += [_case("sparse_batch_norm_grad", _second_order(_fixture("strided_bn"))),
          _case("sparse_batch_norm_grad", _second_order(_fixture("strided_bn", is_test=True))),   # running stats
          _case("sparse_softmax_grad", _second_order(_one_op("sparse_softmax", UNIT))),
          _case("sparse_softmax_grad", _second_order(_one_op("sparse_softmax", UNIT[:, 0], **ROWS)))]


def _maxpool():
    """mean(to_dense(maxpool(coo(val)))^2 * r) over 12 sites of a [1, 4, 4, 4] grid, 2 channels, windows 2 x 2 x 2
    with stride 1 (an entry is the maximum of several windows); values apart, so no window ties. The square makes
    dout depend on val, so the second and third derivatives pass through maxpool_grad's dout."""
    def build():
        program = gradc.Program()
        block = program.global_block
        sites = np.stack(np.unravel_index(r.choice(64, 12, replace=False), (1, 4, 4, 4)))
        feed = {"val": r.permutation(24).reshape(12, 2) * 0.1, "idx": sites, "r": r.standard_normal((1, 3, 3, 3, 2))}
        for name, value in feed.items():
            block.create_var(name, list(value.shape), I64 if name == "idx" else F64)
        block.create_var("x", [1, 4, 4, 4, 2], F64, type=gradc.VarType.SPARSE_COO)
        for name in ("y", "y2"):
            block.create_var(name, [1, 3, 3, 3, 2], F64, type=gradc.VarType.SPARSE_COO)
        for name in ("rulebook", "counter"):
            block.create_var(name, None, gradc.VarType.INT32)
        for name, dims in (("dense", [1, 3, 3, 3, 2]), ("product", [1, 3, 3, 3, 2]), ("loss", [])):
            block.create_var(name, dims, F64)
        block.append_op("sparse_sparse_coo_tensor", {"values": ["val"], "indices": ["idx"]}, {"out": ["x"]},
                        {"shape": [1, 4, 4, 4, 2]})
        block.append_op("sparse_maxpool", {"x": ["x"]}, {"out": ["y"], "rulebook": ["rulebook"],
                                                          "counter": ["counter"]},
                        {"kernel_sizes": [2, 2, 2], "strides": [1, 1, 1], "paddings": [0, 0, 0],
                         "dilations": [1, 1, 1]})
        block.append_op("sparse_square", {"x": ["y"]}, {"out": ["y2"]})
        block.append_op("sparse_to_dense", {"x": ["y2"]}, {"out": ["dense"]})
        block.append_op("elementwise_mul", {"X": ["dense"], "Y": ["r"]}, {"Out": ["product"]}, {"axis": -1})
        block.append_op("reduce_mean", {"X": ["product"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
        return {"program": program, "feed": feed, "params": {}, "loss": "loss", "wrt": ["val"]}
    return build


CASES += [_case("sparse_maxpool", _maxpool()), _case("sparse_maxpool_grad", _second_order(_maxpool())),
          _case("sparse_maxpool_grad_grad", _second_order(_second_order(_maxpool()), "w3"))]

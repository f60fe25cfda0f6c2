"""Cases for paddle.sparse's ops (gradc.ops.sparse): Paddle's own fixture programs (tests/sparse_fixtures.py) in
float64, differentiated by gradc, against central differences in the values fed and every parameter. Each op's case
is a program that has it; subm_unsorted is the one where Paddle's own gradients are wrong (docs/sparse.md).

The grad ops' cases (second derivatives) differentiate loss2 = the mean of each first gradient times a fixed random
tensor, through the fixture's backward; a sparse batch norm's grad op refuses (strided_bn). The elementwise ops on
values (gradc.ops.sparse_unary) each have a small program of their own, its values kept in the op's domain."""

import numpy as np

import gradc
from sparse_fixtures import load

from . import Case, rng

r = rng(53)


def _program(case: str):
    def build():
        fixture = load(case, float64=True)
        return {key: fixture[key] for key in ("program", "feed", "params", "loss", "wrt")}
    return build


def _second_order(case: str):
    """loss2 = sum over the first gradients g of mean(g * w_g), w_g fed."""
    def build():
        fixture = load(case, float64=True)
        program, feed = fixture["program"], dict(fixture["feed"])
        block = program.global_block
        grads = gradc.gradients(program, fixture["loss"], fixture["wrt"])
        terms = []
        for name, grad in zip(fixture["wrt"], grads):
            shape = list(np.shape(fixture["params"].get(name, feed.get(name))))
            weight, product, term = f"w2_{name}", f"w2_{name}_product", f"w2_{name}_mean"
            block.create_var(weight, shape, gradc.VarType.FP64)
            block.create_var(product, shape, gradc.VarType.FP64)
            block.create_var(term, [], gradc.VarType.FP64)
            feed[weight] = r.standard_normal(shape)
            block.append_op("elementwise_mul", {"X": [grad], "Y": [weight]}, {"Out": [product]}, {"axis": -1})
            block.append_op("reduce_mean", {"X": [product]}, {"Out": [term]}, {"reduce_all": True, "dim": []})
            terms.append(term)
        block.create_var("loss2", [], gradc.VarType.FP64)
        block.append_op("sum", {"X": terms}, {"Out": ["loss2"]})
        return {"program": program, "feed": feed, "params": fixture["params"], "loss": "loss2",
                "wrt": fixture["wrt"]}
    return build


CASES = [Case(op, {}, program=_program(case), rtol=1e-4, atol=1e-8) for op, case in [
    ("sparse_sparse_coo_tensor", "subm_unsorted"), ("sparse_relu", "subm_relu"), ("sparse_to_dense", "dilated"),
    ("sparse_conv3d", "values"), ("sparse_batch_norm", "strided_bn"), ("sparse_add", "new_sites"),
    ("sparse_values", "values")]]
CASES += [Case(op, {}, program=_second_order(case), rtol=1e-4, atol=1e-8) for op, case in [
    ("sparse_sparse_coo_tensor_grad", "values"), ("sparse_relu_grad", "subm_relu"),
    ("sparse_to_dense_grad", "residual"), ("sparse_conv3d_grad", "dilated"), ("sparse_add_grad", "new_sites"),
    ("sparse_values_grad", "values")]]
REFUSED = [Case("sparse_batch_norm_grad", {}, program=_second_order("strided_bn"))]


def _on_values(op: str, values, attrs: dict | None = None):
    """mean(to_dense(op(coo(values at 5 sites of a [2, 3, 4] grid))) * r), checked in the values."""
    def build():
        program = gradc.Program()
        block = program.global_block
        indices = np.array([[0, 1, 1, 0, 1], [2, 0, 1, 1, 2], [3, 0, 1, 3, 2]])
        shape = [2, 3, 4, values.shape[1]]
        float64, int64 = gradc.VarType.FP64, gradc.VarType.INT64
        for name, dims, dtype in (("val", values.shape, float64), ("idx", indices.shape, int64),
                                  ("dense", shape, float64), ("r", shape, float64), ("product", shape, float64),
                                  ("loss", [], float64)):
            block.create_var(name, list(dims), dtype)
        for name in ("x", "y"):
            block.create_var(name, shape, gradc.VarType.FP64, type=gradc.VarType.SPARSE_COO)
        block.append_op("sparse_sparse_coo_tensor", {"values": ["val"], "indices": ["idx"]}, {"out": ["x"]},
                        {"shape": shape})
        block.append_op(op, {"x": ["x"]}, {"out": ["y"]}, attrs or {})
        block.append_op("sparse_to_dense", {"x": ["y"]}, {"out": ["dense"]})
        block.append_op("elementwise_mul", {"X": ["dense"], "Y": ["r"]}, {"Out": ["product"]}, {"axis": -1})
        block.append_op("reduce_mean", {"X": ["product"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
        return {"program": program, "feed": {"val": values, "idx": indices, "r": r.standard_normal(shape)},
                "loss": "loss", "wrt": ["val"]}
    return Case(op, {}, attrs or {}, program=build)


UNIT = r.uniform(-0.8, 0.8, (5, 2))
POSITIVE = r.uniform(0.3, 2.0, (5, 2))
AWAY = np.where(np.abs(UNIT) < 0.2, 0.5, UNIT) * 3   # away from relu6's and abs's kinks
CASES += [_on_values(f"sparse_{op}", values) for op, values in [
    ("abs", AWAY), ("acos", UNIT), ("acosh", POSITIVE + 1.0), ("asin", UNIT), ("asinh", AWAY), ("atan", AWAY),
    ("atanh", UNIT), ("expm1", UNIT), ("log1p", POSITIVE), ("sin", AWAY), ("sinh", UNIT), ("sqrt", POSITIVE),
    ("square", AWAY), ("tan", UNIT), ("tanh", AWAY), ("relu6", AWAY * 2.5)]]
CASES += [_on_values("sparse_leaky_relu", AWAY, {"alpha": 0.1}), _on_values("sparse_pow", POSITIVE, {"factor": 2.5}),
          _on_values("sparse_scale", AWAY, {"scale": -2.0, "bias": 0.5, "bias_after_scale": False})]

"""Cases for paddle.sparse's ops (gradc.ops.sparse): Paddle's own fixture programs (tests/sparse_fixtures.py) in
float64, differentiated by gradc, against central differences in the values fed and every parameter. Each op's case
is a program that has it; subm_unsorted is the one where Paddle's own gradients are wrong (docs/sparse.md).

The grad ops' cases (second derivatives) differentiate loss2 = the mean of each first gradient times a fixed random
tensor, through the fixture's backward; a sparse batch norm's grad op refuses (strided_bn)."""

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

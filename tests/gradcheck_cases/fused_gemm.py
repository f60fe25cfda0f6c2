"""Cases for fused_gemm_epilogue (a linear layer with its activation in one op) and its grad op, whose second-order
case also differentiates through ReserveSpace (the pre-activation, which the grad op reads)."""

from . import Case, rng
from .second_order import second_order

r = rng(53)


def randn(*shape):
    return r.standard_normal(shape)


def gemm(x, y, n):
    return {"X": randn(*x), "Y": randn(*y), "Bias": randn(n)}


CASES = [
    Case("fused_gemm_epilogue", gemm((3, 4), (4, 2), 2)),
    Case("fused_gemm_epilogue", gemm((2, 3, 4), (4, 5), 5), {"activation": "gelu"}),
    Case("fused_gemm_epilogue", gemm((4, 3), (2, 4), 2), {"activation": "relu", "trans_x": True, "trans_y": True}),
    Case("fused_gemm_epilogue", gemm((2, 4, 3), (4, 2), 2), {"activation": "gelu", "trans_x": True}),
    second_order("fused_gemm_epilogue", gemm((3, 4), (4, 2), 2), grad_type="fused_gemm_epilogue_grad"),
    second_order("fused_gemm_epilogue", gemm((2, 3, 4), (2, 4), 2), {"activation": "gelu", "trans_y": True},
                 grad_type="fused_gemm_epilogue_grad"),
    second_order("fused_gemm_epilogue", gemm((3, 2), (3, 4), 4), {"activation": "relu", "trans_x": True},
                 grad_type="fused_gemm_epilogue_grad"),
]

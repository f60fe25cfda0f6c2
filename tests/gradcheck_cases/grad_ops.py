"""Cases for grad ops that have a grad maker of their own (second-order gradients). A grad op's inputs
are its forward values and output grads; the check differentiates the grad op itself."""

import numpy as np

from . import Case, rng

r = rng(11)


def away_from_zero(*shape):
    x = r.standard_normal(shape)
    return np.where(np.abs(x) < 0.1, 0.2 * np.sign(x) + 0.1, x)


CASES = [
    # relu_grad(Out, dOut) = dOut * (Out > 0): linear in dOut, flat in Out
    Case("relu_grad", {"Out": away_from_zero(3, 4), "Out@GRAD": r.standard_normal((3, 4))}),
    Case("relu_grad", {"Out": away_from_zero(2, 3, 2), "Out@GRAD": r.standard_normal((2, 3, 2))}),
    # relu_grad_grad(Out, grad_x@GRAD) = grad_x@GRAD * (Out > 0): the same mask again (third derivatives)
    Case("relu_grad_grad", {"Out": away_from_zero(3, 4), "grad_x@GRAD": r.standard_normal((3, 4))}),
    # Paddle's own second-derivative ops (gradc.ops.double_grad), as its backward of a gradient writes them
    Case("tanh_grad_grad", {"Out": np.tanh(r.standard_normal((3, 4))), "grad_out": r.standard_normal((3, 4)),
                            "grad_x@GRAD": r.standard_normal((3, 4))}),
    Case("sigmoid_grad_grad", {"Out": 1 / (1 + np.exp(-r.standard_normal((2, 3)))),
                               "grad_out": r.standard_normal((2, 3)), "grad_x@GRAD": r.standard_normal((2, 3))}),
    Case("matmul_v2_grad_grad", {"X": r.standard_normal((2, 3)), "Y": r.standard_normal((3, 4)),
                                 "grad_out": r.standard_normal((2, 4)), "grad_x@GRAD": r.standard_normal((2, 3)),
                                 "grad_y@GRAD": r.standard_normal((3, 4))}),
    Case("matmul_v2_grad_grad", {"X": r.standard_normal((2, 3, 2)), "Y": r.standard_normal((4, 3)),   # batched, Y^T
                                 "grad_out": r.standard_normal((2, 2, 4)), "grad_x@GRAD": r.standard_normal((2, 3, 2)),
                                 "grad_y@GRAD": r.standard_normal((4, 3))}, {"trans_x": True, "trans_y": True}),
    Case("matmul_v2_grad_grad", {"X": r.standard_normal((2, 3)), "Y": r.standard_normal((3, 4)),     # no ddY
                                 "grad_out": r.standard_normal((2, 4)), "grad_x@GRAD": r.standard_normal((2, 3))}),
    # matmul v1's, with alpha and transposes (batched X^T, Y^T), and without ddX
    Case("matmul_grad_grad", {"X": r.standard_normal((2, 3, 2)), "Y": r.standard_normal((4, 3)),
                              "DOut": r.standard_normal((2, 2, 4)), "DDX": r.standard_normal((2, 3, 2)),
                              "DDY": r.standard_normal((4, 3))},
         {"alpha": 0.5, "transpose_X": True, "transpose_Y": True}),
    Case("matmul_grad_grad", {"X": r.standard_normal((2, 3)), "Y": r.standard_normal((3, 4)),
                              "DOut": r.standard_normal((2, 4)), "DDY": r.standard_normal((3, 4))}, {"alpha": -1.5}),
    Case("elementwise_add_grad_grad", {"Y": r.standard_normal(4), "DOut": r.standard_normal((3, 4)),
                                       "DDX": r.standard_normal((3, 4)), "DDY": r.standard_normal(4)}),
    Case("elementwise_add_grad_grad", {"Y": r.standard_normal(3), "DOut": r.standard_normal((2, 3, 4)),  # by axis
                                       "DDY": r.standard_normal(3)}, {"axis": 1}),
    Case("elementwise_mul_grad_grad", {"X": r.standard_normal((3, 4)), "Y": r.standard_normal(4),
                                       "DOut": r.standard_normal((3, 4)), "DDX": r.standard_normal((3, 4)),
                                       "DDY": r.standard_normal(4)}),
    Case("elementwise_mul_grad_grad", {"X": r.standard_normal((2, 3, 4)), "Y": r.standard_normal(3),  # by axis, no ddX
                                       "DOut": r.standard_normal((2, 3, 4)), "DDY": r.standard_normal(3)}, {"axis": 1}),
    # Paddle's legacy second-derivative ops of unary math (gradc.ops.double_grad_unary): a PINN's Laplacian
    *(Case(type, {"X": x, "grad_out": r.standard_normal((3, 4)), "grad_x@GRAD": r.standard_normal((3, 4))})
      for type, x in (("sin_double_grad", r.standard_normal((3, 4))), ("cos_double_grad", r.standard_normal((3, 4))),
                      ("square_grad_grad", r.standard_normal((3, 4))),
                      ("log_grad_grad", r.uniform(0.5, 2.0, (3, 4))))),
    # and of activations with attributes: an SDF's Eikonal loss through softplus (beta 10), part past its threshold
    *(Case(type, {"X": x, "grad_out": r.standard_normal((3, 4)), "grad_x@GRAD": r.standard_normal((3, 4))}, attrs)
      for type, x, attrs in (("softplus_double_grad", r.uniform(-1, 1, (3, 4)), {"beta": 10.0, "threshold": 20.0}),
                             ("softplus_double_grad", away_from_zero(3, 4) + 1.0, {"beta": 2.0, "threshold": 2.0}),
                             ("elu_grad_grad", away_from_zero(3, 4), {"alpha": 0.7}),
                             ("celu_grad_grad", away_from_zero(3, 4), {"alpha": -0.5}),
                             ("pow_double_grad", r.uniform(0.5, 2.0, (3, 4)), {"factor": 2.5}))),
    # of sqrt and rsqrt, which read Out and the first grad's dX; of leaky_relu and abs, piecewise linear (X flat)
    *(Case(type, {"Out": r.uniform(0.5, 2.0, (3, 4)), "grad_x": r.standard_normal((3, 4)),
                  "grad_x@GRAD": r.standard_normal((3, 4))}) for type in ("sqrt_grad_grad", "rsqrt_grad_grad")),
    Case("leaky_relu_grad_grad", {"X": away_from_zero(3, 4), "grad_x@GRAD": r.standard_normal((3, 4))}, {"alpha": 0.1},
         wrt=["grad_x@GRAD"]),
    Case("abs_double_grad", {"X": away_from_zero(3, 4), "grad_x@GRAD": r.standard_normal((3, 4))}, wrt=["grad_x@GRAD"]),
    Case("clip_double_grad", {"X": r.uniform(-1, 1, (3, 4)), "grad_x@GRAD": r.standard_normal((3, 4))},
         {"min": -0.5, "max": 0.8}, wrt=["grad_x@GRAD"]),
    # of ops linear in X: the forward at ddX (pad3d's constant value padded in too, as Paddle's kernel)
    Case("pool2d_double_grad", {"grad_x@GRAD": r.standard_normal((1, 2, 4, 5))},
         {"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 1], "paddings": [0, 1], "exclusive": True}),
    Case("pad3d_double_grad", {"grad_x@GRAD": r.standard_normal((1, 2, 2, 3, 2))},
         {"paddings": [1, 0, 0, 1, 1, 1], "mode": "constant", "value": 0.5}),
    Case("pad3d_double_grad", {"grad_x@GRAD": r.standard_normal((1, 2, 2, 3, 3))},
         {"paddings": [1, 1, 0, 2, 1, 0], "mode": "reflect"}),
    Case("pow_double_grad", {"X": r.uniform(0.5, 2.0, (2, 3)), "FactorTensor": np.array([3.0]),
                             "grad_out": r.standard_normal((2, 3)), "grad_x@GRAD": r.standard_normal((2, 3))},
         wrt=["X", "grad_out", "grad_x@GRAD"]),
    # Paddle's legacy conv second-derivative ops (gradc.ops.nn_double): a WGAN-GP critic's gradient penalty
    *(Case(type, {"Input": r.standard_normal(x), "Filter": r.standard_normal(w), "grad_out": r.standard_normal(y),
                  "grad_x@GRAD" if "transpose" in type else "grad_input@GRAD": r.standard_normal(x),
                  "grad_filter@GRAD": r.standard_normal(w)}, attrs)
      for type, x, w, y, attrs in (
          ("conv2d_grad_grad", (2, 2, 5, 5), (3, 2, 3, 3), (2, 3, 3, 3), {"strides": [2, 2], "paddings": [1, 1]}),
          ("conv2d_grad_grad", (1, 3, 4, 4), (4, 2, 2, 2), (1, 2, 3, 4), {"groups": 2, "data_format": "NHWC"}),
          ("depthwise_conv2d_grad_grad", (1, 3, 4, 4), (6, 1, 3, 3), (1, 6, 4, 4), {"groups": 3, "paddings": [1, 1]}),
          ("conv3d_grad_grad", (1, 2, 3, 4, 3), (2, 2, 2, 2, 2), (1, 2, 3, 2, 2),
           {"strides": [1, 2, 1], "paddings": [1, 0, 0], "dilations": [2, 1, 1], "data_format": "NCDHW"}),
          ("conv2d_transpose_grad_grad", (1, 2, 3, 3), (2, 3, 3, 3), (1, 3, 5, 5), {"strides": [2, 2],
                                                                                   "paddings": [1, 1]}))),
    Case("conv2d_grad_grad", {"Input": r.standard_normal((1, 2, 4, 4)), "Filter": r.standard_normal((2, 2, 3, 3)),
                              "grad_out": r.standard_normal((1, 2, 2, 2)),     # no ddW: Input@GRAD is zero
                              "grad_input@GRAD": r.standard_normal((1, 2, 4, 4))}),
    # Paddle's third-derivative ops: the grads of tanh_grad_grad's and elementwise_mul_grad_grad's outputs
    Case("tanh_triple_grad", {"Out": np.tanh(r.standard_normal((3, 4))), "grad_out_forward": r.standard_normal((3, 4)),
                              "grad_x_grad_forward": r.standard_normal((3, 4)),
                              "grad_out_new@GRAD": r.standard_normal((3, 4)),
                              "grad_out_grad@GRAD": r.standard_normal((3, 4))}),
    Case("tanh_triple_grad", {"Out": np.tanh(r.standard_normal((2, 3))), "grad_out_forward": r.standard_normal((2, 3)),
                              "grad_x_grad_forward": r.standard_normal((2, 3)),
                              "grad_out_grad@GRAD": r.standard_normal((2, 3))}),   # no d_dOutNew
    Case("elementwise_mul_triple_grad", {"X": r.standard_normal((3, 4)), "Y": r.standard_normal(4),
                                         "DOut": r.standard_normal((3, 4)), "DDX": r.standard_normal((3, 4)),
                                         "DDY": r.standard_normal(4), "D_DX": r.standard_normal((3, 4)),
                                         "D_DY": r.standard_normal(4), "D_DDOut": r.standard_normal((3, 4))}),
    Case("elementwise_mul_triple_grad", {"X": r.standard_normal((2, 3, 4)), "Y": r.standard_normal(3),  # by axis
                                         "DOut": r.standard_normal((2, 3, 4)), "DDY": r.standard_normal(3),
                                         "D_DX": r.standard_normal((2, 3, 4)), "D_DDOut": r.standard_normal((2, 3, 4))},
         {"axis": 1}),
    # Paddle's legacy third-derivative ops of a product and a sum (gradc.ops.triple_grad): a PINN's training step
    Case("matmul_v2_triple_grad", {"X": r.standard_normal((2, 3)), "Y": r.standard_normal((3, 4)),
                                   "grad_out": r.standard_normal((2, 4)), "grad_grad_x": r.standard_normal((2, 3)),
                                   "grad_grad_y": r.standard_normal((3, 4)), "grad_x@GRAD": r.standard_normal((2, 3)),
                                   "grad_y@GRAD": r.standard_normal((3, 4)),
                                   "grad_grad_out@GRAD": r.standard_normal((2, 4))}),
    Case("matmul_v2_triple_grad", {"X": r.standard_normal((2, 3, 2)), "Y": r.standard_normal((4, 3)),   # batched, T
                                   "grad_out": r.standard_normal((2, 2, 4)),
                                   "grad_grad_x": r.standard_normal((2, 3, 2)),
                                   "grad_y@GRAD": r.standard_normal((4, 3)),
                                   "grad_grad_out@GRAD": r.standard_normal((2, 2, 4))},
         {"trans_x": True, "trans_y": True}),   # no ddY, no d_dx: their terms left out
    Case("elementwise_add_triple_grad", {"DDX": r.standard_normal((3, 4)), "DDY": r.standard_normal(4),
                                         "D_DDOut": r.standard_normal((3, 4))}),
    Case("elementwise_add_triple_grad", {"DDX": r.standard_normal((2, 3, 4)), "DDY": r.standard_normal(3),  # by axis
                                         "D_DDOut": r.standard_normal((2, 3, 4))}, {"axis": 1}),
    # Paddle's legacy second-derivative ops of a difference and a quotient (gradc.ops.double_grad_elementwise)
    Case("elementwise_sub_grad_grad", {"Y": r.standard_normal(4), "DOut": r.standard_normal((3, 4)),
                                       "DDX": r.standard_normal((3, 4)), "DDY": r.standard_normal(4)}),
    Case("elementwise_sub_grad_grad", {"Y": r.standard_normal(3), "DOut": r.standard_normal((2, 3, 4)),  # by axis
                                       "DDY": r.standard_normal(3)}, {"axis": 1}),
    Case("elementwise_div_grad_grad", {"Y": r.uniform(0.5, 2.0, 4), "Out": r.standard_normal((3, 4)),
                                       "DX": r.standard_normal((3, 4)), "DDX": r.standard_normal((3, 4)),
                                       "DDY": r.standard_normal(4)}),
    Case("elementwise_div_grad_grad", {"Y": r.uniform(0.5, 2.0, 3), "Out": r.standard_normal((2, 3, 4)),  # by axis
                                       "DX": r.standard_normal((2, 3, 4)), "DDX": r.standard_normal((2, 3, 4))},
         {"axis": 1}),   # no ddY: Out's grad is not written
    # reshape2_grad_grad: ddX in dOut's shape (its grad, the same op back into ddX's shape)
    Case("reshape2_grad_grad", {"DDX": r.standard_normal((2, 6)), "DOut": r.standard_normal((3, 4))}),
]

"""Cases for gradc.ops.complex_fft: complex/real/imag/angle/as_complex/as_real and abs of complex values, and the
three transforms over one and several axes, each normalization, both directions, odd and even lengths, fft_r2c
onesided or not and fft_c2r with last_dim_size. Complex inputs are checked along both the real and the imaginary
direction of each element (gradc.gradcheck.numeric_grad)."""


from . import Case, rng
from .lod_rnn import third_order, third_order_checked
from .second_order import second_order

r = rng(31)


def randn(*shape):
    return r.standard_normal(shape)


def crandn(*shape):
    return r.standard_normal(shape) + 1j * r.standard_normal(shape)


def fft(axes, normalization="backward", forward=True, **more):
    return {"axes": axes, "normalization": normalization, "forward": forward, **more}


CASES = [
    Case("complex", {"X": randn(3, 4), "Y": randn(3, 4)}),
    Case("complex", {"X": randn(2, 3, 4), "Y": randn(4)}),          # Y broadcast
    Case("complex", {"X": randn(2, 1), "Y": randn(3)}),             # both broadcast
    Case("real", {"X": crandn(3, 4)}),
    Case("imag", {"X": crandn(2, 5)}),
    Case("angle", {"X": crandn(3, 4)}),
    Case("abs", {"X": crandn(3, 4)}),
    Case("as_complex", {"X": randn(3, 4, 2)}),
    Case("as_real", {"X": crandn(2, 3)}),
    Case("conj", {"X": crandn(2, 3)}),
    Case("fft_c2c", {"X": crandn(2, 5)}, fft([1])),
    Case("fft_c2c", {"X": crandn(4, 3)}, fft([0], "forward", False)),
    Case("fft_c2c", {"X": crandn(3, 4, 2)}, fft([0, 2], "ortho")),
    Case("fft_c2c", {"X": crandn(2, 3, 4)}, fft([2, 0], "backward", False)),
    Case("fft_r2c", {"X": randn(2, 6)}, fft([1], onesided=True)),
    Case("fft_r2c", {"X": randn(2, 5)}, fft([1], "ortho", onesided=True)),
    Case("fft_r2c", {"X": randn(5, 3)}, fft([0], "forward", onesided=False)),
    Case("fft_r2c", {"X": randn(3, 4, 6)}, fft([0, 2], "backward", False, onesided=True)),
    Case("fft_r2c", {"X": randn(4, 3, 5)}, fft([2, 1], "ortho", onesided=True)),
    Case("fft_c2r", {"X": crandn(2, 4)}, fft([1], forward=False)),                       # 6 samples
    Case("fft_c2r", {"X": crandn(2, 4)}, fft([1], "ortho", False, last_dim_size=7)),      # odd length
    Case("fft_c2r", {"X": crandn(4, 3)}, fft([0], "forward", True)),                     # hfft
    Case("fft_c2r", {"X": crandn(3, 2, 4)}, fft([0, 2], "backward", False)),
    Case("fft_c2r", {"X": crandn(3, 4, 3)}, fft([2, 1], "ortho", True, last_dim_size=5)),
    # the other ops gradc.backward.path lets a complex gradient through
    Case("elementwise_add", {"X": crandn(2, 3), "Y": crandn(3)}),
    Case("elementwise_sub", {"X": crandn(2, 3), "Y": randn(2, 3)}),
    Case("elementwise_mul", {"X": crandn(2, 3), "Y": crandn(3)}),
    Case("elementwise_mul", {"X": crandn(2, 3), "Y": randn(2, 3)}),
    Case("elementwise_div", {"X": crandn(2, 3), "Y": crandn(2, 3) + 2}),
    # a real operand (broadcast or not) of a complex one: its grad is the real part of the complex one's formula
    Case("elementwise_add", {"X": randn(2, 3), "Y": crandn(3)}),
    Case("elementwise_sub", {"X": crandn(2, 3), "Y": randn(3)}),
    Case("elementwise_mul", {"X": randn(3), "Y": crandn(2, 3)}),
    Case("elementwise_div", {"X": randn(2, 3), "Y": crandn(3) + 2}),
    Case("elementwise_div", {"X": crandn(2, 3), "Y": randn(3) + 3}),
    Case("scale", {"X": crandn(2, 3)}, {"scale": -1.5, "bias": 0.5}),
    Case("sum", {"X": [crandn(2, 3), crandn(2, 3)]}),
    Case("mean", {"X": crandn(2, 3)}),
    Case("reduce_sum", {"X": crandn(2, 3)}, {"dim": [1]}),
    Case("reduce_mean", {"X": crandn(2, 3, 2)}, {"dim": [0, 2], "keep_dim": True}),
    Case("transpose2", {"X": crandn(2, 3)}, {"axis": [1, 0]}),
    Case("reshape2", {"X": crandn(2, 3)}, {"shape": [3, 2]}),
    Case("squeeze2", {"X": crandn(2, 1, 3)}, {"axes": [1]}),
    Case("unsqueeze2", {"X": crandn(2, 3)}, {"axes": [0]}),
    Case("concat", {"X": [crandn(2, 3), crandn(1, 3)]}, {"axis": 0}),
    Case("split", {"X": crandn(2, 4)}, {"num": 2, "axis": 1}, outputs={"Out": 2}),
    Case("slice", {"Input": crandn(3, 4)}, {"axes": [1], "starts": [1], "ends": [3]}),
    Case("assign", {"X": crandn(2, 3)}),
    Case("roll", {"X": crandn(3, 4)}, {"shifts": [1, -2], "axis": [0, 1]}),     # the neural operators' fftshift
    Case("pad", {"X": crandn(2, 3)}, {"paddings": [1, 0, 2, 1]}),
    Case("set_value", {"Input": crandn(3, 4), "ValueTensor": crandn(3, 2)},     # out_ft[:, :modes] = ...
         {"axes": [1], "starts": [0], "ends": [2], "steps": [1]}),
    # a quantum circuit's simulation (Paddle Quantum): gates cast to complex, kron'ed, applied by matmul; a density
    # matrix's expectation a trace
    Case("cast", {"X": randn(2, 3)}, {"in_dtype": 6, "out_dtype": 24}),
    Case("cast", {"X": crandn(2, 3)}, {"in_dtype": 24, "out_dtype": 6}),      # the real part
    Case("matmul_v2", {"X": crandn(2, 3, 4), "Y": crandn(4, 2)}),
    Case("matmul_v2", {"X": crandn(3, 4), "Y": randn(3, 2)}, {"trans_x": True}),
    Case("matmul_v2", {"X": randn(4, 3), "Y": crandn(2, 3, 5)}),
    Case("kron", {"X": crandn(2, 2), "Y": crandn(3, 2)}),
    Case("kron", {"X": randn(2, 3), "Y": crandn(2)}),
    Case("trace", {"Input": crandn(3, 4)}, {"offset": 1, "axis1": 0, "axis2": 1}),
    # holomorphic unary math: X@GRAD = dOut conj(f'(z)) (log and sqrt away from their cut, tanh from its poles)
    *(Case(op, {"X": x}) for op, x in (("exp", crandn(2, 3)), ("log", crandn(2, 3) + 3), ("sqrt", crandn(2, 3) + 3),
                                       ("square", crandn(2, 3)), ("sin", crandn(2, 3)), ("cos", crandn(2, 3)),
                                       ("tanh", 0.5 * crandn(2, 3)), ("sigmoid", crandn(2, 3)),
                                       ("silu", crandn(2, 3)))),
    Case("softsign", {"X": crandn(2, 3)}),   # not holomorphic: the gradient of Re(conj(W) out), unlike Paddle's

    second_order("complex", {"X": randn(2, 3), "Y": randn(3)}),
    second_order("real", {"X": crandn(2, 3)}),
    second_order("imag", {"X": crandn(2, 3)}),
    second_order("angle", {"X": crandn(2, 3)}),
    second_order("abs", {"X": crandn(2, 3)}),
    second_order("fft_c2c", {"X": crandn(2, 4)}, fft([1], "ortho")),
    second_order("fft_r2c", {"X": randn(2, 5)}, fft([1], onesided=True)),
    second_order("fft_c2r", {"X": crandn(3, 4)}, fft([0, 1], "forward", False)),
]
# second derivatives through complex values of the grad ops gradc.backward.path lets complex values through
TWICE = {"elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "mean", "reduce_sum",
         "reduce_mean", "transpose2", "reshape2", "squeeze2", "unsqueeze2", "concat", "slice", "roll", "pad",
         "set_value", "matmul_v2", "kron", "trace", "exp", "log", "sqrt", "square", "sin", "cos", "tanh", "sigmoid",
         "silu", "softsign"}
CASES += [second_order(case.op, case.inputs, case.attrs, counts=case.outputs) for case in CASES if case.op in TWICE]

# products of complex factors: their grads conjugate them (cumprod's as Paddle's kernel). Along dims of known size
# the grads are written with products, slices, pads and reshapes, so third derivatives follow; along dims of unknown
# size a complex X's grad is differentiated by <grad>_grad along one direction, and that by itself along one more
# (duals nested once per direction), at every order
PRODUCTS = [Case("cumprod", {"X": crandn(2, 4)}, {"dim": 1}),
            Case("cumprod", {"X": crandn(3, 2)}, {"dim": 0, "exclusive": True, "reverse": True}),
            Case("reduce_prod", {"X": crandn(2, 3, 2)}, {"dim": [0, 2], "keep_dim": False}),
            Case("reduce_prod", {"X": crandn(2, 3)}, {"dim": [1], "keep_dim": True})]
CASES += PRODUCTS + [third_order(second_order(case.op, case.inputs, case.attrs), f"{case.op}_grad")
                     for case in PRODUCTS]


def thrice(case: Case) -> Case:
    """A complex X's third derivative with X's dim 0 of unknown size, the second backward's direction checked too."""
    return third_order_checked(second_order(case.op, case.inputs, case.attrs, unknown={"X": [0]}),
                               f"{case.op}_grad_grad", None, ["X0"], run_time_shapes=True)


THRICE = [thrice(case) for case in PRODUCTS[1:3]]   # dim 0 unknown: the one cumprod runs along, one reduce_prod reduces
CASES += THRICE
# fourth derivatives: <grad>_grad along three directions (over at least 5 factors, so that those terms are not 0),
# the second backward's direction's grads checked too
CASES += [Case(case.op, {}, case.attrs, program=third_order(case, case.op, True, order=4).program, rtol=1e-4,
               atol=1e-6) for case in (thrice(Case("cumprod", {"X": crandn(5, 2)}, {"dim": 0, "reverse": True})),
                                       THRICE[1])]


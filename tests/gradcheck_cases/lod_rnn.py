"""Cases for gradc.ops.lod_rnn: the LoD LSTM (peepholes or not, reversed, C0 alone and with H0, other
activations) and GRU (origin_mode both ways, reversed, H0, no Bias, other activations) over sequences of different
lengths (an empty one too), gru_unit with each activation code, and the second derivatives of gru_unit_grad,
lstm_grad and gru_grad. Inputs are
small, away from relu's kink."""


import numpy as np

import gradc
from gradc import LoDTensor

from . import Case, rng
from .second_order import _weighted_sum, second_order

r = rng(83)
D = 3
LENGTHS = [2, 0, 3, 1]


def randn(*shape, scale=0.5):
    return scale * r.standard_normal(shape)


def lstm(peepholes=True, h0=False, c0=False, lengths=LENGTHS, d=D, **attrs) -> Case:
    inputs = {"Input": LoDTensor.from_lengths(randn(sum(lengths), 4 * d), [lengths]), "Weight": randn(d, 4 * d),
              "Bias": randn(1, (7 if peepholes else 4) * d)}
    if h0:
        inputs["H0"] = randn(len(lengths), d)
    if c0:
        inputs["C0"] = randn(len(lengths), d)
    return Case("lstm", inputs, {"use_peepholes": peepholes, **attrs})


def gru(h0=False, bias=True, lengths=LENGTHS, d=D, **attrs) -> Case:
    inputs = {"Input": LoDTensor.from_lengths(randn(sum(lengths), 3 * d), [lengths]), "Weight": randn(d, 3 * d)}
    if bias:
        inputs["Bias"] = randn(1, 3 * d)
    if h0:
        inputs["H0"] = randn(len(lengths), d)
    return Case("gru", inputs, attrs)


def gru_unit(bias=True, second=False, **attrs) -> Case:
    inputs = {"Input": randn(4, 3 * D), "HiddenPrev": randn(4, D), "Weight": randn(D, 3 * D)}
    if bias:
        inputs["Bias"] = randn(1, 3 * D)
    return second_order("gru_unit", inputs, attrs, rtol=1e-4, atol=1e-6) if second else Case("gru_unit", inputs, attrs)


CASES = [
    lstm(),
    lstm(peepholes=False),
    lstm(h0=True, c0=True),
    lstm(h0=True, c0=True, is_reverse=True),
    lstm(c0=True, lengths=[1, 3]),
    lstm(c0=True, peepholes=False, is_reverse=True),
    lstm(h0=True, c0=True, lengths=[4, 2, 4], gate_activation="sigmoid_v2", cell_activation="identity",
         candidate_activation="relu"),
    lstm(lengths=[3, 1], cell_activation="tanh_v2", candidate_activation="identity"),
    gru(),
    gru(origin_mode=True),
    gru(h0=True, is_reverse=True),
    gru(h0=True, origin_mode=True, is_reverse=True),
    gru(bias=False, h0=True, lengths=[1, 4, 2]),
    gru(activation="relu", gate_activation="sigmoid_v2", lengths=[3, 3]),
    gru(activation="identity", origin_mode=True),
    gru_unit(),
    gru_unit(origin_mode=True),
    gru_unit(bias=False, activation=0, gate_activation=2),
    gru_unit(activation=3, gate_activation=1, origin_mode=True),
    gru_unit(second=True),
    gru_unit(second=True, origin_mode=True),
    gru_unit(second=True, bias=False, activation=0, gate_activation=2),
    gru_unit(second=True, activation=3, origin_mode=True),
]

# second derivatives: lstm_grad_grad and gru_grad_grad, the kernels on duals (Input's LoD is known
# only at run time), checked against central differences of the first derivative
TWICE = [second_order(case.op, case.inputs, case.attrs, rtol=1e-4, atol=1e-6) for case in (
    lstm(h0=True, c0=True), lstm(peepholes=False, is_reverse=True), lstm(c0=True, gate_activation="sigmoid_v2",
                                                                         cell_activation="identity", lengths=[3, 2]),
    gru(h0=True), gru(origin_mode=True, is_reverse=True, bias=False, lengths=[1, 3, 2]),
    gru(activation="sigmoid", gate_activation="tanh", h0=True, lengths=[2, 2]))]
CASES += TWICE

def third_order(case: Case, grad_grad: str, run_time_shapes: bool = False, by_element: bool = False,
                order: int = 3) -> Case:
    """``case``'s program differentiated once more: a third derivative (``order``: the one it makes), through
    ``grad_grad``. The weights of the grads are drawn in their declared shapes, so grads of a dim of unknown size are
    left out, unless ``run_time_shapes``: then in the fed shapes of the vars they are the grads of (``by_element``:
    see Case)."""
    prefix, loss = ("u", "loss3") if order == 3 else (f"u{order}", f"loss{order}")
    def build() -> dict:
        built = case.program()
        block = built["program"].global_block
        grads = gradc.gradients(built["program"], built["loss"], built["wrt"])
        declared = {name: block.var(name).shape for name in grads}
        if run_time_shapes:
            for name in grads:
                block.var(name).shape = list(np.shape(built["feed"][name[:name.rindex("@GRAD")]]))
        known = [name for name in grads if -1 not in block.var(name).shape]
        _weighted_sum(block, known, built["feed"], prefix, False, loss)
        for name, shape in declared.items():
            block.var(name).shape = shape
        return {**built, "loss": loss}

    return Case(grad_grad, {}, case.attrs, program=build, by_element=by_element)


def third_order_checked(case: Case, grad_grad: str, wrt: list[str] | None, stepped: list[str],
                        run_time_shapes: bool = False) -> Case:
    """``case``'s third derivative (third_order) checked at the inputs ``wrt`` (None: third_order's) and at the
    second backward's directions (its w2 weights, of a complex grad its real and imaginary parts, made checked
    inputs) of the grads of ``stepped``, so the grad_grad op's step directions get their grads checked too; a few
    inputs keep the case cheap."""
    third = third_order(case, grad_grad, run_time_shapes)

    def build() -> dict:
        built = third.program()
        directions = [name for name in built["feed"] for var in stepped
                      if name in (f"w2_{var}@GRAD", f"w2_{var}@GRAD.real", f"w2_{var}@GRAD.imag")]
        for name in directions:
            built["program"].global_block.var(name).stop_gradient = False
        return {**built, "wrt": [*(built["wrt"] if wrt is None else wrt), *directions]}

    return Case(grad_grad, {}, case.attrs, program=build, rtol=1e-4, atol=1e-6)


# third derivatives: lstm_grad_grad and gru_grad_grad along two directions, the kernels on duals nested twice
THRICE = [third_order_checked(second_order(case.op, case.inputs, case.attrs), f"{case.op}_grad_grad",
                              ["Input0", "H00", *(["C00"] if case.op == "lstm" else []), "Weight0", "Bias0",
                               "w1_Hidden0.out"], ["H00", "Weight0"])
          for case in (lstm(h0=True, c0=True, lengths=[2, 1], d=1),
                       gru(h0=True, origin_mode=True, is_reverse=True, lengths=[1, 2], d=1))]
CASES += THRICE
# fourth derivatives: <op>_grad_grad along three directions, its directions' grads checked (the w2 and w3 weights)
CASES += [Case(f"{case.op}", {}, case.attrs, program=third_order(case, case.op, order=4).program, rtol=1e-4,
               atol=1e-6) for case in THRICE]

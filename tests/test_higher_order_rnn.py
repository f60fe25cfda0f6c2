"""Second and third derivatives through the fused rnn op (nn.LSTM / nn.GRU / nn.SimpleRNN): rnn_grad's maker
(gradc.ops.rnn_double) unrolls the recurrence into differentiable ops. Its unrolled forward must be the kernel's
forward, its backward the kernel's rnn_grad, and the Hessian-vector product of a small LSTM model must match
central differences of the model's gradient."""

from __future__ import annotations

import numpy as np
import pytest

import gradc
from float64_nets import assert_hessian_vector_product, scope_of, weighted_sum
from gradc import registry
from gradc.backward.vars import TmpVars
from gradc.gradcheck import check_program
from gradc.layers import ProgramBuilder
from gradc.makers import GradContext
from gradc.ops.composite import Formula
from gradc.ops.rnn_double import recomputed_grads
from gradc.ops.rnn_unrolled import Unrolled, dropped
from gradc.rnn_shape import RnnShape

STEPS, BATCH, INPUT, HIDDEN = 3, 2, 3, 2
RNG = np.random.default_rng(23)


def rnn_net(mode: str, layers: int, directions: int, lengths=None, steps: int = STEPS, **attrs):
    """x -> rnn -> loss = sum(W . Out) + sum(V . State): the rnn op, its inputs' values and the loss. The values
    are drawn from a generator of the net's own, so a test's numbers do not depend on which tests ran before."""
    rng = np.random.default_rng([23, layers, directions, steps, *map(ord, mode)])
    net = ProgramBuilder()
    shape = RnnShape(mode, layers, directions, INPUT, HIDDEN)
    x = net.data("x", [steps, BATCH, INPUT], "float64", stop_gradient=False)
    states = [net.data(f"h{k}", [layers * directions, BATCH, HIDDEN], "float64", stop_gradient=False)
              for k in range(shape.states)]
    weights = [net.parameter(f"w{k}", list(s), "float64") for k, s in enumerate(shape.weight_shapes())]
    feed = {x: rng.standard_normal((steps, BATCH, INPUT)),
            **{h: 0.5 * rng.standard_normal((layers * directions, BATCH, HIDDEN)) for h in states}}
    params = {w: rng.uniform(-0.8, 0.8, s) for w, s in zip(weights, shape.weight_shapes())}
    inputs = {"Input": x, "PreState": states, "WeightList": weights}
    if lengths is not None:
        inputs["SequenceLength"] = net.data("lengths", [BATCH], "int64")
        feed["lengths"] = np.array(lengths, np.int64)
    attrs = {"mode": mode, "num_layers": layers, "is_bidirec": directions == 2, "input_size": INPUT,
             "hidden_size": HIDDEN, **attrs}
    outputs = net.op("rnn", inputs, attrs, outputs=["Out", "State"])
    rnn = net.block.ops[-1]
    return net, rnn, weighted_sum(net, outputs, feed, "seed", rng), feed, params



def _context(block, op) -> tuple[Formula, GradContext]:
    g = GradContext(op, registry.get(op.type), lambda name: True, TmpVars(block),
                    shape=lambda name: block.var(name).shape, block=block)
    return Formula(g), g


CONFIGS = [("LSTM", 1, 1, None, {}), ("GRU", 1, 1, None, {}), ("RNN_TANH", 1, 1, None, {}),
           ("RNN_RELU", 1, 1, None, {}), ("LSTM", 2, 2, [3, 1], {}), ("GRU", 2, 2, [0, 2], {}),
           ("RNN_TANH", 3, 1, None, {"dropout_prob": 0.3, "seed": 4}),
           ("LSTM", 2, 2, [2, 3], {"dropout_prob": 0.4, "seed": 2})]


@pytest.mark.parametrize("mode,layers,directions,lengths,attrs", CONFIGS)
def test_the_unrolled_forward_and_backward_are_the_kernels(mode, layers, directions, lengths, attrs):
    """Out and State of the unrolled forward equal the rnn kernel's, and the backward rnn_grad's maker emits
    recomputes rnn_grad's outputs, to 1e-12 in float64."""
    net, rnn, loss, feed, params = rnn_net(mode, layers, directions, lengths, **attrs)
    gradc.append_backward(net.program, loss)
    block = net.block
    grad_op = next(op for op in block.ops if op.type == "rnn_grad")
    f, g = _context(block, rnn)
    mask = dropped(f, rnn.output("DropoutState")[0], attrs["dropout_prob"]) if attrs else None
    unrolled = Unrolled(f, RnnShape(mode, layers, directions, INPUT, HIDDEN), STEPS, BATCH)
    out, states = unrolled.forward(rnn.input("Input")[0], rnn.input("PreState"), rnn.input("WeightList"),
                                   (rnn.input("SequenceLength") or [None])[0], mask)
    f_grad, g_grad = _context(block, grad_op)
    recomputed = recomputed_grads(f_grad, g_grad)
    assert set(recomputed) == {name for slot in grad_op.outputs.values() for name in slot}
    block.ops.extend(f.ops + f_grad.ops)
    net.program.mark_changed()
    kernel = [rnn.output("Out")[0], *rnn.output("State"), *recomputed]
    composite = [out, *states, *recomputed.values()]
    values = gradc.Executor().run(net.program, feed, kernel + composite, scope_of(params))
    for name, want, got in zip(kernel, values[:len(kernel)], values[len(kernel):]):
        assert np.abs(want).max() > 0
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=name)


def lstm_model(steps: int = STEPS, hidden: int = HIDDEN):
    """A sequence regressor: a one-layer LSTM over x [T, B, I] from zero states, tanh of a dense layer on its
    Out, loss = mean(y^2 + y)."""
    net = ProgramBuilder(seed=7)
    shape = RnnShape("LSTM", 1, 1, INPUT, hidden)
    x = net.data("x", [steps, BATCH, INPUT], "float64", stop_gradient=True)
    zeros = net.data("zeros", [1, BATCH, hidden], "float64", stop_gradient=True)
    weights = [net.parameter(f"lstm.w_{k}", list(s), "float64") for k, s in enumerate(shape.weight_shapes())]
    out = net.op("rnn", {"Input": x, "PreState": [zeros, zeros], "WeightList": weights},
                 {"mode": "LSTM", "input_size": INPUT, "hidden_size": hidden})[0]
    dense = net.op("matmul_v2", {"X": out, "Y": net.parameter("fc.w_0", [hidden, 2], "float64")})[0]
    dense = net.op("elementwise_add", {"X": dense, "Y": net.parameter("fc.b_0", [2], "float64")})[0]
    y = net.op("tanh", {"X": dense})[0]
    loss = net.mean(net.op("elementwise_add", {"X": net.op("square", {"X": y})[0], "Y": y})[0])
    params = {name: RNG.standard_normal(var.shape) * 0.6 for name, var in net.block.vars.items() if var.is_parameter}
    return net, loss, params, {"x": RNG.standard_normal((steps, BATCH, INPUT)), "zeros": np.zeros((1, BATCH, hidden))}


def test_hessian_vector_product_of_a_small_lstm_model():
    assert_hessian_vector_product(*lstm_model(), RNG)


def test_third_derivatives_of_a_small_lstm_model():
    """u . d(v . grad(loss))/dW differentiated once more: the ops rnn_grad's maker emits have makers too."""
    net, loss, params, feed = lstm_model(steps=2)
    pairs = gradc.append_backward(net.program, loss)
    dot = weighted_sum(net, [grad for _, grad in pairs], feed, "v", RNG)
    third = weighted_sum(net, gradc.gradients(net.program, dot, list(params)), feed, "u", RNG)
    grads = check_program(net.program, feed, list(params), loss=third, params=params, rtol=1e-4, atol=1e-6)
    assert all(np.abs(g).max() > 1e-3 for g in grads.values())


def test_a_batch_size_known_at_run_time_only_is_fine():
    """Only T must be known: a penalty on the weights' grads of a bidirectional GRU over sequences of a batch
    declared -1, with SequenceLength."""
    net, rnn, loss, feed, params = rnn_net("GRU", 1, 2, [3, 1])
    for name in rnn.input("Input") + rnn.input("PreState"):
        net.block.var(name).shape[1] = -1
    pairs = gradc.append_backward(net.program, loss)
    penalty = weighted_sum(net, [grad for _, grad in pairs], feed, "v", RNG)
    grads = check_program(net.program, feed, ["x", *params], loss=penalty, params=params, rtol=1e-4, atol=1e-6)
    assert all(np.abs(g).max() > 1e-3 for g in grads.values())


def test_an_unknown_number_of_time_steps_takes_nested_duals_that_give_the_unrolled_numbers():
    """Over a time dim declared -1, rnn_grad's maker cannot unroll: it emits rnn_grad_grad along one direction, and
    each later backward that op along one more (duals nested once per direction); the gradient penalty's second,
    third and fourth derivatives are the unrolled makers' to rounding."""
    values = []
    for steps in (STEPS, -1):
        net, rnn, loss, feed, params = rnn_net("GRU", 2, 2, lengths=[3, 1])
        net.block.var("x").shape = [steps, BATCH, INPUT]
        gradc.append_backward(net.program, loss)
        penalty = net.mean(net.op("square", {"X": "x@GRAD"})[0])
        grads = gradc.gradients(net.program, penalty, ["w0", "w5", "x"])
        total = net.mean(net.op("square", {"X": grads[0]})[0])
        thirds = gradc.gradients(net.program, total, ["w0", "w1", "x"])
        fourths = gradc.gradients(net.program, net.mean(thirds[0]), ["w1", "x"])
        directions = [len(op.input("Input@GRAD@GRAD")) for op in net.block.ops if op.type == "rnn_grad_grad"]
        assert (max(directions) if directions else 0) == (3 if steps < 0 else 0)
        scope = gradc.Scope()
        for name, value in params.items():
            scope[name] = value
        values.append(gradc.Executor().run(net.program, feed, grads + thirds + fourths, scope))
    for unrolled, directional in zip(*values):
        assert np.abs(unrolled).max() > 1e-8   # the penalty's grads are small here, not zero
        np.testing.assert_allclose(directional, unrolled, rtol=1e-10, atol=1e-16)

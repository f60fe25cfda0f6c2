"""Second and third derivatives through the sequence losses (warpctc / nn.CTCLoss, warprnnt / RNN-T): their grad
ops' makers (gradc.ops.sequence_loss_double) write the loss again with differentiable ops. The unrolled loss and
its backward must be the kernels' loss and gradient (norm_by_times and fastemit_lambda included), and the
Hessian-vector product of a small CTC model must match central differences of the model's gradient."""

from __future__ import annotations

import numpy as np
import pytest

import gradc
from float64_nets import assert_hessian_vector_product, weighted_sum
from gradc import registry
from gradc.backward.vars import TmpVars
from gradc.gradcheck import check_program
from gradc.layers import ProgramBuilder
from gradc.makers import GradContext
from gradc.ops.composite import Formula
from gradc.ops.sequence_loss_double import ctc_recomputed, rnnt_recomputed

RNG = np.random.default_rng(29)


def ctc_net(label, logits_length, label_length, steps=4, classes=4, batch=None, **attrs):
    """logits -> warpctc -> sum(W . Loss): the program, the forward op's outputs, the feed."""
    net = ProgramBuilder()
    batch = batch or len(label)
    logits = net.data("logits", [steps, batch, classes], "float64", stop_gradient=False)
    names = {"Label": ("label", np.array(label, np.int32)), "LogitsLength": ("times", np.array(logits_length)),
             "LabelLength": ("sizes", np.array(label_length))}
    feed = {logits: RNG.standard_normal((steps, len(label), classes))}
    inputs = {"Logits": logits}
    for slot, (name, value) in names.items():
        inputs[slot] = net.data(name, [batch, *value.shape[1:]], str(value.dtype))
        feed[name] = value
    loss, stored = net.op("warpctc", inputs, attrs, outputs=["Loss", "WarpCTCGrad"])
    return net, loss, stored, feed


def rnnt_net(label, input_lengths, label_lengths, steps=3, classes=4, batch=None, **attrs):
    net = ProgramBuilder()
    rows, width = np.shape(label)
    x = net.data("x", [batch or rows, steps, width + 1, classes], "float64", stop_gradient=False)
    raw = RNG.standard_normal((rows, steps, width + 1, classes))
    feed = {x: raw - np.log(np.exp(raw).sum(-1, keepdims=True)), "label": np.array(label, np.int32),
            "times": np.array(input_lengths, np.int32), "sizes": np.array(label_lengths, np.int32)}
    inputs = {"input": x, **{slot: net.data(name, [batch or rows, *feed[name].shape[1:]], "int32")
                             for slot, name in (("label", "label"), ("input_lengths", "times"),
                                                ("label_lengths", "sizes"))}}
    loss, stored = net.op("warprnnt", inputs, attrs, outputs=["loss", "warprnntgrad"])
    return net, loss, stored, feed


def _context(block, op) -> tuple[Formula, GradContext]:
    g = GradContext(op, registry.get(op.type), lambda name: True, TmpVars(block),
                    shape=lambda name: block.var(name).shape, block=block)
    return Formula(g), g


CTC_CONFIGS = [([[1, 2], [3, 3]], [4, 4], [2, 2], {}),
               ([[1, 1], [2, 0]], [4, 3], [2, 1], {"norm_by_times": True}),
               ([[0, 3], [1, 1]], [3, 4], [2, 2], {"blank": 2}),
               ([[2, 2], [5, 7]], [2, 1], [2, 0], {}),   # no alignment fits the first; padded labels out of range
               ([[3, 2], [1, 3]], [4, 2], [1, 2], {"blank": 2, "norm_by_times": True})]
RNNT_CONFIGS = [([[1, 3], [2, 0]], [3, 2], [2, 1], {}),
                ([[0, 3], [3, 9]], [3, 3], [2, 1], {"blank": 1}),
                ([[1, 1], [3, 2]], [2, 3], [2, 0], {"fastemit_lambda": 0.25}),
                ([[0, 1]], [3], [2], {"blank": 3, "fastemit_lambda": 0.5})]


def _check_against_kernels(net, loss, stored, feed, grad_type, recomputed, fetched):
    dloss = weighted_sum(net, [loss], feed, "seed", RNG)
    gradc.append_backward(net.program, dloss)
    block = net.block
    grad_op = next(op for op in block.ops if op.type == grad_type)
    f, g = _context(block, grad_op)
    composite_loss, composite_grad = recomputed(f, g)
    block.ops.extend(f.ops)
    net.program.mark_changed()
    names = [loss, grad_op.output(fetched)[0], composite_loss, composite_grad]
    kernel_loss, kernel_grad, got_loss, got_grad = gradc.Executor().run(net.program, feed, names, gradc.Scope())
    assert np.abs(kernel_grad).max() > 1e-3
    np.testing.assert_allclose(got_loss.reshape(kernel_loss.shape), kernel_loss, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got_grad, kernel_grad, rtol=0, atol=1e-12)


@pytest.mark.parametrize("label,times,sizes,attrs", CTC_CONFIGS)
def test_the_unrolled_ctc_loss_and_gradient_are_the_kernels(label, times, sizes, attrs):
    """Loss and the Logits@GRAD of warpctc_grad (the stored gradient scaled by a random Loss@GRAD) to 1e-12."""
    net, loss, stored, feed = ctc_net(label, times, sizes, **attrs)
    _check_against_kernels(net, loss, stored, feed, "warpctc_grad", ctc_recomputed, "Logits@GRAD")


@pytest.mark.parametrize("label,times,sizes,attrs", RNNT_CONFIGS)
def test_the_unrolled_rnnt_loss_and_gradient_are_the_kernels(label, times, sizes, attrs):
    net, loss, stored, feed = rnnt_net(label, times, sizes, **attrs)
    _check_against_kernels(net, loss, stored, feed, "warprnnt_grad", rnnt_recomputed, "input@GRAD")


def ctc_model():
    """A frame classifier: fc (tanh) over features x [T, B, 3], logits = a second fc, CTC loss, mean over the batch."""
    net = ProgramBuilder(seed=5)
    steps, batch = 4, 2
    x = net.data("x", [steps, batch, 3], "float64", stop_gradient=True)
    hidden = net.op("tanh", {"X": net.op("elementwise_add", {
        "X": net.op("matmul_v2", {"X": x, "Y": net.parameter("fc_0.w_0", [3, 3], "float64")})[0],
        "Y": net.parameter("fc_0.b_0", [3], "float64")})[0]})[0]
    logits = net.op("matmul_v2", {"X": hidden, "Y": net.parameter("fc_1.w_0", [3, 4], "float64")})[0]
    feed = {"x": RNG.standard_normal((steps, batch, 3)), "label": np.array([[1, 1], [2, 3]], np.int32),
            "times": np.array([4, 3]), "sizes": np.array([2, 2])}
    inputs = {"Logits": logits, "Label": net.data("label", [batch, 2], "int32"),
              "LogitsLength": net.data("times", [batch], "int64"), "LabelLength": net.data("sizes", [batch], "int64")}
    loss = net.mean(net.op("warpctc", inputs, {"blank": 0}, outputs=["Loss"])[0])
    params = {name: RNG.standard_normal(var.shape) for name, var in net.block.vars.items() if var.is_parameter}
    return net, loss, params, feed



def test_hessian_vector_product_of_a_small_ctc_model():
    assert_hessian_vector_product(*ctc_model(), RNG)


def test_third_derivatives_of_a_small_ctc_model():
    """u . d(v . grad(loss))/dW differentiated once more: the ops warpctc_grad's maker emits have makers too."""
    net, loss, params, feed = ctc_model()
    pairs = gradc.append_backward(net.program, loss)
    dot = weighted_sum(net, [grad for _, grad in pairs], feed, "v", RNG)
    third = weighted_sum(net, gradc.gradients(net.program, dot, list(params)), feed, "u", RNG)
    grads = check_program(net.program, feed, list(params), loss=third, params=params, rtol=1e-4, atol=1e-6)
    assert all(np.abs(g).max() > 1e-3 for g in grads.values())


@pytest.mark.parametrize("build,x,axis", [
    (lambda: ctc_net([[1, 1], [3, 1]], [4, 3], [2, 1]), "logits", 0),
    (lambda: ctc_net([[1, 1], [3, 1]], [4, 3], [2, 1], norm_by_times=True, blank=2), "logits", 0),
    (lambda: rnnt_net([[1, 3], [2, 0]], [3, 2], [2, 1]), "x", 2),
    (lambda: rnnt_net([[1, 3], [3, 0]], [3, 2], [2, 1], blank=2, fastemit_lambda=0.5), "x", 1)],
    ids=["ctc", "ctc norm_by_times", "rnnt", "rnnt fastemit"])
def test_a_sequence_loss_over_sizes_known_at_run_time_only_is_the_unrolled_losss_second_derivative(build, x, axis):
    """With a dim the unrolling needs declared -1, the grad op's maker takes a complex step through the kernel
    (<type>_grad_grad), not the unrolled loss: the gradient of a penalty on the input's grad is the unrolled one's."""
    def penalty_grads(known: bool, feed=None):
        net, loss, stored, drawn = build()
        gradc.append_backward(net.program, net.mean(loss))
        if not known:
            net.block.var(x).shape[axis] = -1
        penalty = net.mean(net.op("square", {"X": f"{x}@GRAD"})[0])
        (grad,) = gradc.gradients(net.program, penalty, [x])
        assert any(op.type.endswith("_grad_grad") for op in net.block.ops) != known
        return gradc.Executor().run(net.program, feed or drawn, [grad])[0], drawn

    unrolled, feed = penalty_grads(True)
    stepped, _ = penalty_grads(False, feed)
    assert np.abs(unrolled).max() > 1e-5
    np.testing.assert_allclose(stepped, unrolled, rtol=1e-9, atol=1e-12)


def test_a_grad_op_without_its_forward_op_is_an_error_naming_the_stored_gradient():
    """The labels are the forward op's only: a warprnnt_grad whose warprnntgrad nobody wrote cannot be redone."""
    net, loss, stored, feed = rnnt_net([[1, 2]], [3], [2])
    gradc.append_backward(net.program, loss)
    net.block.ops = [op for op in net.block.ops if op.type != "warprnnt"]
    net.program.mark_changed()
    penalty = net.mean(net.op("square", {"X": "x@GRAD"})[0])
    with pytest.raises(gradc.GradError, match=f"labels of the warprnnt op that wrote warprnntgrad '{stored}'"):
        gradc.gradients(net.program, penalty, ["x"])


@pytest.mark.parametrize("build", [lambda: ctc_net([[1, 1], [2, 0]], [4, 3], [2, 1], batch=-1, norm_by_times=True),
                                   lambda: rnnt_net([[1, 3], [2, 0]], [3, 2], [2, 1], batch=-1, fastemit_lambda=0.3)],
                         ids=["ctc", "rnnt"])
def test_a_batch_size_known_at_run_time_only_is_fine(build):
    """Only T (and U + 1, the classes) must be known: a penalty on the input's grad with the batch declared -1."""
    net, loss, stored, feed = build()
    x = net.block.ops[0].input_names()[0]
    assert -1 in net.block.var(x).shape
    gradc.append_backward(net.program, net.mean(loss))
    penalty = net.mean(net.op("square", {"X": f"{x}@GRAD"})[0])
    grads = check_program(net.program, feed, [x], loss=penalty, rtol=1e-5, atol=1e-7)
    assert np.abs(grads[x]).max() > 1e-4

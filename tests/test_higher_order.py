"""Derivatives of derivatives: a backward pass over a program that already has one (Hessian-vector products,
gradient penalties, third derivatives), checked against float64 central differences."""

from __future__ import annotations

import numpy as np
import pytest

import gradc
from float64_nets import (
    assert_hessian_vector_product,
    check_third_derivatives,
    cumprod_index_put_net,
    float64_fc,
    weighted_sum,
)
from gradc.gradcheck import check_program
from gradc.layers import ProgramBuilder
from programs import Net

RNG = np.random.default_rng(7)


def tanh_mlp(sizes=(3, 4, 2), batch=5):
    net = ProgramBuilder(seed=3)
    x = net.data("x", [batch, sizes[0]], "float64", stop_gradient=True)
    hidden = x
    for size in sizes[1:]:
        hidden = float64_fc(net, hidden, size, act="tanh")
    loss = net.mean(net.op("elementwise_add", {"X": net.op("square", {"X": hidden})[0], "Y": hidden})[0])
    params = {name: RNG.standard_normal(var.shape) * 0.7 for name, var in net.block.vars.items() if var.is_parameter}
    return net, loss, params, {"x": RNG.standard_normal((batch, sizes[0]))}



def test_a_second_backward_names_its_grads_apart_from_the_first():
    net, loss, params, feed = tanh_mlp()
    pairs = gradc.append_backward(net.program, loss)
    first = {name for name in net.block.vars if "@GRAD" in name}
    assert any("@RENAME@" in name for name in first)
    penalty = weighted_sum(net, [grad for _, grad in pairs], {}, "v", RNG)
    start = len(net.block.ops)
    grads = gradc.gradients(net.program, penalty, [param for param, _ in pairs])
    assert grads == [param + "@GRAD@2" for param, _ in pairs]
    written = {name for op in net.block.ops[start:] for name in op.output_names()}
    assert not written & first, "the second backward overwrote vars of the first"
    assert any("@RENAME@" in name for name in written), "its shared grads are summed under names of their own"


def test_hessian_vector_product_of_a_tanh_mlp():
    assert_hessian_vector_product(*tanh_mlp(), RNG)


def test_third_derivatives_of_a_tanh_mlp():
    """The backward of the backward of the backward: d/dW of u . d(v . grad(loss))/dW."""
    net, loss, params, feed = tanh_mlp(sizes=(2, 3, 2), batch=3)
    pairs = gradc.append_backward(net.program, loss)
    constants = {}
    dot = weighted_sum(net, [grad for _, grad in pairs], constants, "v", RNG)
    second = gradc.gradients(net.program, dot, list(params))
    third = weighted_sum(net, second, constants, "u", RNG)
    check_program(net.program, {**feed, **constants}, list(params), loss=third, params=params)


def small_cnn(pool: str):
    net = ProgramBuilder(seed=5)
    image = net.data("image", [2, 1, 5, 5], "float64", stop_gradient=False)
    label = net.data("label", [2, 1], "int64")
    filters = net.parameter("conv.w", [2, 1, 3, 3], "float64")
    hidden = net.op("conv2d", {"Input": image, "Filter": filters}, {"paddings": [1, 1]})[0]
    hidden = net.op("tanh", {"X": hidden})[0]
    hidden = net.op("pool2d", {"X": hidden}, {"pooling_type": pool, "ksize": [2, 2], "strides": [2, 2]})[0]
    flat = net.op("flatten_contiguous_range", {"X": hidden}, {"start_axis": 1, "stop_axis": 3})[0]
    loss = net.cross_entropy_loss(float64_fc(net, flat, 3), label)
    params = {name: RNG.standard_normal(var.shape) * 0.5 for name, var in net.block.vars.items() if var.is_parameter}
    feed = {"image": RNG.standard_normal((2, 1, 5, 5)), "label": np.array([[2], [0]])}
    return net, loss, params, feed


@pytest.mark.parametrize("pool", ["avg", "max"])
def test_gradient_of_a_gradient_norm_penalty_of_a_small_cnn(pool):
    """WGAN-GP's penalty: the squared norm of d(loss)/d(image), whose gradient reaches every parameter."""
    net, loss, params, feed = small_cnn(pool)
    gradc.gradients(net.program, loss, ["image"])
    norm = net.op("reduce_sum", {"X": net.op("square", {"X": "image@GRAD"})[0]}, {"reduce_all": True, "dim": []})[0]
    grads = check_program(net.program, feed, list(params), loss=norm, params=params)
    assert all(np.abs(g).max() > 0 for g in grads.values())


def test_a_gradient_penalty_as_the_issue_tried_it():
    """gradients() of mean(fc_0.w_0@GRAD ** 2) in a tanh MLP that already has its backward."""
    net, loss, params, feed = tanh_mlp()
    gradc.append_backward(net.program, loss)
    penalty = net.mean(net.op("square", {"X": "fc_0.w_0@GRAD"})[0])
    assert gradc.gradients(net.program, penalty, ["fc_0.w_0"]) == ["fc_0.w_0@GRAD@2"]
    check_program(net.program, feed, list(params), loss=penalty, params=params)


THIRD_ORDER = ["elementwise_div_grad", "matmul_v2_grad", "reduce_max_grad[dim=[1]]", "gelu_grad[approximate=True]",
               "softplus_grad", "softmax_grad", "log_softmax_grad", "softmax_with_cross_entropy_grad",
               "conv2d_grad[paddings=[1, 1]]", "pool2d_grad[pooling_type=max,ksize=[2, 2],strides=[2, 2]]",
               "pool2d_grad[pooling_type=max,ksize=[3, 2],strides=[2, 1],paddings=[0, 2, 1, 0]]",
               "pool3d_grad[pooling_type=max,ksize=[2, 2, 2],strides=[2, 2, 2],ceil_mode=True,data_format=NDHWC]",
               "batch_norm_grad", "layer_norm_grad[epsilon=0.001]", "reshape2_grad[shape=[3, -1]]",
               "mish_grad", "prelu_grad[mode=channel]", "sigmoid_cross_entropy_with_logits_grad", "cross_entropy_grad2",
               "huber_loss_grad[delta=1.0]", "group_norm_grad[groups=2,data_layout=NHWC,epsilon=0.001]",
               "p_norm_grad[porder=3.0,axis=1]", "lrn_grad[n=3,k=1.0,alpha=0.3,beta=0.75]",
               "bilinear_tensor_product_grad", "kthvalue_grad[k=1,axis=1]", "maxout_grad[groups=2]",
               "put_along_axis_grad[Axis=1,Reduce=mean,Include_self=False]",
               "put_along_axis_grad[Axis=1,Reduce=amax,Include_self=False]",
               "tensor_array_to_tensor_grad[use_stack=False,axis=1,joined=twice]",
               "lp_pool2d_grad[kernel_size=[2, 2],strides=[2, 2],norm_type=2.0,pooling_type=lp]",
               "lp_pool2d_grad[kernel_size=[2, 3],norm_type=3.0,adaptive=True,pooling_type=lp]",
               "lp_pool2d_grad[strides=[2, 1],norm_type=2.0,pooling_type=lp]",
               "cumprod_grad[dim=1,exclusive=True,reverse=True]", "cumprod_grad[dim=0,reverse=True]",
               "logcumsumexp_grad[axis=-2,reverse=True,exclusive=True]",
               "logcumsumexp_grad[flatten=True,exclusive=True,reverse=True]", "cummax_grad[axis=1]",
               "mode_grad[axis=1]", "median_grad[axis=[0, 2],keepdim=False,mode=avg]",
               "median_grad[keepdim=False,mode=avg]",
               "eig_grad[loss=w]", "eig_grad[loss=|V| batched]", "eig_grad[loss=w real]"]


@pytest.mark.parametrize("case_id", THIRD_ORDER)
def test_third_derivatives_through(case_id):
    """A third backward over a second-order case's program (tests/gradcheck_cases/second_order*.py): the ops
    each second-order maker emits have makers of their own."""
    from gradcheck_cases import (
        linalg_extra,
        scans_double,
        second_order,
        second_order_broadcast_put,
        second_order_nn,
        second_order_select,
    )

    modules = (second_order, second_order_nn, second_order_select, second_order_broadcast_put, scans_double,
               linalg_extra)
    check_third_derivatives(next(c for module in modules for c in module.CASES if c.id == case_id), RNG)


@pytest.mark.parametrize("accumulate", [False, True])
def test_second_and_third_derivatives_through_broadcast_tensors_index_put_and_cumprod(accumulate):
    """The Hessian-vector product of float64_nets.cumprod_index_put_net's loss, then u . (H v) differentiated once
    more, against central differences."""
    rng = np.random.default_rng(11)   # its own: the checked magnitudes do not depend on the tests run before
    net = ProgramBuilder()
    loss, feed = cumprod_index_put_net(net, accumulate, rng)
    params = {"b": rng.standard_normal(4), "v": rng.standard_normal(4)}
    wrt = ["x", *params]
    dot = weighted_sum(net, gradc.gradients(net.program, loss, wrt), feed, "v", rng)
    check_program(net.program, feed, wrt, loss=dot, params=params)
    third = weighted_sum(net, gradc.gradients(net.program, dot, wrt), feed, "u", rng)
    grads = check_program(net.program, feed, wrt, loss=third, params=params)
    assert all(np.abs(g).max() > 1e-3 for g in grads.values())


def test_a_gradient_reaching_an_output_the_maker_ignores_is_an_error():
    """batch_norm's grad reads its saved statistics as constants: a loss of SavedMean has nowhere to go."""
    net = ProgramBuilder()
    x = net.data("x", [4, 3], "float64", stop_gradient=False)
    stats = {slot: net.parameter(f"bn.{slot}", [3], "float64") for slot in ("Scale", "Bias", "Mean", "Variance")}
    saved = net.op("batch_norm", {"X": x, **stats}, outputs=["SavedMean"])[0]
    loss = net.mean(saved)
    with pytest.raises(gradc.GradError, match=r"op 0 \(batch_norm\).*'batch_norm_0\.tmp_3' \(slot SavedMean\)"):
        gradc.append_backward(net.program, loss)


def test_a_loss_of_softmax_with_cross_entropy_s_softmax_output_reaches_the_logits():
    net = ProgramBuilder()
    logits = net.data("logits", [3, 4], "float64", stop_gradient=False)
    label = net.data("label", [3, 1], "int64")
    softmax, ce = net.op("softmax_with_cross_entropy", {"Logits": logits, "Label": label},
                         outputs=["Softmax", "Loss"])
    both = net.op("elementwise_add", {"X": net.mean(net.op("square", {"X": softmax})[0]), "Y": net.mean(ce)})[0]
    check_program(net.program, {"logits": RNG.standard_normal((3, 4)), "label": np.array([[0], [3], [1]])},
                  ["logits"], loss=both)


@pytest.mark.parametrize("threshold", [0.5, -5.0], ids=["tanh branch", "square branch"])
def test_second_derivatives_through_a_conditional_block(threshold):
    """A gradient penalty of a cond: the grad of mean((dL/dw)^2) replays the chosen branch's forward and
    backward blocks in a conditional_block of its own, then differentiates that."""
    net = Net()
    x, w = net.data("x", [2, 3]), net.param("w", [3, 3])
    pred = net.op("less_than", {"X": net.mean(x), "Y": net.constant(threshold, (), gradc.VarType.FP64)})
    y = net.cond(pred, lambda: net.tanh(net.matmul(x, w)), lambda: net.square(net.matmul(x, w)))
    gradc.append_backward(net.program, net.mean(net.elementwise_mul(y, y)))
    penalty = net.mean(net.square("w@GRAD"))
    rng = np.random.default_rng(19)   # its own, and w small: the square branch's penalty is of degree 6 in x and
    # w, whose central differences lose digits to rounding where it is large
    grads = check_program(net.program, {"x": rng.standard_normal((2, 3))}, ["w", "x"], loss=penalty,
                          params={"w": 0.7 * rng.standard_normal((3, 3))})
    assert all(np.abs(g).max() > 1e-3 for g in grads.values())


@pytest.mark.parametrize("iterations", [3, 1, 0])
def test_second_derivatives_through_a_while_loop(iterations):
    """h = tanh(h W) + b, ``iterations`` times: the grad of the penalty replays the loop (forward and backward)
    with ordinary while ops, then differentiates those; the Hessian of the loop's loss flows through h too."""
    net = Net()
    x, w, b = net.data("x", [2, 3]), net.param("w", [3, 3]), net.param("b", [3])
    i, n = net.constant(0), net.constant(iterations)
    h = net.copy(x)
    net.while_loop(lambda i, h: net.less_than(i, n),
                   lambda i, h: [net.increment(i), net.elementwise_add(net.tanh(net.matmul(h, w)), b)], [i, h])
    gradc.append_backward(net.program, net.mean(net.elementwise_mul(h, h)))
    penalty = net.op("sum", {"X": [net.mean(net.square("w@GRAD")), net.mean(net.square("x@GRAD"))]})
    grads = check_program(net.program, {"x": RNG.standard_normal((2, 3))}, ["w", "b", "x"], loss=penalty,
                          params={"w": 0.5 * RNG.standard_normal((3, 3)), "b": RNG.standard_normal(3)})
    assert np.abs(grads["x"]).max() > 1e-3 and (np.abs(grads["w"]).max() > 1e-3) == (iterations > 0)


def test_every_grad_op_has_a_maker_of_its_own():
    """Gradients of any order: a grad op without a maker would end every higher-order backward through it."""
    assert [type for type, opdef in gradc.registry.OPS.items() if opdef.grad_op_of and opdef.grad is None] == []

"""What Paddle 3's grad kernels need of the programs gradc compiles, which real models from GitHub lacked: the
attributes older Paddle versions did not write (gradc.backward.legacy and makers.with_defaults: a Paddle 1.x
ResNet's batch norms with is_test an int, a Paddle 1.x MLP's softmax without axis, pool2d and conv2d without
padding_algorithm), an output Paddle's grid_sampler_grad writes whether or not it is wanted, and the Reserve
Paddle's rnn_grad reads."""

import numpy as np
import pytest

import gradc
from gradc.gradcheck import check_program
from gradc.ir import AttrType
from gradc.layers import ProgramBuilder
from test_rnn_op import rnn_program


def old_program():
    """x -> conv2d -> batch_norm (test mode, is_test the int 1) -> pool2d -> softmax, the conv, pool and softmax
    without the attributes Paddle added since, as a Paddle 1.x file holds them."""
    net = ProgramBuilder()
    x = net.data("x", [2, 1, 4, 4], "float64")
    w = net.parameter("w", [2, 1, 3, 3], "float64")
    hidden = net.op("conv2d", {"Input": x, "Filter": w}, {"paddings": [1, 1]}, outputs=["Output"])[0]
    scale, bias = net.parameter("scale", [2], "float64"), net.parameter("bias", [2], "float64")
    mean, variance = net.parameter("mean", [2], "float64"), net.parameter("variance", [2], "float64")
    hidden = net.op("batch_norm", {"X": hidden, "Scale": scale, "Bias": bias, "Mean": mean, "Variance": variance},
                    {"is_test": True}, outputs=["Y"])[0]
    hidden = net.op("pool2d", {"X": hidden}, {"ksize": [2, 2], "strides": [2, 2], "pooling_type": "avg"})[0]
    out = net.op("softmax", {"X": net.op("reshape2", {"X": hidden}, {"shape": [2, 8]})[0]})[0]
    ops = net.program.global_block.ops
    ops[1].set_attr("is_test", 1, AttrType.INT)
    for op, name in ((ops[0], "padding_algorithm"), (ops[2], "padding_algorithm"), (ops[4], "axis")):
        op.attrs.pop(name, None), op.attr_types.pop(name, None)
    return net, net.mean(net.op("elementwise_mul", {"X": out, "Y": net.data("weight", [2, 8], "float64")})[0])


def test_grad_ops_carry_the_attributes_an_old_forward_op_lacks_and_bools_as_bools():
    net, loss = old_program()
    gradc.append_backward(net.program, loss)
    grads = {op.type: op for op in net.program.global_block.ops if op.type.endswith("_grad")}
    assert grads["softmax_grad"].attrs["axis"] == -1
    assert grads["pool2d_grad"].attrs["padding_algorithm"] == grads["conv2d_grad"].attrs["padding_algorithm"] == \
        "EXPLICIT"
    assert grads["batch_norm_grad"].attr_types["is_test"] == AttrType.BOOLEAN
    assert grads["batch_norm_grad"].attrs["is_test"] is True
    rng = np.random.default_rng(5)
    params = {"w": rng.standard_normal((2, 1, 3, 3)), "scale": rng.uniform(0.5, 1.5, 2), "bias": rng.standard_normal(2),
              "mean": rng.standard_normal(2), "variance": rng.uniform(0.5, 1.5, 2)}
    feed = {"x": rng.standard_normal((2, 1, 4, 4)), "weight": rng.standard_normal((2, 8))}
    check_program(net.program, feed, ["w", "scale", "bias", "x"], loss=loss, params=params)


def test_grid_sampler_grad_writes_x_grad_where_x_wants_none():
    """Paddle 3.3.1's grid_sampler_grad kernel writes X@GRAD unconditionally and crashes without it (its own backward
    of a grid sample over a fed image does, as PaddleOCR's rectifying recognizer's fine-tuning): gradc's writes it."""
    net = ProgramBuilder()
    image, grid = net.data("image", [1, 2, 4, 4], stop_gradient=True), net.data("grid", [1, 3, 3, 2])
    loss = net.mean(net.op("grid_sampler", {"X": image, "Grid": grid}, {"align_corners": True}, outputs=["Output"])[0])
    gradc.append_backward(net.program, loss, parameter_list=[])
    (grad_op,) = [op for op in net.program.global_block.ops if op.type == "grid_sampler_grad"]
    assert grad_op.output("X@GRAD") and grad_op.output("X@GRAD")[0] != "image@GRAD"
    assert grad_op.output("Grid@GRAD") == ["grid@GRAD"]


@pytest.mark.parametrize("dropout_prob", [0.0, 0.25])
def test_a_test_mode_rnn_trains_in_training_mode_without_dropout(dropout_prob):
    """Paddle's rnn_grad reads the Reserve only a training-mode forward writes (OCR recognizers from GitHub and
    PaddleOCR's SAR hold test-mode LSTMs): training mode without dropout computes what test mode does, so the
    backward switches to it, and the values stay as they were."""
    net, outs, feed = rnn_program(is_test=True, dropout_prob=dropout_prob)
    before = gradc.Executor().run(net.program, feed, outs["Out"], gradc.Scope())[0]
    loss = net.mean(net.op("elementwise_mul", {"X": outs["Out"][0], "Y": net.data("weight", list(before.shape))}))
    feed["weight"] = np.random.default_rng(2).standard_normal(before.shape).astype(np.float32)
    gradc.append_backward(net.program, loss, parameter_list=["w0"])
    (rnn,) = [op for op in net.program.global_block.ops if op.type == "rnn"]
    assert rnn.attrs["is_test"] is False and rnn.attrs["dropout_prob"] == 0.0
    out, grad = gradc.Executor().run(net.program, feed, [outs["Out"][0], "w0@GRAD"], gradc.Scope())
    np.testing.assert_array_equal(out, before)
    assert np.isfinite(grad).all() and np.abs(grad).max() > 0


def test_a_maker_registered_after_a_compile_decides_what_the_next_compile_gives_back():
    """What a forward op's grad op reads is remembered per op type; a maker replaced since (a plugin's, or a test's
    wrapper put back) is read again, so an inference program's dropped XShape is still given back."""
    def inference_program():
        net = ProgramBuilder()
        x = net.data("x", [2, 3])
        out = net.op("unsqueeze2", {"X": x}, {"axes": [0]})[0]
        net.program.global_block.ops[0].outputs.pop("XShape", None)   # as save_inference_model drops it
        return net.program, net.mean(out)

    opdef = gradc.registry.get("unsqueeze2")
    maker = opdef.grad
    opdef.grad = lambda g: maker(g)   # a maker that says nothing of what it reads
    try:
        gradc.append_backward(*inference_program())
    finally:
        opdef.grad = maker
    program, loss = inference_program()
    gradc.append_backward(program, loss)
    assert program.global_block.ops[0].outputs.get("XShape")

"""pylayer (paddle.static.nn.static_pylayer) and pylayer_grad: Paddle's own programs compile, run and verify as
Paddle's do; the user's backward block gives the gradient, by Paddle's naming protocol; what it cannot give is an
error, and PIR programs translate both ways."""

import gzip
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.errors import ExecutionError, GradError, ProgramError
from gradc.pir import parse_pir, serialize_pir
from gradc.verify import check_vars
from gradc.verify_flow import unwritten_read_problems
from gradc.verify_shapes import check_shapes
from gradc.viz.model import program_model
from programs import Net

DATA = Path(__file__).parent / "data" / "paddle"
LAYERS = DATA / "layers"
WITH_BACKWARD = ["static_pylayer", "static_pylayer_two_inputs"]


def fixture(row: str, name: str):
    path = LAYERS / row / name
    return gradc.load(path) if name.endswith(".pb") else dict(np.load(path))


def run(program, feed, fetch, params=None):
    scope = gradc.Scope()
    for name, value in (params or {}).items():
        scope[name] = value
    return dict(zip(fetch, gradc.Executor().run(program, feed=feed, fetch_list=fetch, scope=scope)))


def grad_ops(program, type="pylayer_grad"):
    return [op for op in program.global_block.ops if op.type == type]


@pytest.mark.parametrize("row", WITH_BACKWARD)
def test_gradc_emits_the_pylayer_grad_paddle_emits(row):
    ours = fixture(row, "forward.pb")
    gradc.append_backward(ours, "mean_0.tmp_0")
    (mine,), (theirs,) = grad_ops(ours), grad_ops(fixture(row, "backward.pb"))
    assert mine.inputs == theirs.inputs and mine.outputs == theirs.outputs
    assert mine.attrs["backward_block"] == theirs.attrs["backward_block"] == 2


@pytest.mark.parametrize("row", WITH_BACKWARD)
def test_a_program_paddle_differentiated_runs_to_its_gradients_in_float32(row):
    grads = fixture(row, "grads.npz")
    results = run(fixture(row, "backward.pb"), fixture(row, "feed.npz"), list(grads))
    for name, expected in grads.items():
        assert results[name].dtype == np.float32
        np.testing.assert_array_equal(results[name], expected)


def test_the_forward_program_alone_runs_and_verifies():
    """Its backward block reads the output grad Paddle never declares (pylayer_grad hands it over), and pylayer
    does not run that block: the program is well formed and its forward runs."""
    program = fixture("static_pylayer", "forward.pb")
    check_vars(program)
    assert list(unwritten_read_problems(program)) == []
    (loss,) = run(program, fixture("static_pylayer", "feed.npz"), ["mean_0.tmp_0"]).values()
    assert loss == np.load(LAYERS / "static_pylayer" / "loss.npy")


def _layer(backward):
    """out = tanh(x) + y through a pylayer with the backward_fn ``backward(net, g)``; loss = mean(out)."""
    net = Net()
    x, y = net.data("x", [2, 3]), net.data("y", [2, 3])
    (out,) = net.pylayer(lambda x, y: net.elementwise_add(net.tanh(x), y), [x, y], lambda g: backward(net, g))
    return net, net.mean(out)


X = np.array([[0.5, -1.0, 2.0], [0.0, 1.5, -0.5]])
FEED = {"x": X, "y": np.ones((2, 3))}


def test_an_input_grad_the_backward_block_leaves_unwritten_is_zeros():
    """Paddle's pylayer_grad assigns zeros to an input's grad its block does not write."""
    net, loss = _layer(lambda net, g: [net.scale(g, scale=3.0)])   # a grad for x only
    grads = gradc.gradients(net.program, loss, ["x", "y"])
    results = run(net.program, FEED, grads)
    np.testing.assert_allclose(results[grads[0]], np.full((2, 3), 3.0 / 6))
    np.testing.assert_array_equal(results[grads[1]], np.zeros((2, 3)))


def test_an_input_read_elsewhere_too_sums_both_grads():
    net = Net()
    x = net.data("x", [2, 3])
    (out,) = net.pylayer(lambda x: net.exp(x), [x], lambda g: [net.scale(g, scale=2.0)])
    loss = net.mean(net.elementwise_add(out, net.elementwise_mul(x, x)))
    (grad,) = gradc.gradients(net.program, loss, ["x"])
    np.testing.assert_allclose(run(net.program, {"x": X}, [grad])[grad], (2.0 + 2 * X) / 6)


def test_a_second_backward_hands_the_block_its_own_output_grads():
    """The second backward of a program names its grads out@GRAD@2; the block still reads out@GRAD, and gets the
    second backward's values."""
    net = Net()
    x = net.data("x", [2, 3])
    (out,) = net.pylayer(lambda x: net.exp(x), [x], lambda g: [net.scale(g, scale=2.0)])
    (first,) = gradc.gradients(net.program, net.mean(out), ["x"])
    (second,) = gradc.gradients(net.program, net.reduce_sum(out, reduce_all=True, dim=[]), ["x"])
    assert second == "x@GRAD@2"
    assert grad_ops(net.program)[1].input("Out@GRAD") == [f"{out}@GRAD@2"]
    results = run(net.program, {"x": X}, [first, second])
    np.testing.assert_allclose(results[first], np.full((2, 3), 2.0 / 6))
    np.testing.assert_allclose(results[second], np.full((2, 3), 2.0))


def test_without_a_backward_block_a_wanted_grad_is_refused():
    net = Net()
    x = net.data("x", [2, 3])
    (out,) = net.pylayer(lambda x: net.exp(x), [x])
    with pytest.raises(GradError, match=r"block 0, op 0 \(pylayer\): pylayer has no backward block .* its inputs "
                                        r"\['x'\] want a gradient"):
        gradc.append_backward(net.program, net.mean(out))
    assert gradc.gradients(net.program, net.mean(out), [], no_grad_set=["x"]) == []


def test_a_grad_of_the_wrong_shape_is_refused():
    net, loss = _layer(lambda net, g: [net.reduce_sum(g, dim=[0]), g])
    grads = gradc.gradients(net.program, loss, ["x", "y"])
    with pytest.raises(ExecutionError, match=r"op \d+ \(pylayer_grad\): the backward block gives 'x@GRAD' as "
                                             r"float64\[3\], but input 'x' is float64\[2, 3\]"):
        run(net.program, FEED, grads)


def test_a_pylayer_must_write_its_outputs():
    net, _ = _layer(lambda net, g: [g, g])
    pylayer = net.program.global_block.ops[0]
    forward = net.program.blocks[pylayer.attrs["blocks"][0]]
    forward.ops.pop()   # the assign of the result to the output
    with pytest.raises(ProgramError, match=r"\(pylayer\): its forward block 1 writes no value of output"):
        check_shapes(net.program)


def _paddle_pir(name: str) -> bytes:
    return gzip.decompress((DATA / "pylayer_pir" / name).read_bytes())


def test_paddles_pir_training_program_runs_to_its_gradients():
    """Its backward is a second pd_op.pylayer, whose region computes the input grads."""
    program = parse_pir(_paddle_pir("backward.json.gz"))
    assert [op.type for op in program.global_block.ops].count("pylayer") == 2
    grads = fixture("static_pylayer_two_inputs", "grads.npz")
    results = run(program, fixture("static_pylayer_two_inputs", "feed.npz"), list(grads))
    for name, expected in grads.items():
        np.testing.assert_allclose(results[name], expected, rtol=1e-6)


def test_a_pir_forward_has_no_backward_function_to_differentiate():
    program = parse_pir(_paddle_pir("forward.json.gz"))
    loss = run(program, fixture("static_pylayer_two_inputs", "feed.npz"), ["loss"])["loss"]
    np.testing.assert_allclose(loss, np.load(LAYERS / "static_pylayer_two_inputs" / "loss.npy"), rtol=1e-6)
    with pytest.raises(GradError, match="or a PIR program's, which keeps the backward_fn out of the program"):
        gradc.append_backward(program, "loss")


def test_gradcs_training_program_written_as_pir_gives_the_same_gradients():
    program = fixture("static_pylayer_two_inputs", "forward.pb")
    with pytest.raises(ProgramError, match=r"\(pylayer\): its backward block 2 has no PIR form"):
        serialize_pir(program)
    gradc.append_backward(program, "mean_0.tmp_0")
    grads = fixture("static_pylayer_two_inputs", "grads.npz")
    again = parse_pir(serialize_pir(program, fetch=list(grads)))
    results = run(again, fixture("static_pylayer_two_inputs", "feed.npz"), list(grads))
    for name, expected in grads.items():
        np.testing.assert_allclose(results[name], expected, rtol=1e-6)


def test_saved_forward_values_travel_to_the_pir_backward():
    """The backward block reads the forward block's tanh (a saved tensor): the PIR forward region pushes it and
    the backward region pops it."""
    saved = {}

    def forward(x, y):
        saved["t"] = net.tanh(x)
        return net.elementwise_add(saved["t"], y)

    def backward(g):
        t = saved["t"]
        return [net.elementwise_mul(g, net.scale(net.elementwise_mul(t, t), scale=-1.0, bias=1.0)), g]

    net = Net()
    x, y = net.data("x", [2, 3]), net.data("y", [2, 3])
    (out,) = net.pylayer(forward, [x, y], backward)
    grads = gradc.gradients(net.program, net.mean(out), ["x", "y"])
    expected = run(net.program, FEED, grads)
    np.testing.assert_allclose(expected[grads[0]], (1 - np.tanh(FEED["x"]) ** 2) / 6)
    data = serialize_pir(net.program, fetch=grads)
    assert b'"2.tuple_push"' in data and b'"2.tuple_pop"' in data   # the cf dialect's push and pop
    results = run(parse_pir(data), FEED, grads)
    for name in grads:
        np.testing.assert_allclose(results[name], expected[name])


def test_the_viewer_shows_the_backward_block_under_the_op_that_runs_it():
    run_by = {row: program_model(fixture("static_pylayer", f"{row}.pb"), row)["blocks"][2]["run_by"]
              for row in ("forward", "backward")}
    assert run_by == {"forward": [0, 0], "backward": [0, 6]}   # pylayer names it; pylayer_grad runs it

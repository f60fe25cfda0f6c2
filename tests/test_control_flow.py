"""Control flow, differentiated and run: the bug classes Paddle shipped, each gradient checked in
float64 against central differences of the whole program (gradc.gradcheck.check_program)."""

import numpy as np
import pytest

import gradc
from gradc.gradcheck import check_program
from gradc.ir import EMPTY_VAR, VarType
from gradcheck_cases.control_flow_outputs import _penalty_of_w1, _split_weights
from programs import Net

rng = np.random.default_rng(3)


def randn(*shape):
    return rng.standard_normal(shape)


def loop_net(n_iter: int):
    """h = x; repeat n_iter times: h = tanh(h @ w + b); loss = mean(h)."""
    net = Net()
    x, w, b = net.data("x", [2, 3]), net.param("w", [3, 3]), net.param("b", [3])
    i, n = net.constant(0), net.constant(n_iter)
    h = net.copy(x)
    net.while_loop(lambda i, h: net.less_than(i, n),
                   lambda i, h: [net.increment(i), net.tanh(net.elementwise_add(net.matmul(h, w), b))], [i, h])
    return net, net.mean(h)


def ops_of(program, block_idx):
    return [op.type for op in program.blocks[block_idx].ops]


def backward_blocks(program):
    return [b for b in program.blocks if b.forward_block_idx is not None and b.forward_block_idx >= 0]


PARAMS = {"w": randn(3, 3) * 0.5, "b": randn(3) * 0.1}


@pytest.mark.parametrize("n_iter", [1, 3])
def test_a_parameter_read_in_every_iteration_gets_the_sum_of_its_grads(n_iter):
    net, loss = loop_net(n_iter)
    check_program(net.program, {"x": randn(2, 3)}, ["x", "w", "b"], loss=loss, params=PARAMS)


def test_a_loop_that_runs_zero_times_passes_grads_through_and_zero_fills_the_rest():
    net, loss = loop_net(0)
    grads = check_program(net.program, {"x": randn(2, 3)}, ["x", "w", "b"], loss=loss, params=PARAMS)
    assert not grads["w"].any() and not grads["b"].any()
    np.testing.assert_allclose(grads["x"], np.full((2, 3), 1 / 6))


def test_a_loop_var_unrelated_to_the_loss_is_pruned():
    """z = sigmoid(z @ p) runs in the loop but never reaches the loss: no grad op of its chain, inside
    the loop or before it, no z@GRAD, and no gradient for p."""
    net = Net()
    x, z0 = net.data("x", [2, 3]), net.data("z0", [2, 3])
    w, p = net.param("w", [3, 3]), net.param("p", [3, 3])
    i, n = net.constant(0), net.constant(2)
    h, z = net.copy(x), net.tanh(z0)
    net.while_loop(lambda i, h, z: net.less_than(i, n),
                   lambda i, h, z: [net.increment(i), net.tanh(net.matmul(h, w)), net.sigmoid(net.matmul(z, p))],
                   [i, h, z])
    loss = net.mean(h)
    train = net.program.clone()
    assert gradc.append_backward(train, loss) == [("w", "w@GRAD")]
    (body_grad,) = backward_blocks(train)
    assert ops_of(train, body_grad.idx) == ["assign", "tanh_grad", "matmul_v2_grad"]
    assert "tanh_grad" not in ops_of(train, 0)
    written = {name for b in train.blocks for op in b.ops for name in op.output_names()}
    assert not {f"{z}@GRAD", "z0@GRAD", "p@GRAD"} & written
    while_grad = next(op for op in train.global_block.ops if op.type == "while_grad")
    assert while_grad.output("X@GRAD")[while_grad.input("X").index(z)] == EMPTY_VAR
    check_program(net.program, {"x": randn(2, 3), "z0": randn(2, 3)}, ["x", "w"], loss=loss,
                  params={"w": PARAMS["w"], "p": PARAMS["w"]})


def test_a_loop_var_needed_only_through_another_loop_var_is_carried():
    """a feeds h in the next iteration but not the loss directly: its grad must flow back through h."""
    net = Net()
    x, a0, w = net.data("x", [2, 3]), net.data("a0", [2, 3]), net.param("w", [3, 3])
    i, n = net.constant(0), net.constant(3)
    h, a = net.copy(x), net.copy(a0)
    net.while_loop(lambda i, h, a: net.less_than(i, n),
                   lambda i, h, a: [net.increment(i), net.tanh(net.elementwise_add(net.matmul(h, w), a)),
                                    net.sigmoid(a)], [i, h, a])
    loss = net.mean(h)
    check_program(net.program, {"x": randn(2, 3), "a0": randn(2, 3)}, ["x", "a0", "w"], loss=loss,
                  params={"w": PARAMS["w"]})


def branch_net(flag_value_branch):
    """A cond whose branches hold ops that need no gradient (comparisons, casts, constants, and a value
    nobody reads): only the differentiable path is differentiated."""
    net = Net()
    x, flag, w1, w2 = net.data("x", [2, 3]), net.data("flag", [1]), net.param("w1", [3, 3]), net.param("w2", [3, 3])
    pred = net.greater_than(flag, net.constant(0.0, dtype=VarType.FP64))

    def true_fn():
        y = net.tanh(net.matmul(x, w1))
        positive = net.cast(net.greater_than(y, net.constant(0.0, dtype=VarType.FP64)),
                            in_dtype=int(VarType.BOOL), out_dtype=int(VarType.FP64))
        net.sigmoid(y)   # computed, never read
        return net.elementwise_mul(y, positive)

    def false_fn():
        return net.scale(net.matmul(x, w2), scale=2.0)

    out = net.cond(pred, true_fn, false_fn)
    return net, net.mean(net.elementwise_mul(out, out))


@pytest.mark.parametrize("flag", [1.0, -1.0])
def test_a_branch_with_ops_that_need_no_gradient(flag):
    net, loss = branch_net(flag)
    params = {"w1": randn(3, 3), "w2": randn(3, 3)}
    x = randn(2, 3)
    grads = check_program(net.program, {"x": x, "flag": np.array([flag])}, ["x", "w1", "w2"], loss=loss,
                          params=params)
    untaken = "w2" if flag > 0 else "w1"
    assert not grads[untaken].any()
    train = net.program.clone()
    gradc.append_backward(train, loss)
    for block in backward_blocks(train):
        assert {"sigmoid_grad", "cast", "greater_than"}.isdisjoint(ops_of(train, block.idx))


@pytest.mark.parametrize("shift", [2.0, -2.0])
def test_a_cond_whose_condition_compares_differentiable_vars(shift):
    """pred = sum(x @ w) > sum(x) + shift: the comparison has no gradient, the branches do."""
    net = Net()
    x, w = net.data("x", [2, 3]), net.param("w", [3, 3])
    xw = net.matmul(x, w)
    total = net.reduce_sum(xw, reduce_all=True, dim=[])
    threshold = net.scale(net.reduce_sum(x, reduce_all=True, dim=[]), scale=1.0, bias=shift)
    pred = net.greater_than(total, threshold)
    out = net.cond(pred, lambda: net.tanh(xw), lambda: net.elementwise_mul(xw, x))
    loss = net.mean(out)
    params = {"w": np.eye(3) + 0.1 * randn(3, 3)}
    check_program(net.program, {"x": randn(2, 3)}, ["x", "w"], loss=loss, params=params)


def test_an_op_without_grad_maker_inside_a_body_is_reported_with_its_block():
    net = Net()
    x, w = net.data("x", [2, 3]), net.param("w", [3, 3])
    i, n = net.constant(0), net.constant(2)
    h = net.copy(x)

    def body(i, h):
        new = net.matmul(h, w)
        net.block.append_op("my_mystery_op", {"X": [new]}, {"Out": [h]})
        return [net.increment(i), h]

    net.while_loop(lambda i, h: net.less_than(i, n), body, [i, h])
    loss = net.mean(h)
    with pytest.raises(gradc.GradError, match=r"block 1, op 1 \(my_mystery_op\)"):
        gradc.append_backward(net.program, loss)


def test_compiling_is_deterministic_and_survives_a_save_load_round_trip(tmp_path):
    programs = []
    for _ in range(2):
        net, loss = loop_net(3)
        gradc.append_backward(net.program, loss)
        programs.append(net.program)
    gradc.save(programs[0], tmp_path / "a.pb")
    gradc.save(programs[1], tmp_path / "b.pb")
    assert (tmp_path / "a.pb").read_bytes() == (tmp_path / "b.pb").read_bytes()
    loaded = gradc.load(tmp_path / "a.pb")
    feed = {"x": randn(2, 3)}

    def run(program):
        scope = gradc.Scope()
        for name, value in PARAMS.items():
            scope[name] = value.copy()
        return gradc.Executor().run(program, feed, ["w@GRAD", "x@GRAD"], scope)

    for got, expected in zip(run(loaded), run(programs[0])):
        np.testing.assert_array_equal(got, expected)


def test_a_loop_and_a_cond_run_forward_only():
    """Without a backward nothing needs the step scopes; the results are the same."""
    net, loss = loop_net(3)
    x = randn(2, 3)
    scope = gradc.Scope()
    for name, value in PARAMS.items():
        scope[name] = value
    (got,) = gradc.Executor().run(net.program, {"x": x}, [loss], scope)
    h = x
    for _ in range(3):
        h = np.tanh(h @ PARAMS["w"] + PARAMS["b"])
    np.testing.assert_allclose(got, h.mean())


def test_an_outer_var_written_then_read_in_the_body_and_used_after_the_loop():
    """Body: t = tanh(h); h = 2 t + h @ w. t's final value reaches the loss, earlier values only through h."""
    net = Net()
    x, t0, w = net.data("x", [2, 3]), net.data("t0", [2, 3]), net.param("w", [3, 3])
    i, n = net.constant(0), net.constant(3)
    h, t = net.copy(x), net.copy(t0)

    def body(i, h):
        net.block.append_op("tanh", {"X": [h]}, {"Out": [t]})
        return [net.increment(i), net.elementwise_add(net.scale(t, scale=2.0), net.matmul(h, w))]

    net.while_loop(lambda i, h: net.less_than(i, n), body, [i, h])
    loss = net.mean(net.elementwise_mul(net.elementwise_add(h, t), h))
    check_program(net.program, {"x": 0.5 * randn(2, 3), "t0": randn(2, 3)}, ["x", "w"], loss=loss,
                  params={"w": 0.5 * randn(3, 3)})


def test_a_parameter_read_inside_and_after_a_loop_adds_both_grads():
    net, _ = loop_net(2)
    out = net.matmul(net.program.global_block.ops[-1].input("X")[0], "w")
    loss = net.mean(net.elementwise_mul(out, out))
    check_program(net.program, {"x": randn(2, 3)}, ["x", "w", "b"], loss=loss, params=PARAMS)


def test_a_loop_whose_trip_count_depends_on_differentiable_values():
    """while sum(h * h) < 30: h = 1.5 h + b. The comparison has no gradient; the iterations do."""
    net = Net()
    x, b = net.data("x", [2, 3]), net.param("b", [3])
    limit = net.constant(30.0, (), VarType.FP64)
    h = net.copy(x)
    net.while_loop(lambda h: net.less_than(net.reduce_sum(net.elementwise_mul(h, h), reduce_all=True, dim=[]), limit),
                   lambda h: [net.elementwise_add(net.scale(h, scale=1.5), b)], [h])
    loss = net.mean(net.elementwise_mul(h, h))
    x_value = np.array([[1.0, -0.5, 0.3], [0.2, 0.8, -1.1]])
    grads = check_program(net.program, {"x": x_value}, ["x", "b"], loss=loss, params={"b": np.array([0.1, 0.2, -0.1])})
    assert np.abs(grads["x"]).max() > 1.5   # several iterations ran


def test_the_no_grad_set_reaches_into_loop_bodies():
    net, loss = loop_net(2)
    train = net.program.clone()
    assert gradc.append_backward(train, loss, no_grad_set=["b"]) == [("w", "w@GRAD")]
    written = {name for block in train.blocks for op in block.ops for name in op.output_names()}
    assert "b@GRAD" not in written and "w@GRAD" in written


@pytest.mark.parametrize("first, second", [(1.0, -1.0), (-1.0, 1.0), (1.0, 1.0), (-1.0, -1.0)])
def test_two_conds_writing_the_same_var(first, second):
    """out = x; if a > 0: out = tanh(x @ w1); if b > 0: out = sigmoid(x @ w2) (a Switch-like layout,
    no select_input). A branch that does not run passes out's grad through; one that runs cuts it."""
    net = Net()
    x, a, b = net.data("x", [2, 3]), net.data("a", [1]), net.data("b", [1])
    w1, w2 = net.param("w1", [3, 3]), net.param("w2", [3, 3])
    out = net.copy(x)
    zero = net.constant(0.0, dtype=VarType.FP64)
    for flag, fn, w in ((a, net.tanh, w1), (b, net.sigmoid, w2)):
        with net.sub_block() as body:
            net.assign(fn(net.matmul(x, w)), out)
        op = net.block.append_op("conditional_block", {"Cond": [net.greater_than(flag, zero)], "Input": [x, w]},
                                 {"Out": [out], "Scope": [net.scopes()]}, {"is_scalar_condition": True})
        op.set_attr("sub_block", body.idx, gradc.ir.AttrType.BLOCK)
    loss = net.mean(net.elementwise_mul(out, out))
    feed = {"x": randn(2, 3), "a": np.array([first]), "b": np.array([second])}
    check_program(net.program, feed, ["x", "w1", "w2"], loss=loss, params={"w1": randn(3, 3), "w2": randn(3, 3)})




def test_a_loop_state_array_that_starts_constant_carries_the_gradient_of_every_step():
    """A while body reads its state array before it writes the next state into it (PaddleRec's DIEN); the array
    starts from a constant, so only the write makes it depend on the weights. Its gradient flows back through every
    step, as Paddle's (tests/data/paddle/state_array_loop, built by Paddle 3.3.1: h = tanh(h w + x w), three steps);
    gradc had cut it at the read: no step passed a gradient to the one before."""
    from fixtures import DATA
    from gradc.gradcheck import compare_program
    program = gradc.load(DATA / "state_array_loop" / "forward.pb")
    rng = np.random.default_rng(3)
    feed, params = {"x": rng.standard_normal((4, 2)).astype(np.float32)}, {"w": rng.standard_normal((2, 2))}
    grads, checks = compare_program(program, feed, ["w"], "mean_0.tmp_0", {"w": params["w"].astype(np.float32)},
                                    float64=True)
    assert not [check for check in checks if check.mismatch], checks
    paddle_w_grad = [[-0.05539703, -0.00925417], [-0.23441647, -0.04520305]]   # Paddle's append_backward, float32
    np.testing.assert_allclose(grads["w"], paddle_w_grad, rtol=2e-6)


def test_a_loop_var_that_starts_constant_names_its_grad_for_the_step_before():
    """c starts as a constant (no gradient wanted before the loop), each step makes it from w and the next step reads
    it; the loss reads only h. Paddle's while_grad passes a step's grad of a loop var to the step before only through
    the var's X@GRAD: with @EMPTY@ there every step read the last step's grad (Paddle 3.3.1 running gradc's BEAM
    training program: gather_grad's 8 rows against 7). gradc names it, as Paddle's own backward names a loop var's
    that is wanted before the loop; the gradients stay those of float64 central differences."""
    net = Net()
    x, w = net.data("x", [2, 3]), net.param("w", [3, 3])
    i, n = net.constant(0), net.constant(3)
    h, c = net.copy(x), net.constant(0.0, shape=(2, 3), dtype=VarType.FP64)

    def body(i, h, c):
        grown = net.tanh(net.elementwise_add(net.matmul(h, w), c))
        return [net.increment(i), net.sigmoid(grown), grown]

    net.while_loop(lambda i, h, c: net.less_than(i, n), body, [i, h, c])
    loss = net.mean(h)
    train = net.program.clone()
    gradc.append_backward(train, loss, parameter_list=["w"])
    while_grad = next(op for op in train.global_block.ops if op.type == "while_grad")
    assert f"{c}@GRAD" in while_grad.input("Out@GRAD")
    assert while_grad.output("X@GRAD")[while_grad.input("X").index(c)] == f"{c}@GRAD"
    check_program(net.program, {"x": randn(2, 3)}, ["x", "w"], loss=loss, params={"w": PARAMS["w"]})


@pytest.mark.parametrize("flag", [1.0, -1.0])
def test_a_second_backward_makes_no_zeros_like_an_output_select_output_may_leave_unwritten(flag):
    """No grad reaches the branch that only w2 feeds: select_output's maker gives that output zeros shaped like its X
    (GradContext.has_grad), not the backward's zeros shaped like the output, which Paddle's select_output leaves
    unwritten where the mask does not pick it (gradc's kernel writes zeros there, so only the program shows it)."""
    case = _penalty_of_w1(_split_weights(flag))
    gradc.gradients(case["program"], case["loss"], case["wrt"])
    ops = case["program"].global_block.ops
    unwritten = {name for op in ops if op.type == "select_output" for name in op.output("Out")}
    zeros_like = [op.input("X")[0] for op in ops if op.type == "fill_any_like"]
    assert zeros_like and not unwritten & set(zeros_like)

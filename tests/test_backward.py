"""The backward pass on small hand-built programs: pruning, no-grad rules, accumulation, zero fill."""

import numpy as np
import pytest

import gradc
from gradc.backward import append_grad_ops
from gradc.backward.vars import declare_grad_vars, derived_var
from gradc.gradcheck import check_program
from gradc.ir import VarDesc
from gradc.layers import ProgramBuilder


def ops_of(program):
    return [op.type for op in program.global_block.ops]


def two_layer(stop_hidden=False):
    net = ProgramBuilder()
    x = net.data("x", [4, 3], "float64")
    hidden = net.op("tanh", {"X": x})[0]
    net.block.var(hidden).stop_gradient = stop_hidden
    w = net.parameter("w", [3, 2], "float64")
    out = net.op("matmul_v2", {"X": hidden, "Y": w})[0]
    return net, net.mean(out)


def test_param_and_input_grads():
    net, loss = two_layer()
    pairs = gradc.append_backward(net.program, loss)
    assert pairs == [("w", "w@GRAD")]
    block = net.program.global_block
    assert {"x@GRAD", "w@GRAD", "tanh_0.tmp_0@GRAD"} <= set(block.vars)
    assert block.var("w@GRAD").shape == [3, 2] and block.var("w@GRAD").dtype == gradc.VarType.FP64
    assert block.var("w@GRAD").shape is not block.var("w").shape   # its own list: reshaping one leaves the other
    assert not block.var("w@GRAD").persistable and not block.var("w@GRAD").is_parameter


def test_a_derived_var_is_its_source_but_for_its_name_and_flags():
    source = VarDesc("x", [-1, 3], gradc.VarType.FP64, persistable=True, is_parameter=True, stop_gradient=True,
                     need_check_feed=True, lod_level=1)
    source.attrs, source.dist = (b"\n\x01a\x10\x02\"\x01b",), ([4, 3], "{}")   # a VarDesc.Attr kept as bytes
    expected = source.copy("x@GRAD")
    expected.persistable, expected.is_parameter = False, None
    expected.need_check_feed, expected.stop_gradient = None, False
    program = gradc.Program()
    block = program.global_block
    block.add_var(source)
    declare_grad_vars(block, [gradc.OpDesc("relu_grad", {}, {"X@GRAD": ["x@GRAD"]})])   # its own copy of the fields
    fields = VarDesc.__slots__
    for var in (derived_var(source, "x@GRAD"), block.var("x@GRAD")):
        assert {slot: getattr(var, slot) for slot in fields} == {slot: getattr(expected, slot) for slot in fields}
        assert var.shape is not source.shape   # a list, its own (attrs, an immutable tuple, is shared)


def test_a_shape_assigned_as_a_tuple_is_derived_as_a_list():
    net, loss = two_layer()
    net.block.var("w").shape = (3, 2)   # VarDesc takes any sequence; the backward copies lists the fast way
    gradc.append_backward(net.program, loss)
    assert net.block.var("w@GRAD").shape == [3, 2]


def test_stop_gradient_prunes_everything_behind_it():
    net, loss = two_layer(stop_hidden=True)
    gradc.append_backward(net.program, loss)
    assert "x@GRAD" not in net.program.global_block.vars
    assert "tanh_grad" not in ops_of(net.program)


def test_an_input_that_wants_no_grad_leaves_its_grad_slot_as_paddle_does():
    """A one-var slot is left empty; a list slot keeps @EMPTY@ in its place, so the grads stay aligned with the vars."""
    net, loss = two_layer(stop_hidden=True)   # matmul_v2's X wants no grad, its Y (w) does
    gradc.append_backward(net.program, loss)
    matmul_grad = next(op for op in net.program.global_block.ops if op.type == "matmul_v2_grad")
    assert matmul_grad.outputs == {"X@GRAD": [], "Y@GRAD": ["w@GRAD"]}
    net = ProgramBuilder()
    a = net.data("a", [2, 3], "float64", stop_gradient=True)
    b = net.parameter("b", [2, 3], "float64")
    loss = net.mean(net.op("concat", {"X": [a, b]}, {"axis": 0})[0])
    gradc.append_backward(net.program, loss)
    concat_grad = next(op for op in net.program.global_block.ops if op.type == "concat_grad")
    assert concat_grad.outputs == {"X@GRAD": ["@EMPTY@", "b@GRAD"]}


def test_op_role_var_names_every_param_grad_an_op_writes_last():
    """Paddle's op_role_var on the op that finally writes each parameter's grad: for parameters of one list slot
    (concat's X), one op carries both pairs, sorted by parameter."""
    net = ProgramBuilder()
    b, a = net.parameter("b", [2, 3], "float64"), net.parameter("a", [2, 3], "float64")
    loss = net.mean(net.op("concat", {"X": [b, a]}, {"axis": 0})[0])
    gradc.append_backward(net.program, loss)
    tagged = [(op.type, op.attrs["op_role_var"]) for op in net.program.global_block.ops if op.attrs.get("op_role_var")]
    assert tagged == [("concat_grad", ["a", "a@GRAD", "b", "b@GRAD"])]


def test_no_grad_set_and_parameter_list():
    net, loss = two_layer()
    assert gradc.append_backward(net.program.clone(), loss, no_grad_set=["w"]) == []
    program = net.program.clone()
    gradc.append_backward(program, loss, no_grad_set=["tanh_0.tmp_0"])
    assert "x@GRAD" not in program.global_block.vars
    program = net.program.clone()
    assert gradc.append_backward(program, loss, parameter_list=[]) == []
    assert "w@GRAD" not in program.global_block.vars


def test_integer_vars_get_no_gradient():
    net = ProgramBuilder()
    x = net.data("x", [4, 3], "float64")
    index = net.data("i", [4, 1], "int64")
    loss = net.mean(net.op("softmax_with_cross_entropy", {"Logits": x, "Label": index}, outputs=["Loss"])[0])
    gradc.append_backward(net.program, loss)
    assert "x@GRAD" in net.program.global_block.vars and "i@GRAD" not in net.program.global_block.vars


def test_ops_after_the_loss_and_off_the_path_are_not_differentiated():
    net = ProgramBuilder()
    x = net.data("x", [2, 2], "float64")
    y = net.data("y", [2, 2], "float64")
    unrelated = net.op("sigmoid", {"X": y})[0]
    loss = net.mean(net.op("relu", {"X": x})[0])
    net.op("tanh", {"X": loss})
    gradc.append_backward(net.program, loss)
    assert "sigmoid_grad" not in ops_of(net.program) and "tanh_grad" not in ops_of(net.program)
    assert f"{unrelated}@GRAD" not in net.program.global_block.vars and "y@GRAD" not in net.program.global_block.vars


def test_shared_var_grads_are_renamed_and_summed_before_first_read():
    net = ProgramBuilder()
    x = net.data("x", [3], "float64")
    a = net.op("tanh", {"X": x})[0]
    b = net.op("elementwise_mul", {"X": a, "Y": a})[0]
    c = net.op("elementwise_add", {"X": b, "Y": a})[0]
    loss = net.mean(c)
    gradc.append_backward(net.program, loss)
    block = net.program.global_block
    sums = [(i, op) for i, op in enumerate(block.ops) if op.type == "sum"]
    assert len(sums) == 1
    index, sum_op = sums[0]
    assert sum_op.output("Out") == [f"{a}@GRAD"]
    assert sorted(sum_op.input("X")) == [f"{a}@GRAD@RENAME@block0@{k}" for k in range(3)]
    reader = next(i for i, op in enumerate(block.ops) if op.type == "tanh_grad")
    assert index == reader - 1
    check_program(net.program, {"x": np.array([0.3, -0.7, 1.1])}, ["x"], loss)


def test_zero_fill_only_where_a_grad_op_reads_an_unwritten_grad():
    net = ProgramBuilder()
    x = net.data("x", [2, 4], "float64")
    op = net.block.append_op("split", {"X": [x]}, {"Out": ["s0", "s1"]}, {"axis": 1, "num": 2})
    for name in op.output("Out"):
        net.block.create_var(name, [2, 2], gradc.VarType.FP64)
    loss = net.mean(net.op("relu", {"X": "s0"})[0])
    gradc.append_backward(net.program, loss)
    fills = [op for op in net.program.global_block.ops if op.type == "fill_any_like"]
    assert [f.output("Out") for f in fills] == [["s1@GRAD"]]
    check_program(net.program, {"x": np.array([[0.5, -1.0, 2.0, 3.0], [1.5, 0.2, -0.3, 0.4]])}, ["x"], loss)


def test_missing_grad_makers_are_all_reported_at_once():
    net = ProgramBuilder()
    x = net.data("x", [2], "float64")
    for name in ("a", "b", "c"):
        net.block.create_var(name, [2], gradc.VarType.FP64)
    net.block.append_op("mystery_one", {"X": [x]}, {"Out": ["a"]})
    net.block.append_op("mystery_two", {"X": ["a"]}, {"Out": ["b"]})
    net.block.append_op("relu", {"X": ["b"]}, {"Out": ["c"]})
    loss = net.mean("c")
    before = ops_of(net.program)
    with pytest.raises(gradc.GradError) as error:
        gradc.append_backward(net.program, loss)
    message = str(error.value)
    assert "block 0, op 0 (mystery_one)" in message and "block 0, op 1 (mystery_two)" in message
    assert ops_of(net.program) == before, "a failed compile must leave the program untouched"


def test_loss_is_found_when_unambiguous_and_listed_otherwise():
    net, loss = two_layer()
    assert gradc.loss_candidates(net.program) == [loss]
    gradc.append_backward(net.program.clone())
    with pytest.raises(gradc.GradError, match="not written by any op"):
        gradc.append_backward(net.program.clone(), "nope")
    ints = ProgramBuilder()
    ints.block.create_var("j", [2], gradc.VarType.INT64)
    ints.block.append_op("assign", {"X": [ints.data("i", [2], "int64")]}, {"Out": ["j"]})
    with pytest.raises(gradc.GradError, match="must be a float var"):
        gradc.append_backward(ints.program, "j")


def test_user_op_with_decorator_maker_and_kernel():
    @gradc.register_op("test_cube", inputs=["X"])
    def cube_grad(g):
        # d(x^3) = 3 x^2 dOut, written with existing ops: no new kernel needed
        square = g.tmp(g.I("X")[0])
        return [g.op("elementwise_mul", {"X": g.I("X"), "Y": g.I("X")}, {"Out": [square]}),
                g.op("scale", {"X": [square]}, {"Out": [square]}, {"scale": 3.0}),
                g.op("elementwise_mul", {"X": [square], "Y": g.OG("Out")}, {"Out": g.IG("X")})]

    gradc.kernel("test_cube")(lambda k: {"Out": k.x("X") ** 3})
    try:
        net = ProgramBuilder()
        x = net.data("x", [3], "float64")
        net.block.create_var("y", [3], gradc.VarType.FP64)
        net.block.append_op("test_cube", {"X": [x]}, {"Out": ["y"]})
        loss = net.mean("y")
        grads = check_program(net.program, {"x": np.array([0.5, -1.5, 2.0])}, ["x"], loss)
        np.testing.assert_allclose(grads["x"], 3 * np.array([0.5, -1.5, 2.0]) ** 2 / 3)
    finally:
        gradc.registry.OPS.pop("test_cube")
        gradc.executor.KERNELS.pop("test_cube")


def _fan_in(n):
    """loss = mean(sum(scale(w) for n copies)): one op with n inputs, n grad ops."""
    net = ProgramBuilder()
    w = net.parameter("w", [2], "float64")
    parts = [net.op("scale", {"X": w}, {"scale": 1.0})[0] for _ in range(n)]
    return net.program, net.mean(net.op("sum", {"X": parts})[0])


def test_an_op_with_thousands_of_inputs_compiles_in_linear_work(monkeypatch):
    """Counted work, not seconds (timings live in benchmarks/): 4x the inputs of one sum op must cost
    about 4x the op inputs visited (it cost 16x when the pass rescanned the op per grad op)."""
    visits = 0
    original = gradc.OpDesc.input_names

    def counted(op):   # a list, as input_names gives (the backward searches it)
        nonlocal visits
        names = original(op)
        visits += len(names)
        return names

    monkeypatch.setattr(gradc.OpDesc, "input_names", counted)

    def work(n):
        nonlocal visits
        program, loss = _fan_in(n)
        visits = 0
        gradc.append_backward(program, loss)
        return visits

    ratio = work(4000) / work(1000)
    assert ratio < 5, f"4x the inputs cost {ratio:.1f}x the work (linear: ~4, quadratic: ~16)"


def test_vars_the_backward_adds_are_plain_temporaries():
    """A temporary shaped like a parameter, or a copy of a fed var, is not a parameter nor fed."""
    @gradc.register_op("test_square", inputs=["X"])
    def square_grad(g):
        twice = g.tmp(g.I("X")[0])
        return [g.op("scale", {"X": g.I("X")}, {"Out": [twice]}, {"scale": 2.0}),
                g.op("elementwise_mul", {"X": [twice], "Y": g.OG("Out")}, {"Out": g.IG("X")})]

    try:
        net = ProgramBuilder()
        x, w = net.data("x", [3], "float64"), net.parameter("w", [3], "float64")
        y = net.block.create_var("y", [3], gradc.VarType.FP64).name
        net.block.append_op("test_square", {"X": [w]}, {"Out": [y]})
        product = net.op("elementwise_mul", {"X": x, "Y": y})[0]
        net.block.append_op("scale", {"X": [x]}, {"Out": [x]})   # the grad of the product reads a copy
        loss = net.mean(product)
        before = {name: (var.is_parameter, var.persistable, var.need_check_feed)
                  for name, var in net.block.vars.items()}
        gradc.append_backward(net.program, loss)
        added = {name: var for name, var in net.block.vars.items() if name not in before}
        assert {"w@GRAD@TMP@0@0", "x@SAVE@0@1"} <= set(added)
        assert all(not (v.is_parameter or v.persistable or v.need_check_feed) for v in added.values())
    finally:
        gradc.registry.OPS.pop("test_square")


def test_grad_ops_for_a_target_no_op_writes_are_an_error_naming_it():
    net = ProgramBuilder()
    x = net.data("x", [2], "float64")
    y = net.op("relu", {"X": x})[0]
    with pytest.raises(gradc.GradError, match="writes the target.*: x$"):
        append_grad_ops(net.program, ["x", y])
    with pytest.raises(gradc.GradError, match="none given"):
        append_grad_ops(net.program, [])


def test_loss_with_a_batch_dim_is_seeded_with_ones_like_it():
    """A loss of shape [-1] (per-example) gets d(loss)/d(loss) = ones shaped like it at run time."""
    net = ProgramBuilder()
    x = net.data("x", [-1, 3], "float64")
    loss = net.op("reduce_sum", {"X": net.op("tanh", {"X": x})[0]}, {"dim": [1]})[0]
    assert net.block.var(loss).shape == [-1]
    with pytest.warns(gradc.GradcWarning, match="one value per example"):
        gradc.append_backward(net.program, loss)
    seed = next(op for op in net.program.global_block.ops if op.attrs.get("op_role") == 257)
    assert seed.type == "fill_any_like" and seed.attrs["value"] == 1.0
    value = np.array([[0.1, -0.4, 0.7], [1.2, 0.3, -0.9]])
    (grad,) = gradc.Executor().run(net.program, {"x": value}, ["x@GRAD"], gradc.Scope())
    np.testing.assert_allclose(grad, 1 - np.tanh(value) ** 2)


def test_a_var_the_loss_does_not_depend_on_checks_as_zero():
    net = ProgramBuilder()
    x = net.data("x", [2], "float64")
    w = net.parameter("w", [2], "float64")
    h = net.op("elementwise_mul", {"X": x, "Y": w})[0]
    net.block.append_op("fill_constant", {}, {"Out": [h]}, {"shape": [2], "dtype": 6, "value": 3.0})
    loss = net.mean(h)
    grads = check_program(net.program, {"x": np.array([1.0, 2.0])}, ["w"], loss, {"w": np.array([0.5, 0.25])})
    np.testing.assert_array_equal(grads["w"], [0.0, 0.0])


def test_gradients_names_the_grad_of_each_input_or_none():
    net = ProgramBuilder()
    x = net.data("x", [2, 3], "float64")
    net.data("y", [2, 3], "float64")  # declared, never read: no gradient
    frozen = net.data("frozen", [2, 3], "float64", stop_gradient=True)
    loss = net.mean(net.op("elementwise_mul", {"X": net.op("tanh", {"X": x})[0], "Y": frozen})[0])
    with pytest.warns(gradc.GradcWarning, match="no gradient of frozen: stop_gradient is set"):
        assert gradc.gradients(net.program, loss, ["x", "y", "frozen"]) == ["x@GRAD", None, None]
    value = np.array([[0.2, -0.5, 1.0], [0.0, 0.3, -1.2]])
    weight = np.arange(6.0).reshape(2, 3)
    (grad,) = gradc.Executor().run(net.program, {"x": value, "y": value, "frozen": weight}, ["x@GRAD"],
                                   gradc.Scope())
    np.testing.assert_allclose(grad, (1 - np.tanh(value) ** 2) * weight / 6)


def test_compare_program_checks_a_float32_program_in_a_float64_copy():
    """The API does what `gradc check` promises: the float32 program and values are left as they were."""
    from fixtures import Fixture
    from gradc.gradcheck import compare_program

    fixture = Fixture("mlp")
    program = gradc.load(fixture.dir / "forward.pb")
    params = fixture.npz("params")
    _, checks = compare_program(program, fixture.npz("feed"), None, fixture.meta["loss"], params,
                                max_elements=5, float64=True)
    assert checks and all(c.mismatch is None for c in checks)
    assert all(c.max_abs_error < 1e-7 for c in checks)   # float32 central differences would be ~1e-3 off
    assert {v.dtype for v in program.global_block.vars.values() if v.dtype in (5, 6)} == {gradc.VarType.FP32}
    assert all(value.dtype == np.float32 for value in params.values())


def _shared_layer(frozen: bool):
    """w read beside a stop_gradient input alone (a frozen net's pass over a fixed image: its output stop_gradient
    when ``frozen``, as Paddle marks it) and beside a trainable image, whose path reaches the loss."""
    net = ProgramBuilder()
    content = net.data("content", [2, 3], "float64")
    net.block.var(content).stop_gradient = True   # as Paddle's data
    image = net.parameter("image", [2, 3], "float64")
    w = net.parameter("w", [3, 3], "float64")
    fixed = net.op("matmul_v2", {"X": content, "Y": w})[0]
    net.block.var(fixed).stop_gradient = frozen
    moved = net.op("matmul_v2", {"X": image, "Y": w})[0]
    return net, net.mean(net.op("elementwise_sub", {"X": moved, "Y": fixed})[0])


@pytest.mark.parametrize("frozen", [True, False])
def test_a_parameter_paddle_froze_is_inferred_only_where_a_path_stops(frozen):
    """find_path says when a leaf's value reaches an op whose output takes no gradient (only then is the frozen
    inference's sweep run); w, shown frozen by its pass over the content, gets no gradient though the image's path
    reaches it; unmarked, it trains."""
    from gradc.backward.path import find_path

    net, loss = _shared_layer(frozen)
    block = net.program.global_block
    assert find_path(block, list(block.ops), {loss}, set()).stops == frozen
    pairs = dict(gradc.append_backward(net.program, loss))
    assert set(pairs) == ({"image"} if frozen else {"image", "w"})

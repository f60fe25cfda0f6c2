"""The OpDef is the single source of truth: kind flags drive the passes, grad ops are ops with their own
makers, kernels read only what the definition declares, plans follow the program, and grad kernels
compute only the gradients asked for."""

import numpy as np
import pytest

import gradc
from gradc import registry
from gradc.executor import KERNELS
from gradc.gradcheck import check_program
from gradc.ir import AttrType, VarType
from gradc.layers import ProgramBuilder
from gradc.opdef import make_opdef
from gradc.ops.infer import same_as
from gradc.passes import Float64Pass


def test_slots_attrs_and_kind_flags_are_fields_of_the_definition():
    concat = registry.get("conditional_block")
    assert concat.slot("Input").duplicable and not concat.slot("Input").dispensable
    assert concat.sub_block_attr == "sub_block" and concat.attr_types["sub_block"] == AttrType.BLOCK
    assert registry.get("while").loop_carried == ("X", "Out")
    assert registry.get("select_output").partial_write
    assert registry.get("relu").sub_block_attr is None and registry.get("relu").loop_carried is None
    relu = registry.get("relu")
    assert isinstance(relu.grad, registry.GradOp) and relu.grad.uses == ("Out",)
    assert registry.get("relu_grad").grad_op_of == "relu"


def test_slot_notation():
    opdef = make_opdef("demo", ["X[]", "Scale?", "Shapes[]?"], ["Out"], {"n": registry.typed([], AttrType.LONGS)})
    assert [(s.name, s.duplicable, s.dispensable) for s in opdef.slots.values()] == [
        ("X", True, False), ("Scale", False, True), ("Shapes", True, True), ("Out", False, False)]
    assert opdef.attr_types == {"n": AttrType.LONGS} and opdef.attrs == {"n": []}


def _loop_program(op_type: str):
    """y = x; while i < 3: z = y * w; y = tanh(y); i += 1; loss = sum(z) -- with the loop op named
    ``op_type``. The loss reads z only, so y's gradient must be carried back through the iterations."""
    program = gradc.Program()
    main = program.global_block
    for name, shape, dtype in [("x", [2, 3], VarType.FP64), ("w", [2, 3], VarType.FP64), ("y", [2, 3], VarType.FP64),
                               ("z", [2, 3], VarType.FP64), ("i", [1], VarType.INT64), ("n", [1], VarType.INT64),
                               ("c", [1], VarType.BOOL), ("loss", [], VarType.FP64)]:
        main.create_var(name, shape, dtype, stop_gradient=dtype != VarType.FP64 or None)
    main.vars["w"].is_parameter = True
    main.create_var("scopes", None, None, type=VarType.STEP_SCOPES)
    main.append_op("assign", {"X": ["x"]}, {"Out": ["y"]})
    main.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["c"]})
    body = program.append_block(0)
    body.append_op("elementwise_mul", {"X": ["y"], "Y": ["w"]}, {"Out": ["z"]})
    body.append_op("tanh", {"X": ["y"]}, {"Out": ["y"]})
    body.append_op("increment", {"X": ["i"]}, {"Out": ["i"]}, {"step": 1.0})
    body.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["c"]})
    main.append_op(op_type, {"Condition": ["c"], "X": ["y", "w", "i", "n"]},
                   {"Out": ["z", "y", "i", "c"], "StepScopes": ["scopes"]}, {"sub_block": 1},
                   {"sub_block": AttrType.BLOCK})
    main.append_op("reduce_sum", {"X": ["z"]}, {"Out": ["loss"]}, {"reduce_all": True})
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((2, 3)), "i": np.zeros(1, np.int64), "n": np.full(1, 3, np.int64)}
    return program, feed, {"w": rng.standard_normal((2, 3))}


def test_a_loop_op_is_recognised_by_its_flag_not_its_name():
    """An op registered with loop_carried (here a renamed copy of while) gets a loop's backward."""
    while_def = registry.get("while")
    registry.defop("my_loop", ["Condition", "X[]"], ["Out[]", "StepScopes"],
                   attrs={"sub_block": registry.typed(0, AttrType.BLOCK), "is_test": False},
                   no_grad_inputs=["Condition"], no_grad_outputs=["StepScopes"], grad=while_def.grad,
                   loop_carried=("X", "Out"))
    KERNELS["my_loop"] = KERNELS["while"]
    try:
        program, feed, params = _loop_program("my_loop")
        grads = check_program(program, feed, ["x", "w"], loss="loss", params=params)
        expected_program, _, _ = _loop_program("while")
        expected = check_program(expected_program, feed, ["x", "w"], loss="loss", params=params)
        for name in ("x", "w"):
            np.testing.assert_array_equal(grads[name], expected[name])
    finally:
        del registry.OPS["my_loop"], KERNELS["my_loop"]


def test_defgrad_needs_slots_for_a_new_grad_op():
    with pytest.raises(ValueError, match="give its inputs and outputs"):
        registry.defgrad("nothing_grad_grad", grad=registry.NO_GRAD)


def test_a_grad_op_with_its_own_maker_gives_second_derivatives():
    """relu_grad has a maker (relu_grad_grad, Paddle's slots): d/d(dOut) of sum(W * relu_grad(Out, dOut))."""
    program = gradc.Program()
    block = program.global_block
    for name in ("out", "dout", "dx", "loss"):
        block.create_var(name, [3] if name != "loss" else [], VarType.FP64)
    block.append_op("relu_grad", {"Out": ["out"], "Out@GRAD": ["dout"]}, {"X@GRAD": ["dx"]})
    block.append_op("reduce_sum", {"X": ["dx"]}, {"Out": ["loss"]}, {"reduce_all": True})
    assert gradc.gradients(program, "loss", ["dout"]) == ["dout@GRAD"]
    types = [op.type for op in block.ops]
    assert "relu_grad_grad" in types
    out = np.array([1.0, -2.0, 3.0])
    (grad,) = gradc.Executor().run(program, {"out": out, "dout": np.ones(3)}, ["dout@GRAD"], gradc.Scope())
    np.testing.assert_array_equal(grad, [1.0, 0.0, 1.0])


def _one_op(type, inputs, outputs, attrs=None):
    program = gradc.Program()
    block = program.global_block
    for name in {n for names in [*inputs.values(), *outputs.values()] for n in names}:
        block.create_var(name, None, None)
    block.append_op(type, inputs, outputs, attrs)
    return program


def test_a_kernel_reading_an_undeclared_slot_is_an_error():
    KERNELS["sigmoid"], correct = (lambda k: {"Out": k.x("Nope")}), KERNELS["sigmoid"]
    try:
        with pytest.raises(gradc.ExecutionError, match=r"op 0 \(sigmoid\).*input slot 'Nope'.*does not declare"):
            gradc.Executor().run(_one_op("sigmoid", {"X": ["x"]}, {"Out": ["y"]}), {}, ["y"], gradc.Scope())
    finally:
        KERNELS["sigmoid"] = correct


def test_a_kernel_returning_an_undeclared_slot_is_an_error():
    KERNELS["sigmoid"], correct = (lambda k: {"Out": k.x("X"), "Outt": k.x("X")}), KERNELS["sigmoid"]
    try:
        with pytest.raises(gradc.ExecutionError, match="output slot 'Outt'"):
            gradc.Executor().run(_one_op("sigmoid", {"X": ["x"]}, {"Out": ["y"]}), {"x": np.ones(2)}, ["y"],
                                 gradc.Scope())
    finally:
        KERNELS["sigmoid"] = correct


def test_empty_required_and_optional_slots():
    """x() needs a var in the slot; optional() gives None for an empty one (layer_norm without Scale)."""
    feed = {"x": np.arange(6.0).reshape(2, 3)}
    program = _one_op("layer_norm", {"X": ["x"], "Scale": [], "Bias": []},
                      {"Y": ["y"], "Mean": ["m"], "Variance": ["v"]})
    (y,) = gradc.Executor().run(program, feed, ["y"], gradc.Scope())
    np.testing.assert_allclose(y, [[-1.2247, 0, 1.2247]] * 2, atol=1e-4)
    program = _one_op("tanh", {"X": []}, {"Out": ["y"]})
    with pytest.raises(gradc.ExecutionError, match="the required input slot 'X' is empty"):
        gradc.Executor().run(program, {}, ["y"], gradc.Scope())


@pytest.mark.parametrize("op", [
    gradc.OpDesc("tanh", {"X": ["x"]}, {"Out": ["y"]}),                                # no problem
    gradc.OpDesc("tanh", {"X": []}, {"Out": ["y"]}),                                   # a required slot empty
    gradc.OpDesc("tanh", {"X": ["a", "b"]}, {"Out": ["y"]}),                           # two vars in a single slot
    gradc.OpDesc("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scale": "two"}),             # a string for a float
    gradc.OpDesc("scale", {"X": ["x"]}, {"Out": ["y"]}, {"op_namescope": "/"}),        # an undeclared attribute
    gradc.OpDesc("scale", {"X": ["x"]}, {"Out": ["y"]}, {"op_namescope": "/", "scale": "two"}),   # both
    gradc.OpDesc("dropout", {"X": ["x"]}, {"Out": ["y"], "Mask": ["m"]}, {"op_namescope": "/", "is_test": 1},
                 {"is_test": AttrType.INT}),                                          # Paddle 1.x's int for a bool
    gradc.OpDesc("while", {"X": [], "Condition": ["c"]}, {"Out": [], "StepScopes": ["s"]}, {"sub_block": 3}),
    gradc.OpDesc("no_such_op", {"X": []}, {"Out": ["y"]}),
    gradc.OpDesc("tanh", {}, {"Out": ["y"]}),                                           # a required slot missing
    gradc.OpDesc("concat", {"X": []}, {"Out": ["y"]}),                                  # a required list empty
    gradc.OpDesc("concat", {"X": ["a", "b"]}, {"Out": ["y"]}),                          # a list of two
    gradc.OpDesc("layer_norm", {"X": ["x"], "Scale": ["a", "b"]}, {"Y": ["y"]}),        # an optional single of two
    gradc.OpDesc("layer_norm", {"X": ["x"], "Scale": []}, {"Y": ["y"]}, {"epsilon": 1}),   # empty; an int for a float
], ids=["ok", "empty", "two", "attr", "undeclared", "undeclared_and_attr", "int_bool", "sub_block",
         "unknown", "missing", "empty_list", "list", "optional_two", "optional_empty"])
def test_definition_problem_is_the_slot_problem_else_the_attribute_problem(op):
    """The backward's one-call check says what the two checks say, in their order."""
    assert registry.definition_problem(op) == (registry.slot_problem(op) or registry.attr_type_problem(op))


def test_a_plan_follows_the_program_through_a_pass():
    """A pass that widens the program to float64 after a run: the same executor rebuilds its plan once."""
    net = ProgramBuilder()
    x = net.data("x", [2, 3])
    y = net.op("tanh", {"X": x})[0]
    executor = gradc.Executor()
    for _ in range(3):
        executor.run(net.program, {"x": np.ones((2, 3), "float32")}, [y], gradc.Scope())
    assert executor.plans_built == 1
    revision = net.program.revision
    Float64Pass()(net.program)
    assert net.program.revision > revision
    for _ in range(2):
        (out,) = executor.run(net.program, {"x": np.ones((2, 3))}, [y], gradc.Scope())
    assert out.dtype == np.float64 and executor.plans_built == 2


class Spy(np.ndarray):
    """Counts the matrix products it takes part in."""

    matmuls = 0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc is np.matmul:
            Spy.matmuls += 1
        inputs = [np.asarray(a) if isinstance(a, Spy) else a for a in inputs]
        return getattr(ufunc, method)(*inputs, **kwargs)


@pytest.mark.parametrize("op, wanted, products", [("mul", ["Y@GRAD"], 1), ("mul", ["X@GRAD", "Y@GRAD"], 2),
                                                   ("matmul_v2", ["X@GRAD"], 1)])
def test_grad_kernels_compute_only_the_grads_asked_for(op, wanted, products):
    rng = np.random.default_rng(0)
    arrays = {n: rng.standard_normal(s).view(Spy) for n, s in [("x", (4, 3)), ("y", (3, 5)), ("dout", (4, 5))]}
    outputs = {slot: [slot.lower()] for slot in wanted}
    program = _one_op(f"{op}_grad", {"X": ["x"], "Y": ["y"], "Out@GRAD": ["dout"]}, outputs)
    scope = gradc.Scope()
    for name, value in arrays.items():
        scope[name] = value
    Spy.matmuls = 0
    gradc.Executor().run(program, {}, [slot.lower() for slot in wanted], scope)
    assert Spy.matmuls == products


def test_user_ops_get_typed_attrs_and_inference():
    @gradc.register_op("twice_demo", inputs=["X"], infer=same_as("X"), attrs={"k": 2.0})
    def twice_grad(g):
        return [g.op("scale", {"X": g.OG("Out")}, {"Out": g.IG("X")}, {"scale": g.attr("k")})]

    try:
        assert registry.get("twice_demo").attr_types == {"k": AttrType.FLOAT}
        net = ProgramBuilder()
        out = net.op("twice_demo", {"X": net.data("x", [2, 5])})
        assert net.block.var(out[0]).shape == [2, 5]
    finally:
        del registry.OPS["twice_demo"]


def test_an_attribute_honoured_only_at_its_default_is_an_error_otherwise():
    registry.defop("rounding_demo", ["X"], attrs={"mode": "nearest"}, grad=registry.NO_GRAD,
                   unsupported_attrs={"mode": "only round-to-nearest is implemented"})
    KERNELS["rounding_demo"] = lambda k: {"Out": np.round(k.x("X"))}
    try:
        feed = {"x": np.array([0.4, 1.6])}
        assert gradc.Executor().run(_one_op("rounding_demo", {"X": ["x"]}, {"Out": ["y"]}, {"mode": "nearest"}),
                                    feed, ["y"], gradc.Scope())[0].tolist() == [0.0, 2.0]
        with pytest.raises(gradc.ExecutionError, match=r"op 0 \(rounding_demo\): attribute mode='floor' is not "
                                                       r"supported \(only round-to-nearest is implemented\)"):
            gradc.Executor().run(_one_op("rounding_demo", {"X": ["x"]}, {"Out": ["y"]}, {"mode": "floor"}),
                                 feed, ["y"], gradc.Scope())
    finally:
        del registry.OPS["rounding_demo"], KERNELS["rounding_demo"]


def test_a_maker_shared_by_a_redefined_op_follows_the_new_definition():
    """The default maker works out an op type's grad slots once; a definition registered again (a plugin replacing
    one, say) with the same maker gets grad ops of its own slots, not those of the definition it replaced."""
    maker = registry.grad_op("X")
    fwd = gradc.OpDesc("redefined_demo", {"X": ["x"], "Y": ["y"]}, {"Out": ["out"]})

    def slots():
        grad = maker(registry.GradContext(fwd, registry.get("redefined_demo"), lambda name: True, None))[0]
        return grad.type, grad.inputs, grad.outputs
    registry.defop("redefined_demo", ["X", "Y"], grad=maker)
    try:
        assert slots() == ("redefined_demo_grad", {"X": ["x"], "Out@GRAD": ["out@GRAD"]},
                           {"X@GRAD": ["x@GRAD"], "Y@GRAD": ["y@GRAD"]})
        registry.defop("redefined_demo", ["X", "Y"], grad=maker, no_grad_inputs=["Y"], replace=True)
        assert slots() == ("redefined_demo_grad", {"X": ["x"], "Out@GRAD": ["out@GRAD"]}, {"X@GRAD": ["x@GRAD"]})
    finally:
        del registry.OPS["redefined_demo"], registry.OPS["redefined_demo_grad"]


def test_the_default_maker_reads_a_context_as_the_backward_reads_its_names_and_wanted_set():
    """A maker's context gives functions (grad_of, wants); the backward gives its GradNames and wanted set: both make
    the same grad op, a forward op lacking a declared attribute given its default, an unwanted grad left out."""
    mul = registry.get("mul")
    fwd = gradc.OpDesc("mul", {"X": ["x"], "Y": ["w"]}, {"Out": ["out"]}, {"x_num_col_dims": 2})
    grad_names = {"x": "x@GRAD@2", "w": "w@GRAD@2", "out": "out@GRAD@2"}
    from_context = mul.grad(registry.GradContext(fwd, mul, lambda name: name == "w", None,
                                                 grad_of=grad_names.__getitem__))[0]
    from_backward = mul.grad.grad_ops(fwd, mul, grad_names, {"w"})[0]
    for grad in (from_context, from_backward):
        assert grad.type == "mul_grad" and grad.inputs == {"X": ["x"], "Y": ["w"], "Out@GRAD": ["out@GRAD@2"]}
        assert grad.outputs == {"X@GRAD": [], "Y@GRAD": ["w@GRAD@2"]}
        assert grad.attrs == {"x_num_col_dims": 2, "y_num_col_dims": 1}
    assert fwd.attrs == {"x_num_col_dims": 2}   # the forward op's own attributes untouched


def test_the_default_maker_takes_one_var_slots_and_others_alike():
    """Ops whose every read slot holds one var take the maker's straight-line path, the others (a missing optional
    slot, a list of several or none) its loops: each slot as the forward op has it, grads where wanted, in order."""
    grad_names = {name: f"{name}@GRAD" for name in ("x", "s", "b", "y", "m", "v", "a", "c", "out")}

    def grad_op(fwd, wanted):
        (op,) = registry.get(fwd.type).grad.grad_ops(fwd, registry.get(fwd.type), grad_names, wanted)
        return op.inputs, op.outputs

    stats = {"Y": ["y"], "Mean": ["m"], "Variance": ["v"]}
    every = gradc.OpDesc("layer_norm", {"X": ["x"], "Scale": ["s"], "Bias": ["b"]}, stats)
    assert grad_op(every, {"x", "b"}) == (
        {"X": ["x"], "Scale": ["s"], "Bias": ["b"], "Mean": ["m"], "Variance": ["v"], "Y@GRAD": ["y@GRAD"]},
        {"X@GRAD": ["x@GRAD"], "Scale@GRAD": [], "Bias@GRAD": ["b@GRAD"]})
    no_bias = gradc.OpDesc("layer_norm", {"X": ["x"], "Scale": ["s"]}, stats)
    assert grad_op(no_bias, {"x", "s"}) == (
        {"X": ["x"], "Scale": ["s"], "Bias": [], "Mean": ["m"], "Variance": ["v"], "Y@GRAD": ["y@GRAD"]},
        {"X@GRAD": ["x@GRAD"], "Scale@GRAD": ["s@GRAD"], "Bias@GRAD": []})
    assert list(grad_op(no_bias, {"x"})[0]) == list(grad_op(every, {"x"})[0])   # the same slots, in the same order
    one = gradc.OpDesc("concat", {"X": ["a"], "AxisTensor": ["axis"]}, {"Out": ["out"]})
    assert grad_op(one, {"a"}) == ({"X": ["a"], "AxisTensor": ["axis"], "Out@GRAD": ["out@GRAD"]},
                                   {"X@GRAD": ["a@GRAD"]})
    two = gradc.OpDesc("concat", {"X": ["a", "c"], "AxisTensor": []}, {"Out": ["out"]})
    assert grad_op(two, {"c"}) == ({"X": ["a", "c"], "AxisTensor": [], "Out@GRAD": ["out@GRAD"]},
                                   {"X@GRAD": ["@EMPTY@", "c@GRAD"]})
    assert grad_op(two, set())[1] == {"X@GRAD": []}


def test_the_default_maker_gives_its_grad_ops_names_as_the_op_lists_them():
    """grad_op_of hands the backward the grad op's input and output names with the op: they are its input_names()
    and output_names(), on the straight-line path, on the loops' path (a list slot), for an op whose attributes name
    vars, and for one whose read slots collide (a use named as an output's grad slot: the dict keeps one list)."""
    grad_names = {name: f"{name}@GRAD" for name in ("x", "y", "a", "c", "out", "t")}
    registry.defop("named_like_grad_demo", ["X", "Out@GRAD"], ["Out"], grad=registry.grad_op("X", "Out@GRAD"))
    try:
        ops = [gradc.OpDesc("mul", {"X": ["x"], "Y": ["y"]}, {"Out": ["out"]}),
               gradc.OpDesc("concat", {"X": ["a", "c"], "AxisTensor": []}, {"Out": ["out"]}),
               gradc.OpDesc("named_like_grad_demo", {"X": ["x"], "Out@GRAD": ["y"]}, {"Out": ["out"]})]
        with_var_attr = gradc.OpDesc("mul", {"X": ["x"], "Y": ["y"]}, {"Out": ["out"]})
        with_var_attr.set_attr("scale_tensor", "t", AttrType.VAR)
        for fwd in [*ops, with_var_attr]:
            opdef = registry.get(fwd.type)
            for wanted in ({"x", "a", "c"}, {"y"}, set()):
                op, reads, written = opdef.grad.grad_op_of(fwd, opdef, grad_names, wanted)
                assert (reads, written) == (op.input_names(), op.output_names()), (fwd.type, wanted)
        assert "t" in opdef.grad.grad_op_of(with_var_attr, opdef, grad_names, {"x"})[1]
        demo = registry.get("named_like_grad_demo")
        assert demo.grad.grad_op_of(ops[2], demo, grad_names, {"x"})[1] == ["x", "out@GRAD"]   # one Out@GRAD
    finally:
        del registry.OPS["named_like_grad_demo"], registry.OPS["named_like_grad_demo_grad"]

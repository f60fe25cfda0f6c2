"""Build one coverage row in Paddle 3.3.1's default PIR mode, differentiate it with Paddle's own
append_backward / gradients under PIR, and run it: the PIR programs, the loss, every gradient."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import paddle
from paddle.utils import unique_name

from .paddle_run import FLOAT_DTYPES, is_one_value, make_feed, seed_of
from .spec import Row

# Ops whose outputs are random draws (outside test mode): gradc cannot reproduce Paddle's numbers.
RANDOM_OPS = frozenset({"pd_op.dropout", "pd_op.rrelu", "pd_op.uniform", "pd_op.gaussian", "pd_op.bernoulli",
                        "pd_op.randint", "pd_op.randperm", "pd_op.multinomial", "pd_op.poisson", "pd_op.nce",
                        "pd_op.class_center_sample", "pd_op.gumbel_softmax", "pd_op.truncated_gaussian_random",
                        "pd_op.binomial", "pd_op.standard_gamma", "pd_op.dirichlet", "pd_op.exponential_",
                        "pd_op.graph_sample_neighbors", "pd_op.weighted_sample_neighbors"})
LOSS_NAME = "loss"


@dataclass
class Built:
    main: paddle.static.Program          # forward and Paddle's grad ops
    startup: paddle.static.Program
    forward: paddle.static.Program       # the forward program, fetching the loss as "loss"
    training: paddle.static.Program      # main, fetching the loss and every gradient as "<var>@GRAD"
    loss: object                         # the loss value of main
    wrt: list[tuple[str, object]]        # (param or input name, its gradient value in main)
    forward_ops: list[str]               # op names, nested regions included
    backward_ops: list[str]              # the op names append_backward added
    random: bool                         # a random op draws outside test mode


def op_names(ops) -> list[str]:
    names, stack = set(), list(ops)
    while stack:
        op = stack.pop()
        names.add(op.name())
        stack.extend(inner for block in op.blocks() for inner in block.ops)
    return sorted(names)


def float_outputs(result) -> list:
    if isinstance(result, (tuple, list)):
        return [t for item in result for t in float_outputs(item)]
    if isinstance(result, paddle.pir.Value) and result.dtype in FLOAT_DTYPES:
        return [result]
    return []


def _is_random(op) -> bool:
    return op.name() in RANDOM_OPS and not op.attrs().get("is_test", False)


def _inputs(row: Row) -> list:
    inputs = []
    for name, spec in zip(row.input_names, row.inputs):
        value = paddle.static.data(name, spec.declared, "float32" if spec.is_float else spec.int_dtype)
        value.stop_gradient = not spec.grad
        inputs.append(value)
    return inputs


def build(row: Row, weight_shapes: list) -> Built:
    """The row's PIR program with a scalar loss: the row's scalar output, else the sum of
    mean(output * loss_w<i>) over its float outputs (the weights, of ``weight_shapes``, are fed)."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with unique_name.guard(), paddle.static.program_guard(main, startup):
        inputs = _inputs(row)
        outputs = float_outputs(row.build(*inputs))
        if not weight_shapes:
            loss = outputs[0]
        else:
            terms = []
            for i, (out, shape) in enumerate(zip(outputs, weight_shapes)):
                weight = paddle.static.data(f"loss_w{i}", list(shape), out.dtype)
                terms.append(paddle.mean(paddle.multiply(out, weight)))
            loss = paddle.add_n(terms) if len(terms) > 1 else terms[0]
        forward_count = len(main.global_block().ops)
        forward = _with_fetches(main, [(loss, LOSS_NAME)])
        params = [p for p in main.global_block().all_parameters() if not p.stop_gradient]
        differentiated = [v for v in inputs if not v.stop_gradient]
        grads = paddle.static.gradients([loss], params + differentiated)
    names = [p.name for p in params] + [v.name for v in differentiated]
    wrt = [(name, g) for name, g in zip(names, grads) if g is not None]
    ops = main.global_block().ops
    training = _with_fetches(main, [(loss, LOSS_NAME)] + [(g, f"{n}@GRAD") for n, g in wrt])
    forward_ops = [name for name in op_names(forward.global_block().ops) if name != "pd_op.fetch"]
    # the backward also adds ops inside forward regions (a while body pushes what its grad pops)
    added = set(op_names(ops[forward_count:])) | set(op_names(ops[:forward_count])) - set(forward_ops)
    return Built(main, startup, forward, training, loss, wrt, forward_ops, sorted(added),
                 any(_is_random(op) for op in ops[:forward_count]))


def weight_shapes(row: Row, feed: dict, seed: int) -> list[tuple[int, ...]]:
    """The shapes of the row's float outputs (none for a scalar result, the loss itself); outputs
    with unknown dims are run for theirs."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with unique_name.guard(), paddle.static.program_guard(main, startup):
        outputs = float_outputs(row.build(*_inputs(row)))
    if not outputs:
        raise ValueError("the row has no float output")
    shapes = [tuple(out.shape) for out in outputs]
    if len(shapes) == 1 and is_one_value(shapes[0]):
        return []
    if all(d >= 0 for shape in shapes for d in shape):
        return shapes
    with paddle.static.scope_guard(paddle.static.Scope()):
        executor = paddle.static.Executor(paddle.CPUPlace())
        paddle.seed(seed)
        executor.run(startup)
        return [value.shape for value in executor.run(main, feed=feed, fetch_list=outputs)]


def _with_fetches(program, fetches) -> paddle.static.Program:
    mapping = paddle.pir.IrMapping()
    copy = program.clone(mapping)
    with paddle.static.program_guard(copy):
        for col, (value, name) in enumerate(fetches):
            paddle._pir_ops.fetch(mapping.look_up(value), name, col).persistable = True
    return copy


@dataclass
class Values:
    params: dict[str, np.ndarray]
    loss: np.ndarray
    grads: dict[str, np.ndarray]


def parameter_values(program, scope) -> dict[str, np.ndarray]:
    values = {}
    for op in program.global_block().ops:
        if op.name() == "builtin.parameter":
            var = scope.find_var(op.attrs()["parameter_name"])
            if var is not None and var.get_tensor()._is_initialized():
                values[op.attrs()["parameter_name"]] = np.array(var.get_tensor())
    return values


def run(built: Built, feed: dict, seed: int) -> Values:
    with paddle.static.scope_guard(paddle.static.Scope()):
        executor = paddle.static.Executor(paddle.CPUPlace())
        paddle.seed(seed)
        executor.run(built.startup)
        params = parameter_values(built.main, paddle.static.global_scope())
        values = executor.run(built.main, feed=feed, fetch_list=[built.loss] + [g for _, g in built.wrt])
    return Values(params, values[0], {f"{name}@GRAD": v for (name, _), v in zip(built.wrt, values[1:])})


def build_and_run(row: Row) -> tuple[Built, dict, Values | None]:
    """Build, then run unless the row is program-only or draws random numbers."""
    seed = seed_of(row)
    feed = make_feed(row)
    shapes = weight_shapes(row, feed, seed)
    built = build(row, shapes)
    rng = np.random.default_rng(seed + 1)
    feed |= {f"loss_w{i}": rng.standard_normal(shape).astype("float32") for i, shape in enumerate(shapes)}
    if not row.numbers or built.random:
        return built, feed, None
    return built, feed, run(built, feed, seed)

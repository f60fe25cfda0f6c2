"""Kernels of gradc.ops.rnn: thin wrappers over rnn_math that check the slots against the attributes
before any work. Reserve travels as the bytes of rnn_math's float Reserve (uint8, as Paddle declares it;
see gradc.ops.rnn)."""

from __future__ import annotations

import numpy as np

from ...errors import ExecutionError
from ...ir import EMPTY_VAR
from ...ops.rnn import attr_problem, describe_problems, rnn_shape_of
from ...rnn_shape import named, shape_problems
from .. import paddle_random, randomness
from ..dual import across, along_each, listed
from . import kernel
from .rnn_math import rnn_backward, rnn_forward, sequence_length_problem


def _fail(k, message: str):
    raise ExecutionError(f"{k.where}: {message}")


def _inputs(k):
    """The op's RnnShape and its checked inputs: Input, PreState list, WeightList, SequenceLength or None."""
    problem = attr_problem(k.attr("mode"), k.attr("num_layers"), k.attr("input_size"), k.attr("hidden_size"),
                           k.attr("dropout_prob"))
    if problem:
        _fail(k, problem)
    shape = rnn_shape_of(k.attr)
    x, states, weights = k.x("Input"), k.xs("PreState"), k.xs("WeightList")
    problems = _value_problems(shape, x, states, weights)
    if problems:
        _fail(k, describe_problems(k.op, problems))
    lengths = k.optional("SequenceLength")
    if lengths is not None:
        problem = sequence_length_problem(lengths, x.shape[0], x.shape[1])
        if problem:
            _fail(k, f"{named(k.op, 'SequenceLength')} {problem}")
    return shape, x, states, weights, lengths


def _value_problems(shape, x, states, weights) -> list[tuple[str, str]]:
    """shape_problems of the values, and their dtypes: float32 or float64, all alike."""
    problems = shape_problems(shape, x.shape, [s.shape for s in states], [w.shape for w in weights])
    if x.dtype not in (np.float32, np.float64):
        problems.append(("Input", f"must be float32 or float64, got {x.dtype}"))
    problems += [(f"{slot}[{i}]", f"must be {x.dtype} like Input, got {a.dtype}")
                 for slot, arrays in (("PreState", states), ("WeightList", weights))
                 for i, a in enumerate(arrays) if a.dtype != x.dtype]
    return problems


def _dropout_applies(k) -> bool:
    """Dropout acts between layers, in training, with a positive probability."""
    return not k.attr("is_test") and k.attr("dropout_prob") > 0 and k.attr("num_layers") > 1


@kernel("rnn")
def rnn(k):
    shape, x, states, weights, lengths = _inputs(k)
    mask, prob = None, k.attr("dropout_prob")
    if _dropout_applies(k):   # Paddle's draws: zero where uniform(0, 1) < p, from its seed or the global engine
        seed, dims = k.attr("seed"), x.shape[:2] + (shape.directions * shape.hidden_size,)
        engine = randomness.engine(seed or None)
        mask = (paddle_random.canonical(engine, int(np.prod(dims))).reshape(dims) >= np.float32(prob)).astype(np.uint8)
    out, finals, reserve = rnn_forward(shape, x, states, weights, lengths, mask, prob)
    results = {"Out": out, "State": finals, "Reserve": reserve.view(np.uint8)}
    state = k.op.output("DropoutState")
    if mask is not None:
        results["DropoutState"] = mask
    elif state and (not k.attr("is_test") or k.scope.find(state[0]) is None):
        # Paddle's: ones of Out's shape in training; in test mode what it held, else nothing (an op reads it empty)
        results["DropoutState"] = np.ones(out.shape, np.uint8) if not k.attr("is_test") else np.zeros(0, np.uint8)
    return results


def _reserve(k, shape, x):
    """The forward's float Reserve from its bytes; an error if they cannot come from these inputs."""
    data = np.ascontiguousarray(k.x("Reserve"))
    expected = shape.reserve_shape(*x.shape[:2])
    if data.dtype != np.uint8 or data.nbytes != x.itemsize * int(np.prod(expected)):
        _fail(k, f"{named(k.op, 'Reserve')} holds {data.dtype} {list(data.shape)}, not the bytes of the "
                 f"{x.dtype} {list(expected)} the rnn forward of these inputs writes")
    return data.view(x.dtype).reshape(expected)


def _grads_given(k, slot: str) -> list:
    """The grads of a list slot, None where a var has no grad (zeros for rnn_backward)."""
    return [None if name == EMPTY_VAR else k.scope.find(name) for name in k.op.inputs.get(slot, [])] \
        if k.has(slot) else []


@kernel("rnn_grad")
def rnn_grad(k):
    if not any(k.wants(slot) for slot in ("Input@GRAD", "PreState@GRAD", "WeightList@GRAD")):
        return {}
    shape, x, states, weights, lengths = _inputs(k)
    reserve = _reserve(k, shape, x)
    mask = k.x("DropoutState") if _dropout_applies(k) else None
    out_grad = (_grads_given(k, "Out@GRAD") or [None])[0]
    state_grads = _grads_given(k, "State@GRAD") or None
    dx, dstates, dweights = rnn_backward(shape, x, states, weights, reserve, out_grad, state_grads, lengths,
                                         mask, k.attr("dropout_prob"))
    return k.grads({"Input@GRAD": lambda: dx, "PreState@GRAD": lambda: dstates, "WeightList@GRAD": lambda: dweights})



@kernel("rnn_grad_grad")
def rnn_grad_grad(k):
    """rnn_grad along k directions of (Input, PreState, WeightList) (gradc.ops.directional_double): the forward and
    rnn_grad run once on duals nested once per direction, in float64; the parts along every direction are the
    grads of D_V <dOut, (Out, State)> (theta's) and D_V (Out, State) (dOut's). SequenceLength and the dropout mask
    are constants."""
    shape, x, states, weights, lengths = _inputs(k)
    count = len(k.op.inputs.get("Input@GRAD@GRAD", []))

    def directed(values: list, slot: str) -> list:
        given = listed(k, slot) or [None] * (count * len(values))
        return [along_each(v.astype(np.float64), given[j::len(values)]) for j, v in enumerate(values)]

    (xd,), sd, wd = (directed(values, f"{slot}@GRAD@GRAD") for values, slot in
                     (([x], "Input"), (states, "PreState"), (weights, "WeightList")))
    mask, prob = (k.x("DropoutState") if _dropout_applies(k) else None), k.attr("dropout_prob")
    out, finals, reserve = rnn_forward(shape, xd, sd, wd, lengths, mask, prob)
    def constant(grad):   # on duals too: the kernels write products with them into dual arrays
        return None if grad is None else along_each(grad.astype(np.float64), [None] * count)

    out_grad = constant((_grads_given(k, "Out@GRAD") or [None])[0])
    state_grads = [constant(g) for g in _grads_given(k, "State@GRAD")] or None
    dx, dstates, dweights = rnn_backward(shape, xd, sd, wd, reserve, out_grad, state_grads, lengths, mask, prob)

    def parts(values: list) -> list:
        return [across(v, count).astype(x.dtype) for v in values]
    return k.grads({"Input@GRAD": lambda: parts([dx])[0], "PreState@GRAD": lambda: parts(dstates),
                    "WeightList@GRAD": lambda: parts(dweights), "Out@GRAD@GRAD": lambda: parts([out])[0],
                    "State@GRAD@GRAD": lambda: parts(finals)})

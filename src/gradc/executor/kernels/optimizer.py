"""Kernels of gradc.ops.optimizer: thin wrappers over the update rules of optimizer_math (one rule per op, no
copy). Each checks its op first (gradc.ops.optimizer_checks: the same errors shape inference gives), and with a
master weight (multi_precision) runs the rule on it and writes ParamOut as its cast, as Paddle's GPU kernels do."""

from __future__ import annotations

import numpy as np

from ...errors import ExecutionError
from ...ops.optimizer_checks import UPDATES, OpView, check_update
from . import kernel
from . import optimizer_math as M


def check(k) -> None:
    """The checks of the op's UpdateRule on the arrays it reads; not again while the shapes, fed hyper-parameters
    and attributes they read stay those they passed on (a training loop's steps): the checks cost as much as a small
    parameter's update."""
    rule = UPDATES[k.op.type]
    try:
        seen = _read_by_checks(k, rule)
    except Exception:  # noqa: BLE001 - a var without a value, say: the checks say what is wrong
        seen = None
    if seen is not None and seen == k.checked:
        return

    def shape(slot, i):
        return list(np.shape(k.x(slot, i))) if i < len(k.op.input(slot)) else None

    def value(slot, i):
        return float(np.asarray(k.x(slot, i)).reshape(-1)[0])

    def fail(message):
        raise ExecutionError(f"{k.where}: {message}")

    check_update(rule, OpView(k.op.input, shape, k.attr, value), fail)
    k.checked = seen


def _read_by_checks(k, rule) -> tuple[list, list, list]:
    """What the rule's checks read of the op that can change between runs of one plan (the program's edits make a
    new plan): the shapes of its inputs, the first value of each fed hyper-parameter tensor, the attributes."""
    slots, attrs = rule.reads
    inputs, x = k.op.inputs, k.x
    shapes = [x(slot, i).shape for slot in slots for i in range(len(inputs.get(slot, ())))]
    fed = [float(np.asarray(x(slot)).reshape(-1)[0]) for slot, _ in rule.tensors if inputs.get(slot)]
    values = [list(v) if type(v) is list else v for v in map(k.op.attrs.get, attrs)]
    return shapes, fed, values


def out(slot: str) -> str:
    """Param -> ParamOut, param -> param_out (the output slot that overwrites an input slot)."""
    return slot + ("_out" if slot.islower() else "Out")


def update(k, rule, outputs: list[str], param: str = "Param", grad: str = "Grad", master: str = "MasterParam",
           i: int | None = None) -> dict:
    """{output slot: value} of ``rule(param, grad)``, which returns values in the order of ``outputs`` (ParamOut
    first, None for an output it leaves alone). ``i`` picks one parameter of a list op (the values are then
    returned for that index). With multi_precision and a master weight the rule runs on the master."""
    index = 0 if i is None else i
    value, gradient = k.x(param, index), k.x(grad, index)
    masters = k.op.input(master)
    if k.attr("multi_precision") and masters:
        weight = k.x(master, index)
        results = dict(zip(outputs, rule(weight, gradient.astype(weight.dtype))))
        results[out(master)] = results[outputs[0]]
        results[outputs[0]] = results[outputs[0]].astype(value.dtype)
        for slot in outputs[1:]:   # accumulators keep their dtype (Rprop's float16 ones: float32 math, stored back)
            source = slot[:-len("_out")] if slot.endswith("_out") else slot[:-len("Out")]
            if results.get(slot) is not None and index < len(k.op.input(source)):
                results[slot] = np.asarray(results[slot]).astype(np.asarray(k.x(source, index)).dtype, copy=False)
    else:
        results = dict(zip(outputs, rule(value, gradient)))
    return {slot: v for slot, v in results.items() if v is not None}


def update_each(k, rule_of, outputs: list[str], param: str = "Param") -> dict:
    """A list op (lars_momentum, merged_*): ``rule_of(i)`` updates parameter i; outputs become lists."""
    columns = [update(k, rule_of(i), outputs, param, i=i) for i in range(len(k.op.input(param)))]
    return {slot: [column[slot] for column in columns] for slot in columns[0]} if columns else {}


def pick(values: list, i: int):
    """Entry i of a per-parameter list input or attribute, or its only entry when it is shared."""
    return values[i if len(values) > 1 else 0]


def bfloat16_sgd(k) -> bool:
    """Whether sgd updates a bfloat16 parameter itself (no master weight): Paddle's kernel then steps in bfloat16."""
    return k.bfloat16 and not (k.attr("multi_precision") and k.op.input("MasterParam"))


@kernel("sgd")
def sgd(k):
    check(k)
    if bfloat16_sgd(k):
        return {"ParamOut": M.bfloat16_sgd(k.x("Param"), k.x("Grad"), k.x("LearningRate"))}
    return update(k, lambda p, g: M.sgd(p, g, k.x("LearningRate")), ["ParamOut"])


def _momentum_rule(k, velocity, lr, method, coeff):
    return lambda p, g: M.momentum(p, g, velocity, lr, k.attr("mu"), k.attr("use_nesterov"), method, coeff,
                                   k.attr("rescale_grad"))


@kernel("momentum")
def momentum(k):
    check(k)
    rule = _momentum_rule(k, k.x("Velocity"), k.x("LearningRate"), k.attr("regularization_method"),
                          k.attr("regularization_coeff"))
    return update(k, rule, ["ParamOut", "VelocityOut"])


@kernel("merged_momentum")
def merged_momentum(k):
    check(k)
    lrs, methods, coeffs = k.xs("LearningRate"), k.attr("regularization_method"), k.attr("regularization_coeff")
    return update_each(k, lambda i: _momentum_rule(k, k.x("Velocity", i), pick(lrs, i),
                                                   methods[i] if methods else "", coeffs[i] if coeffs else 0.0),
                       ["ParamOut", "VelocityOut"])


@kernel("lars_momentum")
def lars_momentum(k):
    check(k)
    decays, lrs = k.attr("lars_weight_decay"), k.xs("LearningRate")
    if len(decays) not in (1, len(k.op.input("Param"))):
        raise ExecutionError(f"{k.where}: attribute lars_weight_decay has {len(decays)} values for "
                             f"{len(k.op.input('Param'))} parameters")
    return update_each(k, lambda i: lambda p, g: M.lars_momentum(
        p, g, k.x("Velocity", i), pick(lrs, i), k.attr("mu"), k.attr("lars_coeff"), pick(decays, i),
        k.attr("epsilon"), k.attr("rescale_grad")), ["ParamOut", "VelocityOut"])


@kernel("adagrad")
def adagrad(k):
    check(k)
    return update(k, lambda p, g: M.adagrad(p, g, k.x("Moment"), k.x("LearningRate"), k.attr("epsilon")),
                  ["ParamOut", "MomentOut"])


@kernel("adadelta")
def adadelta(k):
    check(k)
    return update(k, lambda p, g: M.adadelta(p, g, k.x("AvgSquaredGrad"), k.x("AvgSquaredUpdate"),
                                             k.x("LearningRate"), k.attr("rho"), k.attr("epsilon")),
                  ["ParamOut", "AvgSquaredGradOut", "AvgSquaredUpdateOut"])


@kernel("rmsprop")
def rmsprop(k):
    check(k)
    return update(k, lambda p, g: M.rmsprop(p, k.x("MeanSquare"), g, k.x("Moment"), k.x("LearningRate"),
                                            k.attr("epsilon"), k.attr("decay"), k.attr("momentum"),
                                            k.attr("centered"), k.optional("MeanGrad")),
                  ["ParamOut", "MomentOut", "MeanSquareOut", "MeanGradOut"])


@kernel("rprop")
def rprop(k):
    check(k)
    return update(k, lambda p, g: M.rprop(p, g, k.x("prev"), k.x("learning_rate"), k.x("learning_rate_range"),
                                          k.x("etas")),
                  ["param_out", "prev_out", "learning_rate_out"], "param", "grad", "master_param")

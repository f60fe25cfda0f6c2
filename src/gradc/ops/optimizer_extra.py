"""The optimizer ops no current Paddle optimizer class of gradc.ops.optimizer writes: ASGD (paddle.optimizer.ASGD),
the older FTRL, DecayedAdagrad, DPSGD and sparse momentum (fluid's optimizers; their CPU kernels are still in
Paddle 3.3.1), and ModelAverage's average_accumulates. All update in place and have no gradient; docs/optimizers.md
has the rules."""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import NO_GRAD, defop, typed
from .optimizer import L2_METHODS, float32
from .optimizer_amp import check_one_value
from .optimizer_checks import OpView, UpdateRule, check_update, update_rule


def defupdate_into(type: str, inputs: list[str], outputs: dict[str, str], attrs: dict, rule: UpdateRule) -> None:
    """An optimizer op whose output slots do not all name their input by a suffix (FTRL's SquaredAccumOut
    overwrites SquaredAccumulator): ``outputs`` maps each output slot (with its flags) to the input it
    overwrites, and each is shaped like it."""
    update_rule(type, rule)

    def infer(ctx):
        check_update(rule, OpView(ctx.op.input, ctx.shape, ctx.attr), ctx.fail)
        return {out.rstrip("?"): (ctx.shape(source), ctx.dtype(source))
                for out, source in outputs.items() if ctx.has(source)}

    defop(type, inputs, list(outputs), attrs={k: float32(v) for k, v in attrs.items()}, infer=infer, grad=NO_GRAD)


# ASGD: d sums the latest gradient of each of the last n batches (y is the one it replaces), Param -= lr / n * d
defupdate_into("asgd", ["param", "grad", "learning_rate", "d", "y", "n", "master_param?"],
               {"param_out": "param", "d_out": "d", "y_out": "y", "master_param_out?": "master_param"},
               {"multi_precision": False},
               UpdateRule(param="param", grad="grad", lr="learning_rate", like_param=("d", "y"), one_value=("n",),
                          nonnegative=()))
defupdate_into("ftrl", ["Param", "SquaredAccumulator", "LinearAccumulator", "Grad", "LearningRate"],
               {"ParamOut": "Param", "SquaredAccumOut": "SquaredAccumulator", "LinearAccumOut": "LinearAccumulator"},
               {"l1": 0.0, "l2": 0.0, "lr_power": -0.5},
               UpdateRule(like_param=("SquaredAccumulator", "LinearAccumulator"), nonnegative=("l1", "l2")))
defupdate_into("decayed_adagrad", ["Param", "Grad", "Moment", "LearningRate"],
               {"ParamOut": "Param", "MomentOut": "Moment"}, {"decay": 0.95, "epsilon": 1e-6},
               UpdateRule(like_param=("Moment",)))
# DPSGD clips the gradient to norm `clip` and adds one Gaussian draw (seeded by `seed`) / batch_size to it
defupdate_into("dpsgd", ["Param", "Grad", "LearningRate"], {"ParamOut": "Param"},
               {"clip": 10.0, "batch_size": 16.0, "sigma": 1.0, "seed": 0},
               UpdateRule(nonnegative=("clip", "batch_size", "sigma")))

# Sparse momentum's Grad holds only the rows (axis 0) or columns (axis 1) that Index names: its rule only tells
# the training passes its learning rate and accumulator (the op's checks are check_sparse_momentum)
update_rule("sparse_momentum", UpdateRule(like_param=("Velocity",), nonnegative=(), choices=L2_METHODS))


def check_sparse_momentum(names, shape, attr, axis: int, fail) -> None:
    """The shapes of Param [N, D], Velocity (like it), Grad ([len(Index), D] or [N, len(Index)]) and Index
    ([n] or [n, 1]), and the axis (0 or 1); ``shape(slot)`` None where unknown."""
    check_one_value(names, shape, fail, "LearningRate")
    if axis not in (0, 1):
        fail(f"axis is {axis}, but sparse_momentum updates along axis 0 or 1")
    for name, allowed in L2_METHODS:
        if attr(name) not in allowed:
            fail(f"attribute {name} is {attr(name)!r}; Paddle knows {', '.join(map(repr, allowed))}")
    param, grad, index = shape("Param"), shape("Grad"), shape("Index")
    for slot, dims in (("Param", param), ("Grad", grad)):
        if dims is not None and len(dims) != 2:
            fail(f"{slot} '{names(slot)[0]}' has shape {list(dims)}, but sparse_momentum needs a matrix")
    velocity = shape("Velocity")
    if velocity is not None and param is not None and list(velocity) != list(param):
        fail(f"Velocity '{names('Velocity')[0]}' has shape {list(velocity)}, but parameter "
             f"'{names('Param')[0]}' has shape {list(param)}")
    if index is not None and not (len(index) == 1 or (len(index) == 2 and index[1] == 1)):
        fail(f"Index '{names('Index')[0]}' has shape {list(index)}, but it must be [n] or [n, 1]")
    if index is not None and list(index) == [0]:
        fail(f"Index '{names('Index')[0]}' is empty: Paddle's kernel refuses an empty index of rank 1")
    if None in (param, grad, index) or min(*param, *grad, index[0]) < 0:
        return
    expected = [index[0], param[1]] if axis == 0 else [param[0], index[0]]
    if list(grad) != expected:
        fail(f"Grad '{names('Grad')[0]}' has shape {list(grad)}, but Param {list(param)} updated along axis "
             f"{axis} by {index[0]} indices needs {expected}")


def _sparse_momentum_infer(ctx):
    check_sparse_momentum(ctx.op.input, ctx.shape, ctx.attr, ctx.attr("axis"), ctx.fail)
    results = {"ParamOut": (ctx.shape("Param"), ctx.dtype("Param")),
               "VelocityOut": (ctx.shape("Velocity"), ctx.dtype("Velocity"))}
    if ctx.has("MasterParam"):
        results["MasterParamOut"] = (ctx.shape("MasterParam"), ctx.dtype("MasterParam"))
    return results


# mu has no default in Paddle's op (fluid's class passed it); the Axis tensor, when fed, overrides axis
defop("sparse_momentum", ["Param", "Grad", "Velocity", "Index", "LearningRate", "MasterParam?", "Axis?"],
      ["ParamOut", "VelocityOut", "MasterParamOut?"],
      attrs={k: float32(v) for k, v in {"mu": 0.9, "use_nesterov": False, "regularization_method": "",
                                        "regularization_coeff": 0.0, "multi_precision": False, "rescale_grad": 1.0,
                                        "axis": 0}.items()},
      infer=_sparse_momentum_infer, grad=NO_GRAD)

AVERAGE_SUMS = ("sum_1", "sum_2", "sum_3")
AVERAGE_COUNTERS = ("num_accumulates", "old_num_accumulates", "num_updates")


def _average_accumulates_infer(ctx):
    param = ctx.shape("param")
    for name in AVERAGE_SUMS:
        dims = ctx.shape(f"in_{name}")
        if dims is not None and param is not None and list(dims) != list(param):
            ctx.fail(f"in_{name} '{ctx.op.input(f'in_{name}')[0]}' has shape {dims}, but param "
                     f"'{ctx.op.input('param')[0]}' has shape {param}")
    check_one_value(ctx.op.input, ctx.shape, ctx.fail, *(f"in_{name}" for name in AVERAGE_COUNTERS))
    check_average_windows(ctx.attr, ctx.fail)
    return {**{f"out_{name}": (ctx.shape(f"in_{name}"), ctx.dtype(f"in_{name}")) for name in AVERAGE_SUMS},
            **{f"out_{name}": (ctx.shape(f"in_{name}"), VarType.INT64) for name in AVERAGE_COUNTERS}}


def check_average_windows(attr, fail) -> None:
    if attr("min_average_window") > attr("max_average_window"):
        fail(f"attribute min_average_window is {attr('min_average_window')}, but it must be <= "
             f"max_average_window ({attr('max_average_window')})")


# ModelAverage: sum_1 adds the parameter each step; sums move to sum_2 (every 16384 updates, against rounding)
# and to sum_3 (when the window is full, restarting the count): the average is (sum_1 + sum_2 + sum_3) / count
defop("average_accumulates",
      ["param", *(f"in_{name}" for name in AVERAGE_SUMS + AVERAGE_COUNTERS)],
      [f"out_{name}" for name in AVERAGE_SUMS + AVERAGE_COUNTERS],
      attrs={"average_window": 0.0, "max_average_window": typed(2**63 - 1, AttrType.LONG),
             "min_average_window": typed(10000, AttrType.LONG)},
      infer=_average_accumulates_infer, grad=NO_GRAD)

"""Optional inputs of the optimizer ops (gradc.ops.optimizer, optimizer_adam).

MasterParam (multi_precision): the update runs on the float32 master weight and ParamOut is its float16 cast,
as Paddle's GPU kernels do (its CPU momentum, adagrad, adamax and rmsprop kernels ignore the master); without
the master the update runs on the float16 parameter, which rounds differently. The expected values come from
the numpy rules of optimizer_math applied to the master. SkipUpdate copies every input to its output; the
*Tensor inputs override their attributes; Moment2Max (amsgrad) and MeanGrad (centered) are needed by the
attribute that reads them, so those cases show the values they change instead of a run without them.
"""

import numpy as np

from gradc.executor.kernels import optimizer_math as M

from . import SlotCase

r = np.random.default_rng(11)


def f32(*shape, low=-1.0, high=1.0):
    return r.uniform(low, high, shape).astype("float32")


P, G, LR = f32(2, 3), f32(2, 3), np.array([0.1], "float32")
V, M1, M2 = f32(2, 3), f32(2, 3, low=0.0), f32(2, 3, low=0.01)
B1P, B2P = np.array([0.9 ** 3], "float32"), np.array([0.999 ** 3], "float32")
ONES = np.ones((2, 3), "float32")


MASTER_OUT: dict[str, tuple] = {}   # op -> (master output slot, its expected value)


def master_case(op: str, inputs: dict, attrs: dict, rule, outputs: list[str], lists: bool = False,
                names=("Param", "Grad", "MasterParam")) -> SlotCase:
    """``rule(param, grad)`` -> output values: the case feeds a float16 parameter and gradient with a float32
    master weight; ParamOut is the master's update cast to float16 (MasterParamOut, the update itself, is not
    written without the master: MASTER_OUT keeps it for tests/test_optimizer_ops.py)."""
    param, grad, master = names
    wrap = (lambda v: [v]) if lists else (lambda v: v)
    values = rule(P, G.astype("float16").astype("float32"))   # the gradient comes in float16
    expected = {slot: wrap(v) for slot, v in zip(outputs, values) if v is not None}
    param_out, master_out = outputs[0], master + ("_out" if master.islower() else "Out")
    expected[param_out] = wrap(values[0].astype("float16"))
    feed = {slot: wrap(v) for slot, v in inputs.items()}
    feed.update({param: wrap(P.astype("float16")), grad: wrap(G.astype("float16")), master: wrap(P)})
    MASTER_OUT[op] = (master_out, wrap(values[0]))
    return SlotCase(op, master, feed, expected, {"multi_precision": True, **attrs})


ADAM_IN = {"LearningRate": LR, "Moment1": M1, "Moment2": M2, "Beta1Pow": B1P, "Beta2Pow": B2P}
ADAM_OUT = ["ParamOut", "Moment1Out", "Moment2Out", "Moment2MaxOut", "Beta1PowOut", "Beta2PowOut"]
LAMB_OUT = ["ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"]


def adam(p, g, beta1=0.9, beta2=0.999, epsilon=1e-8, **options):
    return M.adam(p, g, LR, M1, M2, B1P, B2P, beta1, beta2, epsilon, **options)


def adamw(p, g, beta1=0.9, beta2=0.999, epsilon=1e-8, with_decay=False, **options):
    return M.adamw(p, g, LR, M1, M2, B1P, B2P, beta1, beta2, epsilon, 0.01, 1.0, with_decay, **options)


def lamb(p, g, skip=False):
    return M.lamb(p, g, LR, M1, M2, B1P, B2P, 0.01, 0.9, 0.999, 1e-6, skip_update=skip)


RANGE, ETAS = np.array([[1e-4, 0.5]], "float32"), np.array([[0.5, 1.2]], "float32")
POWS = {"beta1_pow": ONES * 0.9, "beta2_pow": ONES * 0.999}

MASTER_CASES = [
    master_case("sgd", {"LearningRate": LR}, {}, lambda p, g: M.sgd(p, g, LR), ["ParamOut"]),
    master_case("momentum", {"Velocity": V, "LearningRate": LR}, {"mu": 0.9},
                lambda p, g: M.momentum(p, g, V, LR, 0.9), ["ParamOut", "VelocityOut"]),
    master_case("merged_momentum", {"Velocity": V, "LearningRate": LR}, {"mu": 0.9},
                lambda p, g: M.momentum(p, g, V, LR, 0.9), ["ParamOut", "VelocityOut"], lists=True),
    master_case("lars_momentum", {"Velocity": V, "LearningRate": LR}, {"mu": 0.9, "lars_weight_decay": [0.01]},
                lambda p, g: M.lars_momentum(p, g, V, LR, 0.9, 0.001, 0.01, 0.0), ["ParamOut", "VelocityOut"],
                lists=True),
    master_case("adagrad", {"Moment": M2, "LearningRate": LR}, {}, lambda p, g: M.adagrad(p, g, M2, LR, 1e-6),
                ["ParamOut", "MomentOut"]),
    master_case("adadelta", {"AvgSquaredGrad": M2, "AvgSquaredUpdate": M1, "LearningRate": LR}, {},
                lambda p, g: M.adadelta(p, g, M2, M1, LR, 0.95, 1e-6),
                ["ParamOut", "AvgSquaredGradOut", "AvgSquaredUpdateOut"]),
    master_case("rmsprop", {"MeanSquare": M2, "Moment": V, "LearningRate": LR}, {},
                lambda p, g: M.rmsprop(p, M2, g, V, LR, 1e-10, 0.9), ["ParamOut", "MomentOut", "MeanSquareOut"]),
    master_case("rprop", {"prev": V, "learning_rate": ONES * 0.01, "learning_rate_range": RANGE, "etas": ETAS}, {},
                lambda p, g: M.rprop(p, g, V, ONES * 0.01, RANGE, ETAS), ["param_out", "prev_out", "learning_rate_out"],
                names=("param", "grad", "master_param")),
    master_case("adam", ADAM_IN, {}, adam, ADAM_OUT),
    master_case("adamw", ADAM_IN, {"with_decay": True}, lambda p, g: adamw(p, g, with_decay=True), ADAM_OUT),
    master_case("merged_adam", ADAM_IN, {}, adam, ADAM_OUT, lists=True),
    master_case("adamax", {"LearningRate": LR, "Moment": M1, "InfNorm": M2, "Beta1Pow": B1P}, {},
                lambda p, g: M.adamax(p, g, LR, M1, M2, B1P, 0.9, 0.999, 1e-8),
                ["ParamOut", "MomentOut", "InfNormOut"]),
    master_case("lamb", ADAM_IN, {}, lamb, LAMB_OUT),
    master_case("nadam", {"learning_rate": LR, "momentum_decay_pow": ONES * 0.96, "beta2_pow": ONES * 0.999,
                          "mu_product": ONES * 0.9, "moment1": M1, "moment2": M2}, {},
                lambda p, g: M.nadam(p, g, LR, ONES * 0.96, ONES * 0.999, ONES * 0.9, M1, M2, 0.9, 0.999, 1e-8, 0.004),
                ["param_out", "momentum_decay_pow_out", "beta2_pow_out", "mu_product_out", "moment1_out",
                 "moment2_out"], names=("param", "grad", "master_param")),
    # beta2 0.9 keeps RAdam's rho_inf (19) within float16 in the run without the master
    master_case("radam", {"learning_rate": LR, **POWS, "rho": ONES * 0.5, "moment1": M1, "moment2": M2}, {"beta2": 0.9},
                lambda p, g: M.radam(p, g, LR, ONES * 0.9, ONES * 0.999, ONES * 0.5, M1, M2, 0.9, 0.9, 1e-8),
                ["param_out", "beta1_pow_out", "beta2_pow_out", "rho_out", "moment1_out", "moment2_out"],
                names=("param", "grad", "master_param")),
]

SKIP = np.array([True])
MAX = M2 * 4   # larger than the new Moment2: the amsgrad step divides by it
MEAN_SQUARE, MEAN_GRAD = f32(2, 3, low=0.5, high=1.0), f32(2, 3, low=-0.1, high=0.1)  # centered: ms > mg^2


def _outputs(values, slots):
    return {slot: v for slot, v in zip(slots, values) if v is not None}


def _scalar(value):
    return np.array([value], "float32")


TENSOR_CASES = [
    SlotCase(op, "SkipUpdate", {"Param": P, "Grad": G, **ADAM_IN, "SkipUpdate": SKIP},
             {"ParamOut": P, "Moment1Out": M1, "Moment2Out": M2, "Beta1PowOut": B1P, "Beta2PowOut": B2P})
    for op in ("adam", "adamw", "lamb")
] + [
    SlotCase(op, slot, {"Param": P, "Grad": G, **ADAM_IN, slot: _scalar(value)},
             _outputs(rule(P, G, **{attr: value}), ADAM_OUT))
    for op, rule in (("adam", adam), ("adamw", adamw))
    for slot, attr, value in (("Beta1Tensor", "beta1", 0.5), ("Beta2Tensor", "beta2", 0.9),
                              ("EpsilonTensor", "epsilon", 0.1))
] + [
    SlotCase(op, "Moment2Max", {"Param": P, "Grad": G, **ADAM_IN, "Moment2Max": MAX},
             _outputs(rule(P, G, moment2_max=MAX, amsgrad=True), ADAM_OUT), {"amsgrad": True}, overrides=False)
    for op, rule in (("adam", adam), ("adamw", adamw))
] + [
    SlotCase("merged_adam", "Moment2Max", {"Param": [P], "Grad": [G], **{k: [v] for k, v in ADAM_IN.items()},
                                           "Moment2Max": [MAX]},
             {k: [v] for k, v in _outputs(adam(P, G, moment2_max=MAX, amsgrad=True), ADAM_OUT).items()},
             {"amsgrad": True}, overrides=False),
    SlotCase("rmsprop", "MeanGrad", {"Param": P, "MeanSquare": MEAN_SQUARE, "Grad": G, "Moment": V, "LearningRate": LR,
                                     "MeanGrad": MEAN_GRAD},
             _outputs(M.rmsprop(P, MEAN_SQUARE, G, V, LR, 1e-10, 0.9, centered=True, mean_grad=MEAN_GRAD),
                      ["ParamOut", "MomentOut", "MeanSquareOut", "MeanGradOut"]), {"centered": True},
             overrides=False),
]

CASES = MASTER_CASES + TENSOR_CASES

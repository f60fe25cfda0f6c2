"""The numpy update rules of gradc.executor.kernels.optimizer_math replay Paddle's own training runs.

Each case in tests/data/paddle/optim holds a training program Paddle wrote (opt.minimize), the gradients its
backward produced at each of 5 steps, and every persistable after each step. The replay runs the program's
optimize ops (clipping, regularization, updates) on Paddle's gradients with the functions under test, chaining
its own state from step to step, and must reproduce Paddle's clipped gradients and persistables every step.
"""

from __future__ import annotations

import json
from functools import reduce
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.executor.kernels import optimizer_math as M
from gradc.ops.creation import scalar_values

DATA = Path(__file__).parent / "data" / "paddle" / "optim"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "meta.json").is_file())
OPTIMIZE_ROLES = 0x0002 | 0x0010  # Optimize and LRSched
RTOL, ATOL = 1e-4, 1e-6
DTYPES = {5: np.float32, 6: np.float64}


def _adam_args(x, a):
    """Adam's hyper-parameters: the Beta1Tensor/Beta2Tensor/EpsilonTensor input wins over the attribute."""
    return [x(slot) if x(slot) is not None else a(name)
            for slot, name in (("Beta1Tensor", "beta1"), ("Beta2Tensor", "beta2"), ("EpsilonTensor", "epsilon"))]


ADAM_OUT = ["ParamOut", "Moment1Out", "Moment2Out", "Moment2MaxOut", "Beta1PowOut", "Beta2PowOut"]
ADAM_IN = ["Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"]


def _adam_options(x, a):
    return {"moment2_max": x("Moment2Max"), "amsgrad": a("amsgrad"), "use_global_beta_pow": a("use_global_beta_pow"),
            "skip_update": bool(x("SkipUpdate")) if x("SkipUpdate") is not None else False}


# op type -> (output slots, function of (x, xs, a) -> values): x(slot) one input or None, xs(slot) all, a(attr)
RULES = {
    "sgd": (["ParamOut"], lambda x, xs, a: M.sgd(x("Param"), x("Grad"), x("LearningRate"))),
    "momentum": (["ParamOut", "VelocityOut"], lambda x, xs, a: M.momentum(
        x("Param"), x("Grad"), x("Velocity"), x("LearningRate"), a("mu"), a("use_nesterov"),
        a("regularization_method"), a("regularization_coeff"), a("rescale_grad"))),
    "merged_momentum": (["ParamOut", "VelocityOut"], lambda x, xs, a: M.merged_momentum(
        xs("Param"), xs("Grad"), xs("Velocity"), xs("LearningRate"), a("mu"), a("use_nesterov"),
        a("regularization_method"), a("regularization_coeff"), a("rescale_grad"))),
    "lars_momentum": (["ParamOut", "VelocityOut"], lambda x, xs, a: [list(column) for column in zip(*(
        M.lars_momentum(p, g, v, lr, a("mu"), a("lars_coeff"), decay, a("epsilon"), a("rescale_grad"))
        for p, g, v, lr, decay in zip(xs("Param"), xs("Grad"), xs("Velocity"), xs("LearningRate"),
                                      a("lars_weight_decay"))))]),
    "adam": (ADAM_OUT, lambda x, xs, a: M.adam(*map(x, ADAM_IN), *_adam_args(x, a), **_adam_options(x, a))),
    "adamw": (ADAM_OUT, lambda x, xs, a: M.adamw(
        *map(x, ADAM_IN), *_adam_args(x, a), a("coeff"), a("lr_ratio"), a("with_decay"), **_adam_options(x, a))),
    "merged_adam": (ADAM_OUT, lambda x, xs, a: M.merged_adam(
        *map(xs, ADAM_IN), a("beta1"), a("beta2"), a("epsilon"), xs("Moment2Max"), a("amsgrad"),
        a("use_global_beta_pow"))),
    "adamax": (["ParamOut", "MomentOut", "InfNormOut"], lambda x, xs, a: M.adamax(
        *map(x, ["Param", "Grad", "LearningRate", "Moment", "InfNorm", "Beta1Pow"]),
        a("beta1"), a("beta2"), a("epsilon"))),
    "adagrad": (["ParamOut", "MomentOut"], lambda x, xs, a: M.adagrad(
        *map(x, ["Param", "Grad", "Moment", "LearningRate"]), a("epsilon"))),
    "adadelta": (["ParamOut", "AvgSquaredGradOut", "AvgSquaredUpdateOut"], lambda x, xs, a: M.adadelta(
        *map(x, ["Param", "Grad", "AvgSquaredGrad", "AvgSquaredUpdate", "LearningRate"]), a("rho"), a("epsilon"))),
    "rmsprop": (["ParamOut", "MomentOut", "MeanSquareOut", "MeanGradOut"], lambda x, xs, a: M.rmsprop(
        *map(x, ["Param", "MeanSquare", "Grad", "Moment", "LearningRate"]), a("epsilon"), a("decay"),
        a("momentum"), a("centered"), x("MeanGrad"))),
    "lamb": (["ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"], lambda x, xs, a: M.lamb(
        *map(x, ADAM_IN), a("weight_decay"), a("beta1"), a("beta2"), a("epsilon"), a("always_adapt"))),
    "nadam": (["param_out", "momentum_decay_pow_out", "beta2_pow_out", "mu_product_out", "moment1_out", "moment2_out"],
              lambda x, xs, a: M.nadam(*map(x, ["param", "grad", "learning_rate", "momentum_decay_pow", "beta2_pow",
                                                "mu_product", "moment1", "moment2"]),
                                       a("beta1"), a("beta2"), a("epsilon"), a("momentum_decay"))),
    "radam": (["param_out", "beta1_pow_out", "beta2_pow_out", "rho_out", "moment1_out", "moment2_out"],
              lambda x, xs, a: M.radam(*map(x, ["param", "grad", "learning_rate", "beta1_pow", "beta2_pow", "rho",
                                                "moment1", "moment2"]), a("beta1"), a("beta2"), a("epsilon"))),
    "rprop": (["param_out", "prev_out", "learning_rate_out"], lambda x, xs, a: M.rprop(
        *map(x, ["param", "grad", "prev", "learning_rate", "learning_rate_range", "etas"]))),
    "squared_l2_norm": (["Out"], lambda x, xs, a: M.squared_l2_norm(x("X"))),
    "clip_by_norm": (["Out"], lambda x, xs, a: M.clip_by_norm(x("X"), a("max_norm"))),
    "clip": (["Out"], lambda x, xs, a: M.clip(x("X"), a("min"), a("max"))),
    # the generic ops Paddle's clipping and regularization write around them
    "sum": (["Out"], lambda x, xs, a: (reduce(np.add, xs("X")),)),
    "scale": (["Out"], lambda x, xs, a: (
        x("X") * np.float32(a("scale")) + np.float32(a("bias")) if a("bias_after_scale")
        else (x("X") + np.float32(a("bias"))) * np.float32(a("scale")),)),
    "sign": (["Out"], lambda x, xs, a: (np.sign(x("X")),)),
    "sqrt": (["Out"], lambda x, xs, a: (np.sqrt(x("X")),)),
    "fill_constant": (["Out"], lambda x, xs, a: (np.full(a("shape"), a("value"), DTYPES[a("dtype")]),)),
    "elementwise_max": (["Out"], lambda x, xs, a: (np.maximum(x("X"), x("Y")),)),
    "elementwise_div": (["Out"], lambda x, xs, a: (x("X") / x("Y"),)),
    "elementwise_mul": (["Out"], lambda x, xs, a: (x("X") * x("Y"),)),
    # Rprop's hyper-parameter tensors, and the param[0] its Python code reads for the dtype
    "assign_value": (["Out"], lambda x, xs, a: (
        np.array(scalar_values(a("values")), DTYPES[a("dtype")]).reshape(a("shape")),)),
    "slice": (["Out"], lambda x, xs, a: (x("Input")[0],)),
}


def run_op(op, env: dict) -> None:
    outputs, rule = RULES[op.type]
    values = rule(lambda slot: env[op.input(slot)[0]] if op.input(slot) else None,
                  lambda slot: [env[name] for name in op.input(slot)],
                  op.attr)
    for slot, value in zip(outputs, values):
        if value is None:  # the kernel leaves this output alone (rmsprop's MeanGradOut unless centered)
            continue
        names = op.output(slot)
        for name, array in zip(names, value if isinstance(value, list) else [value] * len(names)):
            array = np.array(array)
            array.flags.writeable = False  # a rule that writes into its inputs fails here
            env[name] = array


class Case:
    def __init__(self, name: str):
        directory = DATA / name
        self.meta = json.loads((directory / "meta.json").read_text())
        self.program = gradc.load(directory / "train.pb")
        self.arrays = {part: dict(np.load(directory / f"{part}.npz")) if (directory / f"{part}.npz").exists()
                       else {} for part in ("init", "grads", "intermediates", "states", "final")}
        self.lrs = np.load(directory / "lrs.npy")

    def optimize_ops(self) -> list:
        return [op for op in self.program.global_block.ops if op.attr("op_role", 0) & OPTIMIZE_ROLES]

    def forward_written(self) -> set[str]:
        """Persistables the forward pass updates (batch_norm's running stats): Paddle's values carry over."""
        ops = [op for op in self.program.global_block.ops if not op.attr("op_role", 0) & OPTIMIZE_ROLES]
        return {name for op in ops for names in op.outputs.values() for name in names} & set(self.arrays["init"])

    def paddle_state(self, step: int) -> dict[str, np.ndarray]:
        """Every persistable after ``step`` + 1 steps."""
        if step == self.meta["steps"] - 1:
            return self.arrays["final"]
        return {name: values[step] for name, values in self.arrays["states"].items()}


def assert_close(actual, expected, what: str) -> None:
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, Paddle {expected.dtype}"
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, err_msg=what)


@pytest.mark.parametrize("name", CASES)
def test_update_rules_replay_paddles_training(name):
    case = Case(name)
    lr_var, carried = case.meta["learning_rate_var"], case.forward_written()
    state = dict(case.arrays["init"])
    for step in range(case.meta["steps"]):
        env = dict(state)
        env[lr_var] = np.full(state[lr_var].shape, case.lrs[step], np.float32)  # what the scheduler writes
        env.update({grad: values[step] for grad, values in case.arrays["grads"].items()})
        for op in case.optimize_ops():
            run_op(op, env)
        for var, values in case.arrays["intermediates"].items():
            assert_close(env[var], values[step], f"{name} step {step}: {var}")
        expected = case.paddle_state(step)
        state = {var: expected[var] if var in carried else env[var] for var in state}
        for var in sorted(set(state) - carried):
            assert_close(state[var], expected[var], f"{name} step {step}: {var}")


def test_every_optimize_op_of_the_fixtures_has_a_rule_and_every_rule_is_exercised():
    seen = {op.type for name in CASES for op in Case(name).optimize_ops()}
    assert seen == set(RULES)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_updates_into_their_own_arrays_are_the_expressions_bit_for_bit(monkeypatch, dtype):
    """adam (and adamw through it), momentum and sgd write their arithmetic into arrays they made; the values,
    NaN and inf included, are those of the plain expressions, which they take for mixed dtypes or shapes."""
    rng = np.random.default_rng(3)
    lr, beta_pows = np.array([0.01], np.float32), (np.array([0.9 ** 3], np.float32), np.array([0.999 ** 3], np.float32))

    def updates():
        results = []
        for case in range(8):
            param, grad, moment1, moment2, most = (
                (rng.standard_normal((5, 4)) * 10.0 ** float(rng.integers(-4, 4))).astype(dtype) for _ in range(5))
            grad.flat[case] = (np.nan, np.inf, -np.inf, 0.0)[case % 4]
            moment2, most = np.abs(moment2), np.abs(most)
            results += [M.adam(param, grad, lr, moment1, moment2, *beta_pows, 0.9, 0.999, 1e-8, moment2_max=most,
                               amsgrad=case % 2 == 1, use_global_beta_pow=case == 2),
                        M.adamw(param, grad, lr, moment1, moment2, *beta_pows, 0.9, 0.999, 1e-8, with_decay=True),
                        M.momentum(param, grad, moment1, lr, 0.9, use_nesterov=case % 2 == 0,
                                   regularization_method="l2_decay" if case > 4 else "", regularization_coeff=0.1),
                        M.sgd(param, grad, lr)]
        return [[None if v is None else (np.asarray(v).dtype, np.asarray(v).shape, np.asarray(v).tobytes())
                 for v in outputs] for outputs in results]

    state = rng.bit_generator.state
    with np.errstate(all="ignore"):
        ours = updates()
        rng.bit_generator.state = state
        monkeypatch.setattr(M, "_alike", lambda *arrays: False)
        monkeypatch.setattr(M, "reusable", lambda temporary, other: None)
        assert updates() == ours

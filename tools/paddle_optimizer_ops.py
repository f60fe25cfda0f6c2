"""Single optimizer and clipping ops in float64, as PaddlePaddle (legacy IR, CPU) computes them: each case is one
raw op with random inputs and one setting of its attributes, and every output the op writes (in place, as in
Paddle's programs: <slot>.<i> holds the value after the run); the differentiable squared_l2_norm also gives its
input grad for the loss sum(Out * weight). Writes tests/data/paddle/ops/optimizer/{cases.json, values.npz};
tests/test_optimizer_ops_vs_paddle.py compares gradc's kernels with them.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_optimizer_ops.py [target dir]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle.base.backward import append_backward
from paddle.base.framework import OpProtoHolder

rng = np.random.default_rng(2027)
SHAPE = (3, 4)


def randn(shape=SHAPE):
    return rng.standard_normal(shape)


def positive(shape=SHAPE, low=0.1, high=1.0):
    return rng.uniform(low, high, shape)


def one(value):
    return np.array([value])


LR = one(0.05)
P, G = randn(), randn()


def adam_inputs(**extra):
    return {"Param": P, "Grad": G, "LearningRate": LR, "Moment1": randn() * 0.1, "Moment2": positive(),
            "Beta1Pow": one(0.9 ** 3), "Beta2Pow": one(0.999 ** 3), **extra}


def lamb_inputs(**extra):
    inputs = adam_inputs(**extra)
    return {k: v for k, v in inputs.items() if k != "Moment2Max"}


CASES = [
    ("sgd", "sgd", {"Param": P, "LearningRate": LR, "Grad": G}, {}),
    ("momentum", "momentum", {"Param": P, "Grad": G, "Velocity": randn(), "LearningRate": LR}, {"mu": 0.9}),
    ("momentum_nesterov_l2", "momentum", {"Param": P, "Grad": G, "Velocity": randn(), "LearningRate": LR},
     {"mu": 0.8, "use_nesterov": True, "regularization_method": "l2_decay", "regularization_coeff": 0.1}),
    ("momentum_rescale", "momentum", {"Param": P, "Grad": G, "Velocity": randn(), "LearningRate": LR},
     {"mu": 0.9, "rescale_grad": 0.5}),
    ("merged_momentum", "merged_momentum",
     {"Param": [P, randn((5,))], "Grad": [G, randn((5,))], "Velocity": [randn(), randn((5,))],
      "LearningRate": [LR, one(0.2)]},
     {"mu": 0.9, "use_nesterov": True, "regularization_method": ["l2_decay", ""], "regularization_coeff": [0.1, 0.0]}),
    ("lars_momentum", "lars_momentum",
     {"Param": [P, randn((5,))], "Grad": [G, randn((5,))], "Velocity": [randn(), randn((5,))],
      "LearningRate": [LR, LR]},
     {"mu": 0.9, "lars_coeff": 0.01, "lars_weight_decay": [0.001, 0.0], "epsilon": 1e-6, "rescale_grad": 0.5}),
    ("adagrad", "adagrad", {"Param": P, "Grad": G, "Moment": positive(), "LearningRate": LR}, {"epsilon": 0.05}),
    ("adadelta", "adadelta", {"Param": P, "Grad": G, "AvgSquaredGrad": positive(), "AvgSquaredUpdate": positive(),
                              "LearningRate": LR}, {"rho": 0.9, "epsilon": 1e-3}),
    ("rmsprop", "rmsprop", {"Param": P, "MeanSquare": positive(), "Grad": G, "Moment": randn(), "LearningRate": LR,
                            "MeanGrad": randn() * 0.1}, {"decay": 0.9, "epsilon": 1e-6}),
    ("rmsprop_centered", "rmsprop", {"Param": P, "MeanSquare": positive(low=0.5), "Grad": G, "Moment": randn(),
                                     "LearningRate": LR, "MeanGrad": randn() * 0.1},
     {"decay": 0.9, "epsilon": 1e-6, "momentum": 0.5, "centered": True}),
    ("adam", "adam", adam_inputs(), {"beta1": 0.85, "beta2": 0.99, "epsilon": 1e-6}),
    ("adam_amsgrad", "adam", adam_inputs(Moment2Max=positive(low=0.5, high=2.0)), {"amsgrad": True}),
    ("adam_tensors", "adam", adam_inputs(Beta1Tensor=one(0.8), Beta2Tensor=one(0.95), EpsilonTensor=one(1e-3)), {}),
    ("adam_skip", "adam", adam_inputs(SkipUpdate=np.array([True])), {}),
    ("adam_global_beta_pow", "adam", adam_inputs(), {"use_global_beta_pow": True}),
    ("adamw", "adamw", adam_inputs(), {"coeff": 0.1, "with_decay": True}),
    ("adamw_no_decay", "adamw", adam_inputs(), {"coeff": 0.1}),
    ("merged_adam", "merged_adam",
     {"Param": [P, randn((5,))], "Grad": [G, randn((5,))], "LearningRate": [LR, one(0.01)],
      "Moment1": [randn() * 0.1, randn((5,)) * 0.1], "Moment2": [positive(), positive((5,))],
      "Beta1Pow": [one(0.9), one(0.81)], "Beta2Pow": [one(0.999), one(0.998)]}, {"beta1": 0.9, "beta2": 0.999}),
    ("adamax", "adamax", {"Param": P, "Grad": G, "LearningRate": LR, "Moment": randn() * 0.1, "InfNorm": positive(),
                          "Beta1Pow": one(0.8 ** 2)}, {"beta1": 0.8, "beta2": 0.95, "epsilon": 1e-6}),
    ("lamb", "lamb", lamb_inputs(), {"weight_decay": 0.01}),
    ("lamb_excluded", "lamb", lamb_inputs(), {"weight_decay": 0.0}),
    ("lamb_always_adapt", "lamb", lamb_inputs(), {"weight_decay": 0.0, "always_adapt": True}),
    ("nadam", "nadam", {"param": P, "grad": G, "learning_rate": LR, "momentum_decay_pow": np.full(SHAPE, 0.96 ** 2),
                        "beta2_pow": np.full(SHAPE, 0.99 ** 2), "mu_product": np.full(SHAPE, 0.8),
                        "moment1": randn() * 0.1, "moment2": positive()}, {"beta2": 0.99, "epsilon": 1e-6}),
    # rho_t = rho_inf - 2 rho_out: below 5 (momentum-only step) and above (rectified Adam step)
    ("radam_early", "radam", {"param": P, "grad": G, "learning_rate": LR, "beta1_pow": np.full(SHAPE, 0.9),
                              "beta2_pow": np.full(SHAPE, 0.95), "rho": np.full(SHAPE, 0.95 / 0.05),
                              "moment1": randn() * 0.1, "moment2": positive()}, {"beta2": 0.95, "epsilon": 1e-6}),
    ("radam_rectified", "radam", {"param": P, "grad": G, "learning_rate": LR, "beta1_pow": np.full(SHAPE, 0.9 ** 7),
                                  "beta2_pow": np.full(SHAPE, 0.95 ** 7), "rho": np.full(SHAPE, 6.9),
                                  "moment1": randn() * 0.1, "moment2": positive()}, {"beta2": 0.95, "epsilon": 1e-6}),
    ("rprop", "rprop", {"param": P, "grad": G, "prev": np.where(rng.random(SHAPE) < 0.3, 0.0, randn()),
                        "learning_rate": positive(low=0.001, high=0.06),
                        "learning_rate_range": np.array([[1e-3, 0.05]]), "etas": np.array([[0.5, 1.2]])}, {}),
    ("squared_l2_norm", "squared_l2_norm", {"X": randn()}, {}),
    # clip_by_norm has only a float32 CPU kernel
    ("clip_by_norm_clipped", "clip_by_norm", {"X": randn().astype("float32")}, {"max_norm": 1.0}),
    ("clip_by_norm_kept", "clip_by_norm", {"X": (randn() * 0.1).astype("float32")}, {"max_norm": 5.0}),
]
DIFFERENTIABLE = {"squared_l2_norm"}


def output_slots(op_type: str, inputs: dict) -> list[str]:
    """The outputs the op writes for these inputs: an optional one only when the input it overwrites is given."""
    proto = OpProtoHolder.instance().get_op_proto(op_type)
    slots = []
    for var in proto.outputs:
        source = var.name.removesuffix("Out").removesuffix("_out")
        if not var.dispensable or source in inputs:
            slots.append(var.name)
    return slots


def _data(name: str, value: np.ndarray):
    var = paddle.static.data(name, list(value.shape), value.dtype.name)
    var.stop_gradient = False
    return var


def run(name: str, op_type: str, inputs: dict, attrs: dict) -> dict[str, np.ndarray]:
    main, startup = paddle.static.Program(), paddle.static.Program()
    feed = {}
    with paddle.static.program_guard(main, startup):
        block = main.global_block()
        op_inputs = {}
        for slot, value in inputs.items():
            values = value if isinstance(value, list) else [value]
            names = [f"{slot}.{i}" for i in range(len(values))]
            op_inputs[slot] = [_data(n, v) for n, v in zip(names, values)]
            feed.update(zip(names, values))
        op_outputs, fetch_as = {}, {}
        for slot in output_slots(op_type, inputs):   # in place, as Paddle's programs write them (merged ops must)
            source = slot.removesuffix("Out").removesuffix("_out")
            dtype = next(iter(op_inputs.values()))[0].dtype
            op_outputs[slot] = op_inputs.get(source) or [block.create_var(name=f"{slot}.0", dtype=dtype)]
            fetch_as.update({var.name: f"{slot}.{i}" for i, var in enumerate(op_outputs[slot])})
        fetch = list(fetch_as)
        block.append_op(type=op_type, inputs=op_inputs, outputs=op_outputs, attrs=dict(attrs))
        if op_type in DIFFERENTIABLE:
            weight = paddle.static.data("weight", [1], "float64")
            prod = block.create_var(name="prod", dtype="float64")
            loss = block.create_var(name="loss", dtype="float64", shape=[])
            block.append_op(type="elementwise_mul", inputs={"X": op_outputs["Out"], "Y": [weight]},
                            outputs={"Out": [prod]})
            block.append_op(type="reduce_sum", inputs={"X": [prod]}, outputs={"Out": [loss]},
                            attrs={"reduce_all": True, "dim": [], "keep_dim": False})
            append_backward(loss)
            feed["weight"] = rng.standard_normal(1)
            fetch.append("X.0@GRAD")
            fetch_as["X.0@GRAD"] = "X.0@GRAD"
    values = paddle.static.Executor(paddle.CPUPlace()).run(main, feed=feed, fetch_list=fetch)
    result = {f"{name}/{key}": value for key, value in feed.items()}
    result.update({f"{name}/{fetch_as[key]}": np.asarray(value) for key, value in zip(fetch, values)})
    return result


def main(target: Path) -> None:
    paddle.enable_static()
    cases, arrays = [], {}
    for name, op_type, inputs, attrs in CASES:
        inputs = {slot: [np.asarray(v) for v in value] if isinstance(value, list) else np.asarray(value)
                  for slot, value in inputs.items()}
        arrays.update(run(name, op_type, inputs, attrs))
        cases.append({"name": name, "op": op_type, "attrs": attrs,
                      "inputs": {slot: len(v) if isinstance(v, list) else 0 for slot, v in inputs.items()},
                      "outputs": output_slots(op_type, inputs)})
    target.mkdir(parents=True, exist_ok=True)
    lines = ",\n  ".join(json.dumps(case) for case in cases)
    (target / "cases.json").write_text(f'{{"paddle_version": "{paddle.__version__}", "cases": [\n  {lines}\n]}}\n')
    np.savez_compressed(target / "values.npz", **arrays)
    print(f"{len(cases)} cases, {len(arrays)} arrays -> {target}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/ops/optimizer"))

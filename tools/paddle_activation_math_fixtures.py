"""Fixtures for the activation, math, reduce and logic ops: what PaddlePaddle 3.3.1 computes for its own
layers and functional API, built in legacy static mode. Not part of the package (needs paddlepaddle):

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_activation_math_fixtures.py

Each case builds one layer (or API call) on fed inputs, with the loss mean(out * w) for a fed random w,
and records the forward program (with the loss, without op_callstack), the feeds, the parameters (set to
random values), Paddle's out, loss and the gradients of every fed input and parameter. Cases run in
float64 where Paddle allows it, so the comparison is sharp. Random ops (rrelu in training, gumbel_softmax)
also record the random op's own inputs and outputs and the grad of its output, so their grad ops can be
compared on Paddle's draw. Forward-only cases record the output only. Writes, per family,
tests/data/paddle/ops/<family>/cases.json and values.npz; read by tests/test_activation_math_vs_paddle.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle.base.backward import append_backward
from paddle.base.layer_helper import LayerHelper
from paddle_programs import without_callstacks

paddle.enable_static()
paddle_legacy_shim.install()   # F.gelu, paddle.all, log, ... append their legacy ops again
OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "ops"
SEED = 2026


class Inputs:
    """The case's fed vars: ``data`` declares one and remembers its value."""

    def __init__(self, rng: np.random.Generator, dtype: str):
        self.rng, self.dtype, self.feed = rng, dtype, {}

    def data(self, name: str, value, grad: bool = True):
        value = np.asarray(value, dtype=self.dtype if np.asarray(value).dtype.kind == "f" else None)
        var = paddle.static.data(name, list(value.shape), str(value.dtype))
        var.stop_gradient = not grad
        self.feed[name] = value
        return var

    def randn(self, *shape, scale=1.0):
        return scale * self.rng.standard_normal(shape)

    def distinct(self, *shape):
        n = int(np.prod(shape))
        return self.rng.permutation(np.linspace(-3, 3, n)).reshape(shape)


def raw_op(op_type: str, inputs: dict, attrs: dict, dtype: str):
    """A legacy op appended directly, where no Python API appends it."""
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def _prelu_static(mode, data_format="NCHW"):
    return lambda x: paddle.static.nn.prelu(x, mode, data_format=data_format)


def _gaussian_nll(i):
    var = i.data("var", i.rng.uniform(0.2, 1.5, (3, 4)))
    return nn.GaussianNLLLoss()(i.data("x", i.randn(3, 4)), i.data("label", i.randn(3, 4), grad=False), var)


ACTIVATION = {
    "hardtanh": lambda i: nn.Hardtanh(-0.7, 1.2)(i.data("x", i.randn(2, 3, 4, scale=1.5))),
    "hardtanh_default": lambda i: F.hardtanh(i.data("x", i.randn(2, 5, scale=2))),
    "celu": lambda i: nn.CELU(0.6)(i.data("x", i.randn(2, 3, 4, scale=2))),
    "hardshrink": lambda i: nn.Hardshrink(0.4)(i.data("x", i.randn(2, 3, 4))),
    "logsigmoid": lambda i: nn.LogSigmoid()(i.data("x", i.randn(2, 3, 4, scale=4))),
    "maxout_nchw": lambda i: nn.Maxout(2)(i.data("x", i.distinct(2, 4, 3, 3))),
    "maxout_nhwc": lambda i: nn.Maxout(3, axis=-1)(i.data("x", i.distinct(2, 3, 2, 6))),
    "mish": lambda i: nn.Mish()(i.data("x", i.randn(2, 3, 4, scale=12))),
    "prelu_all": lambda i: nn.PReLU()(i.data("x", i.randn(2, 3, 4))),
    "prelu_channel": lambda i: nn.PReLU(4)(i.data("x", i.randn(2, 4, 3, 2))),
    "prelu_channel_nhwc": lambda i: nn.PReLU(5, data_format="NHWC")(i.data("x", i.randn(2, 3, 2, 5))),
    "prelu_channel_2d": lambda i: nn.PReLU(3)(i.data("x", i.randn(4, 3))),
    "prelu_element": lambda i: _prelu_static("element")(i.data("x", i.randn(2, 3, 2, 2))),
    "prelu_element_nhwc": lambda i: _prelu_static("element", "NHWC")(i.data("x", i.randn(2, 2, 2, 3))),
    "prelu_functional": lambda i: F.prelu(i.data("x", i.randn(2, 3, 4)), i.data("alpha", i.rng.uniform(-1, 1, 3))),
    "rrelu_eval": lambda i: F.rrelu(i.data("x", i.randn(2, 3, 4)), 0.1, 0.3, training=False),
    "rrelu_train": lambda i: nn.RReLU(0.1, 0.3)(i.data("x", i.randn(2, 3, 4))),
    "selu": lambda i: nn.SELU(1.2, 1.5)(i.data("x", i.randn(2, 3, 4))),
    "selu_default": lambda i: F.selu(i.data("x", i.randn(3, 5, scale=2))),
    "softshrink": lambda i: nn.Softshrink(0.3)(i.data("x", i.randn(2, 3, 4))),
    "tanhshrink": lambda i: nn.Tanhshrink()(i.data("x", i.randn(2, 3, 4, scale=2))),
    "thresholded_relu": lambda i: nn.ThresholdedReLU(0.4)(i.data("x", i.randn(2, 3, 4))),
    "thresholded_relu_value": lambda i: F.thresholded_relu(i.data("x", i.randn(2, 3, 4)), -0.2, 0.5),
    "relu6": lambda i: nn.ReLU6()(i.data("x", i.randn(2, 3, 4, scale=5))),
    "swish": lambda i: nn.Swish()(i.data("x", i.randn(2, 3, 4, scale=3))),
    "gumbel_softmax": lambda i: F.gumbel_softmax(i.data("x", i.randn(3, 5)), temperature=0.5),
    "gumbel_softmax_axis0": lambda i: F.gumbel_softmax(i.data("x", i.randn(4, 3)), temperature=2.0, axis=0),
    "gumbel_softmax_hard": lambda i: F.gumbel_softmax(i.data("x", i.randn(3, 5)), hard=True),
}
# float32 runs of a few, compared at Paddle's float32 rounding
ACTIVATION_FLOAT32 = {name + "_f32": ACTIVATION[name] for name in ("mish", "celu", "prelu_channel", "logsigmoid")}
KINKS = np.array([[-6.0, -2.0, -1.0, -0.5, 0.0], [0.5, 1.0, 3.0, 6.0, 2.5]])   # every kink below, and values between
# at a kink the grads take a side: Paddle 3.3.1's, checked on the kinks themselves
ACTIVATION_KINKS = {
    "leaky_relu_kinks": lambda i: F.leaky_relu(i.data("x", KINKS), 0.1),
    "hardshrink_kinks": lambda i: F.hardshrink(i.data("x", KINKS), 0.5),
    "softshrink_kinks": lambda i: F.softshrink(i.data("x", KINKS), 0.5),
    "hardtanh_kinks": lambda i: F.hardtanh(i.data("x", KINKS), -1.0, 1.0),
    "relu6_kinks": lambda i: F.relu6(i.data("x", KINKS)),
    "relu_kinks": lambda i: F.relu(i.data("x", KINKS)),
    "clip_kinks": lambda i: paddle.clip(i.data("x", KINKS), -1.0, 3.0),
    "thresholded_relu_kinks": lambda i: F.thresholded_relu(i.data("x", KINKS), 1.0),
    "sqrt_of_abs_kinks": lambda i: paddle.sqrt(paddle.abs(i.data("x", KINKS))),   # abs passes 0 at 0, not inf * 0
}


def _scale_by_tensor(i):
    return paddle.scale(i.data("x", i.randn(2, 3)), scale=i.data("s", np.array([-2.5]), grad=False), bias=0.5)


def _scale_bias_tensor(i):
    """No API appends a BiasTensor: the raw op, to record Paddle's gradient, which adds the bias to it."""
    inputs = {"X": i.data("x", i.randn(2, 3)), "ScaleTensor": i.data("s", np.array([3.0]), grad=False),
              "BiasTensor": i.data("b", np.array([10.0]), grad=False)}
    return raw_op("scale", inputs, {"scale": 2.0, "bias": 1.0}, i.dtype)


MATH = {
    "bilinear": lambda i: nn.Bilinear(3, 4, 5)(i.data("x", i.randn(2, 3)), i.data("y", i.randn(2, 4))),
    "bilinear_no_bias": lambda i: nn.Bilinear(2, 3, 2, bias_attr=False)(i.data("x", i.randn(4, 2)),
                                                                        i.data("y", i.randn(4, 3))),
    "cosine_similarity": lambda i: nn.CosineSimilarity(axis=1)(i.data("x", i.randn(3, 5)), i.data("y", i.randn(3, 5))),
    "pairwise_distance": lambda i: nn.PairwiseDistance(p=3.0)(i.data("x", i.randn(3, 4)), i.data("y", i.randn(3, 4))),
    "scale_tensor": _scale_by_tensor,
    "scale_bias_tensor": _scale_bias_tensor,
}


def _remainder(i):
    y = i.rng.choice([-1.0, 1.0], (3, 4)) * i.rng.uniform(0.5, 2.0, (3, 4))
    return paddle.remainder(i.data("x", i.randn(3, 4, scale=4), grad=False), i.data("y", y, grad=False))


def _integer_ops(i):
    """x / y (rounded toward zero), x // y and x % y on int32 with every sign combination."""
    x = i.data("x", np.array([7, -7, 7, -7, 6, 0, 9], np.int32), grad=False)
    y = i.data("y", np.array([3, 3, -3, -3, 3, -2, 4], np.int32), grad=False)
    div = raw_op("elementwise_div", {"X": x, "Y": y}, {"axis": -1}, "int32")
    return paddle.stack([div, paddle.floor_divide(x, y), paddle.remainder(x, y)])


MATH_FORWARD = {
    "remainder": _remainder,
    "integer_division": _integer_ops,
    "increment": lambda i: paddle.increment(i.data("x", np.array([1.5]), grad=False), 2.5),
    "increment_int": lambda i: raw_op("increment", {"X": i.data("x", np.array([-7], np.int64), grad=False)},
                                      {"step": 1.7}, "int64"),
    "scale_int": lambda i: paddle.scale(i.data("x", np.array([7, -7, 3], np.int32), grad=False), 2.7, 0.6),
}
REDUCE_FORWARD = {
    "all_axis1": lambda i: paddle.all(i.data("x", i.rng.random((2, 3, 4)) > 0.2, grad=False), axis=1),
    "any_axes_keepdim": lambda i: paddle.any(i.data("x", i.rng.random((2, 3, 4)) > 0.8, grad=False), axis=[0, 2],
                                             keepdim=True),
    "all_everything": lambda i: paddle.all(i.data("x", i.rng.random((3, 4)) > 0.05, grad=False)),
}
def _ties(i, *shape):
    """Values from {-1, 0, 1}: extremes tie often, in a reduction and between two operands."""
    return i.rng.integers(-1, 2, shape).astype(float)


# Paddle 3.3.1's max/min grads share a tie's gradient: evenly among a reduction's equal extremes, in halves
# between two equal operands (its docs still say max gives each the whole)
REDUCE_TIES = {
    "max_ties_axis1": lambda i: paddle.max(i.data("x", _ties(i, 3, 4, 5)), axis=1),
    "min_ties_axes_keepdim": lambda i: paddle.min(i.data("x", _ties(i, 3, 4, 5)), axis=[0, 2], keepdim=True),
    "max_ties_everything": lambda i: paddle.max(i.data("x", _ties(i, 4, 5))),
    "amax_ties_axis0": lambda i: paddle.amax(i.data("x", _ties(i, 4, 3)), axis=0),
    "amin_ties_last_axis": lambda i: paddle.amin(i.data("x", _ties(i, 2, 3, 4)), axis=-1),
}
REDUCE_MORE = {
    "logsumexp_axis1": lambda i: paddle.logsumexp(i.data("x", i.randn(3, 4, 5, scale=3)), axis=1),
    "logsumexp_axes_keepdim": lambda i: paddle.logsumexp(i.data("x", i.randn(3, 4, 5)), axis=[0, 2], keepdim=True),
    "logsumexp_everything": lambda i: paddle.logsumexp(i.data("x", i.randn(4, 5, scale=30))),
}
MATH_TIES = {
    "maximum_ties": lambda i: paddle.maximum(i.data("x", _ties(i, 3, 4)), i.data("y", _ties(i, 3, 4))),
    "minimum_ties_broadcast": lambda i: paddle.minimum(i.data("x", _ties(i, 2, 3, 4)), i.data("y", _ties(i, 4))),
}
LOGIC = {
    "gaussian_nll_loss": _gaussian_nll,   # reduce_all over var >= 0, then assert
    "triplet_margin_with_distance": lambda i: nn.TripletMarginWithDistanceLoss(margin=0.5)(
        i.data("x", i.randn(3, 4)), i.data("pos", i.randn(3, 4)), i.data("neg", i.randn(3, 4))),
}

FAMILIES = {
    "activation": [(ACTIVATION, "float64", True), (ACTIVATION_FLOAT32, "float32", True),
                   (ACTIVATION_KINKS, "float64", True)],
    "math": [(MATH, "float64", True), (MATH_FORWARD, "float64", False), (MATH_TIES, "float64", True)],
    "reduce": [(REDUCE_FORWARD, "float64", False), (REDUCE_TIES, "float64", True), (REDUCE_MORE, "float64", True)],
    "logic": [(LOGIC, "float64", True)],
}
RANDOM_OPS = ("rrelu", "gumbel_softmax")


def build(name: str, make, dtype: str, differentiate: bool, rng: np.random.Generator) -> tuple[dict, dict]:
    paddle.seed(SEED)
    paddle.set_default_dtype(dtype)
    main, startup = paddle.static.Program(), paddle.static.Program()
    inputs = Inputs(rng, dtype)
    with paddle.static.program_guard(main, startup):
        out = make(inputs)
        loss = None
        if differentiate:
            w = inputs.data("w", rng.standard_normal(out.shape), grad=False)
            loss = paddle.mean(out * w)
        program = without_callstacks(main)
        if differentiate:
            append_backward(loss)
    block = main.global_block()
    random_op = next((op for op in block.ops if op.type in RANDOM_OPS), None)
    extra = [] if random_op is None else [*random_op.input_arg_names, *random_op.output_arg_names,
                                          random_op.output("Out")[0] + "@GRAD"]
    grads = [n + "@GRAD" for n, v in inputs.feed.items() if block.var(n).stop_gradient is False] if loss else []
    params = [p.name for p in main.all_parameters()]
    grads += [p + "@GRAD" for p in params] if loss else []
    executor = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.global_scope()
    executor.run(startup)
    values = {}
    for p in params:
        value = rng.uniform(-0.5, 1.0, block.var(p).shape).astype(dtype)
        scope.find_var(p).get_tensor().set(value, paddle.CPUPlace())
        values[f"{name}/param/{p}"] = value
    fetch = [out.name] + ([loss.name] if loss else []) + grads + extra
    results = dict(zip(fetch, executor.run(main, feed=inputs.feed, fetch_list=fetch)))
    values.update({f"{name}/feed/{n}": v for n, v in inputs.feed.items()})
    values[f"{name}/out"] = results[out.name]
    if loss is not None:
        values[f"{name}/loss"] = results[loss.name]
    values.update({f"{name}/grad/{g}": results[g] for g in grads})
    values.update({f"{name}/extra/{n}": results[n] for n in extra})
    values[f"{name}/program"] = np.frombuffer(program, np.uint8)
    meta = {"name": name, "dtype": dtype, "out": out.name, "loss": loss.name if loss else None, "grads": grads,
            "random_op": random_op.type if random_op is not None else None,
            "extra": {slot: random_op.output(slot) if slot in random_op.output_names else random_op.input(slot)
                      for slot in [*random_op.input_names, *random_op.output_names]} if random_op else {},
            "ops": sorted({op.type for op in main.global_block().ops})}
    return meta, values


def main() -> None:
    for family, groups in FAMILIES.items():
        rng = np.random.default_rng(SEED)
        cases, arrays = [], {}
        for makers, dtype, differentiate in groups:
            for name, make in makers.items():
                meta, values = build(name, make, dtype, differentiate, rng)
                cases.append(meta)
                arrays.update(values)
        target = OUT / family
        target.mkdir(parents=True, exist_ok=True)
        lines = ",\n  ".join(json.dumps(case) for case in cases)
        (target / "cases.json").write_text(f'{{"paddle_version": "{paddle.__version__}", "cases": [\n  {lines}\n]}}\n')
        np.savez_compressed(target / "values.npz", **arrays)
        print(family, len(cases), "cases", (target / "values.npz").stat().st_size, "bytes")


if __name__ == "__main__":
    main()

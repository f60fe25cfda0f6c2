"""Build one coverage row in Paddle's legacy static mode, differentiate it with Paddle's own
append_backward and run it: the program, the loss, every gradient Paddle computes."""

from __future__ import annotations

import zlib
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
import paddle
from paddle.base.backward import append_backward
from paddle.utils import unique_name

from .legacy_shim import append, legacy_apis
from .spec import Input, Row

# Ops whose outputs are random draws: their outputs are recorded, gradc replays them.
RANDOM_OPS = frozenset({"dropout", "dropout_nd", "rrelu", "uniform_random", "gaussian_random", "bernoulli", "randint",
                        "randperm", "multinomial", "poisson", "nce", "class_center_sample", "gumbel_softmax",
                        "truncated_gaussian_random", "binomial", "standard_gamma", "dirichlet", "exponential",
                        "graph_sample_neighbors", "weighted_sample_neighbors"})
FLOAT_DTYPES = (paddle.float32, paddle.float64)


def lods(row: Row) -> dict[str, list[list[int]]]:
    """The LoD (offsets, one level) of each LoD input of the row."""
    return {name: [np.concatenate([[0], np.cumsum(spec.lengths)]).tolist()] for name, spec in
            zip(row.input_names, row.inputs) if spec.lengths is not None}


def seed_of(row: Row) -> int:
    return zlib.crc32(row.id.encode())


def make_feed(row: Row) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed_of(row))
    return {name: sample(spec, rng) for name, spec in zip(row.input_names, row.inputs)}


def sample(spec: Input, rng: np.random.Generator) -> np.ndarray:
    shape = spec.shape
    if spec.kind == "given":
        return spec.value.astype("float32") if spec.is_float else spec.value
    if spec.kind == "ints":
        return rng.integers(0, spec.high, shape).astype(spec.int_dtype)
    if spec.kind == "choice":
        labels = rng.integers(0, spec.high, shape).astype("int64")
        labels.reshape(-1)[0] = -100
        return labels
    if spec.kind == "positive":
        return rng.uniform(0.5, 2.0, shape).astype("float32")
    if spec.kind == "unit":
        return rng.uniform(0.05, 0.95, shape).astype("float32")
    if spec.kind == "signs":
        return rng.choice([-1.0, 1.0], shape).astype("float32")
    if spec.kind == "soft":
        logits = rng.standard_normal(shape)
        return (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype("float32")
    return rng.standard_normal(shape).astype("float32")


def float_outputs(result) -> list:
    """The float tensors of a layer's result, nested tuples and lists flattened."""
    if isinstance(result, (tuple, list)):
        return [t for item in result for t in float_outputs(item)]
    if isinstance(result, paddle.static.Variable) and result.dtype in FLOAT_DTYPES:
        return [result]
    return []


@dataclass
class Built:
    main: paddle.static.Program
    startup: paddle.static.Program
    forward: paddle.static.Program           # the forward program, loss included, before append_backward
    loss: str
    lods: dict[str, list[list[int]]]         # the LoD inputs' offsets
    params_grads: list[tuple[str, str]]
    input_grads: dict[str, str]
    outputs: list[str]                       # the row's float outputs (the loss weights' shapes)
    random_outputs: list[str]                # outputs of random ops, recorded for gradc to replay
    forward_ops: list[str]                   # op types, every block
    backward_ops: list[str]                  # op types append_backward added, backward blocks included


def build(row: Row, dtype: str, shim: set[str] | None = None) -> Built:
    """The row's program with a scalar loss: the loss itself for a scalar result, else the sum over
    its float outputs of mean(output * fixed random weights) (the weights are fed, not learned).
    With ``shim``, PIR-only APIs append legacy ops (legacy_shim) and their names are added to it."""
    paddle.set_default_dtype(dtype)
    main, startup = paddle.static.Program(), paddle.static.Program()
    apis = legacy_apis(shim) if shim is not None else nullcontext()
    try:
        with unique_name.guard(), paddle.static.program_guard(main, startup), apis:
            inputs = []
            for name, spec in zip(row.input_names, row.inputs):
                shape = [-1, *spec.shape[1:]] if spec.lengths is not None else spec.declared
                var = paddle.static.data(name, shape, dtype if spec.is_float else spec.int_dtype,
                                         lod_level=0 if spec.lengths is None else 1)
                var.stop_gradient = not spec.grad
                inputs.append(var)
            outputs = float_outputs(row.build(*inputs))
            if not outputs:
                raise ValueError("the row has no float output")
            loss = outputs[0] if len(outputs) == 1 and is_one_value(outputs[0].shape) else weighted_mean(outputs)
            forward = main.clone()
            params_grads = append_backward(loss)
    finally:
        paddle.set_default_dtype("float32")
    block = main.global_block()
    forward_ops = block.ops[:len(forward.global_block().ops)]
    backward_ops = block.ops[len(forward_ops):] + [op for b in main.blocks[len(forward.blocks):] for op in b.ops]
    return Built(main, startup, forward, loss.name, lods(row), [(p.name, g.name) for p, g in params_grads],
                 {name: f"{name}@GRAD" for name in row.input_names if block.has_var(f"{name}@GRAD")},
                 [out.name for out in outputs],
                 [name for op in forward_ops if is_random(op) for name in op.output_arg_names],
                 [op.type for b in forward.blocks for op in b.ops], [op.type for op in backward_ops])


def is_one_value(shape) -> bool:
    """A shape of one element (not two dims of unknown size, whose product is 1 too)."""
    return min(shape, default=0) >= 0 and int(np.prod(shape)) == 1


def with_lods(built: Built, feed: dict) -> dict:
    """The feed as Paddle's executor takes it: each LoD input a LoD tensor."""
    place = paddle.CPUPlace()
    return {name: paddle.base.create_lod_tensor(value, [list(np.diff(built.lods[name][0]))], place)
            if name in built.lods else value for name, value in feed.items()}


def is_random(op) -> bool:
    """A random op outside test mode (dropout with is_test draws nothing)."""
    return op.type in RANDOM_OPS and not (op.has_attr("is_test") and op.attr("is_test"))


def weighted_mean(outputs: list) -> paddle.static.Variable:
    terms = []
    for i, out in enumerate(outputs):
        weight = paddle.static.data(f"loss_w{i}", list(out.shape), out.dtype)
        terms.append(paddle.mean(append("elementwise_mul", {"X": out, "Y": weight}, {"axis": -1})))
    loss = terms[0]
    for term in terms[1:]:
        loss = paddle.add(loss, term)
    return loss


def loss_weights(shapes: list[tuple[int, ...]], seed: int) -> dict[str, np.ndarray]:
    """The fixed random weights of the loss, one per output of the given shapes."""
    rng = np.random.default_rng(seed + 1)
    return {f"loss_w{i}": rng.standard_normal(shape).astype("float32") for i, shape in enumerate(shapes)}

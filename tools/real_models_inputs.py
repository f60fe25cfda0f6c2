"""What tools/real_models.py feeds a model: its parameters (those saved beside it, else random ones; with
CALIBRATE, batch norms' running statistics those of the input) and its inputs (the knobs are real_models.py's)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np


def given_params(path: Path, program) -> dict | None:
    """The parameters saved next to the model (inference.pdiparams beside inference.json), if any."""
    saved = path.with_suffix(".pdiparams")
    if not saved.exists():
        return None
    from gradc.io.pdiparams import read_params
    return read_params(saved, program)


def random_params(program, rng) -> dict:
    """Parameters for a model file shipped without them (batch norm variances positive)."""
    from gradc.executor.kernels.tensor import numpy_dtype
    positive = {n for b in program.blocks for op in b.ops if op.type == "batch_norm" for n in op.input("Variance")}
    params = {}
    for var in program.global_block.vars.values():
        if var.persistable and var.shape is not None and var.dtype is not None and var.name not in ("feed", "fetch"):
            dtype = np.dtype(numpy_dtype(var.dtype))
            value = rng.standard_normal([max(d, 1) for d in var.shape]) * 0.1
            value = np.abs(value) + 1 if var.name in positive else value
            params[var.name] = value.astype(dtype) if dtype.kind == "f" else np.zeros(value.shape, dtype)
    return params


def calibrated(program, params: dict, feed: dict) -> dict:
    """``params`` with each batch norm's running statistics made its input's own (one run in training mode): a model
    saved with its initial weights otherwise grows its activations layer by layer (to 1e10 in PP-OCRv5's)."""
    import gradc
    trial, stats = program.clone(), {}
    for op in (op for block in trial.blocks for op in block.ops if op.type == "batch_norm"):
        op.set_attr("is_test", False), op.set_attr("use_global_stats", False), op.set_attr("momentum", 0.0)
        stats[op.output("MeanOut")[0]] = op.input("Mean")[0]
        stats[op.output("VarianceOut")[0]] = op.input("Variance")[0]
    trial.mark_changed()
    scope = gradc.Scope()
    for name, value in params.items():
        scope[name] = value.copy()
    values = gradc.Executor().run(trial, feed, list(stats), scope)
    return {**params, **{stats[name]: np.asarray(value) for name, value in zip(stats, values)}}


def fed_vars(block) -> list:
    """The inputs: a legacy program's feed ops' vars, a PIR program's data vars."""
    fed = [block.var(op.output("Out")[0]) for op in block.ops if op.type == "feed"]
    return fed or [var for var in block.vars.values() if var.need_check_feed]


def detector_feed(feed: dict) -> dict:
    """``feed`` with a PaddleDetection model's im_shape its image's height and width and its scale_factor 1 (random
    ones would clip boxes to a negative image and scale them by noise)."""
    image = feed.get("image")
    if image is None or image.ndim != 4:
        return feed
    sizes = {"im_shape": np.array(image.shape[2:4]), "scale_factor": np.ones(2)}
    return {**feed, **{name: np.broadcast_to(size, feed[name].shape).astype(feed[name].dtype)
                       for name, size in sizes.items() if name in feed and feed[name].shape[-1:] == (2,)}}


def input_value(var, rng, given: dict) -> np.ndarray:
    """A fed input's value, as the module docstring says (``given``: its entry of FEEDS)."""
    from gradc.executor.kernels.tensor import numpy_dtype
    if "value" in given:   # the input itself: a mask a model's generation builds, a document's boxes
        return np.array(given["value"], dtype=numpy_dtype(var.dtype))
    shape = given.get("shape") or [1 if d < 0 and i == 0 else int(os.environ.get("DIM", 64)) if d < 0 else d
                                   for i, d in enumerate(var.shape or [1])]
    dtype = np.dtype(numpy_dtype(var.dtype))
    if dtype.kind == "f" and "fill" not in given:
        return (rng.random if os.environ.get("UNIFORM") else rng.standard_normal)(shape).astype(dtype)
    bound = given.get("bound", int(os.environ.get("INT_BOUND", 0)))   # an input's own: a graph's node count
    if bound > 1 and "fill" not in given:
        return rng.integers(1, bound, shape).astype(dtype)
    return np.full(shape, given.get("fill", int(os.environ.get("INT_FEED", 1))), dtype)


def seeded(module):
    """``module`` (gradc or paddle) with its global random generator seeded SEED, where SEED is set."""
    if os.environ.get("SEED"):
        module.seed(int(os.environ["SEED"]))
    return module

"""Parameter values drawn from a parameter's name and shape, so a fixture of a large model (Paddle's resnet18) needs
no stored parameters: tools/paddle_gpu_build.py gives Paddle these values before it runs the programs, and the tests
give gradc the same ones. Uniform draws (numpy's Generator.random, whose stream is stable across versions), scaled
by the fan-in; a batch norm's running variance (Paddle's ".w_2") is drawn from [0.5, 1.5]. Gradients of parameters
too large to store are kept as entries at drawn positions (``sample_positions``)."""

from __future__ import annotations

import zlib
from math import prod, sqrt

import numpy as np

SAMPLES = 32   # stored entries of a gradient with more than FULL elements
FULL = 2048


def _rng(name: str, salt: int) -> np.random.Generator:
    return np.random.default_rng([salt, zlib.crc32(name.encode())])


def param_value(name: str, shape: list[int], seed: int) -> np.ndarray:
    """float32 values of ``shape`` for the parameter ``name``."""
    uniform = _rng(name, seed).random(shape)
    if name.endswith(".w_2") and len(shape) == 1:   # a running variance
        return (0.5 + uniform).astype(np.float32)
    fan_in = 1 if len(shape) < 2 else shape[0] if len(shape) == 2 else prod(shape[1:])
    bound = 0.1 if len(shape) < 2 else sqrt(3.0 / max(fan_in, 1))
    return ((2 * uniform - 1) * bound).astype(np.float32)


def sample_positions(name: str, size: int) -> np.ndarray:
    """The flat positions of a large gradient's stored entries."""
    return _rng(name, 7).choice(size, SAMPLES, replace=False)


def stored_grad(name: str, grad: np.ndarray) -> np.ndarray:
    """A gradient as a fixture keeps it: whole, or its entries at ``sample_positions`` when it is large."""
    grad = np.asarray(grad)
    return grad if grad.size <= FULL else grad.reshape(-1)[sample_positions(name, grad.size)]


def seeded_grads(case, feed: dict) -> tuple[np.ndarray, dict]:
    """gradc's loss and parameter gradients of ``case``'s forward.pb (a directory with its meta.json: loss, dtype,
    seed) at the seeded parameters, in the forward's dtype."""
    import json

    import gradc
    meta = json.loads((case / "meta.json").read_text())
    forward = gradc.load(case / "forward.pb")
    block = forward.global_block
    params = [name for name, var in block.vars.items() if var.persistable and name not in ("feed", "fetch")]
    gradc.append_backward(forward, meta["loss"])
    dtype = np.dtype(meta["dtype"])
    scope = gradc.Scope()
    for name in params:
        scope[name] = param_value(name, list(block.vars[name].shape), meta["seed"]).astype(dtype)
    names = [f"{name}@GRAD" for name in params]
    loss, *grads = gradc.Executor().run(forward, {k: v.astype(dtype) for k, v in feed.items()},
                                        [meta["loss"], *names], scope)
    return loss, dict(zip(names, grads))

"""The targets a backward starts from and their seeds: d(target)/d(target) is ones, or a var the caller gives
(paddle.static.gradients' target_gradients), so several targets give the gradient of sum_i <target_i, seed_i>."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import GradError
from ..ir import DIFFERENTIABLE_DTYPES, AttrType, Block, OpDesc, dtype_name
from ..shapes import numel


def check_float(block: Block, names: list[str], what: str) -> None:
    """A gradient is asked for only of float vars: integer and bool values are piecewise constant, so gradc
    (unlike Paddle, which runs integer grad kernels) differentiates through none of them."""
    for name in names:
        var = block.find_var(name)
        if var.dtype not in DIFFERENTIABLE_DTYPES:
            raise GradError(f"{what} '{name}' is {dtype_name(var.dtype)}: gradc computes gradients of float and "
                            f"complex vars only (an integer value's derivative is zero wherever it exists)")


def ones_seed(block: Block, target: str, grad: str) -> OpDesc:
    """d(target)/d(target) = 1: Paddle's fill_constant of the target's shape, or, when the shape has an
    unknown (batch) dim, ones shaped like the target at run time."""
    var = block.var(target)
    if var.shape is None or numel(var.shape) < 0:
        return OpDesc("fill_any_like", {"X": [target]}, {"Out": [grad]}, {"value": 1.0, "dtype": -1})
    return OpDesc("fill_constant", {}, {"Out": [grad]},
                  {"shape": list(var.shape or []), "dtype": int(var.dtype), "value": 1.0},
                  {"shape": AttrType.LONGS, "dtype": AttrType.INT, "value": AttrType.FLOAT})


def given_seed(block: Block, target: str, given: str, grad: str) -> OpDesc:
    """The target's grad copied from ``given``, which must be declared with the target's dtype, and its shape
    where both shapes are known."""
    var, seed = block.var(target), block.find_var(given)
    known = var.shape is not None and seed is not None and seed.shape is not None
    if seed is None or seed.dtype != var.dtype or (known and list(seed.shape) != list(var.shape)):
        have = "not declared in block 0" if seed is None else f"{dtype_name(seed.dtype)}{seed.shape}"
        raise GradError(f"target gradient '{given}' must be declared with the shape and dtype of '{target}', "
                        f"{dtype_name(var.dtype)}{var.shape}: it is {have}")
    return OpDesc("assign", {"X": [given]}, {"Out": [grad]}, {})


def paired_targets(targets: str | Sequence[str] | None,
                   target_gradients: str | Sequence[str | None] | None) -> list[tuple[str | None, str | None]]:
    """gradients()' targets, each with the var its gradient is seeded with (None: ones), as paddle.static.gradients
    takes them: one name or a list, and target_gradients None, one name, or a list as long (None entries: ones)."""
    names = [targets] if targets is None or isinstance(targets, str) else list(targets)
    if not names:
        raise GradError("gradients() needs a target: none given")
    if target_gradients is None or isinstance(target_gradients, str):
        given = [target_gradients] * len(names) if target_gradients is None else [target_gradients]
    else:
        given = list(target_gradients)
    if len(given) != len(names):
        raise GradError(f"{len(given)} target gradient(s) for {len(names)} target(s) ({', '.join(map(str, names))}): "
                        f"give one per target, None where it is ones")
    repeated = sorted({name for name in names if names.count(name) > 1}, key=str)
    if repeated:   # Paddle counts a repeated target once, and keeps only its last target gradient
        raise GradError(f"target(s) given twice: {', '.join(map(str, repeated))}: give each target once (its target "
                        f"gradient the sum of those it was given); Paddle seeds it once and keeps the last seed")
    return list(zip(names, given))

"""Rules over dims, shared by shape inference (gradc.ops) and the kernels (gradc.executor), so the two
cannot disagree. Dims are ints, -1 for unknown (a batch dim). Each rule that can fail takes
``fail(message)``: inference passes its context's fail (an error naming the op), kernels the default,
a ValueError the executor reports with the op."""

from __future__ import annotations

import math

PADDLE_0D = 2005000   # the program version of Paddle 2.5, which brought 0-d tensors


def value_error(message: str):
    raise ValueError(message)


def numel(dims) -> int:
    """The element count of a shape, -1 if any dim is unknown."""
    total = 1
    for d in dims:
        if d < 0:
            return -1
        total *= d
    return total


def dims_match(a: int, b: int) -> bool:
    return a < 0 or b < 0 or a == b


def shape_fits(declared: list[int], inferred: list[int], paddle_version: int | None = None,
               constant: bool = False) -> bool:
    """Whether a var declared ``declared`` may hold what an op's inference gives (-1: known at run time only).
    Declarations of older Paddle versions fit too, as Paddle 3 runs them: before 2.5 (no 0-d tensors) [1] for a
    0-d result and [] for a shape not recorded (dropout's Mask), and one dim holding the product of several with
    the unknown ones taken as -1 (layer_norm's Mean over [-1, -1] batch dims was declared [1]). So does a 0-d
    ``constant`` (fill_constant) declared with any dims: dy2static's placeholder for a value a branch or a loop body
    defines, which Paddle 3 writes as a 0-d pd_op.full typed as the value, its dims known or not (PaddleDetection's
    R-CNNs: [1000], [4])."""
    if len(declared) == len(inferred):
        return all(map(dims_match, declared, inferred))
    if constant and not inferred:
        return True
    if declared == [1] and not inferred:
        return True
    if not declared and paddle_version is not None and 0 < paddle_version < PADDLE_0D:
        return True
    return len(declared) == 1 and -1 in inferred and declared[0] == math.prod(inferred)


def normalize_axis(axis: int, rank: int, fail=value_error) -> int:
    """``axis`` in [-rank, rank) as an index >= 0, else ``fail(message)``. A 0-d tensor takes axis 0 or
    -1, as in Paddle: callers read that as "the whole tensor" (a reduce over it is the identity)."""
    size = max(rank, 1)
    if not -size <= axis < size:
        fail(f"axis {axis} is out of range for rank {rank}")
    return axis % size


def broadcast_dims(x: list[int], y: list[int], axis: int = -1, fail=value_error) -> list[int]:
    """Paddle's elementwise broadcast: Y's dims line up with X's from ``axis`` (-1: trailing)."""
    if len(x) < len(y):
        x, y = y, x
    if len(x) != len(y) and axis != -1 and not 0 <= axis <= len(x) - len(y):
        fail(f"axis {axis} is out of range for broadcasting {y} against {x}")
    if axis == -1 or len(x) == len(y):
        y = [1] * (len(x) - len(y)) + list(y)
    else:
        y = [1] * axis + list(y) + [1] * (len(x) - axis - len(y))
    out = []
    for a, b in zip(x, y):
        if a == 1:
            out.append(b)
        elif b == 1 or dims_match(a, b):
            out.append(a if a >= 0 or b == 1 else b)   # an unknown dim against a 1 stays unknown
        else:
            fail(f"cannot broadcast shapes {x} and {y} (axis {axis})")
    return out

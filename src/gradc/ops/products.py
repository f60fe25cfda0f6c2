"""Products of tensors: dot, cross, kron, mv, addmm, baddbmm, multi_dot; distances and norms: dist,
frobenius_norm; diagonals: trace, diagonal, diag_embed. einsum is in gradc.ops.products_einsum."""

from __future__ import annotations

from ..registry import NO_GRAD, defop, grad_op
from ..shapes import broadcast_dims, dims_match, normalize_axis
from .rearrange import diagonal_length
from .reduce import REDUCE_ATTRS, reduce_infer

# cross's default dim: no dim given, the first of size 3
CROSS_FIRST_OF_SIZE_3 = 9
DIAGONAL_ATTRS = {"offset": 0, "axis1": 0, "axis2": 1}


def _same_dims(x: list[int], y: list[int]) -> bool:
    return len(x) == len(y) and all(dims_match(a, b) for a, b in zip(x, y))


def _known(*dims: int) -> int:
    """The first known dim of several that must be equal (-1 if none is known)."""
    return next((d for d in dims if d >= 0), -1)


def _dot_infer(ctx):
    x, y = ctx.shape("X"), ctx.shape("Y")
    if len(x) not in (1, 2) or not _same_dims(x, y):
        ctx.fail(f"dot takes X and Y of one shape, a vector or a batch of rows, got {x} and {y}")
    return {"Out": ([_known(x[0], y[0])] if len(x) == 2 else [], ctx.dtype("X"))}


def cross_axis(dim: int, shape: list[int], fail) -> int | None:
    """The axis cross takes its 3-vectors along: ``dim``, or by default the first dim of size 3 (None when an
    unknown dim comes first: the axis is known at run time only)."""
    if dim == CROSS_FIRST_OF_SIZE_3:
        axis = next((i for i, d in enumerate(shape) if d == 3 or d < 0), None)
        if axis is None:
            fail(f"no dim of {shape} has size 3 (cross takes 3-vectors)")
        return axis if shape[axis] == 3 else None
    axis = normalize_axis(dim, len(shape), fail)
    if not dims_match(shape[axis], 3):
        fail(f"dim {dim} has size {shape[axis]}, not 3 (cross takes 3-vectors)")
    return axis


def _cross_infer(ctx):
    x, y = ctx.shape("X"), ctx.shape("Y")
    if not x or not _same_dims(x, y):
        ctx.fail(f"cross takes X and Y of one shape, got {x} and {y}")
    cross_axis(ctx.attr("dim"), x, ctx.fail)
    return {"Out": ([_known(a, b) for a, b in zip(x, y)], ctx.dtype("X"))}


def _kron_infer(ctx):
    """Each dim the product of X's and Y's, the lower rank padded with leading 1s."""
    x, y = ctx.shape("X"), ctx.shape("Y")
    rank = max(len(x), len(y))
    x, y = [1] * (rank - len(x)) + x, [1] * (rank - len(y)) + y
    return {"Out": ([a * b if a >= 0 and b >= 0 else -1 for a, b in zip(x, y)], ctx.dtype("X"))}


def _mv_infer(ctx):
    x, vec = ctx.shape("X"), ctx.shape("Vec")
    if len(x) != 2 or len(vec) != 1 or not dims_match(x[1], vec[0]):
        ctx.fail(f"mv takes a matrix X [M, N] and a vector Vec [N], got {x} and {vec}")
    return {"Out": (x[:1], ctx.dtype("X"))}


def _scaled_product_infer(batched: bool):
    """addmm (batched: baddbmm): Out = Beta Input + Alpha X @ Y; Input broadcasts to Out's shape."""
    rank = 3 if batched else 2
    name = "baddbmm" if batched else "addmm"

    def infer(ctx):
        x, y, given = ctx.shape("X"), ctx.shape("Y"), ctx.shape("Input")
        if len(x) != rank or len(y) != rank or not _same_dims(x[:-2], y[:-2]) or not dims_match(x[-1], y[-2]):
            batch = "B, " if batched else ""
            ctx.fail(f"{name} needs X [{batch}M, K] and Y [{batch}K, N], got {x} and {y}")
        out = [_known(a, b) for a, b in zip(x[:-2], y[:-2])] + [x[-2], y[-1]]

        def refuse(_reason: str = ""):
            ctx.fail(f"Input {given} does not broadcast to the product's shape {out}")
        # it broadcasts to out when broadcasting it against out leaves out as it is
        if len(given) > len(out) or not _same_dims(broadcast_dims(out, given, fail=refuse), out):
            refuse()
        return {"Out": (out, ctx.dtype("X"))}
    return infer


def _multi_dot_infer(ctx):
    """A chain of matrices; the first may be a row vector and the last a column vector (their dims are dropped)."""
    shapes = ctx.shapes("X")
    ranks_ok = len(shapes) >= 2 and all(len(s) == 2 for s in shapes[1:-1])
    if not ranks_ok or len(shapes[0]) not in (1, 2) or len(shapes[-1]) not in (1, 2):
        ctx.fail(f"multi_dot takes two or more matrices (the first and last may be vectors), got {shapes}")
    first = [1] + shapes[0] if len(shapes[0]) == 1 else shapes[0]
    last = shapes[-1] + [1] if len(shapes[-1]) == 1 else shapes[-1]
    chain = [first, *shapes[1:-1], last]
    for i, (a, b) in enumerate(zip(chain, chain[1:])):
        if not dims_match(a[1], b[0]):
            ctx.fail(f"X[{i}] {shapes[i]} and X[{i + 1}] {shapes[i + 1]} do not chain: {a[1]} vs {b[0]}")
    return {"Out": (first[:len(shapes[0]) - 1] + last[1:len(shapes[-1])], ctx.dtype("X", 0))}


def _dist_infer(ctx):
    x, y = ctx.shape("X"), ctx.shape("Y")
    broadcast_dims(x, y, -1, ctx.fail)
    return {"Out": ([], ctx.dtype("X"))}


def diagonal_axes(attr, rank: int, fail) -> tuple[int, int]:
    """axis1 and axis2 of trace and diagonal, as indices >= 0: two different axes."""
    axes = [normalize_axis(attr(name), rank, fail) for name in ("axis1", "axis2")]
    if axes[0] == axes[1]:
        fail(f"axis1 {attr('axis1')} and axis2 {attr('axis2')} are the same axis")
    return axes[0], axes[1]


def _diagonal_infer(keep_diagonal: bool):
    """trace (the diagonal summed) or diagonal (the diagonal as a new last dim): Input less axis1 and axis2."""
    def infer(ctx):
        shape = ctx.shape("Input")
        if len(shape) < 2:
            ctx.fail(f"Input must have rank 2 or more (a matrix or a batch of them), got {shape}")
        a1, a2 = diagonal_axes(ctx.attr, len(shape), ctx.fail)
        rest = [d for i, d in enumerate(shape) if i not in (a1, a2)]
        rows, cols = shape[a1], shape[a2]
        length = -1 if rows < 0 or cols < 0 else diagonal_length(rows, cols, ctx.attr("offset"))
        return {"Out": (rest + [length] if keep_diagonal else rest, ctx.dtype("Input"))}
    return infer


def diag_embed_dims(attr, rank: int, fail) -> tuple[int, int]:
    """dim1 and dim2 of diag_embed as indices >= 0 into Out (rank ``rank`` + 1): two different dims."""
    dims = [normalize_axis(attr(name), rank + 1, fail) for name in ("dim1", "dim2")]
    if dims[0] == dims[1]:
        fail(f"dim1 {attr('dim1')} and dim2 {attr('dim2')} are the same dim of Out")
    return dims[0], dims[1]


def _diag_embed_infer(ctx):
    """Input [..., N] -> Out with dims dim1 and dim2 of size N + |offset| inserted, the batch dims in order."""
    shape = ctx.shape("Input")
    if not shape:
        ctx.fail("Input must have rank 1 or more (the last dim is the diagonal)")
    d1, d2 = diag_embed_dims(ctx.attr, len(shape), ctx.fail)
    size = shape[-1] + abs(ctx.attr("offset")) if shape[-1] >= 0 else -1
    out = list(shape[:-1])
    for dim in sorted((d1, d2)):
        out.insert(dim, size)
    return {"Out": (out, ctx.dtype("Input"))}


def _frobenius_norm_infer(ctx):
    """The reduce ops' attributes, but Out has X's dtype: no kernel converts to in_dtype or out_dtype."""
    for name in ("in_dtype", "out_dtype"):
        if ctx.attr(name) != -1:
            ctx.fail(f"frobenius_norm {name} must be -1 (Out has X's dtype), got {ctx.attr(name)}")
    return reduce_infer(ctx)


defop("dot", ["X", "Y"], infer=_dot_infer, grad=grad_op("X", "Y"))
defop("cross", ["X", "Y"], attrs={"dim": CROSS_FIRST_OF_SIZE_3}, infer=_cross_infer, grad=grad_op("X", "Y"))
defop("kron", ["X", "Y"], infer=_kron_infer, grad=grad_op("X", "Y"))
defop("mv", ["X", "Vec"], infer=_mv_infer, grad=grad_op("X", "Vec"))
# Out = Beta Input + Alpha X @ Y (batched); the grad reads Input for its shape only
defop("addmm", ["Input", "X", "Y"], attrs={"Alpha": 1.0, "Beta": 1.0}, infer=_scaled_product_infer(False),
      grad=grad_op("Input", "X", "Y"))
defop("baddbmm", ["Input", "X", "Y"], attrs={"Alpha": 1.0, "Beta": 1.0}, infer=_scaled_product_infer(True),
      grad=grad_op("Input", "X", "Y"))
defop("multi_dot", ["X[]"], infer=_multi_dot_infer, grad=grad_op("X"))
# the p-norm of X - Y (broadcast) as one vector: p 0 counts nonzeros, inf / -inf take the largest / smallest |.|.
# Its grad for 0 < p < 1 is 0 where X = Y (the central difference), where Paddle 3.3.1 gives nan.
defop("dist", ["X", "Y"], attrs={"p": 2.0}, infer=_dist_infer, grad=grad_op("X", "Y", "Out"))
defop("trace", ["Input"], attrs=DIAGONAL_ATTRS, infer=_diagonal_infer(False), grad=grad_op("Input"))
defop("diagonal", ["Input"], attrs=DIAGONAL_ATTRS, infer=_diagonal_infer(True), grad=grad_op("Input"))
# Paddle 3.3.1's diag_embed has no grad maker
defop("diag_embed", ["Input"], attrs={"offset": 0, "dim1": -2, "dim2": -1}, infer=_diag_embed_infer, grad=NO_GRAD)
# sqrt of the sum of squares over the reduce ops' axes
defop("frobenius_norm", ["X"], attrs=REDUCE_ATTRS, infer=_frobenius_norm_infer, grad=grad_op("X", "Out"),
      tensor_attrs=["dim"])

"""A reduce op's Out (or Out@GRAD) given back the dims the reduce folded, as 1s, so it broadcasts against X: the
second-derivative makers of logsumexp_grad and frobenius_norm_grad write their grad ops' formulas with it. X's rank
is not needed where the folded dims all count from the same end: unsqueeze2 inserts its axes one after another; dims
counted from both ends of an X of unknown rank are placed at run time (reshaped to a keep_dim reduce of X's shape)."""

from __future__ import annotations

from ..errors import GradError
from .composite import Formula
from .reduce import reduced_axes


def _spread(shape: list[int], axes: list[int], rank: int) -> list[int]:
    """A reduced shape's dims at their places in the full rank (1 at the reduced axes)."""
    rest = iter(shape)
    return [1 if i in axes else next(rest) for i in range(rank)]


def _insertions(g, x: str, value: str, dims: list[int]) -> list[int] | None:
    """unsqueeze2's axes giving ``value`` back ``dims``: normalized by X's rank when it is declared, else the
    non-negative dims from the first, the negative ones from the last (-1 first); None where they count from both
    ends of an X of unknown rank (where they sit is known at run time only)."""
    shape = g.shape(x)
    if shape is not None:
        axes = list(reduced_axes(lambda name: dims if name == "dim" else False, len(shape)))
        declared = g.shape(value)
        if declared is not None and len(declared) != len(shape) - len(axes):
            raise GradError(f"{g.fwd.type}: {value} has shape {declared}, not the {len(shape) - len(axes)} dims X of "
                            f"rank {len(shape)} keeps when reduced over axes {axes}")
        return [] if len(axes) == len(shape) else axes
    unique = sorted(set(dims))
    if all(d >= 0 for d in unique):
        return unique
    if all(d < 0 for d in unique):
        return unique[::-1]
    return None


def reduced_dims_back(f: Formula, g, value: str, x: str, attrs_of) -> str:
    """``value`` with the dims a reduce of ``x`` folded (attributes by the reduce ops' names: dim, keep_dim,
    reduce_all) back as 1s; as it is when they were kept or all folded (a 0-d value broadcasts)."""
    dims = list(attrs_of("dim") or [])
    if attrs_of("keep_dim") or attrs_of("reduce_all") or not dims:
        return value
    axes = _insertions(g, x, value, dims)
    if axes is None:   # X's shape with 1s at the folded dims, read at run time from a keep_dim reduce of X
        kept = f.op("reduce_sum", {"X": x}, x, {"dim": dims, "keep_dim": True, "reduce_all": False})
        return f.shaped_like(value, kept)
    if not axes:
        return value

    def spread(kept: list[int]) -> list[int]:
        rank = len(kept) + len(axes)
        return _spread(kept, [a % rank for a in axes], rank)
    return f.op("unsqueeze2", {"X": value}, value, {"axes": axes}, more={"XShape": f.xshape(value)}, dims=spread)

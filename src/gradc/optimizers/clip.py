"""Gradient clipping as Paddle's grad_clip writes it, after the backward and before regularization, for every
(parameter, gradient) pair in name order except parameters with ParamAttr(need_clip=False). ClipGradByValue and
ClipGradByNorm write new gradient vars (the update reads those); ClipGradByGlobalNorm scales the gradients in
place by clip_norm / max(clip_norm, global norm). A sparse gradient (SELECTED_ROWS) stays sparse: its clipped
var is one too, and the global norm reads it through merge_selected_rows and get_tensor_from_selected_rows."""

from __future__ import annotations

from ..errors import GradcError
from ..ir import VarType
from .emit import Emitter

Pairs = list[tuple[str, str]]


class GradientClip:
    def append(self, emit: Emitter, pairs: Pairs, clipped: set[str]) -> Pairs:
        """Append the clipping ops of the pairs whose parameter is in ``clipped``; the new pairs."""
        raise NotImplementedError


class _PerGradient(GradientClip):
    op_type = ""

    def attrs(self) -> dict:
        raise NotImplementedError

    def append(self, emit, pairs, clipped):
        result = []
        for param, grad in pairs:
            if param in clipped:
                out = emit.like(self.op_type + "_{}.tmp_0", grad)
                emit.block.var(out).type = emit.block.var(grad).type
                emit.op(self.op_type, {"X": [grad]}, {"Out": [out]}, self.attrs(), role_var=[param, out])
                grad = out
            result.append((param, grad))
        return result


class ClipGradByValue(_PerGradient):
    """Each gradient element limited to [min, max] (min defaults to -max)."""

    op_type = "clip"

    def __init__(self, max: float, min: float | None = None):  # noqa: A002 - Paddle's argument names
        self.max, self.min = float(max), -float(max) if min is None else float(min)
        if self.min > self.max:
            raise GradcError(f"ClipGradByValue: min {self.min} is greater than max {self.max}")

    def attrs(self):
        return {"min": self.min, "max": self.max}


class ClipGradByNorm(_PerGradient):
    """Each gradient scaled to L2 norm clip_norm where its norm exceeds it."""

    op_type = "clip_by_norm"

    def __init__(self, clip_norm: float):
        self.clip_norm = float(clip_norm)

    def attrs(self):
        return {"max_norm": self.clip_norm}


class ClipGradByGlobalNorm(GradientClip):
    """All gradients scaled by clip_norm / max(clip_norm, sqrt(sum of their squared L2 norms)). Float64
    gradients sum in float64 (float32 sums are cast to it), as Paddle does."""

    def __init__(self, clip_norm: float):
        self.clip_norm = float(clip_norm)

    def append(self, emit, pairs, clipped):
        norms: dict[int, list[str]] = {}
        for param, grad in pairs:
            if param in clipped:
                emit.role_var = [param, grad]
                out = emit.temporary("squared_l2_norm_{}.tmp_0", [1], emit.block.var(grad).dtype)
                emit.op("squared_l2_norm", {"X": [_as_tensor(emit, grad)]}, {"Out": [out]})
                norms.setdefault(emit.block.var(grad).dtype, []).append(out)
        if not norms:
            return pairs
        emit.role_var = list(pairs[-1])   # Paddle leaves the last pair's guard on the shared ops
        scale = self._scale(emit, norms)
        for param, grad in pairs:
            if param in clipped:
                emit.op("elementwise_mul", {"X": [grad], "Y": [scale]}, {"Out": [grad]}, {"axis": -1},
                        role_var=[param, grad])
        return pairs

    def _scale(self, emit: Emitter, norms: dict[int, list[str]]) -> str:
        dtype = VarType.FP64 if VarType.FP64 in norms else VarType.FP32
        sums = [_add_n(emit, terms) for _, terms in sorted(norms.items())]
        sums = [_cast(emit, s, dtype) if emit.block.var(s).dtype != dtype else s for s in sums]
        total = _add_n(emit, sums) if len(sums) > 1 else sums[0]
        norm = emit.temporary("sqrt_{}.tmp_0", [1], dtype)
        emit.op("sqrt", {"X": [total]}, {"Out": [norm]})
        limit = emit.temporary("fill_constant_{}.tmp_0", [1], dtype, stop_gradient=True)
        emit.append(emit.fill_constant(limit, [1], dtype, self.clip_norm))
        larger = emit.temporary("elementwise_max_{}.tmp_0", [1], dtype)
        emit.op("elementwise_max", {"X": [limit], "Y": [norm]}, {"Out": [larger]}, {"axis": -1})
        scale = emit.temporary("elementwise_div_{}", [1], dtype)
        emit.op("elementwise_div", {"X": [limit], "Y": [larger]}, {"Out": [scale]}, {"axis": -1})
        return scale


def _as_tensor(emit: Emitter, grad: str) -> str:
    """A sparse gradient's rows merged, as a tensor of its values (Paddle's norm of a SelectedRows); else grad."""
    var = emit.block.var(grad)
    if var.type != VarType.SELECTED_ROWS:
        return grad
    merged = emit.fresh("merge_selected_rows_{}.tmp_0")
    emit.block.create_var(merged, None, None, type=VarType.SELECTED_ROWS)   # Paddle declares no shape or dtype
    emit.op("merge_selected_rows", {"X": [grad]}, {"Out": [merged]})
    values = emit.temporary("get_tensor_from_selected_rows_{}.tmp_0", var.shape, var.dtype)
    emit.op("get_tensor_from_selected_rows", {"X": [merged]}, {"Out": [values]})
    return values


def _add_n(emit: Emitter, terms: list[str]) -> str:
    out = emit.temporary("add_n_{}.tmp_0", [1], emit.block.var(terms[0]).dtype)
    emit.op("sum", {"X": terms}, {"Out": [out]})
    return out


def _cast(emit: Emitter, var: str, dtype: int) -> str:
    out = emit.temporary("cast_{}.tmp_0", [1], dtype)
    emit.op("cast", {"X": [var]}, {"Out": [out]}, {"in_dtype": emit.block.var(var).dtype, "out_dtype": dtype})
    return out

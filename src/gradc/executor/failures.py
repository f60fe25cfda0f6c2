"""What the executor says when a kernel fails: if the op's shape inference, run on the values the op
actually got, rejects them, its message (in the user's terms: shapes, axes, attributes) is the error;
otherwise the kernel's own message (a ValueError is a check of its inputs; another exception is named),
with the op and the shapes it read. Costs nothing when kernels succeed."""

from __future__ import annotations

import numpy as np

from .. import registry
from ..errors import ExecutionError, ProgramError, op_location
from ..ir.types import DTYPE_BY_NUMPY_NAME
from ..opdef import unknown_types_note
from ..ops.creation import scalar_values
from ..ops.infer import InferContext


class _RuntimeInferContext(InferContext):
    """Shape inference over the values in the scope instead of the declared vars."""

    __slots__ = ("scope", "kernel")

    def __init__(self, ctx):
        super().__init__(ctx.op, ctx.block, ctx.op_idx)
        self.scope = ctx.scope
        self.kernel = ctx

    def attr(self, name: str):
        return self.kernel.attr(name)   # a tensor-valued attribute: the value its var holds

    def _value(self, slot: str, i: int):
        args = self.op.input(slot)
        return self.scope.find(args[i]) if i < len(args) else None

    def shape(self, slot: str, i: int = 0):
        value = self._value(slot, i)
        return list(value.shape) if isinstance(value, np.ndarray) else None

    def dtype(self, slot: str, i: int = 0):
        value = self._value(slot, i)
        return DTYPE_BY_NUMPY_NAME.get(value.dtype.name) if isinstance(value, np.ndarray) else None


def kernel_failure(ctx, exc: Exception) -> ExecutionError:
    if isinstance(exc, MemoryError):
        return ExecutionError(f"{ctx.where}: out of memory [inputs: {describe_inputs(ctx)}]")
    opdef = registry.get(ctx.op.type)
    if opdef is not None and opdef.infer is not None:
        try:
            opdef.infer(_RuntimeInferContext(ctx))
        except ProgramError as rejected:
            return ExecutionError(str(rejected))
        except Exception:  # noqa: BLE001 - inference that cannot judge these values says nothing
            pass
    if isinstance(exc, ValueError):   # a kernel's own check of the values it got: its message says what is wrong
        return ExecutionError(f"{ctx.where}: {exc} [inputs: {describe_inputs(ctx)}]")
    return ExecutionError(f"{ctx.where} failed: {type(exc).__name__}: {exc} [inputs: {describe_inputs(ctx)}]")


def describe_inputs(ctx) -> str:
    parts = []
    for slot, args in ctx.op.inputs.items():
        for name in args:
            value = ctx.scope.find(name)
            shape = list(value.shape) if hasattr(value, "shape") else type(value).__name__
            parts.append(f"{slot}={name}{shape}")
    return ", ".join(parts) or "none"


class NonFiniteError(ExecutionError):
    """An op wrote NaN or Inf (raised only when the executor's check_finite is on); ``detail`` says in which part
    of the program the op is and what it read."""

    def __init__(self, where: str, var: str, slot: str, what: str, step: int | None = None, detail: str = ""):
        super().__init__(f"{'' if step is None else f'step {step}: '}{where} wrote {what} into '{var}' (output {slot})"
                         f"{detail}")
        self.where, self.var, self.slot, self.what, self.detail = where, var, slot, what, detail


def check_finite(ctx, results: dict) -> None:
    """Raise NonFiniteError for the first float output of this op holding NaN, or an infinity the program did not
    ask for: one its attributes ask for (a causal mask's fill_constant or assign_value of -inf) passes, and so does
    one of a sign it read from an earlier op's output (that mask's triu, the scores it is added to), which passed;
    an infinity fed or given as a parameter is caught by its first reader. An overflow of an AMP program's scaled
    loss or gradients passes: its loss scaling skips the step (amp_loss.screened_by_loss_scaling)."""
    for slot, value in results.items():
        values = value if type(value) is list else [value]
        for name, array in zip(ctx.op.outputs.get(slot, ()), values):
            if isinstance(array, np.ndarray) and array.dtype.kind in "fc" and not np.isfinite(array).all():
                what = _non_finite(array)
                if (what == "NaN" or not _infinities_given(ctx, array)) and not _screened(ctx):
                    raise NonFiniteError(ctx.where, name, slot, what, detail=_what_it_read(ctx))


def _screened(ctx) -> bool:
    from ..amp_loss import screened_by_loss_scaling  # reads the pairing, as op_kind below: only a failure needs it
    return screened_by_loss_scaling(ctx.block, ctx.op_idx)


def _infinities_given(ctx, array: np.ndarray) -> bool:
    """Whether each sign of infinity in ``array`` is one the op's attributes hold or one an input an op of the program
    wrote holds."""
    if any(_infinite(value) for value in ctx.op.attrs.values()):
        return True
    written = {name for block in ctx.block.program.blocks for op in block.ops for name in op.output_names()}
    read = [ctx.scope.find(name) for args in ctx.op.inputs.values() for name in args if name in written]
    read = [value for value in read if isinstance(value, np.ndarray) and value.dtype.kind in "fc"]
    return all(not test(array).any() or any(test(value).any() for value in read)
               for test in (np.isposinf, np.isneginf))


def _infinite(attr) -> bool:
    """An attribute value that is or holds an infinity (fill_constant's value and its str_value '-inf', a Scalar of
    assign_value's values: CLIP's causal mask written by paddle.assign of a numpy array)."""
    if isinstance(attr, (list, tuple)):
        return any(_infinite(item) for item in attr)
    if isinstance(attr, bytes):   # the IR keeps SCALAR attributes as serialized Scalar messages
        return _infinite(scalar_values([attr])[0])
    if isinstance(attr, str):
        return attr.strip().lower().lstrip("+-") in ("inf", "infinity")
    return isinstance(attr, float) and np.isinf(attr)


def _non_finite(array: np.ndarray) -> str:
    if np.isnan(array).any():
        return "NaN"
    return " and ".join(sign for sign, found in (("Inf", np.isposinf(array).any()), ("-Inf", np.isneginf(array).any()))
                        if found)


def _what_it_read(ctx) -> str:
    """'; a forward op; it read X=name float32[8, 3] min .. max .. (2 zeros), ...': the values that made the NaN."""
    from ..pairing import op_kind  # the pairing module reads the registry; only a failure needs it
    written = set(ctx.op.output_names())
    parts = []
    for slot, args in ctx.op.inputs.items():
        for name in args:
            value = ctx.scope.find(name)
            in_place = " (after the op: it writes it in place)" if name in written else ""
            parts.append(f"{slot}={name} {_summary(value)}{in_place}")
    return f"; a {op_kind(ctx.block, ctx.op)} op; it read {', '.join(parts) or 'nothing'}"


def _summary(value) -> str:
    if not isinstance(value, np.ndarray):
        return type(value).__name__
    head = f"{value.dtype.name}{list(value.shape)}"
    if value.dtype.kind not in "fiu" or value.size == 0:
        return head
    finite = value[np.isfinite(value)] if value.dtype.kind == "f" else value
    counts = [(int(np.isnan(value).sum()), "NaN"), (int(np.isposinf(value).sum()), "Inf"),
              (int(np.isneginf(value).sum()), "-Inf")] if value.dtype.kind == "f" else []
    counts.append((int((value == 0).sum()), "zero"))
    extremes = f" min {finite.min():.6g} max {finite.max():.6g}" if finite.size else ""
    counted = ", ".join(f"{n} {label}{'s' if n > 1 and label == 'zero' else ''}" for n, label in counts if n)
    return f"{head}{extremes}{f' ({counted})' if counted else ''}"


def no_kernel_error(block_idx: int, missing: list[tuple[int, str]]) -> ExecutionError:
    """Ops of types with no kernel, and how to register those gradc does not know at all."""
    listing = "; ".join(op_location(block_idx, i, t) for i, t in missing)
    return ExecutionError(f"no kernel for {len(missing)} op(s): {listing}{unknown_types_note(t for _, t in missing)}")

"""Ops that make tensors from attributes or small inputs: assign_value (a literal array), eye, linspace,
logspace, range, sequence_mask; coalesce_tensor (copies parameters into one flat buffer); label_smooth (labels blended
with a prior).

assign_value keeps its literal in `values`, a SCALARS attribute (serialized Scalar messages); programs from
Paddle 2.x keep it in a per-dtype attribute instead (fp32_values, int32_values, ...), which Paddle 3.3.1 no
longer declares but gradc still reads.
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import NO_GRAD, defop, grad_op, typed
from ..shapes import dims_match, numel
from .infer import same_as

LEGACY_VALUES = {VarType.BOOL: "bool_values", VarType.INT32: "int32_values", VarType.FP32: "fp32_values",
                 VarType.INT64: "int64_values", VarType.FP64: "fp64_values"}
DTYPE_BYTES = {VarType.BOOL: 1, VarType.INT16: 2, VarType.INT32: 4, VarType.INT64: 8, VarType.FP16: 2,
               VarType.FP32: 4, VarType.FP64: 8, VarType.BF16: 2, VarType.UINT8: 1, VarType.INT8: 1}


def scalars(values) -> list[bytes]:
    """A SCALARS attribute value: each Python bool, int, float or complex as a serialized Scalar."""
    from ..proto import framework_pb2 as pb  # here: a program without Scalars is compiled without protobuf
    encoded = []
    for v in values:
        if isinstance(v, bool):
            scalar = pb.Scalar(type=pb.Scalar.BOOLEAN, b=v)
        elif isinstance(v, int):
            scalar = pb.Scalar(type=pb.Scalar.LONG, i=v)
        elif isinstance(v, complex):
            scalar = pb.Scalar(type=pb.Scalar.COMPLEX128, c=pb.Complex(r=v.real, i=v.imag))
        else:
            scalar = pb.Scalar(type=pb.Scalar.FLOAT64, r=float(v))
        encoded.append(scalar.SerializeToString(deterministic=True))
    return encoded


def scalar_values(encoded) -> list:
    """A SCALARS attribute value back as Python numbers (plain numbers pass through)."""
    from ..proto import framework_pb2 as pb
    numbers = []
    for raw in encoded:
        if not isinstance(raw, bytes):
            numbers.append(raw)
            continue
        scalar = pb.Scalar.FromString(raw)
        if scalar.type == pb.Scalar.COMPLEX128:
            numbers.append(complex(scalar.c.r, scalar.c.i))
            continue
        field = {pb.Scalar.BOOLEAN: "b", pb.Scalar.LONG: "i", pb.Scalar.FLOAT64: "r"}.get(scalar.type)
        if field is None:
            raise ValueError(f"a Scalar of unknown type {scalar.type}")
        numbers.append(getattr(scalar, field))
    return numbers


def literal(attrs) -> list:
    """assign_value's values: `values`, else the Paddle 2.x attribute of its dtype."""
    values = list(attrs.get("values") or [])
    if values:
        return scalar_values(values)
    legacy = LEGACY_VALUES.get(attrs.get("dtype"))
    return list(attrs.get(legacy) or []) if legacy else []


def _assign_value_infer(ctx):
    shape, count = list(ctx.attr("shape")), len(literal({**ctx.op.attrs, "dtype": ctx.attr("dtype")}))
    if any(d < 0 for d in shape) or count != numel(shape):
        ctx.fail(f"assign_value holds {count} values for shape {shape}")
    return {"Out": (shape, ctx.attr("dtype"))}


# ValuesTensor is the in-place target of PIR's assign_value_: Paddle's kernel never reads it
defop("assign_value", ["ValuesTensor?"], attrs={"shape": [], "dtype": 5, "values": typed([], AttrType.SCALARS)},
      infer=_assign_value_infer, grad=NO_GRAD)


def _eye_infer(ctx):
    rows, cols = ctx.attr("num_rows"), ctx.attr("num_columns")
    cols = rows if cols == -1 else cols
    if rows < 0 or cols < 0:
        ctx.fail(f"eye needs num_rows and num_columns >= 0 (num_columns -1: square), got {rows} and {cols}")
    return {"Out": ([rows, cols], ctx.attr("dtype"))}


defop("eye", [], attrs={"num_rows": typed(0, AttrType.LONG), "num_columns": typed(-1, AttrType.LONG), "dtype": 5},
      infer=_eye_infer, grad=NO_GRAD, tensor_attrs=["num_rows", "num_columns"])


def _scalar_inputs(ctx, slots) -> None:
    for slot in slots:
        if numel(ctx.shape(slot)) not in (1, -1):
            ctx.fail(f"{ctx.op.type} needs a one-element {slot}, got shape {ctx.shape(slot)}")


def _linspace_infer(ctx):
    _scalar_inputs(ctx, ["Start", "Stop", "Num"])
    return {"Out": ([-1], ctx.attr("dtype"))}


def _logspace_infer(ctx):
    _scalar_inputs(ctx, ["Start", "Stop", "Num", "Base"])
    return {"Out": ([-1], ctx.attr("dtype"))}


def _range_infer(ctx):
    _scalar_inputs(ctx, ["Start", "End", "Step"])
    return {"Out": ([-1], ctx.dtype("Start"))}


defop("linspace", ["Start", "Stop", "Num"], attrs={"dtype": 5}, infer=_linspace_infer, grad=NO_GRAD)
# Base ** linspace(Start, Stop, Num)
defop("logspace", ["Start", "Stop", "Num", "Base"], attrs={"dtype": 5}, infer=_logspace_infer, grad=NO_GRAD)
defop("range", ["Start", "End", "Step"], infer=_range_infer, grad=NO_GRAD)
# paddle.range: like range, but End is included when the steps reach it
defop("range_v2", ["Start", "End", "Step"], infer=_range_infer, grad=NO_GRAD)


def _sequence_mask_infer(ctx):
    if ctx.attr("out_dtype") not in DTYPE_BYTES:
        ctx.fail(f"sequence_mask out_dtype {ctx.attr('out_dtype')} is not a tensor dtype")
    maxlen = -1 if ctx.has("MaxLenTensor") or ctx.attr("maxlen") < 0 else ctx.attr("maxlen")
    return {"Y": (ctx.shape("X") + [maxlen], ctx.attr("out_dtype"))}


# Y[..., j] = j < X[...]: MaxLenTensor, else maxlen, else (maxlen < 0) the longest length, gives the last dim
defop("sequence_mask", ["X", "MaxLenTensor?"], ["Y"], attrs={"maxlen": -1, "out_dtype": 3},
      infer=_sequence_mask_infer, grad=NO_GRAD)


def aligned_length(count: int, dtype_bytes: int, use_align: bool, align_size: int) -> int:
    """Elements a tensor takes in coalesce_tensor's buffer: with use_align, its bytes rounded up to
    align_size (Paddle's CPU default: 4096)."""
    if not use_align:
        return count
    align = align_size if align_size > 0 else 4096
    return -(-count * dtype_bytes // align) * align // dtype_bytes


def dtype_bytes(attrs) -> int:
    size = attrs["user_defined_size_of_dtype"]
    return size if size != -1 else DTYPE_BYTES[attrs["dtype"]]


def _coalesce_infer(ctx):
    shapes = ctx.shapes("Input")
    attrs = {name: ctx.attr(name) for name in ("dtype", "user_defined_size_of_dtype", "use_align", "align_size")}
    if attrs["dtype"] not in DTYPE_BYTES:
        ctx.fail(f"coalesce_tensor dtype {attrs['dtype']} is not a tensor dtype")
    if len(ctx.op.output("Output")) not in (0, len(shapes)):
        ctx.fail(f"coalesce_tensor has {len(shapes)} inputs but {len(ctx.op.output('Output'))} outputs")
    counts = [numel(s) for s in shapes]
    total = -1 if -1 in counts else sum(aligned_length(c, dtype_bytes(attrs), attrs["use_align"], attrs["align_size"])
                                        for c in counts)
    return {"Output": [(s, attrs["dtype"]) for s in shapes], "FusedOutput": ([total], attrs["dtype"])}


defop("coalesce_tensor", ["Input[]"], ["Output[]", "FusedOutput"],
      attrs={"dtype": 5, "copy_data": False, "set_constant": False, "persist_output": False, "constant": 0.0,
             "use_align": True, "align_size": -1, "user_defined_size_of_dtype": -1,
             "concated_shapes": typed([], AttrType.LONGS), "concated_ranks": typed([], AttrType.LONGS)},
      infer=_coalesce_infer, grad=NO_GRAD)


def _label_smooth_infer(ctx):
    x, prior = ctx.shape("X"), ctx.shape("PriorDist") if ctx.has("PriorDist") else None
    if not x:
        ctx.fail("label_smooth needs X of rank >= 1 (classes last), got a 0-d tensor")
    # Paddle reads PriorDist flat: F.label_smooth documents it as [1, num_classes]
    leading_ones = prior is not None and all(dim == 1 for dim in prior[:-1])
    if prior is not None and (len(prior) not in (1, 2) or not leading_ones or not dims_match(prior[-1], x[-1])):
        ctx.fail(f"label_smooth PriorDist must be [num_classes] or [1, num_classes] = [1, {x[-1]}], got {prior}")
    return same_as("X")(ctx)


# label_smooth_grad scales Out@GRAD by 1 - epsilon
defop("label_smooth", ["X", "PriorDist?"], attrs={"epsilon": 0.0}, no_grad_inputs=["PriorDist"],
      infer=_label_smooth_infer, grad=grad_op())

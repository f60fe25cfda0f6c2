"""Export of legacy ops PIR has no op for (or none Paddle runs), written as the PIR ops that compute the same:
fluid's fc layer `mul` (X flattened to x_num_col_dims leading dims and one of the rest, times a 2-D Y) as
pd_op.matmul, `mul_grad` as pd_op.matmul_grad with X's grad reshaped back, the v1 embedding `lookup_table` (Ids
ending in a dim of 1) as pd_op.embedding and a squeeze of that dim, as Paddle's legacy-to-PIR translator writes it,
`lookup_table_grad` as pd_op.embedding_grad of the output grad unsqueezed back, and `merged_momentum` as one
pd_op.momentum_ per parameter (what Paddle's PIR minimize writes for Momentum(use_multi_tensor=True)): Paddle
3.3.1's PIR executor cannot run pd_op.merged_momentum_, whose kernel wants ParamOut to be Param's very tensor.
`pad_grad` gets the x PIR's pad_grad reads (for its shape only) from a slice of out_grad; `fill_zeros_like`,
which Paddle 3.3.1 no longer registers, is pd_op.full_like with 0, or for a tensor array (and a fill_any_like of 0 of
one) pd_op.create_array_like; a `one_hot_v2` of another dtype than float32 (a program widened to float64) is
pd_op.one_hot, which writes float32 whatever the program's dtype, and a cast. A `sum` of sparse COO tensors (the
gradients of one sparse var) is a chain of pd_op.add_coo_coo_sp (add_csr_csr_sp of CSR ones): Paddle 3.3.1's add_n
has no sparse kernel."""

from __future__ import annotations

import math

from ..ir import EMPTY_VAR, OpDesc, VarType
from ..ops.pad import pad_pairs
from ..registry import OPS
from . import schema
from .graph import Attr, TensorType, Value
from .table.rows import EXPORTS, TABLE

TO_THE_END = 2**63 - 1   # a slice end past any dim
NO_TRANSPOSE = {"transpose_x": Attr("a_bool", False), "transpose_y": Attr("a_bool", False)}


def mul(op, exporter) -> None:
    x, y = _operands(op, exporter)
    out = op.output("Out")[0]
    result = exporter.new_value(out)
    exporter.emit("pd_op.matmul", [x, y], [result], dict(NO_TRANSPOSE))
    exporter.current[out] = result


def mul_grad(op, exporter) -> None:
    x, y = _operands(op, exporter)
    x_grad, y_grad = (next((n for n in op.output(slot) if n != EMPTY_VAR), None) for slot in ("X@GRAD", "Y@GRAD"))
    results = [Value(0, x.type) if x_grad else Value(0, None), exporter.new_value(y_grad) if y_grad else Value(0, None)]
    exporter.emit("pd_op.matmul_grad", [x, y, exporter.read(op.input("Out@GRAD")[0])], results, dict(NO_TRANSPOSE))
    if y_grad:
        exporter.current[y_grad] = results[1]
    if x_grad:
        exporter.current[x_grad] = _reshaped(exporter, results[0], exporter.type_of(op.input("X")[0]).dims, x_grad)


def _operands(op, exporter) -> tuple[Value, Value]:
    x_name, y_name = op.input("X")[0], op.input("Y")[0]
    x_cols, y_cols = op.attrs.get("x_num_col_dims", 1), op.attrs.get("y_num_col_dims", 1)
    dims = exporter.type_of(x_name).dims
    if y_cols != 1 or len(exporter.type_of(y_name).dims) != 2:
        raise exporter.fail("mul of a Y that is not a matrix (rank 2, y_num_col_dims 1) has no PIR export")
    if not isinstance(x_cols, int) or not 0 < x_cols < len(dims):
        raise exporter.fail(f"x_num_col_dims {x_cols!r} is out of range for X of rank {len(dims)}")
    x = exporter.read(x_name)
    if x_cols < len(dims) - 1:   # 0 keeps a leading dim, -1 takes the rest
        rest = math.prod(dims[x_cols:]) if all(d >= 0 for d in dims[x_cols:]) else -1
        x = _reshaped(exporter, x, (0,) * x_cols + (-1,), None, tuple(dims[:x_cols]) + (rest,))
    return x, exporter.read(y_name)


def _reshaped(exporter, value: Value, shape, name: str | None, dims=None) -> Value:
    """``value`` reshaped to ``shape`` (the var ``name``'s value, or a new one of ``dims``)."""
    if dims is None and list(value.type.dims) == list(shape):
        return value
    if dims is None and sum(d < 0 for d in shape) > 1:
        raise exporter.fail(f"mul's X of shape {list(shape)} has more than one unknown dim to reshape its grad to")
    result = exporter.new_value(name) if name else Value(0, TensorType("t_dtensor", value.type.dtype, dims))
    target = [d if d >= 0 else -1 for d in shape]
    exporter.emit("pd_op.reshape", [value, exporter.constant("ints", target)], [result], {})
    return result


def lookup_table(op, exporter) -> None:
    ids, weight, attrs = _embedding_operands(op, exporter)
    rows = Value(0, TensorType("t_dtensor", weight.type.dtype, (*ids.type.dims, weight.type.dims[-1])))
    exporter.emit("pd_op.embedding", [ids, weight], [rows], attrs)
    out = op.output("Out")[0]
    result = exporter.new_value(out)
    exporter.emit("pd_op.squeeze", [rows, exporter.constant("ints", [-2])], [result], {})
    exporter.current[out] = result


def lookup_table_grad(op, exporter) -> None:
    ids, weight, attrs = _embedding_operands(op, exporter)
    out_grad = exporter.read(op.input("Out@GRAD")[0])
    rows_grad = Value(0, TensorType("t_dtensor", out_grad.type.dtype, (*ids.type.dims, weight.type.dims[-1])))
    exporter.emit("pd_op.unsqueeze", [out_grad, exporter.constant("ints", [-2])], [rows_grad], {})
    name = next((n for n in op.output("W@GRAD") if n != EMPTY_VAR), None)
    if name is None:
        return
    result = exporter.new_value(name)
    result.type = TensorType("t_dtensor", result.type.dtype, result.type.dims)   # PIR's grad is dense, as export's
    exporter.emit("pd_op.embedding_grad", [ids, weight, rows_grad], [result], attrs)
    exporter.current[name] = result


def _embedding_operands(op, exporter) -> tuple[Value, Value, dict]:
    ids, weight = exporter.read(op.input("Ids")[0]), exporter.read(op.input("W")[0])
    if not ids.type.dims or ids.type.dims[-1] != 1:
        raise exporter.fail(f"lookup_table's Ids must end in a dim of 1, got shape {list(ids.type.dims)}")
    padding = op.attrs.get("padding_idx", -1)
    return ids, weight, {"padding_idx": Attr("a_i64", int(padding)), "sparse": Attr("a_bool", False)}


def merged_momentum(op, exporter) -> None:
    """Parameter i: its lr (or the only one), its regularization (or none), the shared attributes."""
    params, lrs = op.input("Param"), op.input("LearningRate")
    methods, coeffs = op.attrs.get("regularization_method") or [], op.attrs.get("regularization_coeff") or []
    if len(lrs) not in (1, len(params)) or len(methods) not in (0, len(params)) or len(coeffs) != len(methods):
        raise exporter.fail(f"merged_momentum has {len(params)} parameters, {len(lrs)} learning rates and "
                            f"{len(methods)}/{len(coeffs)} regularization methods/coefficients")
    masters = [n for n in op.input("MasterParam") if n != EMPTY_VAR]
    shared = {name: op.attrs[name] for name in ("mu", "use_nesterov", "multi_precision", "rescale_grad")
              if name in op.attrs}
    for i, param in enumerate(params):
        master = {"MasterParam": [masters[i]]} if masters else {}
        single = OpDesc("momentum", {"Param": [param], "Grad": [op.input("Grad")[i]],
                                     "Velocity": [op.input("Velocity")[i]], "LearningRate": [lrs[min(i, len(lrs) - 1)]],
                                     **master},
                        {"ParamOut": [op.output("ParamOut")[i]], "VelocityOut": [op.output("VelocityOut")[i]],
                         **({"MasterParamOut": [op.output("MasterParamOut")[i]]} if masters else {})},
                        {**shared, "regularization_method": methods[i] if methods else "",
                         "regularization_coeff": coeffs[i] if coeffs else 0.0})
        exporter.generic(EXPORTS["momentum"][0], single)


def pad_grad(op, exporter) -> None:
    """PIR's pad_grad also reads x, which the legacy op does not name; Paddle keeps no buffer of it, so the
    slice of out_grad inside the padding, x's shape, stands in for it."""
    x_grad = next((n for n in op.output("X@GRAD") if n != EMPTY_VAR), None)
    if x_grad is None:
        return
    attrs = {**OPS["pad_grad"].attrs, **op.attrs}
    pairs = pad_pairs(attrs["paddings"])
    out_grad = exporter.read(op.input("Out@GRAD")[0])
    like_x = Value(0, exporter.type_of(x_grad), stop_gradient=True)
    ends = [-after if after else TO_THE_END for _, after in pairs]
    exporter.emit("pd_op.slice", [out_grad, exporter.constant("ints", [before for before, _ in pairs]),
                                  exporter.constant("ints", ends)], [like_x], {
        "axes": _i64s(range(len(pairs))), "infer_flags": _i64s([1] * len(pairs)), "decrease_axis": _i64s([])})
    result = exporter.new_value(x_grad)
    pad_value = exporter.attribute_operand(op, "pad_value", "float", attrs["pad_value"])
    exporter.emit("pd_op.pad_grad", [like_x, out_grad, pad_value], [result],
                  {"paddings": Attr("a_array", [Attr("a_i32", int(p)) for p in attrs["paddings"]])})
    exporter.current[x_grad] = result


def _i64s(values) -> Attr:
    return Attr("a_array", [Attr("a_i64", int(v)) for v in values])


def fill_zeros_like(op, exporter) -> None:
    """Zeros like a tensor (pd_op.full_like), or like a tensor array (pd_op.create_array_like); also a fill_any_like of
    0 (gradc's backward's zeros for a grad nobody writes), which Paddle's full_like refuses for an array."""
    var = exporter.var(op.input("X")[0])
    if var is not None and var.type == VarType.DENSE_TENSOR_ARRAY and op.attrs.get("value", 0.0) == 0.0:
        zeros = OpDesc("fill_zeros_like", {"X": op.input("X")}, {"Out": op.output("Out")}, {})
        exporter.generic(TABLE["pd_op.create_array_like"], zeros)
        return
    fill = op if op.type == "fill_any_like" else OpDesc("fill_any_like", {"X": op.input("X")},
                                                         {"Out": op.output("Out")}, {"value": 0.0, "dtype": -1})
    exporter.generic(EXPORTS["fill_any_like"][0], fill)


def one_hot(op, exporter) -> None:
    if op.attrs.get("dtype", VarType.FP32) == VarType.FP32:
        exporter.generic(EXPORTS["one_hot_v2"][0], op)
        return
    out = op.output("Out")[0]
    result = exporter.new_value(out)
    hot = Value(0, TensorType("t_dtensor", VarType.FP32, result.type.dims))
    depth = exporter.attribute_operand(op, "depth", "int", op.attrs.get("depth"))
    exporter.emit("pd_op.one_hot", [exporter.read(op.input("X")[0]), depth], [hot], {})
    exporter.emit("pd_op.cast", [hot], [result], {"dtype": Attr("a_dtype", schema.DTYPE_BY_VARTYPE[result.type.dtype])})
    exporter.current[out] = result


def set_value_grad(op, exporter) -> None:
    """The gradient of x[i] = 2.0, which Paddle's PIR set_value_grad cannot say (it takes no slice): Input@GRAD
    is Out@GRAD with the slice set to 0, a pd_op.set_value_. With a ValueTensor, the table row."""
    if op.input("ValueTensor"):
        exporter.generic(EXPORTS["set_value_grad"][0], op)
        return
    x_grad = next((n for n in op.output("Input@GRAD") if n != EMPTY_VAR), None)
    if x_grad is None:
        return
    bounds = {slot: op.input(slot) for slot in ("StartsTensorList", "EndsTensorList", "StepsTensorList")}
    attrs = {**OPS["set_value_grad"].attrs, **op.attrs, "shape": [1], "values": [0.0]}
    zeroed = OpDesc("set_value", {"Input": op.input("Out@GRAD"), **bounds}, {"Out": [x_grad]}, attrs)
    exporter.generic(TABLE["pd_op.set_value_"], zeroed)


def sum_(op: OpDesc, exporter) -> None:
    names = op.input("X")
    layouts = {getattr(exporter.var(name), "type", None) for name in names}
    if not layouts & {VarType.SPARSE_COO, VarType.SPARSE_CSR}:
        exporter.generic(next(row for row in EXPORTS["sum"] if row.when is None or row.when(op, exporter)), op)
        return
    add = "pd_op.add_csr_csr_sp" if VarType.SPARSE_CSR in layouts else "pd_op.add_coo_coo_sp"
    out = op.output("Out")[0]
    total = exporter.read(names[0])
    for name in names[1:]:
        result = exporter.new_value(out)
        exporter.emit(add, [total, exporter.read(name)], [result], {})
        total = result
    exporter.current[out] = total

"""Second derivatives of gradc.ops.sparse's grad ops. Each grad op is linear in out@GRAD (conv3d_grad bilinear in its
operands and out@GRAD), so with ddX the grads of its outputs:

- sparse_coo_tensor_grad, to_dense_grad, values_grad, reshape_grad, slice_grad and sum_grad are their forwards'
  adjoints: d/d(out@GRAD) is the forward op on ddX (``linear``);
- relu_grad masks out@GRAD where out > 0, its own adjoint: d/d(out@GRAD) = relu_grad(out, ddX); out gets none;
- add_grad hands out@GRAD to x's and y's entries: d/d(out@GRAD) = sparse_add(ddX, ddY), zeros for a missing one;
- transpose_grad and coalesce_grad are adjoints too: d/d(out@GRAD) = the forward of ddX;
- multiply_grad (dx = dout y at x's sites, dy = dout x at y's): d/d(dout) = ddx * y + x * ddy, d/dx = multiply_grad's
  x part with y ddy, d/dy = its y part with x ddx;
- conv3d_grad (dx = dout W^T, dW = x^T dout by the rulebook): d/d(dout) = conv3d(ddx, W) + conv3d(x, ddW),
  d/dx = conv3d_grad's x part with kernel ddW, d/dW = its kernel part with x's values ddx.

- softmax_grad, divide_grad and batch_norm_grad are written with differentiable ops (``expansion``): softmax's and
  divide's on the dense tensors, read back at the sites (to_dense's adjoint); batch norm's as the dense
  batch_norm_grad of the values, put back (values' adjoint).
"""

from __future__ import annotations

from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad
from . import sparse, sparse_binary, sparse_shape  # noqa: F401  (register the grad ops given makers here)
from .composite import Formula, bilinear, expansion, first, linear

defgrad("sparse_sparse_coo_tensor_grad", grad=linear("sparse_sparse_coo_tensor", x="values", out="out",
                                                     passed=("indices",)), no_grad_inputs=["indices"])
defgrad("sparse_to_dense_grad", grad=linear("sparse_to_dense", x="x", out="out"), no_grad_inputs=["x"])
defgrad("sparse_values_grad", grad=linear("sparse_values", x="x", out="out"), no_grad_inputs=["x"])
# the linear ops' grad ops, with the int-list inputs their forward reads again
_LINEAR = {"sparse_reshape": sparse_shape.SHAPE_SLOTS, "sparse_slice": sparse_shape.WINDOW_SLOTS,
           "sparse_sum": sparse_shape.AXIS_SLOTS, "sparse_transpose": [], "sparse_coalesce": []}
for _forward, _slots in _LINEAR.items():
    _passed = tuple(slot.rstrip("[]?") for slot in _slots)
    defgrad(f"{_forward}_grad", grad=linear(_forward, x="x", out="out", passed=_passed),
            no_grad_inputs=["x", *_passed])


def _relu_double_grad(g):
    f = Formula(g)
    ddx = first(g.OG("x@GRAD"))
    if ddx is not None:
        f.into(first(g.IG("out@GRAD")), "sparse_relu_grad", {"out": g.I("out"), "out@GRAD": [ddx]}, slot="x@GRAD")
    return f.ops


defgrad("sparse_relu_grad", grad=_relu_double_grad, no_grad_inputs=["out"])


def _dense_part(f: Formula, g, op_type: str, name: str, dtype) -> str:
    """The values or indices of the sparse var ``name``, in a dense temporary."""
    part = f.op(op_type, {"x": name}, name, slot="out", dims=lambda shape: [-1], dtype=dtype)
    g.block.find_var(part).type = VarType.DENSE_TENSOR
    return part


def _zeros_like(f: Formula, g, name: str) -> str:
    """Zeros shaped like ``name``: on its sites where it is a sparse var."""
    var = g.block.find_var(name)
    if var.type != VarType.SPARSE_COO:
        return f.fill_like(name, 0.0)
    zeros = f.fill_like(_dense_part(f, g, "sparse_values", name, var.dtype), 0.0)
    indices = _dense_part(f, g, "sparse_indices", name, VarType.INT64)
    return f.op("sparse_sparse_coo_tensor", {"values": zeros, "indices": indices}, name, {"shape": list(var.shape)},
                slot="out")


def _add_double_grad(g):
    f = Formula(g)
    wanted, dd = first(g.IG("out@GRAD")), [first(g.OG("x@GRAD")), first(g.OG("y@GRAD"))]
    if wanted in (None, EMPTY_VAR) or dd == [None, None]:
        return []
    ddx, ddy = (d if d is not None else _zeros_like(f, g, first(g.I(slot))) for d, slot in zip(dd, ("x", "y")))
    f.into(wanted, "sparse_add", {"x": [ddx], "y": [ddy]}, slot="out")
    return f.ops


defgrad("sparse_add_grad", grad=_add_double_grad)


defgrad("sparse_multiply_grad", grad=bilinear("sparse_multiply", "x", "y", "out"))


def _conv3d_double_grad(g):
    f = Formula(g)
    x, kernel, dout = first(g.I("x")), first(g.I("kernel")), first(g.I("out@GRAD"))
    ddx, ddw = first(g.OG("x@GRAD")), first(g.OG("kernel@GRAD"))
    rules = {slot: first(g.I(slot)) for slot in ("rulebook", "counter")}

    def conv(operand: str, weight: str) -> str:
        return f.op("sparse_conv3d", {"x": operand, "kernel": weight}, dout, slot="out", same=True,
                    more={slot: g.tmp(name) for slot, name in rules.items()})

    terms = [conv(ddx, kernel)] if ddx is not None else []
    terms += [conv(x, ddw)] if ddw is not None else []
    if terms:
        f.into(first(g.IG("out@GRAD")), "sum", {"X": terms})
    grad_inputs = {"out": g.I("out"), **{slot: [name] for slot, name in rules.items()}, "out@GRAD": [dout]}
    if ddw is not None:
        f.emit("sparse_conv3d_grad", {"x": [x], "kernel": [ddw], **grad_inputs},
               {"x@GRAD": g.IG("x"), "kernel@GRAD": [EMPTY_VAR]}, same=True)
    if ddx is not None:
        f.emit("sparse_conv3d_grad", {"x": [ddx], "kernel": [kernel], **grad_inputs},
               {"x@GRAD": [EMPTY_VAR], "kernel@GRAD": g.IG("kernel")}, same=True)
    return f.ops


defgrad("sparse_conv3d_grad", grad=_conv3d_double_grad, no_grad_inputs=["out", "rulebook", "counter"])


def _dense_of(f: Formula, g, name: str) -> str:
    """The tensor the sparse var ``name`` stands for, as a dense temporary."""
    dense = f.op("sparse_to_dense", {"x": name}, name, slot="out")
    g.block.find_var(dense).type = VarType.DENSE_TENSOR
    return dense


def _on_sites(f: Formula, values: str, like: str) -> str:
    """A sparse temporary (COO or CSR) holding ``values`` (one row per entry) on the sites of the sparse var
    ``like``: values' adjoint."""
    return f.op("sparse_values_grad", {"x": like, "out@GRAD": values}, like, slot="x@GRAD")


def _at_sites(f: Formula, dense: str, like: str) -> str:
    """The dense tensor ``dense`` read at the sites of the sparse var ``like``, on those sites: to_dense's adjoint."""
    return f.op("sparse_to_dense_grad", {"x": like, "out@GRAD": dense}, like, slot="x@GRAD")


@expansion
def _softmax_grad(f, g):
    """dx = out dout - out sum(out dout) along the last axis, on out's sites: densely, the sum along the last axis
    is a row's over the entries it holds (all-sparse) or the values' last axis (a dense one)."""
    out = first(g.I("out"))
    o, d = _dense_of(f, g, out), _dense_of(f, g, first(g.I("out@GRAD")))
    product = f.mul(o, d, o)
    return {"x@GRAD": _at_sites(f, f.sub(product, f.mul(o, f.sum_along(product, -1), o), o), out)}


@expansion
def _divide_grad(f, g):
    """dx = dout / y at x's sites, dy = -dout out / y at y's, densely (infinite where y holds no value, as the
    first derivative)."""
    dout, y = _dense_of(f, g, first(g.I("out@GRAD"))), _dense_of(f, g, first(g.I("y")))
    grads = {}
    if g.O("x@GRAD"):
        grads["x@GRAD"] = _at_sites(f, f.div(dout, y, dout), first(g.I("x")))
    if g.O("y@GRAD"):
        weighted = f.mul(dout, _dense_of(f, g, first(g.I("out"))), dout)
        grads["y@GRAD"] = _at_sites(f, f.scale(f.div(weighted, y, dout), -1.0), first(g.I("y")))
    return grads


@expansion
def _batch_norm_grad(f, g):
    """The dense batch_norm_grad of the values ([nnz, channels], channels last), its dx put back on x's sites."""
    x, channels = first(g.I("x")), g.shape(first(g.I("x")))[-1]

    def values(name: str) -> str:
        part = f.op("sparse_values", {"x": name}, name, slot="out", dims=lambda shape: [-1, channels])
        g.block.find_var(part).type = VarType.DENSE_TENSOR
        return part

    stats = {"MeanOut": g.I("mean_out"), "VarianceOut": g.I("variance_out"), "SavedMean": g.I("saved_mean"),
             "SavedVariance": g.I("saved_variance")}
    inputs = {"X": values(x), "Scale": g.I("scale"), "Bias": g.I("bias"), **stats, "Y@GRAD": values(first(
        g.I("out@GRAD")))}
    outputs = {slot: g.tmp(like) if g.O(wanted) else EMPTY_VAR for slot, wanted, like in (
        ("X@GRAD", "x@GRAD", inputs["X"]), ("Scale@GRAD", "scale@GRAD", first(g.I("scale"))),
        ("Bias@GRAD", "bias@GRAD", first(g.I("bias"))))}
    f.emit("batch_norm_grad", inputs, outputs, {"data_layout": "NHWC"}, same=True)
    grads = {"scale@GRAD": outputs["Scale@GRAD"], "bias@GRAD": outputs["Bias@GRAD"]}
    if g.O("x@GRAD"):
        grads["x@GRAD"] = _on_sites(f, outputs["X@GRAD"], x)
    return {slot: var for slot, var in grads.items() if var != EMPTY_VAR}


defgrad("sparse_softmax_grad", grad=_softmax_grad)
defgrad("sparse_divide_grad", grad=_divide_grad)
defgrad("sparse_batch_norm_grad", grad=_batch_norm_grad,
        no_grad_inputs=["mean_out", "variance_out", "saved_mean", "saved_variance", "reserve_space"])

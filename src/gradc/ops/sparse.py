"""paddle.sparse's ops as Paddle 3.3.1's legacy static mode writes them (docs/sparse.md): a COO tensor made of
indices and values (sparse_sparse_coo_tensor), read back (sparse_values, sparse_indices, sparse_to_dense), and
paddle.sparse.nn's layers on it: sparse_conv3d (Conv3D and SubmConv3D; the bias is a sparse_add of a dense vector),
sparse_batch_norm (batch norm of the values), sparse_relu and sparse_add. Their vars are SPARSE_COO; the values
(gradc.executor.sparse_value.SparseCoo) keep their sites, so every gradient of a sparse var is a SparseCoo on that
var's sites, in its order.

Paddle's append_backward writes no grad op for any of them; gradc's grad ops carry the slots of Paddle's
sparse_backward.yaml (conv3d_grad reads x, kernel, out, rulebook, counter and out_grad). Their gradients:

    sparse_coo_tensor: dvalues = dout's values                    (indices: none)
    conv3d:            dx[i] += dout[o] W[k]^T, dW[k] += x[i]^T dout[o] for each rule (k, i, o) of the rulebook
    add:               dx, dy = dout's values at x's and at y's entries; a dense y (a bias) sums them over the sites
    relu:              dx = dout where out > 0
    batch_norm:        batch_norm_grad of the values [nnz, C]
    to_dense / values: dx = dout at x's sites / dout itself, on x's sites
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import NO_GRAD, defop, grad_op, typed
from ..shapes import dims_match
from .infer import check_float, same_as

INDEX_DTYPES = (None, VarType.INT32, VarType.INT64)


def _coo_tensor_infer(ctx):
    values, indices, shape = ctx.shape("values"), ctx.shape("indices"), list(ctx.attr("shape"))
    if ctx.dtype("indices") not in INDEX_DTYPES:
        ctx.fail("sparse_sparse_coo_tensor needs int32 or int64 indices")
    if indices is not None and len(indices) != 2:
        ctx.fail(f"sparse_sparse_coo_tensor needs indices [sparse_dim, nnz], got {indices}")
    if indices is not None and values is not None:
        if not dims_match(indices[1], values[0]):
            ctx.fail(f"sparse_sparse_coo_tensor needs one row of values per site: indices {indices}, values {values}")
        if shape and indices[0] >= 0 and indices[0] + len(values) - 1 != len(shape):
            ctx.fail(f"sparse_sparse_coo_tensor's shape {shape} has {len(shape)} dims, not sparse_dim "
                     f"{indices[0]} plus values' {len(values) - 1}")
    return {"out": (shape or None, ctx.dtype("values"))}


defop("sparse_sparse_coo_tensor", ["values", "indices"], ["out"], attrs={"shape": typed([], AttrType.LONGS)},
      infer=_coo_tensor_infer, no_grad_inputs=["indices"], grad=grad_op("indices"))


def _to_dense_infer(ctx):
    return {"out": (ctx.shape("x"), ctx.dtype("x"))}


defop("sparse_to_dense", ["x"], ["out"], infer=_to_dense_infer, grad=grad_op("x"))
# the values of a coo tensor: [nnz, *the dense dims]; how many dims are sparse is known only at run time
defop("sparse_values", ["x"], ["out"], infer=lambda ctx: {"out": (None, ctx.dtype("x"))}, grad=grad_op("x"))
defop("sparse_indices", ["x"], ["out"], infer=lambda ctx: {"out": (None, VarType.INT64)}, grad=NO_GRAD)
defop("sparse_relu", ["x"], ["out"], infer=same_as("x", "out"), grad=grad_op("out"))


def _add_infer(ctx):
    x, y = ctx.shape("x"), ctx.shape("y")
    check_float(ctx, "x")
    if x is not None and y is not None and len(y) == 1 and not dims_match(y[0], x[-1]):
        ctx.fail(f"sparse_add of a dense vector (a bias) needs one value per channel: x {x}, y {y}")
    if x is not None and y is not None and len(y) > 1 and (len(y) != len(x) or not all(map(dims_match, x, y))):
        ctx.fail(f"sparse_add needs x and y of one shape (or y a bias [channels]), got {x} and {y}")
    return {"out": (x, ctx.dtype("x"))}


defop("sparse_add", ["x", "y"], ["out"], infer=_add_infer, grad=grad_op("x", "y"))


def _batch_norm_infer(ctx):
    x, dtype = ctx.shape("x"), ctx.dtype("x")
    check_float(ctx, "x")
    channels = None if x is None else [x[-1]]
    for slot in ("mean", "variance", "scale", "bias"):
        shape = ctx.shape(slot)
        if channels is not None and shape is not None and (len(shape) != 1 or not dims_match(shape[0], x[-1])):
            ctx.fail(f"sparse_batch_norm needs {slot} [channels={x[-1]}] for x {x}, got {shape}")
    stats = {slot: (channels, dtype) for slot in ("mean_out", "variance_out", "saved_mean", "saved_variance")}
    return {"out": (x, dtype), **stats, "reserve_space": ([-1], VarType.UINT8)}


defop("sparse_batch_norm", ["x", "mean", "variance", "scale", "bias"],
      ["out", "mean_out", "variance_out", "saved_mean", "saved_variance", "reserve_space"],
      attrs={"momentum": 0.9, "epsilon": 1e-5, "is_test": False, "use_global_stats": False,
             "trainable_statistics": False, "data_layout": "NHWC"},
      infer=_batch_norm_infer, no_grad_inputs=["mean", "variance"],
      no_grad_outputs=["mean_out", "variance_out", "saved_mean", "saved_variance", "reserve_space"],
      grad=grad_op("x", "scale", "bias", "mean_out", "variance_out", "saved_mean", "saved_variance", "reserve_space"))


def conv_out_dims(ctx, x: list[int], kernel: list[int]) -> list[int]:
    """The spatial output dims: the input's for a submanifold conv (its kernel is centred on each site, paddings
    ignored), else the usual conv arithmetic."""
    strides, paddings, dilations = (list(ctx.attr(name)) for name in ("strides", "paddings", "dilations"))
    spatial = x[1:1 + len(kernel)]
    if ctx.attr("subm"):
        if any(s != 1 for s in strides):
            ctx.fail(f"sparse_conv3d with subm keeps the input's sites: it needs strides of 1, got {strides}")
        return spatial
    dims = [(d + 2 * p - dl * (k - 1) - 1) // s + 1 if d >= 0 else -1
            for d, k, s, p, dl in zip(spatial, kernel, strides, paddings, dilations)]
    if any(d == 0 or d < -1 for d in dims):
        ctx.fail(f"sparse_conv3d leaves no output site: input {x}, kernel {kernel}, strides {strides}, "
                 f"paddings {paddings}, dilations {dilations}")
    return dims


def _conv3d_infer(ctx):
    """3-D (x [N, D, H, W, C]) or, as paddle.sparse.nn.Conv2D writes it, 2-D (x [N, H, W, C]): the attributes
    give one value per spatial dim."""
    x, kernel = ctx.shape("x"), ctx.shape("kernel")
    check_float(ctx, "x")
    spatial = len(ctx.attr("strides"))
    if spatial not in (2, 3):
        ctx.fail(f"sparse_conv3d needs 3 strides (2 for a 2-D conv), got {list(ctx.attr('strides'))}")
    for name in ("paddings", "dilations"):
        if len(ctx.attr(name)) != spatial:
            ctx.fail(f"sparse_conv3d needs {spatial} {name} for {spatial} strides, got {list(ctx.attr(name))}")
    if ctx.attr("groups") != 1:
        ctx.fail(f"sparse_conv3d supports groups 1 only (Paddle's kernels), got {ctx.attr('groups')}")
    if any(s < 1 for s in ctx.attr("strides")) or any(d < 1 for d in ctx.attr("dilations")):
        ctx.fail(f"sparse_conv3d needs strides and dilations >= 1, got {list(ctx.attr('strides'))} and "
                 f"{list(ctx.attr('dilations'))}")
    rules = {"rulebook": (None, VarType.INT32), "counter": (None, VarType.INT32)}
    if x is None or kernel is None:
        return {"out": (None, ctx.dtype("x")), **rules}
    if len(x) != spatial + 2 or len(kernel) != spatial + 2 or not dims_match(x[-1], kernel[-2]):
        ctx.fail(f"sparse_conv3d with {spatial} strides needs x [N, {'D, ' * (spatial == 3)}H, W, C] and kernel "
                 f"[{'kd, ' * (spatial == 3)}kh, kw, C, out channels], got {x} and {kernel}")
    return {"out": ([x[0], *conv_out_dims(ctx, x, kernel[:-2]), kernel[-1]], ctx.dtype("x")), **rules}


defop("sparse_conv3d", ["x", "kernel"], ["out", "rulebook", "counter"],
      attrs={"paddings": [0, 0, 0], "dilations": [1, 1, 1], "strides": [1, 1, 1], "groups": 1, "subm": False,
             "key": ""},
      infer=_conv3d_infer, no_grad_outputs=["rulebook", "counter"],
      grad=grad_op("x", "kernel", "out", "rulebook", "counter"))

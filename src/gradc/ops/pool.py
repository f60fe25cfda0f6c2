"""Pooling ops beyond pool2d/pool3d: max pooling with the argmax Mask (max_pool2d/3d_with_index: MaxPool with
return_mask, adaptive max pooling), its inverse unpool/unpool3d (MaxUnPool1D/2D/3D), lp_pool2d (LPPool1D/2D)
and fractional_max_pool2d/3d. All are channels first.

Masks and Indices hold each output's input position flattened over the spatial dims of one (N, C) plane.
Adaptive max pooling pools the adaptive bins [floor(i * in / out), ceil((i + 1) * in / out)), as Paddle's
with-index kernel does (its legacy pool2d max kernel ignores ``adaptive``; gradc's pool2d does not).
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import defop, grad_op, typed
from .conv import attr_values, infer_geometry, pool_geometry


def _spatial(ctx, slot: str, dims: int):
    x = ctx.shape(slot)
    if len(x) != dims + 2:
        ctx.fail(f"{slot} must be {dims + 2}-D (N, C, {'DHW'[-dims:]}), got shape {x}")
    return x


def _per_dim(ctx, names, dims: int, positive: tuple = ()):
    for name in names:
        values = ctx.attr(name)
        if len(values) != dims or (name in positive and min(values) < 1) or min(values) < 0:
            ctx.fail(f"{name} must be {dims} values >= {1 if name in positive else 0}, got {list(values)}")


# ---------------------------------------------------------------- max pooling with the argmax
def with_index_attrs(attrs) -> dict:
    """max_pool*_with_index's attributes as pool2d/3d's (symmetric paddings, no padding algorithm)."""
    return {**attrs, "padding_algorithm": "EXPLICIT"}


WITH_INDEX_ATTRS = ("ksize", "strides", "paddings", "global_pooling", "adaptive", "ceil_mode")


def _with_index_infer(dims: int):
    def infer(ctx):
        x = _spatial(ctx, "X", dims)
        _per_dim(ctx, ("ksize", "strides", "paddings"), dims, positive=("ksize", "strides"))
        _, _, out = infer_geometry(ctx, pool_geometry, x[2:], with_index_attrs(attr_values(ctx, WITH_INDEX_ATTRS)))
        shape = [*x[:2], *out]
        return {"Out": (shape, ctx.dtype("X")), "Mask": (shape, VarType.INT32)}
    return infer


for _dims in (2, 3):
    defop(f"max_pool{_dims}d_with_index", ["X"], ["Out", "Mask"],
          attrs={"ksize": [1] * _dims, "global_pooling": False, "strides": [1] * _dims, "paddings": [0] * _dims,
                 "adaptive": False, "ceil_mode": False},
          no_grad_outputs=["Mask"], infer=_with_index_infer(_dims), grad=grad_op("X", "Mask"))


# ---------------------------------------------------------------- unpooling
def _unpool_infer(dims: int):
    def infer(ctx):
        x = _spatial(ctx, "X", dims)
        if ctx.shape("Indices") != x:
            ctx.fail(f"Indices {ctx.shape('Indices')} must have X's shape {x}")
        if ctx.attr("data_format") != ("NCHW" if dims == 2 else "NCDHW"):
            ctx.fail(f"data_format {ctx.attr('data_format')!r} is not supported: unpooling is channels first")
        if dims == 2 and ctx.attr("unpooling_type") != "max":
            ctx.fail(f"unpooling_type {ctx.attr('unpooling_type')!r} is not 'max'")
        size = list(ctx.attr("output_size"))
        if len(size) != dims or min(size) < 1:
            ctx.fail(f"output_size must be {dims} sizes >= 1, got {size}")
        return {"Out": ([*x[:2], *size], ctx.dtype("X"))}
    return infer


defop("unpool", ["X", "Indices"], attrs={"ksize": [1, 1], "strides": [1, 1], "paddings": [0, 0], "output_size": [0, 0],
                                         "data_format": "NCHW", "unpooling_type": "max"},
      no_grad_inputs=["Indices"], infer=_unpool_infer(2), grad=grad_op("X", "Indices", "Out"),
      tensor_attrs=["output_size"])
defop("unpool3d", ["X", "Indices"], attrs={"ksize": [1, 1, 1], "strides": [1, 1, 1], "paddings": [0, 0, 0],
                                           "output_size": [0, 0, 0], "data_format": "NCDHW"},
      no_grad_inputs=["Indices"], infer=_unpool_infer(3), grad=grad_op("X", "Indices", "Out"))


# ---------------------------------------------------------------- lp_pool2d
LP_ATTRS = {"pooling_type": "", "kernel_size": typed([1, 1], AttrType.LONGS), "global_pooling": False,
            "strides": [1, 1], "paddings": [0, 0], "ceil_mode": False, "exclusive": True, "adaptive": False,
            "data_format": "NCHW", "padding_algorithm": "EXPLICIT", "norm_type": 0.0}
KERNEL_SIZE_SLOTS = ("KernelSizeTensor", "KernelSizeTensorList")


def lp_pool_attrs(attrs: dict, kernel_size) -> dict:
    """lp_pool2d's attributes as pool2d's, with the kernel size in effect."""
    if attrs["norm_type"] == 0:
        raise ValueError("norm_type must not be 0")
    return {**attrs, "ksize": list(kernel_size)}


def _lp_pool_infer(ctx):
    x = ctx.shape("x")
    if len(x) != 4:
        ctx.fail(f"x must be 4-D, got shape {x}")
    last = ctx.attr("data_format") == "NHWC"
    n, c, sizes = (x[0], x[-1], x[1:3]) if last else (x[0], x[1], x[2:])
    if any(ctx.has(slot) for slot in KERNEL_SIZE_SLOTS):  # the kernel size is known at run time only
        out = [-1, -1]
    else:
        attrs = infer_geometry(ctx, lp_pool_attrs, attr_values(ctx, LP_ATTRS), ctx.attr("kernel_size"))
        _, _, out = infer_geometry(ctx, pool_geometry, sizes, attrs)
    return {"out": ([n, *out, c] if last else [n, c, *out], ctx.dtype("x"))}


defop("lp_pool2d", ["x", "KernelSizeTensor?", "KernelSizeTensorList[]?"], ["out"], attrs=LP_ATTRS,
      no_grad_inputs=KERNEL_SIZE_SLOTS, infer=_lp_pool_infer, grad=grad_op("x", *KERNEL_SIZE_SLOTS, "out"))


# ---------------------------------------------------------------- fractional max pooling
def fractional_check(sizes, output_size, kernel_size) -> None:
    """Paddle's limits: output sizes >= 1 (> 1 with a kernel size) that the input can hold."""
    for size, out, k in zip(sizes, output_size, kernel_size):
        if out < 1 or k < 0 or (k > 0 and out < 2):
            raise ValueError(f"output_size {list(output_size)} and kernel_size {list(kernel_size)} must be >= 1 "
                             f"(output sizes >= 2 with a kernel size)")
        if size >= 0 and size < out - 1 + k:
            raise ValueError(f"an input of sizes {list(sizes)} cannot give output_size {list(output_size)} with "
                             f"kernel_size {list(kernel_size)}")


def _fractional_infer(dims: int):
    def infer(ctx):
        x = _spatial(ctx, "x", dims)
        output_size, kernel_size = list(ctx.attr("output_size")), list(ctx.attr("kernel_size"))
        if len(output_size) != dims or len(kernel_size) != dims:
            ctx.fail(f"output_size {output_size} and kernel_size {kernel_size} need {dims} values each")
        infer_geometry(ctx, fractional_check, x[2:], output_size, kernel_size)
        if not 0 <= ctx.attr("random_u") < 1:
            ctx.fail(f"random_u must be in (0, 1) (0: drawn at run time), got {ctx.attr('random_u')}")
        shape = [*x[:2], *output_size]
        return {"out": (shape, ctx.dtype("x")), "mask": (shape, VarType.INT32)}
    return infer


for _dims in (2, 3):
    defop(f"fractional_max_pool{_dims}d", ["x"], ["out", "mask"],
          attrs={"output_size": [1] * _dims, "kernel_size": [0] * _dims, "random_u": 0.0, "return_mask": True},
          no_grad_outputs=["mask"], infer=_fractional_infer(_dims), grad=grad_op("x", "mask"))

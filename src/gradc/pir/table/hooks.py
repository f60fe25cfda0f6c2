"""Adjustments a row's notation cannot say: where PIR and the legacy op mean different things by the
same attribute."""

from __future__ import annotations

from ...ir import EMPTY_VAR, AttrType, OpDesc, VarType
from ...ops.creation import literal
from ...registry import OPS
from ..graph import TensorType, Value


def reduce_all(legacy, op, ctx) -> None:
    """PIR reduces over every axis when the axis list is empty; the legacy op says so with reduce_all."""
    if "dim" in legacy.var_attrs:   # the axes a var holds: known when the op runs
        return
    x = ctx.block.find_var(legacy.input("X")[0])
    rank = len(x.shape) if x is not None and x.shape is not None else None
    dims = legacy.attrs.get("dim", [])
    covers_all = bool(rank) and len({d % rank for d in dims}) == rank
    legacy.set_attr("dim", list(dims))
    legacy.set_attr("reduce_all", bool(not dims or covers_all or legacy.attrs.get("reduce_all", False)))


def literal_dtype(legacy, op, ctx) -> None:
    """Legacy set_value names the dtype of its literal values; PIR's are of the input's dtype."""
    x = ctx.block.find_var(legacy.input("Input")[0])
    if x is not None and x.dtype is not None:
        legacy.set_attr("dtype", int(x.dtype))


def cast_dtypes(legacy, op, ctx) -> None:
    """Legacy cast also names the input dtype."""
    x = ctx.block.find_var(legacy.input("X")[0])
    if x is not None and x.dtype is not None:
        legacy.set_attr("in_dtype", int(x.dtype))


def batch_norm_affine(legacy, op, ctx) -> None:
    """A batch_norm without scale or bias (F.batch_norm(weight=None)) gets ones / zeros: gradc's
    batch_norm kernel reads both."""
    mean = ctx.block.find_var((legacy.input("Mean") or legacy.input("MeanOut"))[0])
    for slot, value in (("Scale", 1.0), ("Bias", 0.0)):
        if not legacy.input(slot):
            name = ctx.namer.fresh("fill_constant")
            ctx.block.create_var(name, list(mean.shape), mean.dtype, stop_gradient=True)
            ctx.block.ops.insert(len(ctx.block.ops) - 1, OpDesc(
                "fill_constant", {}, {"Out": [name]},
                {"shape": list(mean.shape), "dtype": int(mean.dtype), "value": value, "str_value": str(value)},
                {"shape": AttrType.LONGS}))
            legacy.inputs[slot] = [name]


def rnn_byte_buffers(legacy, op, ctx) -> None:
    """PIR types rnn's Reserve and DropoutState as float tensors; legacy programs (and gradc's kernel,
    which stores Reserve as the bytes of its floats) declare them UINT8 of unknown size. A DropoutState that is
    a parameter keeps its dims ([0]), so the empty state Paddle saves for it fits."""
    for slot in ("Reserve", "DropoutState"):
        for name in legacy.output(slot):
            var = ctx.block.find_var(name)
            if var is not None:
                var.dtype, var.shape = VarType.UINT8, var.shape if var.persistable else []


def w_out_like_w(legacy, op, ctx) -> None:
    """PIR types hsigmoid_loss's w_out 0-d (Paddle computes nothing into it); the legacy op declares W_Out
    as W, whose shape gradc's check infers for it."""
    w, w_out = ctx.block.find_var(legacy.input("W")[0]), legacy.output("W_Out")
    if w is not None and w_out and ctx.block.find_var(w_out[0]) is not None:
        ctx.block.find_var(w_out[0]).shape = list(w.shape) if w.shape is not None else None


def eigh_grad_uplo(legacy, op, ctx) -> None:
    """PIR's eigh_grad has no UPLO; the legacy one takes it from the eigh op that wrote the eigenvectors (gradc's
    gradient lands on the triangle that op read), found in this block or one enclosing it."""
    vectors = legacy.input("Eigenvectors")
    for block in reversed(ctx.blocks):
        for forward in reversed(block.ops):
            if forward.type == "eigh" and forward.output("Eigenvectors") == vectors:
                legacy.set_attr("UPLO", forward.attrs.get("UPLO", "L"))
                return
    raise ctx.fail(op, f"no eigh op before it writes its eigenvectors {vectors}: the UPLO its gradient needs (PIR's "
                       "eigh_grad has none) is unknown")


def slogdet_shape(legacy, op, ctx) -> None:
    """PIR types slogdet's result like x ([..., N, N]); its value is [2, ...] (sign, log|det|). The var is left
    unknown, so the ops after it, typed from PIR's shape, are not checked against the true one."""
    for name in legacy.output("Out"):
        var = ctx.block.find_var(name)
        if var is not None:
            var.shape = None


def int32_output(slot: str):
    """A hook typing the legacy op's output ``slot`` int32, where PIR types it like a float input but the kernels
    (Paddle's and gradc's) write int32."""
    def hook(legacy, op, ctx) -> None:
        for name in legacy.output(slot):
            var = ctx.block.find_var(name)
            if var is not None:
                var.dtype = VarType.INT32
    return hook


lstsq_rank_int32 = int32_output("Rank")   # PIR types lstsq's rank like x


def tolerances_as_text(legacy, op, ctx) -> None:
    """Legacy isclose/allclose keep rtol and atol as decimal strings; PIR's constant operands fold in as floats."""
    for name in ("rtol", "atol"):
        value = legacy.attrs.get(name)
        if isinstance(value, float):
            legacy.set_attr(name, repr(value), AttrType.STRING)


def arange_dtype(legacy, op, ctx) -> None:
    """Legacy range takes its dtype from Start; PIR's arange names it (the result's) and reads float64
    bounds: the bounds are cast to it first."""
    dtype = ctx.block.find_var(legacy.output("Out")[0]).dtype
    position = ctx.block.ops.index(legacy)
    for slot in ("Start", "End", "Step"):
        bound = ctx.block.find_var(legacy.input(slot)[0])
        if bound is None or bound.dtype == dtype:
            continue
        name = ctx.namer.fresh("cast")
        ctx.block.create_var(name, list(bound.shape) if bound.shape is not None else None, dtype, stop_gradient=True)
        ctx.block.ops.insert(position, OpDesc("cast", {"X": [bound.name]}, {"Out": [name]},
                                              {"in_dtype": int(bound.dtype), "out_dtype": int(dtype)}))
        legacy.inputs[slot] = [name]


def unique_types(legacy, op, ctx) -> None:
    """PIR types unique's results float32 whatever x is (and the inverse 0-d); the kernels write x's dtype
    for Out and the ``dtype`` attribute's for the indices and counts, of lengths known at run time."""
    x = ctx.block.find_var(legacy.input("X")[0])
    out = ctx.block.find_var(legacy.output("Out")[0])
    if x is not None and out is not None:
        out.dtype = x.dtype
    dtype = legacy.attrs.get("dtype", OPS["unique"].attrs["dtype"])
    if dtype not in (VarType.INT32, VarType.INT64):   # unique's check refuses it, naming the op
        return
    for slot in ("Indices", "Index", "Counts"):
        for var in filter(None, (ctx.block.find_var(name) for name in legacy.output(slot))):
            var.dtype, var.shape = VarType(dtype), None


def zeros_only(legacy, op, ctx) -> None:
    """create_array_like fills with ``val``; Paddle's backward writes 0, the one value fill_zeros_like makes."""
    val = op.attrs.get("val")
    if val is not None and val.plain() != 0:
        raise ctx.fail(op, f"attribute 'val' is {val.plain()}: gradc makes arrays like another of zeros only")


def from_the_end(legacy, op, ctx) -> None:
    """slice_array_dense counts a negative start from the array's end (a Python list's x[-1]: Tacotron2's decoder
    reads its last attention weights so); read_from_array does not, so a constant negative start becomes the
    array's length plus it. A computed start is read as it is (a negative one fails in read_from_array)."""
    start = op.operands[1].op if op.operands[1] is not None else None
    values = start.attr("value") if start is not None and start.name == "pd_op.full_int_array" else None
    if not (isinstance(values, list) and len(values) == 1 and values[0] < 0):
        return
    ctx.block.ops.pop()   # the read, after the ops that count its index
    length, index = ctx.namer.fresh("lod_array_length"), ctx.namer.fresh("scale")
    for name in (length, index):
        ctx.block.create_var(name, [1], VarType.INT64, stop_gradient=True)
    ctx.emit("lod_array_length", {"X": legacy.input("X")}, {"Out": [length]})
    ctx.emit("scale", {"X": [length]}, {"Out": [index]},
             {"scale": 1.0, "bias": float(values[0]), "bias_after_scale": True})
    legacy.inputs["I"] = [index]
    ctx.block.ops.append(legacy)


def viterbi_types(legacy, op, ctx) -> None:
    """Paddle 3.3.1's PIR types viterbi_decode's scores int64 and its path a 0-d float32; the kernels write
    scores in the potentials' dtype and the path as int64 [batch, length]."""
    potentials = ctx.block.find_var(legacy.input("Input")[0])
    scores = ctx.block.find_var(legacy.output("Scores")[0]) if legacy.output("Scores") else None
    path = ctx.block.find_var(legacy.output("Path")[0]) if legacy.output("Path") else None
    if potentials is not None and scores is not None:
        scores.dtype = potentials.dtype
    if path is not None:
        path.dtype, path.shape = VarType.INT64, None


# ---------------------------------------------------------------- export (legacy op -> adjusted copy)

def arange_dtype_back(legacy, exporter):
    """PIR's arange names the dtype legacy range takes from Start: its output's."""
    copy = legacy.copy()
    copy.set_attr("dtype", exporter.type_of(legacy.output("Out")[0]).dtype)
    return copy


def is_lower(legacy, exporter) -> bool:
    """tril_triu's lower triangle is pd_op.tril (its upper one pd_op.triu)."""
    return bool(legacy.attrs.get("lower", False))


def is_upper(legacy, exporter) -> bool:
    return not is_lower(legacy, exporter)


def repeats_tensor(legacy, exporter) -> bool:
    """repeat_interleave with a tensor of repeats is PIR's repeat_interleave_with_tensor_index."""
    return any(name != EMPTY_VAR for name in legacy.input("RepeatsTensor"))


def reduce_all_back(legacy, exporter):
    """reduce_all: PIR says it with an empty axis list."""
    if not legacy.attrs.get("reduce_all"):
        return legacy
    copy = legacy.copy()
    copy.set_attr("dim", [])
    return copy


def aligned_y(legacy, exporter):
    """Legacy elementwise ops align Y with X from ``axis`` (a bias of [C] on [N, C, H, W] at axis 1); PIR
    broadcasts from the last dim, so Y first gets trailing unit dims, as Paddle's translator gives it."""
    axis = legacy.attrs.get("axis", -1)
    if axis == -1:
        return legacy
    x, y = (exporter.type_of(legacy.input(slot)[0]) for slot in ("X", "Y"))
    trailing = len(x.dims) - axis - len(y.dims) if isinstance(axis, int) else -1
    if not isinstance(axis, int) or axis < 0 or trailing < 0:
        raise exporter.fail(f"attribute axis={axis!r} does not place Y {list(y.dims)} inside X {list(x.dims)}")
    copy = legacy.copy()
    copy.set_attr("axis", -1)
    if trailing:
        aligned = Value(0, TensorType(y.kind, y.dtype, y.dims + (1,) * trailing))
        axes = exporter.constant("ints", list(range(len(y.dims), len(y.dims) + trailing)))
        exporter.emit("pd_op.unsqueeze", [exporter.read(legacy.input("Y")[0]), axes], [aligned], {})
        copy.inputs["Y"] = [legacy.input("Y")[0] + "@aligned"]   # a value only this op reads
        exporter.current[copy.inputs["Y"][0]] = aligned
    return copy


def literal_values(legacy, exporter):
    """assign_value and set_value keep their numbers as serialized Scalars (or Paddle 2.x per-dtype lists); PIR
    as f64s."""
    copy = legacy.copy()
    copy.set_attr("values", [v if isinstance(v, complex) else float(v)
                             for v in literal({**OPS[legacy.type].attrs, **legacy.attrs})])
    return copy


def without_w_out(legacy, exporter):
    """Paddle computes nothing into hsigmoid_loss's w_out, and legacy programs name W itself as W_Out:
    the export leaves the result unnamed, so W keeps its value."""
    copy = legacy.copy()
    copy.outputs["W_Out"] = []
    return copy


def dense_weight_grad(legacy, exporter):
    """nce_grad and hsigmoid_loss_grad with is_sparse write their weight's gradient dense, as export writes a
    sparse embedding's (pd_op.embedding_grad): Paddle's PIR kernels would make it SelectedRows, which its fetch of
    the gradients refuses ("FeedOp, FetchOp ... can only output a dense tensor")."""
    copy = legacy.copy()
    copy.set_attr("is_sparse", False)
    return copy


def reads_an_array(legacy, exporter) -> bool:
    """Legacy sum and assign take tensor arrays too; PIR has add_n_array and assign_array for them (Paddle 3.3.1's
    pd_op.assign of an array fails: `Unsupported sharing meta for TensorArray`)."""
    var = exporter.var(legacy.input("X")[0]) if legacy.input("X") else None
    return var is not None and var.type == VarType.DENSE_TENSOR_ARRAY


def writes_a_persistable(legacy, exporter) -> bool:
    """A legacy assign into a persistable var (a parameter's new value, as auto-parallel's optimizer step writes its
    block back): PIR writes it in place (assign_out_), else the new value would be a temporary."""
    var = exporter.var(legacy.output("Out")[0]) if legacy.output("Out") else None
    return var is not None and bool(var.persistable) and var.type != VarType.DENSE_TENSOR_ARRAY


def fill_any_like_back(legacy, exporter):
    """dtype -1 means "as X"; PIR's full_like names the dtype."""
    if legacy.attrs.get("dtype", -1) != -1:
        return legacy
    copy = legacy.copy()
    copy.set_attr("dtype", exporter.type_of(legacy.input("X")[0]).dtype)
    return copy


def transpose_grad_as_transpose(legacy, op, ctx) -> None:
    """PIR's transpose_grad reads only the output grad; the legacy one also reads XShape, a tensor of X's
    shape, which cannot be made where a dim is only known at run time. The grad is the transpose by the
    inverse permutation: that is the legacy op written here."""
    perm, out_grad = legacy.attrs.get("axis"), legacy.input("Out@GRAD")[0]
    permutes = isinstance(perm, list) and all(type(axis) is int for axis in perm)
    if not permutes or sorted(perm) != list(range(len(perm))):
        raise ctx.fail(op, f"attribute 'perm' must be a permutation, got {perm!r:.60}")
    ctx.block.ops.remove(legacy)
    if not legacy.output("X@GRAD"):
        return
    var = ctx.block.find_var(out_grad)
    xshape = ctx.namer.fresh("transpose2")
    ctx.block.create_var(xshape, None if var is None or var.shape is None else [0] + list(var.shape),
                         var.dtype if var is not None else None, stop_gradient=True)
    ctx.emit("transpose2", {"X": [out_grad]}, {"Out": legacy.output("X@GRAD"), "XShape": [xshape]},
             {"axis": [perm.index(axis) for axis in range(len(perm))]})

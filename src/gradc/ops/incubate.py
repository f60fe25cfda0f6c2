"""The layers of paddle.incubate.layers (PaddleRec's ops): partial_sum and partial_concat (a column range of each
input, summed or side by side), shuffle_batch (rows permuted), the tree-based deep model's tdm_child (a node's
children) and tdm_sampler (a leaf's ancestors with negatives drawn per tree layer), batch_fc (one fully connected
layer per slot), rank_attention (a parameter block per pair of ranks) and fused_seqpool_cvm (sum-pooled sequences
through the continuous value model). FlowNet's correlation, also one of them, is gradc.ops.correlation.

Paddle 3.3.1 runs the first five on CPU; batch_fc, rank_attention and fused_seqpool_cvm have GPU kernels only,
which gradc follows. Their gradients:

    partial_sum / partial_concat: dX_i[:, start:start + length] = dOut (its slice), zero elsewhere
    shuffle_batch: dX[i] = dOut[ShuffleIdx[i]]              (Out[ShuffleIdx[i]] = X[i])
    batch_fc: dInput[s] = dOut[s] W[s]^T, dW[s] = Input[s]^T dOut[s], dBias[s] = sum over rows of dOut[s]
    rank_attention: dRankParam[block (r, f)] += InputHelp block^T dOut, r the instance's rank, f its k-th pair's
    fused_seqpool_cvm: as cvm (gradc.ops.static_nn), by design: each row of a sequence gets dOut of its sequence in
                       the embedding columns and the sequence's CVM counts in the first cvm_offset columns; CVM, which
                       Out does not read, zeros

rank_attention's X gets no gradient, as in Paddle (its grad op writes RankParam's only). Paddle's rank_attention_grad
adds the block of the k-th pair to the param rows of rank pair (r, k), where the forward read (r, f): they agree when
f == k, as PaddleRec's RankOffset lists them; gradc gives the rows the forward read.
"""

from __future__ import annotations

from math import prod

from ..ir import VarType
from ..registry import NO_GRAD, defop, grad_op
from ..shapes import dims_match
from .infer import check_float, one_dtype

INDEX_DTYPES = (VarType.INT32, VarType.INT64)


def _columns(ctx, width: int) -> tuple[int, int]:
    """(start, length) of the column range, Paddle's -1 length meaning to the last column."""
    start, length = ctx.attr("start_index"), ctx.attr("length")
    if ctx.op.type == "partial_concat" and start < 0 and width >= 0:
        start += width
    if start < 0 or (width >= 0 and start >= width):
        ctx.fail(f"{ctx.op.type} needs 0 <= start_index < {width} (X's columns), got {ctx.attr('start_index')}")
    length = width - start if length < 0 and width >= 0 else length
    if width >= 0 and start + length > width:
        ctx.fail(f"{ctx.op.type} takes columns {start} .. {start + length - 1}, past X's {width}")
    return start, length


def _partial_infer(ctx):
    shapes = ctx.shapes("X")
    check_float(ctx, "X")
    known = [s for s in shapes if s is not None]
    if not known:
        return {"Out": (None, ctx.dtype("X"))}
    if any(len(s) != 2 or not dims_match(s[0], known[0][0]) or not dims_match(s[1], known[0][1]) for s in known):
        ctx.fail(f"{ctx.op.type} needs 2-D inputs [batch, width] of one shape, got {shapes}")
    _, length = _columns(ctx, known[0][1])
    width = length if ctx.op.type == "partial_sum" or length < 0 else length * len(shapes)
    return {"Out": ([known[0][0], width], ctx.dtype("X"))}


defop("partial_sum", ["X[]"], attrs={"start_index": 0, "length": -1}, infer=_partial_infer, grad=grad_op("X"))
defop("partial_concat", ["X[]"], attrs={"start_index": 0, "length": -1}, infer=_partial_infer, grad=grad_op("X"))


def _shuffle_batch_infer(ctx):
    x = ctx.shape("X")
    rows = -1 if x is None or any(d < 0 for d in x[:-1]) else prod(x[:-1])   # the rows of every dim but the last
    # ShuffleIdx is int64 whatever the program declares (Paddle's PIR programs declare it float32); SeedOut holds one
    # number, declared [] (legacy) or [0] (PIR)
    return {"Out": (x, ctx.dtype("X")), "ShuffleIdx": ([rows], None), "SeedOut": (None, VarType.INT64)}


defop("shuffle_batch", ["X", "Seed"], ["Out", "ShuffleIdx", "SeedOut"], attrs={"startup_seed": 0},
      infer=_shuffle_batch_infer, no_grad_inputs=["Seed"], no_grad_outputs=["ShuffleIdx", "SeedOut"],
      grad=grad_op("ShuffleIdx"), kernel_dtype_outputs=["ShuffleIdx"], state_inputs=["Seed"])


def _check_ids(ctx, *slots: str) -> None:
    for slot in slots:
        if ctx.dtype(slot) not in (None, *INDEX_DTYPES):
            ctx.fail(f"{ctx.op.type} needs int32 or int64 {slot}")
    if ctx.attr("dtype") not in INDEX_DTYPES:
        ctx.fail(f"{ctx.op.type} writes int32 (2) or int64 (3) ids, got dtype {ctx.attr('dtype')}")


def _tdm_child_infer(ctx):
    _check_ids(ctx, "X", "TreeInfo")
    x, info, children = ctx.shape("X"), ctx.shape("TreeInfo"), ctx.attr("child_nums")
    if children is None or children < 1:
        ctx.fail(f"tdm_child needs child_nums >= 1, got {children}")
    if info is not None and (len(info) != 2 or (info[1] >= 0 and info[1] < 3 + children)):
        ctx.fail(f"tdm_child needs TreeInfo [nodes, 3 + child_nums={children}] (item, layer, parent, children), "
                 f"got {info}")
    shape = None if x is None else [*x, children]
    return {"Child": (shape, ctx.attr("dtype")), "LeafMask": (shape, ctx.attr("dtype"))}


defop("tdm_child", ["X", "TreeInfo"], ["Child", "LeafMask"], attrs={"child_nums": 1, "dtype": int(VarType.INT32)},
      infer=_tdm_child_infer, grad=NO_GRAD)


def _tdm_sampler_infer(ctx):
    _check_ids(ctx, "X", "Travel", "Layer")
    negatives, offsets = list(ctx.attr("neg_samples_num_list")), list(ctx.attr("layer_offset"))
    if len(offsets) != len(negatives) + 1 or any(b <= a for a, b in zip(offsets, offsets[1:])):
        ctx.fail(f"tdm_sampler needs layer_offset: one increasing offset per tree layer and the end "
                 f"({len(negatives) + 1}), got {offsets}")
    for layer, (count, start, end) in enumerate(zip(negatives, offsets, offsets[1:])):
        if not 0 <= count <= end - start - 1:
            ctx.fail(f"tdm_sampler draws {count} negatives at layer {layer}, which has {end - start} nodes "
                     f"(one is the positive)")
    travel = ctx.shape("Travel")
    if travel is not None and (len(travel) != 2 or not dims_match(travel[1], len(negatives))):
        ctx.fail(f"tdm_sampler needs Travel [leaves, layers={len(negatives)}], got {travel}")
    x = ctx.shape("X")
    width = sum(negatives) + len(negatives) * bool(ctx.attr("output_positive"))
    shape = None if x is None else [-1 if any(d < 0 for d in x) else prod(x), width]   # a row per id of X
    return {slot: (shape, ctx.attr("dtype")) for slot in ("Out", "Labels", "Mask")}


defop("tdm_sampler", ["X", "Travel", "Layer"], ["Out", "Labels?", "Mask"],
      attrs={"output_positive": True, "neg_samples_num_list": [], "layer_offset": [], "seed": 0,
             "dtype": int(VarType.INT32)}, infer=_tdm_sampler_infer, grad=NO_GRAD)


def _batch_fc_infer(ctx):
    x, w, bias = ctx.shape("Input"), ctx.shape("W"), ctx.shape("Bias")
    dtype = one_dtype(ctx, "Input", "W", "Bias")
    check_float(ctx, "Input")
    if x is None or w is None:
        return {"Out": (None, dtype)}
    if len(x) != 3 or len(w) != 3 or not dims_match(x[0], w[0]) or not dims_match(x[2], w[1]):
        ctx.fail(f"batch_fc needs Input [slots, rows, in] and W [slots, in, out], got {x} and {w}")
    if bias is not None and (len(bias) != 2 or not dims_match(bias[0], w[0]) or not dims_match(bias[1], w[2])):
        ctx.fail(f"batch_fc needs Bias [slots, out] for W {w}, got {bias}")
    return {"Out": ([x[0], x[1], w[2]], dtype)}


defop("batch_fc", ["Input", "W", "Bias"], infer=_batch_fc_infer, grad=grad_op("Input", "W", "Bias"))


def _rank_attention_infer(ctx):
    x, offset, param = ctx.shape("X"), ctx.shape("RankOffset"), ctx.shape("RankParam")
    dtype = one_dtype(ctx, "X", "RankParam")
    check_float(ctx, "X")
    if ctx.dtype("RankOffset") not in (None, VarType.INT32):
        ctx.fail("rank_attention needs int32 RankOffset")
    ranks = ctx.attr("MaxRank")
    if x is None or offset is None or param is None:
        return {"Out": (None, dtype), "InputHelp": (None, dtype), "InsRank": (None, dtype)}
    if len(x) != 2 or len(offset) != 2 or not dims_match(offset[0], x[0]) or not dims_match(offset[1], 2 * ranks + 1):
        ctx.fail(f"rank_attention needs X [instances, dim] and RankOffset [instances, 2 MaxRank + 1 = "
                 f"{2 * ranks + 1}], got {x} and {offset}")
    if len(param) != 2 or not dims_match(param[0], ranks * ranks * x[1]):
        ctx.fail(f"rank_attention needs RankParam [MaxRank^2 dim = {ranks * ranks * x[1]}, out], got {param}")
    rows = -1 if x[0] < 0 else max(x[0], ctx.attr("MaxSize"))
    return {"Out": ([x[0], param[1]], dtype), "InputHelp": ([rows, ranks * x[1]], dtype), "InsRank": ([rows, 1], dtype)}


defop("rank_attention", ["X", "RankOffset", "RankParam"], ["InputHelp?", "Out", "InsRank?"],
      attrs={"MaxRank": 3, "MaxSize": 0}, infer=_rank_attention_infer, no_grad_inputs=["X", "RankOffset"],
      no_grad_outputs=["InputHelp", "InsRank"],
      grad=grad_op("X", "RankOffset", "RankParam", "InputHelp", "InsRank"))


def _fused_seqpool_cvm_infer(ctx):
    check_float(ctx, "X")
    if ctx.attr("pooltype") != "SUM":
        ctx.fail(f"fused_seqpool_cvm pools by SUM only (Paddle's kernel), got pooltype {ctx.attr('pooltype')!r}")
    offset, dropped = ctx.attr("cvm_offset"), 0 if ctx.attr("use_cvm") else ctx.attr("cvm_offset")
    outputs = []
    for shape in ctx.shapes("X"):
        if shape is not None and (len(shape) != 2 or (shape[1] >= 0 and shape[1] < max(offset, 2))):
            ctx.fail(f"fused_seqpool_cvm needs each X [rows, width >= cvm_offset={offset}], got {shape}")
        outputs.append((None if shape is None else [-1, shape[1] - dropped if shape[1] >= 0 else -1],
                        ctx.dtype("X")))
    cvm = ctx.shape("CVM")
    if cvm is not None and (len(cvm) != 2 or not dims_match(cvm[1], offset)):
        ctx.fail(f"fused_seqpool_cvm needs CVM [batch, cvm_offset={offset}], got {cvm}")
    return {"Out": outputs}


defop("fused_seqpool_cvm", ["X[]", "CVM"], ["Out[]"],
      attrs={"pooltype": "SUM", "pad_value": 0.0, "use_cvm": True, "cvm_offset": 2},
      infer=_fused_seqpool_cvm_infer, lod_levels=lambda ctx: {"Out": 0}, grad=grad_op("X", "CVM"))

"""Kernels of gradc.ops.incubate (paddle.incubate.layers). tdm_sampler draws Paddle's numbers: each tree layer
its own engine seeded with the seed attribute (Paddle's UniformSampler), a fresh one per run as in Paddle. Paddle's
shuffle_batch permutes from std::random_device whatever its seed, so no run of it can be matched: gradc draws one
cycle through all rows (as Paddle's, no row stays in place) from its generator, and gives Paddle's SeedOut."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from .. import randomness
from ..lod import SETS_LOD
from ..paddle_random import Engine
from ..paddle_random_dists import ScalarDraws
from . import kernel

SETS_LOD.add("fused_seqpool_cvm")   # a pooled row per sequence: no LoD


def _columns(k, width: int) -> slice:
    start, length = k.attr("start_index"), k.attr("length")
    start += width if start < 0 and k.op.type.startswith("partial_concat") else 0
    length = width - start if length < 0 else length
    if not 0 <= start < width or start + length > width:
        raise ValueError(f"columns {start} .. {start + length - 1} of X, which has {width}")
    return slice(start, start + length)


@kernel("partial_sum")
def partial_sum(k):
    xs = k.xs("X")
    columns = _columns(k, xs[0].shape[1])
    out = np.zeros_like(xs[0][:, columns])
    for x in xs:
        out += x[:, columns]
    return {"Out": out}


@kernel("partial_concat")
def partial_concat(k):
    xs = k.xs("X")
    columns = _columns(k, xs[0].shape[1])
    return {"Out": np.concatenate([x[:, columns] for x in xs], axis=1)}


@kernel("partial_sum_grad", "partial_concat_grad")
def partial_grad(k):
    xs, dout = k.xs("X"), k.x("Out@GRAD")
    columns = _columns(k, xs[0].shape[1])
    length = columns.stop - columns.start
    grads = []
    for i, x in enumerate(xs):
        grad = np.zeros_like(x)
        grad[:, columns] = dout if k.op.type == "partial_sum_grad" else dout[:, i * length:(i + 1) * length]
        grads.append(grad)
    return {"X@GRAD": grads}


MINSTD_MODULUS = 2**31 - 1


@kernel("shuffle_batch")
def shuffle_batch(k):
    """Out[ShuffleIdx[i]] = X[i] over the rows of every dim but the last; SeedOut: the first number of
    std::minstd_rand0 seeded with Seed (its startup_seed while Seed holds no number), the next run's Seed."""
    x = k.x("X")
    rows = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
    order = randomness.generator().permutation(len(rows))
    index = np.empty(len(rows), np.int64)
    index[order] = np.roll(order, -1)   # each row moves to the next one of a random cycle
    out = np.empty_like(rows)
    out[index] = rows
    held = k.scope.find(k.ins["Seed"][0], None) if k.ins.get("Seed") else None   # none yet, or PIR's empty one
    seed = int(np.asarray(held).reshape(-1)[0]) if held is not None and np.size(held) else k.attr("startup_seed")
    state = (seed % 2**64) % MINSTD_MODULUS or 1
    return {"Out": out.reshape(x.shape), "ShuffleIdx": index,
            "SeedOut": np.array([16807 * state % MINSTD_MODULUS], np.int64)}


@kernel("shuffle_batch_grad")
def shuffle_batch_grad(k):
    dout, index = k.x("Out@GRAD"), k.x("ShuffleIdx")
    return {"X@GRAD": dout.reshape(len(index), -1)[index].reshape(dout.shape)}


def _ids(values: np.ndarray, high: int, what: str) -> np.ndarray:
    ids = np.asarray(values).reshape(-1).astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= high):
        raise ValueError(f"{what} must lie in [0, {high}), got {ids.min()} .. {ids.max()}")
    return ids


def _id_dtype(k) -> type:
    return np.int64 if k.attr("dtype") == 3 else np.int32


@kernel("tdm_child")
def tdm_child(k):
    """A node's children (TreeInfo: item id, layer, parent, children ...) and whether each is an item (a leaf);
    zeros for node 0 and for a node without children."""
    info, count = k.x("TreeInfo"), k.attr("child_nums")
    ids = _ids(k.x("X"), len(info), "tdm_child's ids")
    children = info[ids, 3:3 + count].astype(np.int64)
    has = (ids != 0) & (info[ids, 3] != 0)
    children = np.where(has[:, None], children, 0)
    items = info[_ids(children, len(info), "TreeInfo's children"), 0].reshape(children.shape)
    leaves = has[:, None] & (items != 0)
    shape, dtype = (*np.shape(k.x("X")), count), _id_dtype(k)
    return {"Child": children.astype(dtype).reshape(shape), "LeafMask": leaves.astype(dtype).reshape(shape)}


@kernel("tdm_sampler")
def tdm_sampler(k):
    """For each leaf id: along its Travel path, per layer the positive node (label 1) and negatives drawn uniformly
    from the layer's nodes (Layer[offset:offset + count]), redrawn while one is the positive or drawn already; a
    path's padding node 0 gives zeros and mask 0."""
    travel, layer_nodes, positive = k.x("Travel"), k.x("Layer").reshape(-1), k.attr("output_positive")
    negatives, offsets = list(k.attr("neg_samples_num_list")), list(k.attr("layer_offset"))
    ids = _ids(k.x("X"), len(travel), "tdm_sampler's leaf ids")
    seed = k.attr("seed") % 2**32
    samplers = [ScalarDraws(Engine(seed if seed else int(randomness.generator().integers(1, 2**32))), np.float64)
                for _ in negatives]
    width = sum(negatives) + positive * len(negatives)
    out, labels, mask = (np.zeros(check_shape((len(ids), width), np.int64, "tdm_sampler's Out"), np.int64)
                         for _ in range(3))
    for row, leaf in enumerate(ids):
        column = 0
        for layer, (count, start, end) in enumerate(zip(negatives, offsets, offsets[1:])):
            node = int(travel[leaf, layer])
            if node == 0:   # padding: nothing drawn, zeros masked out
                column += count + positive
                continue
            if positive:
                out[row, column], labels[row, column], mask[row, column] = node, 1, 1
                column += 1
            others = int(np.count_nonzero(layer_nodes[start:end] != node))
            if others < count:   # Paddle's sampler would redraw forever
                raise ValueError(f"tdm_sampler draws {count} negatives at layer {layer}, whose Layer nodes hold "
                                 f"{others} besides the positive {node}")
            drawn: list[int] = []
            for _ in range(count):
                pick = samplers[layer].below(end - start)
                while layer_nodes[start + pick] == node or pick in drawn:
                    pick = samplers[layer].below(end - start)
                drawn.append(pick)
                out[row, column], mask[row, column] = layer_nodes[start + pick], 1
                column += 1
    dtype = _id_dtype(k)
    return {"Out": out.astype(dtype), "Labels": labels.astype(dtype), "Mask": mask.astype(dtype)}


@kernel("batch_fc")
def batch_fc(k):
    """Out[s] = Input[s] W[s] + Bias[s] for each slot s."""
    return {"Out": np.matmul(k.x("Input"), k.x("W")) + k.x("Bias")[:, None, :]}


@kernel("batch_fc_grad")
def batch_fc_grad(k):
    x, w, dout = k.x("Input"), k.x("W"), k.x("Out@GRAD")
    return k.grads({"Input@GRAD": lambda: np.matmul(dout, w.swapaxes(1, 2)),
                    "W@GRAD": lambda: np.matmul(x.swapaxes(1, 2), dout),
                    "Bias@GRAD": lambda: dout.sum(axis=1)})


def _rank_blocks(k):
    """Per instance and pair k: X's row the pair names, the RankParam block of (own rank, the pair's rank) as an
    index into RankParam [MaxRank^2, dim, out], and whether both ranks are set (> 0)."""
    x, offset, ranks = k.x("X"), k.x("RankOffset").astype(np.int64), k.attr("MaxRank")
    if offset.shape != (len(x), 2 * ranks + 1):
        raise ValueError(f"RankOffset must be [{len(x)}, {2 * ranks + 1}] (MaxRank {ranks}), got {list(offset.shape)}")
    own, pair_ranks, rows = offset[:, :1] - 1, offset[:, 1::2] - 1, offset[:, 2::2]
    valid = (own >= 0) & (pair_ranks >= 0)
    rows = _ids(np.where(valid, rows, 0), len(x), "RankOffset's instance indices").reshape(valid.shape)
    return x[rows] * valid[..., None], np.where(valid, own * ranks + pair_ranks, 0), valid


@kernel("rank_attention")
def rank_attention(k):
    """Out[i] = sum over pairs k of X[row(i, k)] RankParam[block(rank(i), rank(i, k))]; InputHelp holds the
    gathered rows, InsRank each instance's rank (-1 in the rows past the instances, MaxSize rows at least)."""
    x, param, ranks = k.x("X"), k.x("RankParam"), k.attr("MaxRank")
    gathered, blocks, valid = _rank_blocks(k)
    param = param.reshape(ranks * ranks, x.shape[1], param.shape[1])
    out = np.einsum("ikd,ikdp->ip", gathered, param[blocks] * valid[..., None, None])
    rows = max(len(x), k.attr("MaxSize"))
    helper = np.zeros(check_shape((rows, ranks * x.shape[1]), x.dtype, "rank_attention's InputHelp"), x.dtype)
    helper[:len(x)] = gathered.reshape(len(x), -1)
    ins_rank = np.full((rows, 1), -1, x.dtype)
    ins_rank[:len(x), 0] = k.x("RankOffset")[:, 0]
    return {"Out": out.astype(x.dtype), "InputHelp": helper, "InsRank": ins_rank}


@kernel("rank_attention_grad")
def rank_attention_grad(k):
    param, dout, ranks = k.x("RankParam"), k.x("Out@GRAD"), k.attr("MaxRank")
    gathered, blocks, valid = _rank_blocks(k)
    grad = np.zeros((ranks * ranks, gathered.shape[-1], param.shape[1]), param.dtype)
    np.add.at(grad, blocks[valid], np.einsum("nd,np->ndp", gathered[valid], np.repeat(dout, valid.sum(1), axis=0)))
    return {"RankParam@GRAD": grad.reshape(param.shape)}


def _sequence_of_rows(k, i: int, rows: int) -> tuple[np.ndarray, int]:
    """The sequence of each row of X's i-th var (its first LoD level; without one each row is its own), and the
    count of sequences."""
    lod = k.lod("X", i)
    offsets = np.arange(rows + 1) if lod is None else np.asarray(lod[0])
    if offsets[-1] != rows:
        raise ValueError(f"the LoD of X's var {i} ({offsets.tolist()}) does not cover its {rows} rows")
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets)), len(offsets) - 1


@kernel("fused_seqpool_cvm")
def fused_seqpool_cvm(k):
    """Each sequence's rows summed onto pad_value, then cvm: log(show + 1) and log(click + 1) - log(show + 1) in the
    first two columns (use_cvm), else the first cvm_offset columns dropped."""
    outs, batch = [], None
    for i, x in enumerate(k.xs("X")):
        sequence, count = _sequence_of_rows(k, i, len(x))
        if batch not in (None, count):
            raise ValueError(f"every X holds one batch of sequences: {batch} in X's var 0, {count} in var {i}")
        batch = count
        pooled = np.full((count, x.shape[1]), k.attr("pad_value"), x.dtype)
        np.add.at(pooled, sequence, x)   # row by row, as Paddle's kernel adds them
        if k.attr("use_cvm"):
            shows = np.log(pooled[:, 0] + 1)
            pooled[:, 1] = np.log(pooled[:, 1] + 1) - shows
            pooled[:, 0] = shows
            outs.append(pooled)
        else:
            outs.append(pooled[:, k.attr("cvm_offset"):].copy())
    return {"Out": outs}


@kernel("fused_seqpool_cvm_grad")
def fused_seqpool_cvm_grad(k):
    """Every row of a sequence: its CVM counts in the first cvm_offset columns (Paddle's, by design), dOut of its
    sequence in the others; CVM, which Out does not read, gets zeros."""
    counts, offset = k.x("CVM"), k.attr("cvm_offset")

    def x_grads() -> list[np.ndarray]:
        grads = []
        for i, (x, dout) in enumerate(zip(k.xs("X"), k.xs("Out@GRAD"))):
            sequence, _ = _sequence_of_rows(k, i, len(x))
            grad = np.empty_like(x)
            grad[:, :offset] = counts[sequence]
            grad[:, offset:] = dout[sequence, offset:] if k.attr("use_cvm") else dout[sequence]
            grads.append(grad)
        return grads
    return k.grads({"X@GRAD": x_grads, "CVM@GRAD": lambda: np.zeros_like(counts)})

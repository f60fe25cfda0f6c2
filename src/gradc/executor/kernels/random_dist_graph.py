"""Kernels of gradc.ops.random_dist_graph: neighbour sampling on a CSC graph and renumbering a sampled subgraph.
Paddle's CPU samplers seed a std::mt19937 from std::random_device on every run (no paddle.seed reaches them), so
gradc draws them from its numpy generator, which gradc.seed does seed."""

from __future__ import annotations

import numpy as np

from ...limits import check_allocation
from .. import randomness
from . import kernel


def _neighbourhoods(row, colptr, nodes, eids):
    """Each input node's [start, end) in Row, after checking the graph is well formed."""
    if colptr.size < 1 or colptr[0] < 0 or (np.diff(colptr) < 0).any() or colptr[-1] > row.size:
        raise ValueError(f"the column offsets must rise from >= 0 to at most {row.size} (the edges in the row "
                         "input)")
    if ((nodes < 0) | (nodes >= colptr.size - 1)).any():
        raise ValueError(f"input node ids must lie in [0, {colptr.size - 1}) (the graph's nodes)")
    if eids is not None and eids.size != row.size:
        raise ValueError(f"the graph has {row.size} edges but {eids.size} edge ids")
    return colptr[nodes].astype(np.int64), colptr[nodes + 1].astype(np.int64)


def _sample(k, row, colptr, nodes, eids, order):
    """Every neighbour of a node with at most sample_size of them (in order), else the first sample_size of its
    edges sorted by ``order(edges)`` (ascending; ties by position), written last first as Paddle's min-heap of the
    top keys pops them; the neighbours, the count per node and, with return_eids, the edges' ids. All nodes at once:
    each node's edges laid end to end and sorted within it."""
    size = k.attr("sample_size")
    starts, ends = _neighbourhoods(row, colptr, nodes, eids)
    degrees = (ends - starts).ravel()
    # each input node's edges are laid out in full (a few int64 arrays): a hub asked for many times is a lot of them
    check_allocation(int(degrees.sum()), 6 * 8, f"the {int(degrees.sum()):,} edges of the input nodes")
    taken = degrees if size == -1 else np.minimum(degrees, size)
    node_of = np.repeat(np.arange(degrees.size), degrees)
    position = np.arange(node_of.size) - np.repeat(np.cumsum(degrees) - degrees, degrees)
    edges = starts.ravel()[node_of] + position
    sampled = (taken < degrees)[node_of]
    keys = np.zeros(edges.size)
    keys[sampled] = order(edges[sampled])
    ranked = np.lexsort((position, keys, node_of))   # node by node as before: slot i still holds node_of[i]
    kept = ranked[position < taken[node_of]]
    drawn = np.arange(kept.size)
    kept = kept[np.lexsort((np.where(sampled[kept], -drawn, drawn), node_of[kept]))]
    picked = edges[kept]
    picked_eids = eids[picked] if k.attr("return_eids") else np.zeros(0, row.dtype)
    return row[picked], taken.astype(np.int32).reshape(nodes.shape), picked_eids


@kernel("graph_sample_neighbors")
def graph_sample_neighbors(k):
    """Uniformly without replacement: the edges of a random order."""
    rng = randomness.generator()
    out, count, out_eids = _sample(k, k.x("Row"), k.x("Col_Ptr"), k.x("X"), k.optional("Eids"),
                                   lambda edges: rng.random(edges.size))
    return {"Out": out, "Out_Count": count, "Out_Eids": out_eids}


@kernel("weighted_sample_neighbors")
def weighted_sample_neighbors(k):
    """Without replacement, each draw proportional to the weights of the edges left: the sample_size largest keys
    log(u) / w (Efraimidis and Spirakis); a weight-0 edge only once no weighted one is left, earliest first."""
    weights, rng = k.x("edge_weight").astype(np.float64), randomness.generator()
    if weights.shape != k.x("row").shape:
        raise ValueError(f"edge_weight needs one weight per edge ({k.x('row').size}), got shape {list(weights.shape)}")
    if not (weights >= 0).all():
        raise ValueError("edge_weight holds a negative or NaN weight")

    def order(edges):
        with np.errstate(divide="ignore"):
            return -np.log(rng.random(edges.size)) / weights[edges]

    out, count, out_eids = _sample(k, k.x("row"), k.x("colptr"), k.x("input_nodes"), k.optional("eids"), order)
    return {"out_neighbors": out, "out_count": count, "out_eids": out_eids}


@kernel("graph_reindex")
def graph_reindex(k):
    """Out_Nodes: X, then each neighbour not in X in order of first appearance; a node's new id is its position
    there (a node X holds twice: its last, as Paddle's hash map keeps the last write). Reindex_Src: the neighbours'
    new ids; Reindex_Dst: X[i]'s new id, Count[i] times. reindex_heter_graph concatenates the neighbours and counts
    of several edge types: Count then holds one count per node of X for each type in turn."""
    x, neighbors, count = k.x("X"), k.x("Neighbors"), k.x("Count")
    types, left_over = divmod(count.size, x.size) if x.size else (0, count.size)
    # bounded before the sum, which huge int64 counts would wrap round to the right total (np.repeat then crashes)
    bounded = ((count >= 0) & (count <= neighbors.size)).all()
    if count.ndim != 1 or left_over or not bounded or count.sum() != neighbors.size:
        raise ValueError(f"Count needs one count >= 0 per node of X ({x.size}) for each edge type, summing to the "
                         f"{neighbors.size} neighbours, got {np.array2string(count, threshold=8, max_line_width=200)}")
    nodes, first_seen, where = np.unique(np.concatenate([x, neighbors]), return_index=True, return_inverse=True)
    new_id = np.empty(nodes.size, np.int64)
    in_x, last_from_end = np.unique(x[::-1], return_index=True)
    new_id[np.searchsorted(nodes, in_x)] = x.size - 1 - last_from_end
    fresh = np.flatnonzero(first_seen >= x.size)
    fresh = fresh[np.argsort(first_seen[fresh])]
    new_id[fresh] = x.size + np.arange(fresh.size)
    ids = new_id[where].astype(x.dtype)
    return {"Reindex_Src": ids[x.size:], "Reindex_Dst": np.repeat(np.tile(ids[:x.size], types), count),
            "Out_Nodes": np.concatenate([x, nodes[fresh]])}


@kernel("graph_khop_sampler")
def graph_khop_sampler(k):
    """Hop after hop, up to that hop's sample size of each frontier node's neighbours (uniformly, without
    replacement); the next frontier: the neighbours sampled, sorted, less this hop's frontier. Renumbered as
    Paddle's kernel does: the frontiers' nodes in turn (a node met again takes its later number), then each new
    neighbour in order of first appearance. Paddle 3.3.1 samples only as many nodes of a later frontier as X has
    (and reads past a smaller one); gradc samples every frontier node, as documented."""
    row, colptr, x = k.x("Row"), k.x("Col_Ptr"), k.x("X")
    eids = k.optional("Eids") if k.attr("return_eids") else None
    if not x.size:
        raise ValueError("graph_khop_sampler needs input nodes X, got none")
    rng, frontier = randomness.generator(), x[np.sort(np.unique(x, return_index=True)[1])]
    frontiers, picked, counts = [], [], []
    for hop, size in enumerate(k.attr("sample_sizes")):
        if frontier.size == 0:
            break
        starts, ends = _neighbourhoods(row, colptr, frontier, eids)
        check_allocation(int(np.minimum(ends - starts, size).sum()), 3 * 8, f"the edges sampled at hop {hop}")
        edges = [np.arange(start, end) if end - start <= size else start + rng.permutation(end - start)[:size]
                 for start, end in zip(starts.tolist(), ends.tolist())]
        frontiers.append(frontier)
        counts.append([len(e) for e in edges])
        picked.append(np.concatenate(edges).astype(np.int64))
        if hop == 0 and not picked[0].size:
            raise ValueError("none of the input nodes X has a neighbour")
        frontier = np.setdiff1d(np.unique(row[picked[-1]]), frontier)
    edges, nodes = np.concatenate(picked), np.concatenate(frontiers).tolist()
    order = list(nodes)   # a node in two frontiers is listed twice; the map keeps its later number
    numbers = {node: number for number, node in enumerate(order)}
    for node in row[edges].tolist():
        if node not in numbers:
            numbers[node] = len(order)
            order.append(node)
    renumber = np.vectorize(numbers.__getitem__, otypes=[row.dtype])
    results = {"Out_Src": renumber(row[edges]).reshape(-1, 1),
               "Out_Dst": np.repeat(renumber(nodes), np.concatenate(counts)).reshape(-1, 1),
               "Sample_Index": np.asarray(order, row.dtype), "Reindex_X": renumber(x)}
    if eids is not None:
        results["Out_Eids"] = eids[edges]
    return results

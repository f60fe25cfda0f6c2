"""Rows: random distributions (binomial, standard_gamma, dirichlet, exponential_, truncated normal) and graph
sampling. Each draw feeds the loss (Paddle's draws are recorded and replayed); the samplers' node ids gather rows
of a feature matrix."""

import paddle
import paddle.geometric as G
from paddle.distribution import Dirichlet
from paddle.nn.initializer import TruncatedNormal
from paddle.utils import unique_name

from .spec import Input, f, given, ints, table, unit

# a CSC graph of 5 nodes: node 0's in-neighbours are [3, 1], node 1's [0], node 2's none, node 3's [2, 0, 1]
ROW, COLPTR, NODES = [3, 1, 0, 2, 0, 1], [0, 2, 3, 3, 6, 6], [3, 0, 2]
EDGE_WEIGHT = [0.5, 2.0, 1.0, 0.1, 3.0, 1.5]
# graph_khop_sampler's graph: sample sizes above every degree draw nothing, and two hops from [3, 1] reach a frontier
# of two (Paddle 3.3.1 samples only as many nodes of a later hop as X holds)
KHOP_ROW, KHOP_COLPTR, KHOP_NODES = [1, 2, 3, 0, 2, 0, 1, 3, 0, 1, 4, 2], [0, 3, 5, 8, 10, 12], [3, 1]


def truncated(like, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """The op TruncatedNormal writes into a startup program, in the main program: the initialiser applied to a new
    var of the main block (legacy), or the PIR op it emits."""
    if paddle.framework.in_pir_mode():
        return paddle._C_ops.truncated_gaussian_random(like.shape, mean, std, 0, a, b, like.dtype,
                                                       paddle.CPUPlace())
    block = paddle.static.default_main_program().global_block()
    var = block.create_var(name=unique_name.generate("truncated"), shape=like.shape, dtype=like.dtype)
    TruncatedNormal(mean, std, a, b)(var, block)
    return var


def graph():
    return given(ROW, "int64"), given(COLPTR, "int64"), given(NODES, "int64")


def khop(x, row, colptr, nodes, sizes, eids=None):
    """Features of the sampled subgraph: each edge's renumbered ends multiplied, and the nodes it holds."""
    src, dst, index, reindexed, *more = paddle.incubate.graph_khop_sampler(
        row, colptr, nodes, sizes, sorted_eids=eids, return_eids=eids is not None)
    ends = paddle.gather(x, src.reshape([-1])) * paddle.gather(x, dst.reshape([-1]))
    return [ends, paddle.gather(x, index), paddle.gather(x, reindexed), *[paddle.gather(x, e) for e in more]]


def positive(*shape: int) -> Input:
    """Values in [0.5, 2), not differentiated: gamma shapes, Dirichlet concentrations."""
    return Input(shape, "positive", grad=False)


ROWS = table(
    "random_dist",
    ("TruncatedNormal", lambda x: x * truncated(x), f(3, 4)),
    ("TruncatedNormal_bounds", lambda x: x * truncated(x, mean=1.0, std=2.0, a=-1.0, b=4.0), f(2, 5)),
    ("binomial", lambda x, count, p: x * paddle.binomial(count, p).astype(x.dtype), f(2, 3), ints(10, 2, 3),
     unit(2, 3, grad=False)),
    ("standard_gamma", lambda x, alpha: x * paddle.standard_gamma(alpha), f(2, 3), positive(2, 3)),
    ("Dirichlet_sample", lambda x, alpha: x * Dirichlet(alpha).sample([2]), f(2, 4), positive(4)),
    ("exponential_", lambda x: x * paddle.scale(x, 1.0).exponential_(2.0), f(2, 3)),
    ("sample_neighbors", lambda x, row, colptr, nodes: paddle.gather(x, G.sample_neighbors(row, colptr, nodes, 2)[0]),
     f(5, 3), *graph()),
    ("sample_neighbors_eids", lambda e, row, colptr, nodes, eids: paddle.gather(
        e, G.sample_neighbors(row, colptr, nodes, 2, eids=eids, return_eids=True)[2]), f(6, 3), *graph(),
     given([0, 1, 2, 3, 4, 5], "int64")),
    ("graph_khop_sampler", lambda x, row, colptr, nodes: khop(x, row, colptr, nodes, [5]), f(6, 3),
     given(KHOP_ROW, "int64"), given(KHOP_COLPTR, "int64"), given(KHOP_NODES, "int64")),
    ("graph_khop_sampler_two_hops_eids", lambda x, row, colptr, nodes, eids: khop(x, row, colptr, nodes, [5, 4], eids),
     f(12, 3), given(KHOP_ROW, "int64"), given(KHOP_COLPTR, "int64"), given(KHOP_NODES, "int64"),
     given(list(range(12)), "int64")),
    ("sample_neighbors_all", lambda x, row, colptr, nodes: paddle.gather(
        x, G.sample_neighbors(row, colptr, nodes, 3)[0]), f(5, 3), *graph()),
    ("weighted_sample_neighbors", lambda x, row, colptr, nodes, w: paddle.gather(
        x, G.weighted_sample_neighbors(row, colptr, w, nodes, 2)[0]), f(5, 3), *graph(), given(EDGE_WEIGHT, "float32")),
    ("weighted_sample_neighbors_eids", lambda e, row, colptr, nodes, w, eids: paddle.gather(
        e, G.weighted_sample_neighbors(row, colptr, w, nodes, 1, eids=eids, return_eids=True)[2]), f(6, 3), *graph(),
     given(EDGE_WEIGHT, "float32"), given([5, 4, 3, 2, 1, 0], "int64")),
    ("reindex_graph", lambda x, nodes, nb, count: paddle.gather(x, G.reindex_graph(nodes, nb, count)[2]), f(8, 3),
     given([5, 2], "int64"), given([2, 7, 5, 6], "int64"), given([3, 1], "int32")),
    ("reindex_heter_graph", lambda x, nodes, nb, nb2, count, count2: paddle.gather(
        x, G.reindex_heter_graph(nodes, [nb, nb2], [count, count2])[2]), f(8, 3), given([5, 2], "int64"),
     given([2, 7, 5], "int64"), given([6, 0], "int64"), given([2, 1], "int32"), given([1, 1], "int32")),
)

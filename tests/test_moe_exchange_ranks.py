"""global_scatter / global_gather across 2 and 3 ranks (gradc.executor.ranks.run_ranks): the MoE all-to-all of rows
by expert count, laid out as Paddle's NCCL kernels lay them out (counts indexed i + j E for local expert i of rank j;
scatter receives expert by expert, rank by rank), checked against the single-device composition of the same routing:
each row of X, sent to its expert, scaled by that expert's factor and gathered back, is X's row times the factor, and
so is its gradient."""

import numpy as np
import pytest

import gradc
from gradc.errors import ExecutionError
from gradc.executor.ranks import run_ranks
from gradc.ir import VarType
from programs import Net

DIM = 3


def routing(seed: int, size: int, experts: int):
    """Each rank's rows sorted by global expert (a count of 0 for some), the counts each rank sends and receives, and
    the per-expert factors."""
    rng = np.random.default_rng(seed)
    routes = [np.sort(rng.integers(0, size * experts, rng.integers(3, 8))) for _ in range(size)]
    local = [np.bincount(route, minlength=size * experts) for route in routes]   # entry i + j E: expert j E + i
    remote = [np.array([local[j][i + r * experts] for j in range(size) for i in range(experts)]).reshape(size, experts)
              .reshape(-1) for r in range(size)]
    return routes, local, remote, rng.uniform(0.5, 2.0, size * experts)


def rank_program(rows: int, received: int, counts: int, differentiate: bool):
    """x -> global_scatter -> times each received row's factor -> global_gather; loss = sum(out * c)."""
    net = Net()
    for name, shape in (("x", [rows, DIM]), ("factor", [received, 1]), ("c", [rows, DIM])):
        net.data(name, shape)
    for name in ("local_count", "global_count"):
        net.data(name, [counts], VarType.INT64)
    counts_in = {"local_count": ["local_count"], "global_count": ["global_count"]}
    scattered = net.op("global_scatter", {"X": ["x"], **counts_in}, {"ring_id": 0})
    scaled = net.op("elementwise_mul", {"X": scattered, "Y": "factor"}, {"axis": -1})
    gathered = net.op("global_gather", {"X": [scaled], **counts_in}, {"ring_id": 0})
    net.block.var(gathered).shape = [rows, DIM]
    loss = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": gathered, "Y": "c"}, {"axis": -1})},
                  {"reduce_all": True, "dim": []})
    grads = gradc.gradients(net.program, loss, ["x"]) if differentiate else []
    return net.program, [scattered, gathered, *grads]


@pytest.mark.parametrize(("size", "experts", "seed"), [(2, 2, 1), (3, 2, 2), (2, 3, 3)])
def test_scatter_then_gather_is_the_single_device_routing(size, experts, seed):
    routes, local, remote, weights = routing(seed, size, experts)
    rng = np.random.default_rng(seed + 10)
    xs = [rng.standard_normal((len(route), DIM)) for route in routes]
    cs = [rng.standard_normal((len(route), DIM)) for route in routes]
    # the rows rank r receives: expert by expert (i), then by sending rank (j), each run in the sender's order
    received = [[(j, n) for i in range(experts) for j in range(size)
                 for n in np.flatnonzero(routes[j] == r * experts + i)] for r in range(size)]
    factors = [np.array([[weights[routes[j][n]]] for j, n in rows]) for rows in received]
    programs, fetches = zip(*(rank_program(len(routes[r]), len(received[r]), size * experts, True)
                              for r in range(size)))
    feeds = [{"x": xs[r], "factor": factors[r], "c": cs[r], "local_count": local[r], "global_count": remote[r]}
             for r in range(size)]
    results = run_ranks(list(programs), feeds, [list(f) for f in fetches])
    for r, (scattered, gathered, x_grad) in enumerate(results):
        np.testing.assert_array_equal(scattered, np.array([xs[j][n] for j, n in received[r]]).reshape(-1, DIM))
        np.testing.assert_allclose(gathered, xs[r] * weights[routes[r]][:, None], rtol=1e-12)
        np.testing.assert_allclose(x_grad, cs[r] * weights[routes[r]][:, None], rtol=1e-12)


def test_counts_that_disagree_between_ranks_name_the_sender_and_the_count():
    routes, local, remote, _ = routing(1, 2, 2)
    remote = [remote[0] + np.array([1, 0, 0, 0]), remote[1]]
    programs = [rank_program(len(routes[r]), int(remote[r].sum()), 4, False)[0] for r in range(2)]
    feeds = [{"x": np.zeros((len(routes[r]), DIM)), "factor": np.ones((int(remote[r].sum()), 1)),
              "c": np.zeros((len(routes[r]), DIM)), "local_count": local[r], "global_count": remote[r]}
             for r in range(2)]
    with pytest.raises(ExecutionError, match=r"rank 0: .*global_scatter.*rank 0 sends \d+ row\(s\) of expert 0 to "
                                             r"rank 0, whose global_count\[0\] expects"):
        run_ranks(programs, feeds, ["x"])

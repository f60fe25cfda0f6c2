"""Rows: the collective ops of paddle.distributed.fleet.layers.mpu.mp_ops, and paddle.distributed's reduce,
broadcast and scatter (the reduce, broadcast and c_scatter ops), in a job of one rank (ring 0, nranks 1 from the
unset launch environment, where each is exactly defined: docs/distributed.md). An explicit group of one rank would
not do: Paddle's Group.is_member is false below 2 ranks, and the ops then return None. paddle.distributed.all_gather
is left out: Paddle's CPU all_gather kernel of one rank crashes the process (a segmentation fault)."""

import paddle.distributed as dist
from paddle.distributed.fleet.layers.mpu import mp_ops

from .spec import f, given, table


def _in_place(function, x):
    """A copy of x the in-place paddle.distributed function works on (x itself is a differentiated input)."""
    y = x * 1.0
    function(y)
    return y


def _scattered(x):
    out = x * 0.0
    dist.scatter(out, [x], src=0)
    return out


def _lookup(weight, ids):
    return mp_ops._c_lookup_table(weight, ids, start_index=2, vocab_size=10)


ROWS = table(
    "collective",
    ("c_identity", lambda x: mp_ops._c_identity(x), f(3, 4)),
    ("c_concat", lambda x: mp_ops._c_concat(x), f(3, 4)),
    ("c_split", lambda x: mp_ops._c_split(x), f(3, 4)),
    ("mp_allreduce_sum", lambda x: mp_ops._mp_allreduce(x), f(3, 4)),
    ("c_embedding", _lookup, f(5, 3), given([[0, 3, 5], [2, 7, 6]], "int64")),
    ("c_softmax_with_cross_entropy",
     lambda logits, label: mp_ops._c_softmax_with_cross_entropy(logits, label), f(4, 5),
     given([[2], [0], [4], [1]], "int64")),
    ("distributed.reduce", lambda x: _in_place(lambda y: dist.reduce(y, dst=0), x), f(3, 4)),
    ("distributed.broadcast", lambda x: _in_place(lambda y: dist.broadcast(y, src=0), x), f(3, 4)),
    ("distributed.scatter", _scattered, f(3, 4)),
)

"""gradc.executor.ranks: when every rank still running waits and none can go on, run_ranks stops at once (no
timeout: these runs take milliseconds) with one line naming each rank, its op and what it waits for."""

import time

import numpy as np
import pytest

import gradc
from gradc.executor.ranks import Deadlock, run_ranks
from programs import Net


def program(*ops):
    """A rank's program on x [2, 3] (float64): ops are (type, inputs, outputs, attrs); outputs are declared like x."""
    net = Net()
    net.data("x", [2, 3])
    for op_type, inputs, outputs, attrs in ops:
        for names in outputs.values():
            for name in names:
                net.block.create_var(name, [2, 3], gradc.VarType.FP64)
        net.block.append_op(op_type, inputs, outputs, attrs)
    return net.program


def receive(ring, peer, out="got"):
    return "recv_v2", {}, {"Out": [out]}, {"ring_id": ring, "peer": peer, "dtype": 6, "out_shape": [2, 3]}


def send(ring, peer, x="x"):
    return "send_v2", {"X": [x]}, {}, {"ring_id": ring, "peer": peer}


def allreduce(ring=0):
    return "c_allreduce_sum", {"X": ["x"]}, {"Out": ["summed"]}, {"ring_id": ring}


def stopped(programs, **options) -> str:
    start = time.monotonic()
    with pytest.raises(Deadlock) as caught:
        run_ranks(programs, [{"x": np.ones((2, 3))}] * len(programs), **options)
    assert time.monotonic() - start < 5
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_two_ranks_each_receiving_before_sending():
    message = stopped([program(receive(1, 1), send(2, 1)), program(send(9, 0), receive(2, 0), send(1, 0))],
                      rings={1: [0, 1], 2: [0, 1], 9: [0, 1]})
    assert message == ("deadlock: every running rank waits and none can go on: "
                       "rank 0 at block 0, op 0 (recv_v2) waits for a value from rank 1 on ring_id 1; "
                       "rank 1 at block 0, op 1 (recv_v2) waits for a value from rank 0 on ring_id 2")


def test_a_collective_one_rank_never_reaches_while_it_waits_for_a_receive():
    """Rank 2 waits for rank 0's value, which rank 0 sends only after the allreduce rank 2 should join."""
    programs = [program(allreduce(), send(5, 1)), program(allreduce()), program(receive(5, 0), allreduce())]
    message = stopped(programs, rings={5: [0, 2]})
    assert message == ("deadlock: every running rank waits and none can go on: "
                       "rank 0 at block 0, op 0 (c_allreduce_sum) waits for rank(s) [2] in collective 1 on ring_id 0; "
                       "rank 1 at block 0, op 0 (c_allreduce_sum) waits for rank(s) [2] in collective 1 on ring_id 0; "
                       "rank 2 at block 0, op 0 (recv_v2) waits for a value from rank 0 on ring_id 5")


def test_the_ranks_that_finished_are_not_waited_for():
    """Rank 2 finishes at once; ranks 0 and 1 then wait for each other's collective on different rings."""
    programs = [program(allreduce(1), allreduce(0)), program(allreduce(0), allreduce(1)), program()]
    message = stopped(programs, rings={0: [0, 1], 1: [0, 1]})
    assert "rank 2" not in message
    assert message.endswith("rank 0 at block 0, op 0 (c_allreduce_sum) waits for rank(s) [1] in collective 1 on "
                            "ring_id 1; rank 1 at block 0, op 0 (c_allreduce_sum) waits for rank(s) [0] in "
                            "collective 1 on ring_id 0")


def test_a_wait_that_ends_is_no_deadlock():
    """Both ranks send, then receive: each receive finds its value, whichever rank runs first."""
    programs = [program(send(1, 1), receive(2, 1)), program(send(2, 0), receive(1, 0))]
    for _ in range(20):
        values = run_ranks(programs, [{"x": np.full((2, 3), rank + 1.0)} for rank in range(2)], ["got"],
                           rings={1: [0, 1], 2: [0, 1]})
        assert [v[0][0, 0] for v in values] == [2.0, 1.0]

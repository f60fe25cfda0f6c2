"""GradAccumulator: a grad with several writers has each write renamed where it was made, and a sum of the parts."""

from __future__ import annotations

import pytest

from gradc.backward.accumulate import GradAccumulator
from gradc.ir import OpDesc


def _part(k: int) -> str:
    return f"x@GRAD@RENAME@block0@{k}"


@pytest.mark.parametrize("names_given", [False, True], ids=["walked", "given"])
def test_a_grad_written_twice_by_one_op_and_once_by_another_has_each_write_renamed_in_place(names_given):
    """Also where the caller hands record_outputs the op's input and output names (the default maker's op)."""
    acc = GradAccumulator(0)
    first = OpDesc("two_writes", {"In": ["x"]}, {"A": ["x@GRAD"], "B": ["y@GRAD", "x@GRAD"]})
    second = OpDesc("one_write", {"In": ["x"]}, {"Out": ["x@GRAD"]})
    for op in (first, second):
        acc.record_outputs(op, *((op.input_names(), op.output_names()) if names_given else ()))
    assert first.outputs == {"A": [_part(0)], "B": ["y@GRAD", _part(1)]}
    assert second.outputs == {"Out": [_part(2)]}
    [total] = acc.remaining_sums()
    assert (total.type, total.inputs, total.outputs) == ("sum", {"X": [_part(k) for k in range(3)]},
                                                         {"Out": ["x@GRAD"]})
    assert acc.is_written("x@GRAD") and acc.is_written("y@GRAD")


def test_a_given_grad_keeps_its_name_and_a_sum_written_first_is_renamed_by_a_later_writer():
    acc = GradAccumulator(0)
    acc.give("x@GRAD")
    writer = OpDesc("one_write", {}, {"Out": ["x@GRAD"]})
    acc.record_outputs(writer)
    assert writer.outputs == {"Out": [_part(0)]}
    [total] = acc.sums_before(["x@GRAD"])
    assert total.inputs == {"X": ["x@GRAD", _part(0)]}
    later = OpDesc("one_write", {}, {"Out": ["x@GRAD"]})
    acc.record_outputs(later)   # the sum is the grad's writer now: its output becomes a part in turn
    assert total.outputs == {"Out": [_part(1)]} and later.outputs == {"Out": [_part(2)]}
    assert acc.remaining_sums()[0].inputs == {"X": [_part(1), _part(2)]}


def test_an_op_reading_the_grad_it_writes_starts_a_new_value_not_a_part():
    acc = GradAccumulator(0)
    acc.record_outputs(OpDesc("one_write", {}, {"Out": ["x@GRAD"]}))
    update = OpDesc("in_place", {"X": ["x@GRAD"]}, {"Out": ["x@GRAD"]})
    acc.record_outputs(update)
    assert update.outputs == {"Out": ["x@GRAD"]} and acc.remaining_sums() == []

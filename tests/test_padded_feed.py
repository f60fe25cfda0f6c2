"""Sequences fed to an input of padded sentences ([-1, -1], no LoD): their offsets are checked before they cut the
tokens into rows."""

import re

import numpy as np
import pytest

import gradc
from gradc.errors import GradcError
from gradc.layers import ProgramBuilder


def _padded_run(offsets):
    net = ProgramBuilder()
    ids = net.data("ids", [-1, -1], "int64")
    doubled = net.op("scale", {"X": ids}, {"scale": 2.0})[0]
    return gradc.Executor().run(net.program, feed={"ids": gradc.LoDTensor(np.arange(1, 7), [offsets])},
                                fetch_list=[doubled])[0]


def test_sentences_are_padded_by_their_offsets():
    np.testing.assert_array_equal(_padded_run([0, 2, 5, 6]), 2 * np.array([[1, 2, 0], [3, 4, 5], [6, 0, 0]]))


@pytest.mark.parametrize("offsets, problem", [([0, 2, 1, 6], "has decreasing offsets"),
                                              ([0, 2, 4], "ends at 4, not at dim 0 (6)"),
                                              ([0, 2, 9], "ends at 9, not at dim 0 (6)")])
def test_offsets_that_do_not_cut_the_tokens_are_refused(offsets, problem):
    """They were not checked once padding took the LoD's place: offsets ending short dropped the last tokens
    unsaid, decreasing or overlong ones failed inside numpy ('could not broadcast input array from shape (0,)')."""
    with pytest.raises(GradcError, match=rf"feed var 'ids': level 0 of LoD \[\[.*\]\] {re.escape(problem)}"):
        _padded_run(offsets)

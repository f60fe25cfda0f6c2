"""Cases for gradc.ops.signal: frame (overlapping, gapped and exact-fit frames, both axes, 1-D to 3-D) and
overlap_add (both axes, hop below and equal to frame_length), and their grad ops' makers."""

from . import Case, rng
from .second_order import second_order

r = rng(29)


def randn(*shape):
    return r.standard_normal(shape)


CASES = [
    Case("frame", {"X": randn(2, 13)}, {"frame_length": 4, "hop_length": 3}),
    Case("frame", {"X": randn(11)}, {"frame_length": 3, "hop_length": 5}),          # gaps between frames
    Case("frame", {"X": randn(13, 2, 2)}, {"frame_length": 4, "hop_length": 3, "axis": 0}),
    Case("frame", {"X": randn(6, 3)}, {"frame_length": 6, "hop_length": 2, "axis": 0}),   # one frame, all of X
    Case("frame", {"X": randn(2, 2, 9)}, {"frame_length": 2, "hop_length": 1}),     # more frames than samples
    Case("overlap_add", {"X": randn(2, 4, 5)}, {"hop_length": 3}),
    Case("overlap_add", {"X": randn(3, 7)}, {"hop_length": 3}),
    Case("overlap_add", {"X": randn(5, 4, 2)}, {"hop_length": 4, "axis": 0}),
    Case("overlap_add", {"X": randn(6, 2, 2, 3)}, {"hop_length": 1, "axis": 0}),
    second_order("frame", {"X": randn(2, 7)}, {"frame_length": 3, "hop_length": 2}),
    second_order("frame", {"X": randn(7, 2)}, {"frame_length": 3, "hop_length": 2, "axis": 0}),
    second_order("overlap_add", {"X": randn(2, 3, 4)}, {"hop_length": 2}),
    second_order("overlap_add", {"X": randn(4, 3, 2)}, {"hop_length": 1, "axis": 0}),
]

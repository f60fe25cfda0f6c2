"""Cases for row_conv's LoD form (the lod_text family's only gradient: crf_decoding, chunk_eval, edit_distance,
ctc_align and the beam search have none): each sequence looks ahead within itself only, empty sequences and
sequences shorter than the context included, and its grad op's maker on the same inputs."""

from gradc import LoDTensor

from . import Case, rng
from .second_order import second_order

r = rng(83)
seqs = LoDTensor.from_lengths


def randn(*shape):
    return r.standard_normal(shape)


CASES = [
    Case("row_conv", {"X": seqs(randn(8, 3), [[3, 1, 4]]), "Filter": randn(3, 3)}),
    Case("row_conv", {"X": seqs(randn(6, 2), [[2, 0, 4]]), "Filter": randn(4, 2)}),   # contexts past the ends
    Case("row_conv", {"X": seqs(randn(5, 2), [[1, 2], [2, 0, 3]]), "Filter": randn(2, 2)}),   # two LoD levels
    second_order("row_conv", {"X": seqs(randn(7, 2), [[4, 3]]), "Filter": randn(2, 2)}),
]

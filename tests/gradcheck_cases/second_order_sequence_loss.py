"""Second-derivative cases (as in second_order.py) for the sequence losses' grad ops, whose makers unroll the
loss (gradc.ops.sequence_loss_double): blanks 0 and others, repeated labels (the skip masked), sequences and labels
of different lengths in a batch (an empty label too), norm_by_times, fastemit_lambda. Tiny sizes keep the central
differences cheap."""

from __future__ import annotations

import numpy as np

from . import rng
from .lod_rnn import third_order
from .second_order import second_order

r = rng(67)


def ctc(label, times, sizes, steps=4, classes=4, unknown=None, **attrs):
    """``unknown``: as second_order's (sizes known at run time only: a complex step, warpctc_grad_grad)."""
    return second_order("warpctc", {"Logits": r.standard_normal((steps, len(label), classes)),
                                    "Label": np.array(label, np.int32), "LogitsLength": np.array(times),
                                    "LabelLength": np.array(sizes)}, attrs, rtol=1e-5, atol=1e-7, unknown=unknown)


def rnnt(label, times, sizes, steps=3, classes=4, unknown=None, **attrs):
    raw = r.standard_normal((len(label), steps, len(label[0]) + 1, classes))
    return second_order("warprnnt", {"input": raw - np.log(np.exp(raw).sum(-1, keepdims=True)),
                                     "label": np.array(label, np.int32), "input_lengths": np.array(times, np.int32),
                                     "label_lengths": np.array(sizes, np.int32)}, attrs, rtol=1e-5, atol=1e-7,
                        unknown=unknown)


CASES = [
    ctc([[1, 1], [2, 3]], [4, 3], [2, 2]),
    ctc([[0, 3], [1, 1]], [3, 4], [2, 1], blank=2),
    ctc([[3, 3], [0, 0]], [4, 2], [2, 0], norm_by_times=True),
    ctc([[0, 2]], [3], [2], steps=3, classes=3, blank=1, norm_by_times=True),
    # time steps, batch and label length known at run time only; classes too, of a norm_by_times loss
    CTC_AT_RUN_TIME := ctc([[1, 1], [2, 3]], [4, 3], [2, 2], unknown={"Logits": [0, 1], "Label": [0, 1], "Loss": [0]}),
    ctc([[3, 3], [0, 0]], [4, 2], [2, 0], unknown={"Logits": None, "Label": [1]}, blank=1, norm_by_times=True),
    rnnt([[1, 3], [2, 0]], [3, 2], [2, 1]),
    rnnt([[1, 3], [3, 0]], [2, 3], [2, 1], blank=2, fastemit_lambda=0.5),
    rnnt([[2, 2], [0, 3]], [3, 1], [2, 0], blank=1, fastemit_lambda=0.1),
    # time steps and label positions known at run time only (warprnnt_grad_grad), fastemit_lambda's asymmetry too
    rnnt([[1, 3], [2, 0]], [3, 2], [2, 1], unknown={"input": [1, 2], "label": [1]}),
    rnnt([[1, 3], [3, 0]], [2, 3], [2, 1], unknown={"input": None, "label": [1]}, blank=2, fastemit_lambda=0.5),
]
# its complex step's own derivative would need dual numbers through the kernel
REFUSED = [third_order(CTC_AT_RUN_TIME, "warpctc_grad_grad", run_time_shapes=True),
           third_order(CASES[-1], "warprnnt_grad_grad", run_time_shapes=True)]

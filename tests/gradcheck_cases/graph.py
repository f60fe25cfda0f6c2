"""The graph ops (gradc.ops.graph): message passing along edge lists and segment reductions, every reduction and
message, broadcast features, rows no edge reaches, and their grad ops (second derivatives). The edges repeat a
(src, dst) pair: MAX and MIN must count its message once."""

from __future__ import annotations

import numpy as np

from . import Case
from .second_order import distinct, positive, randn, second_order

SRC, DST = np.array([0, 1, 2, 0, 2, 2]), np.array([1, 2, 1, 0, 1, 1])   # 2 -> 1 three times
EDGES = {"Src_index": SRC, "Dst_index": DST}
UV_EDGES = {"src_index": SRC.astype(np.int32), "dst_index": DST.astype(np.int32)}
SEGMENTS = np.array([0, 0, 1, 3, 3])   # segment 2 empty
REDUCES = ("SUM", "MEAN", "MAX", "MIN")


def _second_operand(message: str, *shape: int) -> np.ndarray:
    """A Y away from 0 for DIV."""
    return positive(*shape) if message == "DIV" else randn(*shape)


CASES = [
    *(Case("graph_send_recv", {"X": distinct(3, 4), **EDGES}, {"reduce_op": reduce}) for reduce in REDUCES),
    Case("graph_send_recv", {"X": randn(3, 2, 2), **EDGES}, {"reduce_op": "MEAN", "out_size": [5]}),
    Case("graph_send_recv", {"X": distinct(4, 3), **EDGES, "Out_size": np.array([3], np.int32)},
         {"reduce_op": "MAX"}),
    *(Case("graph_send_ue_recv", {"X": distinct(3, 4), "Y": _second_operand(message, 6, 4), **EDGES},
           {"message_op": message, "reduce_op": reduce})
      for message in ("ADD", "SUB", "MUL", "DIV") for reduce in REDUCES),
    Case("graph_send_ue_recv", {"X": randn(3, 2, 4), "Y": randn(6, 1, 4), **EDGES},
         {"message_op": "MUL", "reduce_op": "SUM", "out_size": [4]}),
    Case("graph_send_ue_recv", {"X": randn(3, 4), "Y": positive(6, 1), **EDGES},
         {"message_op": "DIV", "reduce_op": "MAX"}),
    Case("graph_send_ue_recv", {"X": randn(3, 1, 4), "Y": randn(6, 3, 1), **EDGES},
         {"message_op": "SUB", "reduce_op": "MEAN"}),
    *(Case("graph_send_uv", {"x": randn(3, 4), "y": _second_operand(message, 3, 4), **UV_EDGES},
           {"message_op": message}) for message in ("ADD", "SUB", "MUL", "DIV")),
    Case("graph_send_uv", {"x": randn(3, 2, 4), "y": positive(3, 1), **UV_EDGES}, {"message_op": "DIV"}),
    Case("graph_send_uv", {"x": randn(3, 4), "y": randn(3, 2, 1), **UV_EDGES}, {"message_op": "MUL"}),
    *(Case("segment_pool", {"X": distinct(5, 3), "SegmentIds": SEGMENTS}, {"pooltype": pool}) for pool in REDUCES),
    Case("segment_pool", {"X": randn(5, 2, 2), "SegmentIds": SEGMENTS.astype(np.int32)}, {"pooltype": "MEAN"}),
    # second derivatives
    *(second_order("graph_send_recv", {"X": distinct(3, 4), **EDGES}, {"reduce_op": reduce}) for reduce in REDUCES),
    second_order("graph_send_recv", {"X": randn(3, 2), **EDGES, "Out_size": np.array([4], np.int32)},
                 {"reduce_op": "MEAN"}),
    *(second_order("graph_send_ue_recv", {"X": randn(3, 2, 4), "Y": _second_operand(message, 6, 1, 4), **EDGES},
                   {"message_op": message, "reduce_op": reduce})
      for message, reduce in (("ADD", "SUM"), ("SUB", "MEAN"), ("MUL", "SUM"), ("MUL", "MEAN"), ("ADD", "MAX"),
                              ("MUL", "MIN"), ("DIV", "MEAN"), ("DIV", "MAX"))),
    second_order("graph_send_ue_recv", {"X": randn(3, 4), "Y": randn(6, 1), **EDGES, "Out_size": np.array([4])},
                 {"message_op": "SUB", "reduce_op": "MIN"}),
    *(second_order("graph_send_uv", {"x": randn(3, 4), "y": _second_operand(message, 3, 1), **UV_EDGES},
                   {"message_op": message}) for message in ("ADD", "SUB", "MUL", "DIV")),
    second_order("graph_send_uv", {"x": randn(3, 1), "y": positive(3, 2, 4), **UV_EDGES}, {"message_op": "DIV"}),
    *(second_order("segment_pool", {"X": distinct(5, 3), "SegmentIds": SEGMENTS}, {"pooltype": pool})
      for pool in REDUCES),
]

"""Optional inputs of gradc.ops.graph: Out_size, Out's rows as a tensor, which overrides the out_size attribute
(rows no edge reaches are 0). Its rows differ from the attribute's, which shows the
slot is read (a run without it has another shape: no ``overrides`` comparison)."""

import numpy as np

from . import SlotCase

X = np.arange(6.0).reshape(3, 2)
Y = np.array([[1.0], [2.0], [3.0]])
EDGES = {"Src_index": np.array([0, 2, 1]), "Dst_index": np.array([1, 1, 0])}
OUT_SIZE = np.array([4], np.int32)

CASES = [
    SlotCase("graph_send_recv", "Out_size", {"X": X, **EDGES, "Out_size": OUT_SIZE},
             {"Out": np.array([[2.0, 3.0], [4.0, 6.0], [0.0, 0.0], [0.0, 0.0]])}, {"out_size": [2]}, overrides=False),
    SlotCase("graph_send_ue_recv", "Out_size", {"X": X, "Y": Y, **EDGES, "Out_size": OUT_SIZE},
             {"Out": np.array([[5.0, 6.0], [3.5, 4.5], [0.0, 0.0], [0.0, 0.0]])},
             {"message_op": "ADD", "reduce_op": "MEAN"}, overrides=False),
]

"""Optional inputs of gradc.ops.random_dist_graph: the edge ids the samplers (graph_khop_sampler too) return with
return_eids, and the buffers of Paddle's GPU kernels (Perm_Buffer, graph_reindex's hash table), which change nothing
on the CPU."""

import numpy as np

from . import SlotCase

# CSC graph: node 0's in-neighbours are [3, 1], node 1's [0], node 2's none, node 3's [2, 0, 1]
ROW, COLPTR = np.array([3, 1, 0, 2, 0, 1]), np.array([0, 2, 3, 3, 6, 6])
NODES, EIDS = np.array([3, 0, 2]), np.array([10, 11, 12, 13, 14, 15])
EVERY_NEIGHBOUR = {"Out": np.array([2, 0, 1, 3, 1]), "Out_Count": np.array([3, 2, 0], np.int32)}
GRAPH = {"Row": ROW, "Col_Ptr": COLPTR, "X": NODES}
REINDEX = {"X": np.array([5, 2]), "Neighbors": np.array([2, 7, 5, 9]), "Count": np.array([3, 1], np.int32)}
RENUMBERED = {"Reindex_Src": np.array([1, 2, 0, 3]), "Reindex_Dst": np.array([0, 0, 0, 1]),
              "Out_Nodes": np.array([5, 2, 7, 9])}

CASES = [
    SlotCase("graph_sample_neighbors", "Eids", {**GRAPH, "Eids": EIDS},
             {**EVERY_NEIGHBOUR, "Out_Eids": np.array([13, 14, 15, 10, 11])},
             {"sample_size": 5, "return_eids": True}, overrides=False),
    SlotCase("graph_sample_neighbors", "Perm_Buffer", {**GRAPH, "Perm_Buffer": np.arange(6)}, EVERY_NEIGHBOUR,
             {"sample_size": 3, "flag_perm_buffer": True}, overrides=False),
    SlotCase("weighted_sample_neighbors", "eids", {"row": ROW, "colptr": COLPTR, "edge_weight": np.ones(6, np.float32),
                                                  "input_nodes": NODES, "eids": EIDS},
             {"out_neighbors": EVERY_NEIGHBOUR["Out"], "out_count": EVERY_NEIGHBOUR["Out_Count"],
              "out_eids": np.array([13, 14, 15, 10, 11])}, {"sample_size": -1, "return_eids": True}, overrides=False),
    SlotCase("graph_khop_sampler", "Eids", {"Row": ROW, "Col_Ptr": COLPTR, "X": np.array([3, 0]), "Eids": EIDS},
             {"Out_Src": np.array([[2], [1], [3], [0], [3]]), "Out_Dst": np.array([[0], [0], [0], [1], [1]]),
              "Sample_Index": np.array([3, 0, 2, 1]), "Reindex_X": np.array([0, 1]),
              "Out_Eids": np.array([13, 14, 15, 10, 11])}, {"sample_sizes": [5], "return_eids": True}, overrides=False),
    SlotCase("graph_reindex", "HashTable_Value", {**REINDEX, "HashTable_Value": np.zeros(10, np.int32)}, RENUMBERED,
             overrides=False),
    SlotCase("graph_reindex", "HashTable_Index", {**REINDEX, "HashTable_Index": np.zeros(10, np.int32)}, RENUMBERED,
             overrides=False),
]

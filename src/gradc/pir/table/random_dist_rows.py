"""Rows: the PIR ops of the random_dist family (gradc.ops.random_dist, random_dist_graph). exponential_'s grad is a
pd_op.full_like of zeros, translated by its own row."""

from __future__ import annotations

from . import row

ROWS = [
    row("pd_op.truncated_gaussian_random", "truncated_gaussian_random", "", "out:Out",
        "shape:i32s mean:f32 std:f32=1 seed:i32 a:f32=-2 b:f32=2 dtype:dtype place=-:place"),
    row("pd_op.binomial", "binomial", "count:count prob:prob", "out:out"),
    row("pd_op.standard_gamma", "standard_gamma", "x:x", "out:out"),
    row("pd_op.dirichlet", "dirichlet", "alpha:Alpha"),
    row("pd_op.exponential_", "exponential", "x:X", "out:Out&x", "lam=lambda:f32=1"),
    row("pd_op.graph_sample_neighbors", "graph_sample_neighbors",
        "row:Row colptr:Col_Ptr x:X eids?:Eids perm_buffer?:Perm_Buffer",
        "out:Out out_count:Out_Count out_eids:Out_Eids",
        "sample_size:i32=-1 return_eids:bool flag_perm_buffer:bool"),
    row("pd_op.weighted_sample_neighbors", "weighted_sample_neighbors",
        "row:row colptr:colptr edge_weight:edge_weight input_nodes:input_nodes eids?:eids",
        "out_neighbors:out_neighbors out_count:out_count out_eids:out_eids", "sample_size:i32=-1 return_eids:bool"),
    row("pd_op.graph_khop_sampler", "graph_khop_sampler", "row:Row colptr:Col_Ptr x:X eids?:Eids",
        "out_src:Out_Src out_dst:Out_Dst sample_index:Sample_Index reindex_x:Reindex_X out_eids:Out_Eids",
        "sample_sizes:i32s return_eids:bool"),
    row("pd_op.reindex_graph", "graph_reindex",
        "x:X neighbors:Neighbors count:Count hashtable_value?:HashTable_Value hashtable_index?:HashTable_Index",
        "reindex_src:Reindex_Src reindex_dst:Reindex_Dst out_nodes:Out_Nodes"),
]

"""Which reshard function Paddle 3.3.1's reshard pass picks for a pair of placements (src -> dst): its own
choose_reshard_func (paddle/distributed/auto_parallel/static/reshard_funcs/base_reshard_func.py) over the functions
reshard_func_register.py registers, asked with dist attributes made by paddle.base.libpaddle.pir
.create_tensor_dist_attribute. Pairs on one mesh, across meshes of one shape, and across meshes of different shapes
(sub-meshes, layers of a mesh, and pairs Paddle has no function for); where choosing itself throws, its error.

Written to tests/data/paddle/reshard_funcs.json: a list of {"name", "src", "dst", "paddle"}, a placement as
[mesh shape, process ids, dims_mapping, [[mesh axis, reduce type], ...]] and "paddle" the function (gradc's name of
it), null for none, or "error: <Paddle's message>". Not part of the package: needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_reshard_funcs.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "reshard_funcs.json"
NAMES = {"PToRReshardFunction": "p_to_r", "PToRReshardFunctionCrossMesh": "p_to_r_cross_mesh",
         "PToSReshardFunction": "p_to_s", "RToSReshardFunction": "r_to_s",
         "RToSReshardFunctionCrossMesh": "r_to_s_cross_mesh", "RToPReshardFunction": "r_to_p",
         "SameStatusReshardFunction": "same_status", "SToRReshardFunction": "s_to_r",
         "SToRReshardFunctionCrossMesh": "s_to_r_cross_mesh", "NdMeshReshardFunction": "nd_mesh",
         "NdMeshReshardFunctionCrossMesh": "nd_mesh_cross_mesh", "GlobalToSubMeshFunction": "global_to_sub",
         "SubToGlobalMeshFunction": "sub_to_global", "SToSReshardFunction": "s_to_s"}
M2, M2B, M4, M22, M222 = ([2], [0, 1]), ([2], [2, 3]), ([4], [0, 1, 2, 3]), ([2, 2], [0, 1, 2, 3]), \
    ([2, 2, 2], list(range(8)))
ROW, ROW2, COL2, SUM = ([1, 2], [0, 1]), ([1, 2], [2, 3]), ([2, 1], [0, 2]), [[0, 0]]
PAIRS = {   # name -> (src, dst): (mesh, dims_mapping[, partial])
    "s0_to_s1": ((M2, [0, -1]), (M2, [-1, 0])),
    "s1_to_s0_4_ranks": ((M4, [-1, 0, -1]), (M4, [0, -1, -1])),
    "s0_to_s2": ((M2, [0, -1, -1]), (M2, [-1, -1, 0])),
    "p_to_r": ((M2, [-1, -1], SUM), (M2, [-1, -1])),
    "p_to_s": ((M2, [-1, -1], SUM), (M2, [0, -1])),
    "r_to_s": ((M2, [-1, -1]), (M2, [-1, 0])),
    "r_to_p": ((M2, [-1, -1]), (M2, [-1, -1], SUM)),
    "s_to_r": ((M2, [0, -1]), (M2, [-1, -1])),
    "nd_s_to_s": ((M22, [1, -1]), (M22, [0, 1])),
    "cross_s0_to_s1": ((M2, [0, -1]), (M2B, [-1, 0])),
    "cross_p_to_r": ((M2, [-1, -1], SUM), (M2B, [-1, -1])),
    "cross_same_status": ((M2, [0, -1]), (M2B, [0, -1])),
    "global_to_sub_same_ndim": ((M2, [0, -1]), (([1], [1]), [-1, -1])),
    "global_to_sub_any_subset": ((M4, [0, -1]), (([2], [1, 3]), [-1, -1])),
    "global_to_sub_row": ((M22, [0, 1]), (M2B, [-1, -1])),
    "global_to_sub_plane": ((M222, [-1, 0, 2]), (([2, 2], [4, 5, 6, 7]), [-1, -1, -1])),
    "global_to_sub_column_1d": ((M22, [0, -1]), (([2], [0, 2]), [-1, -1])),
    "global_to_sub_diagonal": ((M22, [0, -1]), (([2], [0, 3]), [-1, -1])),
    "global_to_sub_column_2d": ((M22, [0, -1]), (COL2, [-1, -1])),
    "global_to_sub_shard": ((M4, [0, -1]), (M2, [0, -1])),
    "sub_to_global_1d": ((([1], [0]), [-1, -1]), (M2, [-1, -1])),
    "sub_to_global_row_shard": ((ROW, [-1, 1]), (M22, [-1, 1])),
    "sub_to_global_second_row_partial": ((ROW2, [-1, -1], [[1, 0]]), (M22, [-1, -1], [[1, 0]])),
    "sub_to_global_column_shard": ((COL2, [0, -1]), (M22, [0, -1])),
    "sub_to_global_split_on_its_axis": ((ROW, [-1, -1]), (M22, [0, -1])),
    "sub_to_global_partial_on_its_axis": ((ROW, [-1, -1]), (M22, [-1, -1], SUM)),
    "sub_to_global_other_placements": ((ROW, [-1, -1]), (M22, [-1, 1])),
    "row_1d_to_mesh_shard": ((M2, [-1, 0]), (M22, [-1, 1])),
    "row_1d_to_mesh_replicated": ((M2, [-1, -1]), (M22, [-1, -1])),
    "two_to_four_ranks": ((M2, [-1, -1]), (M4, [-1, -1])),
    "four_ranks_to_mesh": ((M4, [0, -1]), (M22, [0, -1])),
}


def main() -> None:
    os.environ["FLAGS_enable_pir_api"] = "1"
    import paddle
    from paddle.distributed.auto_parallel.static.reshard_funcs import reshard_func_register  # noqa: F401
    from paddle.distributed.auto_parallel.static.reshard_funcs.base_reshard_func import choose_reshard_func

    pir, reduce_types = paddle.base.libpaddle.pir, paddle.base.core.ReduceType
    kinds = [reduce_types.kRedSum, reduce_types.kRedMax, reduce_types.kRedMin, reduce_types.kRedProd,
             reduce_types.kRedAvg]

    def attribute(placement):
        (shape, ids), mapping, *partial = placement
        mesh = pir.create_process_mesh(shape, ids, [f"d{axis}" for axis in range(len(shape))])
        return pir.create_tensor_dist_attribute(mesh, mapping, {axis: kinds[kind] for axis, kind in
                                                                (partial[0] if partial else [])})

    def written(placement):
        (shape, ids), mapping, *partial = placement
        return [shape, ids, mapping, partial[0] if partial else []]

    rows = []
    for name, (src, dst) in PAIRS.items():
        try:
            function = choose_reshard_func(attribute(src), attribute(dst))
            choice = None if function is None else NAMES[type(function).__name__]
        except ValueError as exc:   # Paddle's choosing itself fails
            choice = "error: " + str(exc).strip().splitlines()[0]
        rows.append({"name": name, "src": written(src), "dst": written(dst), "paddle": choice})
    OUT.write_text(json.dumps({"paddle_version": paddle.__version__, "pairs": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()

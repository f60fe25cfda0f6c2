"""Which reshard function Paddle 3.3.1's reshard pass lowers a pair of placements (src -> dst) with, asked two
ways: its choose_reshard_func (paddle/distributed/auto_parallel/static/reshard_funcs/base_reshard_func.py) over the
functions reshard_func_register.py registers, given dist attributes made by paddle.base.libpaddle.pir
.create_tensor_dist_attribute; and its whole pass (ReshardPasses.apply_reshard_pass: decompose_reshard_pass, which
splits a reshard across meshes of one ndim that changes the placements into a move to dst's mesh and a reshard on
it, then a function for each) on a program of x -> dist.shard_tensor(src) -> dist.reshard(dst), built in PIR static
mode as rank 0 of 8 (the launch environment faked). Pairs on one mesh, across meshes of one shape, and across meshes
of different shapes (sub-meshes, layers of a mesh, and pairs Paddle has no function for).

Written to tests/data/paddle/reshard_funcs.json: a list of {"name", "src", "dst", "paddle", "pass"}, a placement as
[mesh shape, process ids, dims_mapping, [[mesh axis, reduce type], ...]], "paddle" the function choose_reshard_func
picks (gradc's name of it), null for none, or "error: <Paddle's message>" where choosing throws, and "pass" the ops
rank 0's program holds after the pass ("ok: ...") or the pass's error ("error: ..."). Not part of the package: needs
paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_reshard_funcs.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def pass_result(paddle, src, dst) -> str:
    """Paddle's reshard pass on x [4, 6] (or [4, 3, 6]) placed by src, resharded to dst: rank 0's ops, or the error."""
    import numpy as np
    import paddle.distributed as dist
    from paddle.distributed.auto_parallel.static.pir_pass import ReshardPasses

    kinds = [dist.ReduceType.kRedSum, dist.ReduceType.kRedMax, dist.ReduceType.kRedMin, dist.ReduceType.kRedProd,
             dist.ReduceType.kRedAvg]

    def mesh_and_placements(placement):
        (shape, ids), mapping, *partial = placement
        mesh = dist.ProcessMesh(np.asarray(ids).reshape(shape).tolist(), dim_names=[f"d{a}" for a in range(len(shape))])
        partial = dict(partial[0]) if partial else {}
        placements = [dist.Shard(mapping.index(axis)) if axis in mapping else
                      dist.Partial(kinds[partial[axis]]) if axis in partial else dist.Replicate()
                      for axis in range(len(shape))]
        return mesh, placements

    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        x = paddle.static.data("x", [4, 6] if len(src[1]) == 2 else [4, 3, 6], "float32")
        dist.reshard(dist.shard_tensor(x, *mesh_and_placements(src)), *mesh_and_placements(dst))
    try:
        ReshardPasses.apply_reshard_pass(main)
    except Exception as exc:  # noqa: BLE001 - what Paddle says is the fixture's fact
        return "error: " + str(exc).strip().splitlines()[0]
    return "ok: " + " ".join(op.name() for op in main.global_block().ops)


def pass_in_child(name: str) -> str:
    """pass_result in a process of its own: Paddle's pass crashes (or hangs) the process on some pairs."""
    try:
        child = subprocess.run([sys.executable, __file__, "--pass", name], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired as exc:   # after "malloc(): corrupted top size" the process hangs
        last = [line for line in (exc.stderr or b"").decode().strip().splitlines() if line.strip()][-1:]
        return f"crash: hangs after: {last[0] if last else ''}"
    lines = child.stdout.strip().splitlines()
    if child.returncode == 0 and lines:
        return lines[-1]
    last = [line for line in child.stderr.strip().splitlines() if line.strip()][-1:]
    return f"crash: exit {child.returncode}: {last[0] if last else ''}"


def main() -> None:
    os.environ.update(FLAGS_enable_pir_api="1", PADDLE_TRAINER_ID="0", PADDLE_TRAINERS_NUM="8",
                      PADDLE_CURRENT_ENDPOINT="127.0.0.1:6170",
                      PADDLE_TRAINER_ENDPOINTS=",".join(f"127.0.0.1:{6170 + r}" for r in range(8)))
    import paddle

    paddle.enable_static()
    if len(sys.argv) == 3 and sys.argv[1] == "--pass":   # a child: one pair's pass
        print(pass_result(paddle, *PAIRS[sys.argv[2]]))
        return
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
        rows.append({"name": name, "src": written(src), "dst": written(dst), "paddle": choice,
                     "pass": pass_in_child(name)})
    OUT.write_text(json.dumps({"paddle_version": paddle.__version__, "pairs": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""Paddle3D's hard_voxelize (paddle3d/ops/voxel: PointPillars, CenterPoint, PV-RCNN, Voxel R-CNN), the custom op
that groups a point cloud into voxels, under the suite's names:

    POINTS [N, D] (x, y, z first) -> VOXELS [max_voxels, max_num_points_in_voxel, D], COORS [max_voxels, 3] int32
    (z, y, x), NUM_POINTS_PER_VOXEL [max_voxels] int32, num_voxels [1] int32

A point's cell is floor((p - range min) / voxel_size) per axis (float32), the grid round((range max - range min) /
voxel_size) cells; points outside the grid are dropped. Voxels are numbered in the order their first point comes,
each keeping its first max_num_points_in_voxel points; a point whose voxel would be past max_voxels is dropped.
Unused rows are zeros. The suite's CPU kernel is this, and its float32 only (it writes float32 VOXELS whatever the
points). No gradient: the suite defines none.
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..opdef import typed
from ..registry import NO_GRAD, defop

ATTRS = {"voxel_size": typed([], AttrType.FLOATS), "point_cloud_range": typed([], AttrType.FLOATS),
         "max_num_points_in_voxel": 1, "max_voxels": 1}


def _infer(ctx):
    points = ctx.shape("POINTS")
    if ctx.dtype("POINTS") not in (None, VarType.FP32):
        ctx.fail("hard_voxelize needs float32 POINTS (the suite's kernel writes float32 voxels)")
    if points is not None and (len(points) != 2 or 0 <= points[1] < 3):
        ctx.fail(f"hard_voxelize needs POINTS [points, dims >= 3] (x, y, z first), got {points}")
    sizes, bounds = list(ctx.attr("voxel_size")), list(ctx.attr("point_cloud_range"))
    if len(sizes) != 3 or min(sizes) <= 0:
        ctx.fail(f"hard_voxelize needs voxel_size of 3 positive sizes (x, y, z), got {sizes}")
    if len(bounds) != 6 or any(high <= low for low, high in zip(bounds[:3], bounds[3:])):
        ctx.fail(f"hard_voxelize needs point_cloud_range [x min, y min, z min, x max, y max, z max], got {bounds}")
    voxels, per_voxel = ctx.attr("max_voxels"), ctx.attr("max_num_points_in_voxel")
    if voxels < 1 or per_voxel < 1:
        ctx.fail(f"hard_voxelize needs max_voxels and max_num_points_in_voxel >= 1, got {voxels} and {per_voxel}")
    dims = -1 if points is None else points[1]
    return {"VOXELS": ([voxels, per_voxel, dims], VarType.FP32), "COORS": ([voxels, 3], VarType.INT32),
            "NUM_POINTS_PER_VOXEL": ([voxels], VarType.INT32), "num_voxels": ([1], VarType.INT32)}


defop("hard_voxelize", ["POINTS"], ["VOXELS", "COORS", "NUM_POINTS_PER_VOXEL", "num_voxels"], attrs=ATTRS,
      infer=_infer, grad=NO_GRAD)

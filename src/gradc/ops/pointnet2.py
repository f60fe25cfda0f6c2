"""PointNet++'s custom ops as Paddle3D builds them (paddle3d/ops/pointnet2, PD_BUILD_OP; IA-SSD, PV-RCNN, Voxel
R-CNN), under the suite's op names, slots and attributes:

    farthest_point_sample  points_tensor [B, N, 3] -> idx_tensor [B, npoints] int32: index 0 first, then each time
                           the point farthest (squared distance, float32) from those chosen, the first on a tie
    ball_query_batch       new_xyz_tensor [B, M, 3], xyz_tensor [B, N, 3] -> idx [B, M, nsample] int32: the first
                           nsample points with squared distance < radius^2, in index order, the rest filled with the
                           first; a ball with no point gets 0s (the CUDA kernel leaves them unwritten)
    ball_query_stack       the same over batches stacked in rows (new_xyz_tensor [M1+M2.., 3] and xyz_tensor
                           [N1+N2.., 3] with their int32 counts): indices within the batch; an empty ball gets
                           -1 first and 0s, as the kernel writes
    voxel_query_wrapper    new_xyz_tensor [M, 3] with new_coords_tensor [M, 4] (batch, z, y, x) int32, xyz_tensor
                           [N, 3], point_indices_tensor [B, Z, Y, X] int32 (a point's index per voxel, or < 0)
                           -> idx_tensor [M, nsample] int32: the points of the voxels within the z, y, x ranges
                           (in z, y, x order) with squared distance <= radius^2, as ball_query_stack fills them
    gather_operation       points [B, C, N], idx [B, M] -> out [B, C, M] = points[b, :, idx[b, m]]
    grouping_operation_batch  points_tensor [B, C, N], idx_tensor [B, M, S] -> out_tensor [B, C, M, S]
    grouping_operation_stack  features_tensor [N1+N2.., C] with counts, idx_tensor [M1+M2.., S] with counts ->
                           out_tensor [M1+M2.., C, S]: each row's features of its batch's idx-th point

The gathers' grad ops (the suite's PD_BUILD_GRAD_OP) scatter dOut back, adding where indices repeat; each is linear
in dOut (gradc.ops.pointnet2_double has their second derivatives). The samplers have no gradient.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defop, grad_op
from ..shapes import dims_match
from .infer import check_float


def _check(ctx, slot: str, rank: int, last: int | None = None) -> list[int] | None:
    shape = ctx.shape(slot)
    if shape is not None and (len(shape) != rank or (last is not None and not dims_match(shape[-1], last))):
        wanted = f"{rank}-D" + (f" with last dim {last}" if last is not None else "")
        ctx.fail(f"{ctx.op.type} needs {slot} {wanted}, got {shape}")
    return shape


def _ints(ctx, *slots: str) -> None:
    for slot in slots:
        if ctx.dtype(slot) not in (None, VarType.INT32):
            ctx.fail(f"{ctx.op.type} needs int32 {slot} (the suite's kernels read int)")


def _positive(ctx, name: str) -> int:
    value = ctx.attr(name)
    if value is None or value < 1:
        ctx.fail(f"{ctx.op.type} needs {name} >= 1, got {value}")
    return value


def _fps_infer(ctx):
    check_float(ctx, "points_tensor")
    points = _check(ctx, "points_tensor", 3, 3)
    npoints = _positive(ctx, "npoints")
    return {"idx_tensor": (None if points is None else [points[0], npoints], VarType.INT32)}


defop("farthest_point_sample", ["points_tensor"], ["idx_tensor"], attrs={"npoints": 1}, infer=_fps_infer,
      grad=NO_GRAD)


def _ball_query_infer(ctx):
    stacked = ctx.op.type == "ball_query_stack"
    centers = _check(ctx, "new_xyz_tensor", 2 if stacked else 3, 3)
    points = _check(ctx, "xyz_tensor", 2 if stacked else 3, 3)
    if stacked:
        _ints(ctx, "new_xyz_batch_cnt_tensor", "xyz_batch_cnt_tensor")
    elif centers is not None and points is not None and not dims_match(centers[0], points[0]):
        ctx.fail(f"ball_query_batch needs new_xyz_tensor {centers} and xyz_tensor {points} of one batch")
    nsample = _positive(ctx, "nsample")
    if ctx.attr("radius") is None or ctx.attr("radius") <= 0:
        ctx.fail(f"{ctx.op.type} needs radius > 0, got {ctx.attr('radius')}")
    shape = None if centers is None else [*centers[:-1], nsample]
    return {"idx_tensor" if stacked else "idx": (shape, VarType.INT32)}


defop("ball_query_batch", ["new_xyz_tensor", "xyz_tensor"], ["idx"], attrs={"radius": 0.0, "nsample": 1},
      infer=_ball_query_infer, grad=NO_GRAD)
defop("ball_query_stack", ["new_xyz_tensor", "new_xyz_batch_cnt_tensor", "xyz_tensor", "xyz_batch_cnt_tensor"],
      ["idx_tensor"], attrs={"radius": 0.0, "nsample": 1}, infer=_ball_query_infer, grad=NO_GRAD)


def _gather_infer(ctx):
    check_float(ctx, "points")
    _ints(ctx, "idx")
    points, idx = _check(ctx, "points", 3), _check(ctx, "idx", 2)
    if points is not None and idx is not None and not dims_match(points[0], idx[0]):
        ctx.fail(f"gather_operation needs points {points} and idx {idx} of one batch")
    return {"out": (None if points is None or idx is None else [points[0], points[1], idx[1]], ctx.dtype("points"))}


def _group_batch_infer(ctx):
    check_float(ctx, "points_tensor")
    _ints(ctx, "idx_tensor")
    points, idx = _check(ctx, "points_tensor", 3), _check(ctx, "idx_tensor", 3)
    if points is not None and idx is not None and not dims_match(points[0], idx[0]):
        ctx.fail(f"grouping_operation_batch needs points_tensor {points} and idx_tensor {idx} of one batch")
    shape = None if points is None or idx is None else [points[0], points[1], idx[1], idx[2]]
    return {"out_tensor": (shape, ctx.dtype("points_tensor"))}


def _group_stack_infer(ctx):
    check_float(ctx, "features_tensor")
    _ints(ctx, "features_batch_cnt_tensor", "idx_tensor", "idx_batch_cnt_tensor")
    features, idx = _check(ctx, "features_tensor", 2), _check(ctx, "idx_tensor", 2)
    shape = None if features is None or idx is None else [idx[0], features[1], idx[1]]
    return {"out_tensor": (shape, ctx.dtype("features_tensor"))}


def _voxel_query_infer(ctx):
    centers, coords = _check(ctx, "new_xyz_tensor", 2, 3), _check(ctx, "new_coords_tensor", 2, 4)
    _check(ctx, "xyz_tensor", 2, 3)
    _check(ctx, "point_indices_tensor", 4)
    _ints(ctx, "new_coords_tensor", "point_indices_tensor")
    if centers is not None and coords is not None and not dims_match(centers[0], coords[0]):
        ctx.fail(f"voxel_query_wrapper needs new_coords_tensor [centres={centers[0]}, 4], got {coords}")
    if min(ctx.attr(f"{axis}_range") for axis in "zyx") < 0:
        ctx.fail("voxel_query_wrapper needs z_range, y_range and x_range >= 0")
    nsample = _positive(ctx, "nsample")
    return {"idx_tensor": (None if centers is None else [centers[0], nsample], VarType.INT32)}


defop("voxel_query_wrapper", ["new_xyz_tensor", "xyz_tensor", "new_coords_tensor", "point_indices_tensor"],
      ["idx_tensor"], attrs={"radius": 0.0, "nsample": 1, "z_range": 0, "y_range": 0, "x_range": 0},
      infer=_voxel_query_infer, grad=NO_GRAD)

STACK_INDEX = ("features_batch_cnt_tensor", "idx_tensor", "idx_batch_cnt_tensor")
defop("gather_operation", ["points", "idx"], ["out"], infer=_gather_infer, grad=grad_op("idx", "points"),
      no_grad_inputs=["idx"])
defop("grouping_operation_batch", ["points_tensor", "idx_tensor"], ["out_tensor"], infer=_group_batch_infer,
      grad=grad_op("idx_tensor", "points_tensor"), no_grad_inputs=["idx_tensor"])
defop("grouping_operation_stack", ["features_tensor", *STACK_INDEX], ["out_tensor"], infer=_group_stack_infer,
      grad=grad_op("features_tensor", *STACK_INDEX), no_grad_inputs=list(STACK_INDEX))

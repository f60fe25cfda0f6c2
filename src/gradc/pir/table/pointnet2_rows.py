"""Rows: Paddle3D's PointNet++ ops (gradc.ops.pointnet2), custom_op dialect, operands and results named as the
suite's slots (Paddle saves a custom op so); the grad ops' operands in the suite's PD_BUILD_GRAD_OP order."""

from __future__ import annotations

from . import row

BALL = "radius:f32 nsample:i32"
STACK = "features_batch_cnt_tensor:features_batch_cnt_tensor idx_tensor:idx_tensor " \
        "idx_batch_cnt_tensor:idx_batch_cnt_tensor"

ROWS = [
    row("custom_op.farthest_point_sample", "farthest_point_sample", "points_tensor:points_tensor",
        "idx_tensor:idx_tensor", "npoints:i32"),
    row("custom_op.ball_query_batch", "ball_query_batch", "new_xyz_tensor:new_xyz_tensor xyz_tensor:xyz_tensor",
        "idx:idx", BALL),
    row("custom_op.ball_query_stack", "ball_query_stack",
        "new_xyz_tensor:new_xyz_tensor new_xyz_batch_cnt_tensor:new_xyz_batch_cnt_tensor xyz_tensor:xyz_tensor "
        "xyz_batch_cnt_tensor:xyz_batch_cnt_tensor", "idx_tensor:idx_tensor", BALL),
    row("custom_op.voxel_query_wrapper", "voxel_query_wrapper",
        "new_xyz_tensor:new_xyz_tensor xyz_tensor:xyz_tensor new_coords_tensor:new_coords_tensor "
        "point_indices_tensor:point_indices_tensor", "idx_tensor:idx_tensor",
        "radius:f32 nsample:i32 z_range:i32 y_range:i32 x_range:i32"),
    row("custom_op.gather_operation", "gather_operation", "points:points idx:idx", "out:out"),
    row("custom_op.gather_operation_grad", "gather_operation_grad", "out@GRAD:out@GRAD idx:idx points:points",
        "points@GRAD:points@GRAD"),
    row("custom_op.grouping_operation_batch", "grouping_operation_batch",
        "points_tensor:points_tensor idx_tensor:idx_tensor", "out_tensor:out_tensor"),
    row("custom_op.grouping_operation_batch_grad", "grouping_operation_batch_grad",
        "out_tensor@GRAD:out_tensor@GRAD idx_tensor:idx_tensor points_tensor:points_tensor",
        "points_tensor@GRAD:points_tensor@GRAD"),
    row("custom_op.grouping_operation_stack", "grouping_operation_stack", f"features_tensor:features_tensor {STACK}",
        "out_tensor:out_tensor"),
    row("custom_op.grouping_operation_stack_grad", "grouping_operation_stack_grad",
        f"out_tensor@GRAD:out_tensor@GRAD features_tensor:features_tensor {STACK}",
        "features_tensor@GRAD:features_tensor@GRAD"),
]

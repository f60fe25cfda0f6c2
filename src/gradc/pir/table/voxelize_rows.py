"""Rows: Paddle3D's hard_voxelize (gradc.ops.voxelize), custom_op dialect, operands and results named as the
suite's slots (Paddle saves a custom op so)."""

from __future__ import annotations

from . import row

ROWS = [
    row("custom_op.hard_voxelize", "hard_voxelize", "POINTS:POINTS",
        "VOXELS:VOXELS COORS:COORS NUM_POINTS_PER_VOXEL:NUM_POINTS_PER_VOXEL num_voxels:num_voxels",
        "voxel_size:f32s point_cloud_range:f32s max_num_points_in_voxel:i32 max_voxels:i32"),
]

"""Export rows of the v1 shape ops (gradc.ops.legacy_shape) that one PIR op computes exactly: v1 transpose is
pd_op.transpose without XShape, v1 expand (a tiling) is pd_op.tile. Export-only: PIR imports those ops as the v2
ops (transpose2, tile), whose rows own them. The other v1 ops (flatten2's 2-D fold, top_k, crop with Y,
reshape's XShape-less form, fill_constant_batch_size_like's scalar value) have no exact PIR op in this notation
and are refused with the table's "no export" error."""

from __future__ import annotations

from . import row

ROWS = [
    row("pd_op.transpose", "transpose", "x:X", "out:Out", "perm=axis:i32s"),
    row("pd_op.tile", "expand", "x:X repeat_times>expand_times:ints@ExpandTimes,expand_times_tensor"),
]

"""Rows: the scans ops of the tensor API (gradc.ops.scans)."""

from __future__ import annotations

from . import row

CUM_EXTREME = "axis:i32=-1 dtype:dtype=int64"
LOGCUMSUMEXP = "axis:i32=-1 flatten:bool exclusive:bool reverse:bool"
MODE = "axis:i32=-1 keepdim:bool"
MEDIAN = "axis:intarray keepdim:bool=true mode:str=avg"

ROWS = [
    row("pd_op.cummax", "cummax", "x:x", "out:out indices:indices", CUM_EXTREME),
    row("pd_op.cummin", "cummin", "x:x", "out:out indices:indices", CUM_EXTREME),
    row("pd_op.logcumsumexp", "logcumsumexp", "x:X", "out:Out", LOGCUMSUMEXP),
    row("pd_op.mode", "mode", "x:X", "out:Out indices:Indices", MODE),
    row("pd_op.median", "median", "x:x", "out:out medians:medians", MEDIAN),
    row("pd_op.nanmedian", "nanmedian", "x:X", "out:Out medians:MedianIndex", MEDIAN),
    row("pd_op.cummax_grad", "cummax_grad", "x:x indices:indices out_grad:out@GRAD", "x_grad:x@GRAD", CUM_EXTREME),
    row("pd_op.cummin_grad", "cummin_grad", "x:x indices:indices out_grad:out@GRAD", "x_grad:x@GRAD", CUM_EXTREME),
    row("pd_op.logcumsumexp_grad", "logcumsumexp_grad", "x:X out:Out out_grad:Out@GRAD", "x_grad:X@GRAD",
        LOGCUMSUMEXP),
    row("pd_op.mode_grad", "mode_grad", "x:X indices:Indices out_grad:Out@GRAD", "x_grad:X@GRAD", MODE),
    row("pd_op.median_grad", "median_grad", "x:x out:out medians:medians out_grad:out@GRAD", "x_grad:x@GRAD", MEDIAN),
    row("pd_op.nanmedian_grad", "nanmedian_grad", "x:X out:Out medians:MedianIndex out_grad:Out@GRAD",
        "x_grad:X@GRAD", MEDIAN),
]

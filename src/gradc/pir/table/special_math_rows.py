"""Rows: the special math ops of the tensor API (gradc.ops.special_math)."""

from __future__ import annotations

from . import row

ROWS = [
    row("pd_op.erfinv", "erfinv", "x:X"),
    row("pd_op.erfinv_grad", "erfinv_grad", "out:Out out_grad:Out@GRAD", "x_grad:X@GRAD"),
    row("pd_op.lgamma", "lgamma", "x:X"),
    row("pd_op.lgamma_grad", "lgamma_grad", "x:X out_grad:Out@GRAD", "x_grad:X@GRAD"),
    row("pd_op.digamma", "digamma", "x:X"),
    row("pd_op.digamma_grad", "digamma_grad", "x:X out_grad:Out@GRAD", "x_grad:X@GRAD"),
    row("pd_op.polygamma", "polygamma", "x:x", "out:out", "n:i32"),
    row("pd_op.polygamma_grad", "polygamma_grad", "x:x out_grad:out@GRAD", "x_grad:x@GRAD", "n:i32"),
    row("pd_op.i0", "i0", "x:x", "out:out"),
    row("pd_op.i0_grad", "i0_grad", "x:x out_grad:out@GRAD", "x_grad:x@GRAD"),
    *[row(f"pd_op.{name}", name, "x:x", "out:out") for name in ("i0e", "i1", "i1e")],
    *[row(f"pd_op.{name}_grad", f"{name}_grad", "x:x out:out out_grad:out@GRAD", "x_grad:x@GRAD")
      for name in ("i0e", "i1", "i1e")],
]

"""PIR ops that gradc's table has no row for, with the reason the unmapped-op error gives: those layers of the
coverage table emit (docs/pir-coverage.md lists them), and those met only in saved model files."""

from __future__ import annotations

from ...errors import FormatError
from ..graph import Module, walk_ops
from .rows import TABLE

IN_MODEL_FILES: dict[str, str] = {
    "pd_op.tensorrt_engine": "it runs a TensorRT engine that Paddle Inference built and cached (.cache/paddle/trt), "
                             "whose model is in the engine file, not in the program: read the model it was built from",
}

UNMAPPED: dict[str, str] = {
    **IN_MODEL_FILES,
}


def check_mapped(module: Module, source: str) -> None:
    """Refuse, in one line listing each, the PIR op types the table has no row for (with the reason where known)."""
    unmapped: dict[str, str] = {}
    for op in walk_ops(module.body):
        if op.name not in TABLE and op.name not in unmapped:
            unmapped[op.name] = op.where
    if unmapped:
        listing = "; ".join(f"{name} (first at {where}{': ' + UNMAPPED[name] if name in UNMAPPED else ''})"
                            for name, where in sorted(unmapped.items()))
        hint = "" if set(unmapped) <= set(UNMAPPED) else \
            " (a Paddle 3 PIR program; saving with FLAGS_enable_pir_api=0 gives a legacy ProgramDesc)"
        raise FormatError(f"{source}: {len(unmapped)} PIR op type(s) gradc cannot translate: {listing}{hint}")

"""PIR ops that gradc's table has no row for, with the reason the unmapped-op error gives: those layers of the
coverage table emit (docs/pir-coverage.md lists them), and those met only in saved model files."""

from __future__ import annotations

IN_MODEL_FILES: dict[str, str] = {
    "pd_op.tensorrt_engine": "it runs a TensorRT engine that Paddle Inference built and cached (.cache/paddle/trt), "
                             "whose model is in the engine file, not in the program: read the model it was built from",
    "dist_op.reshard": "auto-parallel's change of a value's placements, which Paddle's reshard pass lowers to each "
                       "rank's collectives (all_gather, all_reduce, slice, ...): read the program after the pass (the "
                       "Engine's _pir_dist_main_progs), whose dist types and op_dist_attr gradc reads",
}

UNMAPPED: dict[str, str] = {
    **IN_MODEL_FILES,
}

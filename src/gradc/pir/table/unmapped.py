"""PIR ops that gradc's table has no row for, with the reason the unmapped-op error gives: those layers of the
coverage table emit (docs/pir-coverage.md lists them), and those met only in saved model files."""

from __future__ import annotations

IN_MODEL_FILES: dict[str, str] = {
    "pd_op.tensorrt_engine": "it runs a TensorRT engine that Paddle Inference built and cached (.cache/paddle/trt), "
                             "whose model is in the engine file, not in the program: read the model it was built from",
}

UNMAPPED: dict[str, str] = {
    **IN_MODEL_FILES,
}

"""PIR ops that gradc's table has no row for though layers of the coverage table or saved models hold them, with
the reason (docs/pir-coverage.md lists them; the unmapped-op error names the reason)."""

from __future__ import annotations

UNMAPPED: dict[str, str] = {
    "pd_op.remainder_grad": "Paddle 3.3.1 has no kernel for it: its own training program of paddle.remainder fails",
    "pd_op.tensorrt_engine": "it runs a TensorRT engine that Paddle Inference built and cached (.cache/paddle/trt), "
                             "whose model is in the engine file, not in the program: read the model it was built from",
}

"""Master-weight fixtures from a real PaddlePaddle: the programs Paddle's optimizers write with
multi_precision=True on a model whose first layer is float16 (legacy static mode). Paddle's CPU kernels have no
float16 optimizer, so these hold the programs' structure only (no numbers): the tests compare what gradc's
optimizer API writes with them op by op, and check gradc's numbers against numpy.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_master_weight_fixtures.py \
        tests/data/paddle/master_weights

models/mixed.pb       the forward program (x float16 [4, 3] -> fc(4) float16 -> relu -> cast float32 -> fc(2) -> mean)
<case>/train.pb, startup.pb   after minimize (without op_callstack); <case>/meta.json  optimizer and arguments
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import paddle
from paddle.incubate.optimizer import LarsMomentumOptimizer
from paddle_optimizer_fixtures import serialize

paddle.enable_static()

# case -> (Paddle's class, its arguments besides multi_precision=True); every optimizer with the option
CASES = {
    "sgd": (paddle.optimizer.SGD, {"learning_rate": 0.1}),
    "momentum": (paddle.optimizer.Momentum, {"learning_rate": 0.1, "momentum": 0.9}),
    "momentum_l2": (paddle.optimizer.Momentum, {"learning_rate": 0.1, "weight_decay": 0.01}),
    "merged_momentum": (paddle.optimizer.Momentum, {"learning_rate": 0.1, "use_multi_tensor": True}),
    "lars_momentum": (LarsMomentumOptimizer, {"learning_rate": 0.1, "momentum": 0.9}),
    "adam": (paddle.optimizer.Adam, {"learning_rate": 0.01}),
    "merged_adam": (paddle.optimizer.Adam, {"learning_rate": 0.01, "use_multi_tensor": True}),
    "adamw": (paddle.optimizer.AdamW, {"learning_rate": 0.01, "weight_decay": 0.05}),
    "lamb": (paddle.optimizer.Lamb, {"learning_rate": 0.01}),
    "rprop": (paddle.optimizer.Rprop, {"learning_rate": 0.01}),
}


def mixed_model():
    """A float16 layer (parameters with master weights) feeding a float32 one (parameters without)."""
    x = paddle.static.data("x", [4, 3], "float16")
    paddle.set_default_dtype("float16")
    first = paddle.nn.Linear(3, 4)
    paddle.set_default_dtype("float32")
    hidden = paddle.cast(paddle.nn.functional.relu(first(x)), "float32")
    return paddle.mean(paddle.nn.Linear(4, 2)(hidden))


def build(case: str) -> dict:
    optimizer, kwargs = CASES[case]
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        loss = mixed_model()
        forward = serialize(main)
        optimizer(multi_precision=True, **kwargs).minimize(loss)
    meta = {"case": case, "paddle_version": paddle.__version__, "optimizer": optimizer.__name__,
            "hyperparameters": {**kwargs, "multi_precision": True}, "loss": loss.name, "forward": "models/mixed.pb",
            "optimize_op_types": sorted({op.type for op in main.global_block().ops if op.attr("op_role") & 0x12})}
    return {"forward": forward, "train.pb": serialize(main), "startup.pb": serialize(startup), "meta": meta}


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/master_weights")
    for name in sys.argv[2:] or CASES:
        files = build(name)
        (target / "models").mkdir(parents=True, exist_ok=True)
        (target / "models" / "mixed.pb").write_bytes(files["forward"])
        (target / name).mkdir(exist_ok=True)
        for part in ("train.pb", "startup.pb"):
            (target / name / part).write_bytes(files[part])
        (target / name / "meta.json").write_text(json.dumps(files["meta"], indent=1) + "\n")
        print(f"{name}: optimize ops {files['meta']['optimize_op_types']}")

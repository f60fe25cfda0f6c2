"""Check gradc on PaddleOCR models as they train (teacher-forced decoders, their own losses), which its inference
exports cannot show: each rebuilt with Paddle's layers in legacy static mode (FLAGS_enable_pir_api=0), its config's
optimizer minimized by Paddle, two steps on one batch.

    FLAGS_enable_pir_api=0 PYTHONPATH=tools /path/to/paddle/python tools/paddleocr_train_static.py paddle OUT_DIR \
        [MODEL[@SHRINK] ...]
    PYTHONPATH=src:tools .venv/bin/python tools/paddleocr_train_static.py gradc OUT_DIR
    .venv/bin/python tools/paddleocr_train_static.py fixture OUT_DIR/CASE tests/data/paddle/CASE [LEGACY_FIXTURE]

MODELS: table_master (tools/paddleocr_table_master.py), latexocr (tools/paddleocr_latexocr.py), and a smaller
_fixture of each. SHRINK divides every width (MODELS gives each one's); MODEL@SHRINK@pir builds it in PIR mode
(run with FLAGS_enable_pir_api=1: forward.json, Paddle's numbers); MODEL@SHRINK@f64 builds it in float64
(paddle.set_default_dtype), for gradients float32 rounding decides (latexocr's masks use its dtype's largest
float, which a float32 attribute makes -inf in float64: not built so). The
Paddle step writes OUT_DIR/<model>/ as tools/paddlerec_static.py's does: train.pb (Paddle's minimize), forward.pb
(the training forward alone), startup.pb, params.npz (Paddle's startup values), feed.npz, step1.npz and step2.npz
(the loss, the first step's parameter gradients, every persistable var after the step: parameters, batch-norm
statistics, Adam's moments), meta.json. The gradc step verifies and runs train.pb for the two steps and compiles
forward.pb with gradc.minimize and the same optimizer.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from paddlerec_static import _run_steps
from suite_export import paddle_or_gradc

SEED, BATCH = 7, 2
MODELS = {"table_master": 16, "table_master_fixture": 32,   # the fixture's backbone has one block a stage
          "latexocr": 8, "latexocr_fixture": 16}
OPTIMIZERS = {"table_master": {"type": "adam", "lr": 0.001, "beta1": 0.9, "beta2": 0.999},
              "latexocr": {"type": "adam", "lr": 0.0001, "beta1": 0.9, "beta2": 0.999}}
OPTIMIZERS.update({f"{model}_fixture": settings for model, settings in list(OPTIMIZERS.items())})


def _feed(model: str, shrink: int, rng) -> dict:
    if model.startswith("table_master"):   # a 48 x 48 table image, 10 structure tokens between SOS and EOS, PAD after
        from paddleocr_table_master import VOCAB
        length, tokens = 14, 10
        structure = np.full((BATCH, length), VOCAB - 1, "int64")
        structure[:, 0] = VOCAB - 3
        structure[:, 1:tokens + 1] = rng.integers(0, VOCAB - 3, (BATCH, tokens))
        structure[:, tokens + 1] = VOCAB - 2
        masks = np.zeros((BATCH, length, 1), "float32")
        masks[:, 1:tokens + 1, 0] = rng.random((BATCH, tokens)) < 0.6   # the cells' tokens have boxes
        return {"image": rng.uniform(-1, 1, (BATCH, 3, 48, 48)).astype("float32"), "structure": structure,
                "bboxes": rng.uniform(0, 1, (BATCH, length, 4)).astype("float32"), "bbox_masks": masks}
    if model.startswith("latexocr"):   # BOS (1), a formula's tokens, EOS (2), pad (0); 12 encoder positions
        from paddleocr_latexocr import TOKENS
        length, dim = 12, 256 // shrink
        tokens = np.zeros((BATCH, length), "int64")
        for row, used in enumerate((9, 12)):
            tokens[row, 0], tokens[row, used - 1] = 1, 2
            tokens[row, 1:used - 1] = rng.integers(3, TOKENS // shrink, used - 2)
        return {"encoded": rng.standard_normal((BATCH, 12, dim)).astype("float32"), "tokens": tokens,
                "mask": (tokens != 0).astype("int64")}
    raise SystemExit(f"unknown model {model}")


def _build(model: str, shrink: int, feed: dict):
    if model.startswith("table_master"):
        from paddleocr_table_master import build
        return build(shrink, feed, (1, 1, 1, 1) if model.endswith("fixture") else (1, 2, 5, 3))
    if model.startswith("latexocr"):
        from paddleocr_latexocr import build
        return build(shrink, feed)
    raise SystemExit(f"unknown model {model}")


def paddle_step(out: Path, entry: str) -> None:
    import paddle
    from paddle_legacy_shim import install
    from paddle_programs import write_training_case
    model, width, form = (entry.split("@") + ["", ""])[:3]
    shrink = int(width or MODELS[model])
    if form != "pir":
        install()   # 3.3.1's paddle.exp, matmul, ... have no legacy static path of their own
    paddle.enable_static()
    paddle.seed(SEED)
    wide = form == "f64"
    if wide:
        paddle.set_default_dtype("float64")
    feed = {name: value.astype("float64") if wide and value.dtype == np.float32 else value
            for name, value in _feed(model, shrink, np.random.default_rng(0)).items()}
    if form == "pir":
        _pir_step(out, model, shrink, feed)
        return
    main, startup = paddle.static.Program(), paddle.static.Program()
    settings = OPTIMIZERS[model]
    with paddle.static.program_guard(main, startup):
        loss = _build(model, shrink, feed)
        forward = main.clone()
        paddle.optimizer.Adam(learning_rate=settings["lr"], beta1=settings["beta1"],
                              beta2=settings["beta2"]).minimize(loss)
    exe, scope, persistable, grads = write_training_case(
        out, {"forward": forward, "train": main, "startup": startup}, feed)
    for step in (1, 2):
        value, *grad_values = exe.run(main, feed=feed, fetch_list=[loss] + (grads if step == 1 else []))
        np.savez(out / f"step{step}.npz", **{"@loss": np.asarray(value)},
                 **{f"@grad:{g}": np.asarray(v) for g, v in zip(grads, grad_values)},
                 **{n: np.array(scope.find_var(n).get_tensor()) for n in persistable})
    (out / "meta.json").write_text(json.dumps({"loss": loss.name, "optimizer": settings,
                                               "params": [p.name for p in main.all_parameters()],
                                               "ops": sorted({op.type for op in forward.global_block().ops})}))


def _pir_step(out: Path, model: str, shrink: int, feed: dict) -> None:
    """The same in PIR mode (FLAGS_enable_pir_api=1): forward.json (the training forward, its loss fetched as
    "loss"), Paddle's two Adam steps of it with the gradients its backward gives."""
    import paddle
    from paddle.base import core
    main, startup = paddle.static.Program(), paddle.static.Program()
    settings = OPTIMIZERS[model]
    with paddle.static.program_guard(main, startup):
        loss = _build(model, shrink, feed)
        mapping = paddle.pir.IrMapping()
        forward = main.clone(mapping)
        with paddle.static.program_guard(forward):
            paddle._pir_ops.fetch(mapping.look_up(loss), "loss", 0).persistable = True
        _, pairs = paddle.optimizer.Adam(learning_rate=settings["lr"], beta1=settings["beta1"],
                                         beta2=settings["beta2"]).minimize(loss)
    out.mkdir(parents=True, exist_ok=True)
    core.serialize_pir_program(forward, str(out / "forward.json"), True, False, True)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    exe.run(startup)
    names = [op.attrs()["parameter_name"] for op in main.global_block().ops if op.name() == "builtin.parameter"]
    params = {name: np.array(scope.find_var(name).get_tensor()) for name in names}
    np.savez(out / "params.npz", **params)
    np.savez(out / "feed.npz", **feed)
    grads = [(param.name, grad) for param, grad in pairs if grad is not None]
    for step in (1, 2):
        value, *grad_values = exe.run(main, feed=feed, fetch_list=[loss] + ([g for _, g in grads] if step == 1 else []))
        np.savez(out / f"step{step}.npz", **{"@loss": np.asarray(value)},
                 **{f"@grad:{n}@GRAD": np.asarray(v) for (n, _), v in zip(grads, grad_values)})
    (out / "meta.json").write_text(json.dumps({"loss": "loss", "optimizer": settings, "params": sorted(params),
                                               "ops": sorted({op.name() for op in forward.global_block().ops})}))


def gradc_step(case: Path) -> dict:
    import gradc
    from gradc.optimizers import minimize
    meta = json.loads((case / "meta.json").read_text())
    params, feed = dict(np.load(case / "params.npz")), dict(np.load(case / "feed.npz"))
    report = {}
    if (case / "train.pb").exists():   # a PIR case has Paddle's numbers, not its training program
        train = gradc.load(case / "train.pb")
        report = {"ops": len(train.global_block.ops), "problems": gradc.verify(train)[:3],
                  "paddle_program": _run_steps(train, params, feed, meta["loss"], case)}
    forward = gradc.load(case / ("forward.pb" if (case / "forward.pb").exists() else "forward.json"))
    report["forward_problems"] = gradc.verify(forward)[:3]
    arguments = dict(meta["optimizer"])
    kind, lr = arguments.pop("type"), arguments.pop("lr")
    startup = minimize(forward, meta["loss"], kind, lr=lr, **arguments)
    report["gradc_compile"] = _run_steps(forward, params, feed, meta["loss"], case, startup)
    return report


def write_fixture(case: Path, out: Path, legacy: Path | None = None) -> None:
    """A committed copy of a case for gradc's compile: forward.pb (or a PIR case's forward.json, gzipped), the
    feed, the parameters and batch-norm statistics (not the optimizer's state, which gradc's startup makes), the
    first step's loss and gradients, the second's loss (npz compressed). A PIR case given the ``legacy`` fixture of
    the same model shares its feed and parameters, which must be the same."""
    import gzip
    import shutil
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(case / "meta.json", out / "meta.json")
    if (case / "forward.pb").exists():
        shutil.copy(case / "forward.pb", out / "forward.pb")
    else:
        (out / "forward.json.gz").write_bytes(gzip.compress((case / "forward.json").read_bytes(), mtime=0))
    params, optimizer_state = np.load(case / "params.npz"), ("_moment", "_pow_acc", "_velocity", "learning_rate")
    kept = {"feed": dict(np.load(case / "feed.npz")),
            "params": {n: params[n] for n in params.files if not any(part in n for part in optimizer_state)}}
    for name, values in kept.items():
        if legacy is None:
            np.savez_compressed(out / f"{name}.npz", **values)
            continue
        shared = np.load(legacy / f"{name}.npz")
        assert sorted(shared.files) == sorted(values) and all(np.array_equal(shared[n], values[n]) for n in values)
    for step in (1, 2):
        values = np.load(case / f"step{step}.npz")
        np.savez_compressed(out / f"step{step}.npz", **{n: values[n] for n in values.files if n.startswith("@")})


def main() -> None:
    if sys.argv[1] == "fixture":
        write_fixture(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]) if len(sys.argv) > 4 else None)
        return
    paddle_or_gradc(MODELS, paddle_step, gradc_step)


if __name__ == "__main__":
    main()

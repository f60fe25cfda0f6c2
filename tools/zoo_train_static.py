"""Check gradc on models of Paddle's zoos as they train with their own losses, each rebuilt with Paddle's layers in
legacy static mode (FLAGS_enable_pir_api=0) from the zoo's source, the zoo's optimizer minimized by Paddle, two steps
on one batch from Paddle's startup values; as tools/paddleocr_train_static.py does, whose gradc and fixture steps
these are:

    FLAGS_enable_pir_api=0 PYTHONPATH=tools /path/to/paddle/python tools/zoo_train_static.py paddle OUT_DIR [MODEL ...]
    PYTHONPATH=src:tools .venv/bin/python tools/zoo_train_static.py gradc OUT_DIR
    PYTHONPATH=tools .venv/bin/python tools/zoo_train_static.py fixture OUT_DIR/MODEL tests/data/paddle/MODEL

(a forward.pb over 256 kB is kept gzipped, forward.pb.gz). An is_sparse embedding's gradient (SelectedRows), which
Paddle does not fetch, is kept as its parameter after the first step ("@after:NAME").

MODELS names each model's module (its docstring says what it rebuilds from where): feed(rng) gives one batch,
build(feed) the loss in the current program. MODEL@pir builds it in PIR mode (run with FLAGS_enable_pir_api=1):
forward.json and Paddle's numbers, as tools/paddleocr_train_static.py's PIR cases; its fixture step is given the
legacy fixture, whose feed and parameters it must share (MODEL@f64: built in float64, paddle.set_default_dtype,
the batch widened):

    PYTHONPATH=tools .venv/bin/python tools/zoo_train_static.py fixture OUT_DIR/MODEL_pir \
        tests/data/paddle/MODEL/pir tests/data/paddle/MODEL
"""

from __future__ import annotations

import gzip
import importlib
import json
import sys
from pathlib import Path

import numpy as np
from paddleocr_train_static import gradc_step, write_fixture
from suite_export import paddle_or_gradc

SEED = 7
MODELS = {   # model: (module, the zoo config's optimizer)
    "conformer_ctc": ("paddlespeech_conformer", {"type": "adam", "lr": 0.002, "beta1": 0.9, "beta2": 0.98}),
    "ffm": ("paddlerec_ffm", {"type": "adam", "lr": 0.001, "beta1": 0.9, "beta2": 0.999}),
    "ppyoloe": ("paddledet_ppyoloe", {"type": "momentum", "lr": 0.01, "momentum": 0.9}),
    "db": ("paddleocr_db", {"type": "adam", "lr": 0.001, "beta1": 0.9, "beta2": 0.999}),
    "deepspeech2_ctc": ("paddlespeech_deepspeech2", {"type": "adam", "lr": 0.0005, "beta1": 0.9, "beta2": 0.999}),
}


def _optimizer(settings: dict):
    """Paddle's optimizer of a model's settings (gradc.minimize takes the same names)."""
    import paddle
    arguments = {name: value for name, value in settings.items() if name not in ("type", "lr")}
    kind = {"adam": paddle.optimizer.Adam, "momentum": paddle.optimizer.Momentum}[settings["type"]]
    return kind(learning_rate=settings["lr"], **arguments)


def paddle_step(out: Path, entry: str) -> None:
    import paddle
    from paddle_legacy_shim import install
    from paddle_programs import write_training_case
    model, _, form = entry.partition("@")
    if form != "pir":
        install()   # 3.3.1's paddle.exp, matmul, ... have no legacy static path of their own
    paddle.enable_static()
    paddle.seed(SEED)
    module_name, settings = MODELS[model]
    module = importlib.import_module(module_name)
    feed = module.feed(np.random.default_rng(0))
    if form == "f64":   # the same batch, widened
        paddle.set_default_dtype("float64")
        feed = {name: value.astype("float64") if value.dtype == np.float32 else value for name, value in feed.items()}
    if form == "pir":
        _pir_step(out, module, settings, feed)
        return
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        loss = module.build(feed)
        forward = main.clone()
        _optimizer(settings).minimize(loss)
    exe, scope, persistable, grads = write_training_case(
        out, {"forward": forward, "train": main, "startup": startup}, feed)
    # an is_sparse embedding's gradient is SelectedRows, which Paddle does not fetch: its parameter after the step
    sparse = [g for g in grads if main.global_block().var(g).type == paddle.base.core.VarDesc.VarType.SELECTED_ROWS]
    grads = [g for g in grads if g not in sparse]
    for step in (1, 2):
        value, *grad_values = exe.run(main, feed=feed, fetch_list=[loss] + (grads if step == 1 else []))
        np.savez(out / f"step{step}.npz", **{"@loss": np.asarray(value)},
                 **{f"@grad:{g}": np.asarray(v) for g, v in zip(grads, grad_values)},
                 **{f"@after:{g[:-5]}": np.array(scope.find_var(g[:-5]).get_tensor()) for g in sparse if step == 1},
                 **{n: np.array(scope.find_var(n).get_tensor()) for n in persistable})
    (out / "meta.json").write_text(json.dumps({"loss": loss.name, "optimizer": settings,
                                               "params": [p.name for p in main.all_parameters()],
                                               "ops": sorted({op.type for op in forward.global_block().ops})}))


def _pir_step(out: Path, module, settings: dict, feed: dict) -> None:
    """The same in PIR mode (FLAGS_enable_pir_api=1): forward.json (the training forward, its loss fetched as
    "loss"), Paddle's two steps of it with the gradients its PIR backward gives."""
    import paddle
    from paddle.base import core
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        loss = module.build(feed)
        mapping = paddle.pir.IrMapping()
        forward = main.clone(mapping)
        with paddle.static.program_guard(forward):
            paddle._pir_ops.fetch(mapping.look_up(loss), "loss", 0).persistable = True
        _, pairs = _optimizer(settings).minimize(loss)
    out.mkdir(parents=True, exist_ok=True)
    core.serialize_pir_program(forward, str(out / "forward.json"), True, False, True)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    exe.run(startup)
    names = [op.attrs()["parameter_name"] for op in main.global_block().ops if op.name() == "builtin.parameter"]
    np.savez(out / "params.npz", **{name: np.array(scope.find_var(name).get_tensor()) for name in names})
    np.savez(out / "feed.npz", **feed)
    grads = [(param.name, grad) for param, grad in pairs if grad is not None]
    for step in (1, 2):
        value, *grad_values = exe.run(main, feed=feed, fetch_list=[loss] + ([g for _, g in grads] if step == 1 else []))
        np.savez(out / f"step{step}.npz", **{"@loss": np.asarray(value)},
                 **{f"@grad:{n}@GRAD": np.asarray(v) for (n, _), v in zip(grads, grad_values)})
    (out / "meta.json").write_text(json.dumps({"loss": "loss", "optimizer": settings, "params": sorted(names),
                                               "ops": sorted({op.name() for op in forward.global_block().ops})}))


def main() -> None:
    if sys.argv[1] == "fixture":
        out = Path(sys.argv[3])
        write_fixture(Path(sys.argv[2]), out, Path(sys.argv[4]) if len(sys.argv) > 4 else None)
        program = out / "forward.pb"
        if program.exists() and program.stat().st_size > 256 * 1024:   # FFM's 2,983 ops: gzipped, 1.3 MB to a tenth
            (out / "forward.pb.gz").write_bytes(gzip.compress(program.read_bytes(), mtime=0))
            program.unlink()
        return
    paddle_or_gradc(MODELS, paddle_step, gradc_step)


if __name__ == "__main__":
    main()

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
build(feed) the loss in the current program.
"""

from __future__ import annotations

import gzip
import importlib
import json
import sys
from pathlib import Path

import numpy as np
from paddleocr_train_static import gradc_step, write_fixture
from suite_export import report_each

SEED = 7
MODELS = {   # model: (module, the zoo config's optimizer)
    "conformer_ctc": ("paddlespeech_conformer", {"type": "adam", "lr": 0.002, "beta1": 0.9, "beta2": 0.98}),
    "ffm": ("paddlerec_ffm", {"type": "adam", "lr": 0.001, "beta1": 0.9, "beta2": 0.999}),
    "db": ("paddleocr_db", {"type": "adam", "lr": 0.001, "beta1": 0.9, "beta2": 0.999}),
    "deepspeech2_ctc": ("paddlespeech_deepspeech2", {"type": "adam", "lr": 0.0005, "beta1": 0.9, "beta2": 0.999}),
}


def paddle_step(out: Path, model: str) -> None:
    import paddle
    from paddle_legacy_shim import install
    from paddle_programs import without_callstacks
    install()   # 3.3.1's paddle.exp, matmul, ... have no legacy static path of their own
    paddle.enable_static()
    paddle.seed(SEED)
    module_name, settings = MODELS[model]
    module = importlib.import_module(module_name)
    feed = module.feed(np.random.default_rng(0))
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        loss = module.build(feed)
        forward = main.clone()
        paddle.optimizer.Adam(learning_rate=settings["lr"], beta1=settings["beta1"],
                              beta2=settings["beta2"]).minimize(loss)
    out.mkdir(parents=True, exist_ok=True)
    for name, program in (("forward", forward), ("train", main), ("startup", startup)):
        (out / f"{name}.pb").write_bytes(without_callstacks(program))
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    exe.run(startup)
    persistable = sorted(v.name for v in main.list_vars() if v.persistable and v.name not in ("feed", "fetch")
                         and scope.find_var(v.name) is not None
                         and scope.find_var(v.name).get_tensor()._is_initialized())
    np.savez(out / "params.npz", **{n: np.array(scope.find_var(n).get_tensor()) for n in persistable})
    np.savez(out / "feed.npz", **feed)
    params = [p.name for p in main.all_parameters()]
    grads = [p + "@GRAD" for p in params if main.global_block().has_var(p + "@GRAD")]
    # an is_sparse embedding's gradient is SelectedRows, which Paddle does not fetch: its parameter after the step
    sparse = [g for g in grads if main.global_block().var(g).type == paddle.base.core.VarDesc.VarType.SELECTED_ROWS]
    grads = [g for g in grads if g not in sparse]
    for step in (1, 2):
        value, *grad_values = exe.run(main, feed=feed, fetch_list=[loss] + (grads if step == 1 else []))
        np.savez(out / f"step{step}.npz", **{"@loss": np.asarray(value)},
                 **{f"@grad:{g}": np.asarray(v) for g, v in zip(grads, grad_values)},
                 **{f"@after:{g[:-5]}": np.array(scope.find_var(g[:-5]).get_tensor()) for g in sparse if step == 1},
                 **{n: np.array(scope.find_var(n).get_tensor()) for n in persistable})
    (out / "meta.json").write_text(json.dumps({"loss": loss.name, "optimizer": settings, "params": params,
                                               "ops": sorted({op.type for op in forward.global_block().ops})}))


def main() -> None:
    if sys.argv[1] == "fixture":
        out = Path(sys.argv[3])
        write_fixture(Path(sys.argv[2]), out)
        program = out / "forward.pb"
        if program.stat().st_size > 256 * 1024:   # FFM's 2,983 ops: gzipped, 1.3 MB to a tenth
            (out / "forward.pb.gz").write_bytes(gzip.compress(program.read_bytes(), mtime=0))
            program.unlink()
        return
    if sys.argv[1] == "paddle":
        out = Path(sys.argv[2]).resolve()
        for model in sys.argv[3:] or list(MODELS):
            paddle_step(out / model, model)
            print(model, "OK", flush=True)
        return
    report_each(Path(sys.argv[2]), gradc_step)


if __name__ == "__main__":
    main()

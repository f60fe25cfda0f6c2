"""Write the programs Paddle Inference's CPU analysis passes produce (tests/data/paddle/inference_optimized).

Each case is a small legacy program built from Paddle's own layers in a pattern a CPU pass fuses, saved with
save_inference_model, then run by a Predictor with IR optimization on (with or without enable_mkldnn) and
enable_save_optim_model: the Predictor writes the optimized program to its optim cache dir as _optimized.pdmodel
and _optimized.pdiparams. Run with Paddle 3.3.1 (tests never import Paddle):

    FLAGS_enable_pir_api=0 PYTHONPATH=tools /work/paddle-venv/bin/python tools/paddle_inference_optimized.py [CASE...]

Per case it writes model.pdmodel / model.pdiparams (the optimized program and its parameters), feed.npz (the feeds,
and for a sequence feed its LoD offsets as <name>.lod), expected.npz (the Predictor's outputs on the optimized
program), unoptimized.npz (the outputs with IR optimization off, which must agree), for the PIR_CASES model.json and
model_pir.pdiparams (the program a Predictor with enable_new_ir saves as _optimized.json; its outputs are not
readable in 3.3.1, so the test holds it to expected.npz) and meta.json (the fused op
types, the mode, the feeds' LoDs and the outputs' names). save_inference_model drops a gru / lstm op's unfetched
outputs, which fc_gru_fuse_pass and mul_lstm_fuse_pass match on, so the tool puts them back before optimizing.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests/data/paddle/inference_optimized"
LOD = [0, 2, 5]   # two sequences, of 2 and 3 rows


def _op(helper, op_type, inputs, attrs=None, outputs=("Out",)):
    outs = {slot: helper.create_variable_for_type_inference("float32") for slot in outputs}
    helper.append_op(type=op_type, inputs=inputs, outputs=outs, attrs=attrs or {})
    return outs[outputs[-1]] if len(outs) == 1 else outs


def mlp(paddle):
    x = paddle.static.data("x", [-1, 8], "float32")
    h = x
    for n in (6, 6, 5, 4):
        h = paddle.nn.functional.relu(paddle.nn.Linear(h.shape[-1], n)(h))
    return {"x": [3, 8]}, [h]


def convbn(paddle):
    x = paddle.static.data("x", [-1, 3, 6, 6], "float32")
    conv, bn = paddle.nn.Conv2D(3, 4, 3, padding=1), paddle.nn.BatchNorm2D(4)
    y = paddle.nn.functional.relu(bn(conv(x)))
    return {"x": [2, 3, 6, 6]}, [paddle.nn.BatchNorm2D(2)(paddle.nn.Conv2D(4, 2, 3, bias_attr=False)(y))]


def conv_act(paddle):
    """Convolutions each followed by an activation oneDNN's conv_activation pass folds in, and a matmul + add."""
    F = paddle.nn.functional
    x = paddle.static.data("x", [-1, 3, 5, 5], "float32")
    h = x
    for act in (F.relu, lambda t: F.leaky_relu(t, 0.1), F.hardswish, F.sigmoid, F.swish, F.relu6):
        h = act(paddle.nn.Conv2D(h.shape[1], 3, 3, padding=1)(h))
    flat = paddle.reshape(h, [-1, 75])
    out = F.gelu(paddle.matmul(flat, paddle.static.create_parameter([75, 4], "float32")))
    return {"x": [2, 3, 5, 5]}, [F.tanh(F.softplus(out, beta=2.0))]


def encoder(paddle):
    x = paddle.static.data("x", [-1, 5, 8], "float32")
    layer = paddle.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    layer.eval()
    return {"x": [2, 5, 8]}, [layer(x)]


def _recurrent(kind):
    def build(paddle):
        from paddle.base.layer_helper import LayerHelper
        helper, hidden, gates = LayerHelper(kind), 3, 3 if kind == "gru" else 4
        x = paddle.static.data("x", [-1, 4], "float32", lod_level=1)
        projected = _op(helper, "mul", {"X": x, "Y": paddle.static.create_parameter([4, gates * hidden], "float32")},
                        {"x_num_col_dims": 1, "y_num_col_dims": 1})
        weight = paddle.static.create_parameter([hidden, gates * hidden], "float32")
        bias = paddle.static.create_parameter([1, gates * hidden], "float32")
        if kind == "gru":   # fc_gru_fuse_pass: mul + elementwise_add + gru
            projected = _op(helper, "elementwise_add", {"X": projected, "Y": paddle.static.create_parameter(
                [gates * hidden], "float32")}, {"axis": 1})
            outs = _op(helper, "gru", {"Input": projected, "Weight": weight, "Bias": bias},
                       {"activation": "tanh", "gate_activation": "sigmoid", "is_reverse": False, "origin_mode": False},
                       ("BatchGate", "BatchResetHiddenPrev", "BatchHidden", "Hidden"))
        else:   # mul_lstm_fuse_pass: mul + lstm (the CPU list has no fc_lstm_fuse_pass)
            outs = _op(helper, "lstm", {"Input": projected, "Weight": weight, "Bias": bias},
                       {"use_peepholes": False, "is_reverse": False, "gate_activation": "sigmoid",
                        "cell_activation": "tanh", "candidate_activation": "tanh"},
                       ("BatchGate", "BatchCellPreAct", "Cell", "Hidden"))
        return {"x": [5, 4]}, [outs["Hidden"]]
    return build


def seqconv(paddle):
    x = paddle.static.data("x", [-1, 4], "float32", lod_level=1)
    return {"x": [5, 4]}, [paddle.static.nn.sequence_conv(x, 3, filter_size=3, act="relu")]


def seqpool_cvm(paddle):
    xs = [paddle.static.data(f"x{i}", [-1, 4], "float32", lod_level=1) for i in range(2)]
    cvm = paddle.static.data("cvm", [-1, 2], "float32")
    pooled = [paddle.static.nn.sequence_lod.sequence_pool(x, "sum") for x in xs]
    out = paddle.concat([paddle.static.nn.continuous_value_model(p, cvm, use_cvm=True) for p in pooled], axis=1)
    return {"x0": [5, 4], "x1": [5, 4], "cvm": [2, 2]}, [out]


# case -> (builder, enable_mkldnn)
CASES = {"mlp": (mlp, False), "convbn": (convbn, False), "convbn_onednn": (convbn, True),
         "conv_act_onednn": (conv_act, True),
         "encoder": (encoder, False), "encoder_onednn": (encoder, True), "gru": (_recurrent("gru"), False),
         "lstm": (_recurrent("lstm"), False), "seqconv": (seqconv, False), "seqpool_cvm": (seqpool_cvm, False)}

# the cases whose PIR program (enable_new_ir) holds a fused op; the onednn ones fail to translate in 3.3.1
PIR_CASES = ("mlp", "seqconv", "gru")   # seqpool_cvm has no parameter, which the PIR save refuses


def save_model(paddle, build, where: Path):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():   # names fixed per case
        paddle.seed(7)
        shapes, fetches = build(paddle)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    feeds = [main.global_block().var(name) for name in shapes]
    paddle.static.save_inference_model(str(where / "model"), feeds, fetches, exe, program=main)
    restore_outputs(paddle, where / "model.pdmodel", main)
    return shapes, {name: main.global_block().var(name).lod_level for name in shapes}


def restore_outputs(paddle, path: Path, main) -> None:
    """Give the saved gru / lstm ops back the outputs save_inference_model dropped."""
    program = paddle.static.Program.parse_from_string(path.read_bytes())
    block, source = program.global_block(), main.global_block()
    saved = [op for op in block.ops if op.type in ("gru", "lstm")]
    for op, original in zip(saved, [op for op in source.ops if op.type in ("gru", "lstm")]):
        for slot in original.output_names:
            for name in original.output(slot):
                if not block.has_var(name):
                    var = source.var(name)
                    block.create_var(name=name, shape=var.shape, dtype=var.dtype, lod_level=var.lod_level)
            op.desc.set_output(slot, original.output(slot))
    if saved:
        path.write_bytes(program.desc.serialize_to_string())


def predict(where: Path, feeds: dict, lods: dict, optimize: bool, onednn: bool, cache: Path | None, pir=False):
    import paddle.inference as pi
    params = where / "model.pdiparams"
    config = pi.Config(str(where / "model.pdmodel"), str(params) if params.exists() else "")
    config.disable_gpu()
    config.switch_ir_optim(optimize)
    config.enable_mkldnn() if onednn else config.disable_mkldnn()
    config.enable_new_ir(pir)
    if cache is not None:
        config.set_optim_cache_dir(str(cache))
        config.enable_save_optim_model(True)
    predictor = pi.create_predictor(config)
    for name, value in feeds.items():
        handle = predictor.get_input_handle(name)
        handle.reshape(list(value.shape))
        handle.copy_from_cpu(value)
        if lods[name]:
            handle.set_lod([LOD])
    predictor.run()
    if pir:   # 3.3.1's PIR Predictor leaves its outputs unwritten here ("Tensor holds no memory")
        return {}
    return {name: predictor.get_output_handle(name).copy_to_cpu() for name in predictor.get_output_names()}


def write_case(paddle, name: str) -> None:
    build, onednn = CASES[name]
    case = OUT / name
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shapes, lods = save_model(paddle, build, tmp)
        rng = np.random.default_rng(2026)
        feeds = {n: rng.uniform(0, 2, s).astype("float32") if n == "cvm" else
                 rng.standard_normal(s).astype("float32") for n, s in shapes.items()}
        unoptimized = predict(tmp, feeds, lods, False, False, None)
        expected = predict(tmp, feeds, lods, True, onednn, tmp / "opt")
        shutil.copy(tmp / "opt/_optimized.pdmodel", case / "model.pdmodel")
        if (tmp / "opt/_optimized.pdiparams").exists():
            shutil.copy(tmp / "opt/_optimized.pdiparams", case / "model.pdiparams")
        if name in PIR_CASES:
            predict(tmp, feeds, lods, True, onednn, tmp / "pir", pir=True)
            shutil.copy(tmp / "pir/_optimized.json", case / "model.json")
            if (tmp / "pir/_optimized.pdiparams").exists():
                shutil.copy(tmp / "pir/_optimized.pdiparams", case / "model_pir.pdiparams")
    program = paddle.static.Program.parse_from_string((case / "model.pdmodel").read_bytes())
    types = sorted({op.type for op in program.global_block().ops} - {"feed", "fetch"})
    np.savez(case / "feed.npz", **feeds, **{f"{n}.lod": np.array(LOD) for n in feeds if lods[n]})
    np.savez(case / "expected.npz", **expected)
    np.savez(case / "unoptimized.npz", **unoptimized)
    meta = {"case": name, "paddle_version": paddle.__version__, "enable_mkldnn": onednn, "ops": types,
            "outputs": sorted(expected), "lod_feeds": sorted(n for n in feeds if lods[n])}
    (case / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    worst = max(float(np.max(np.abs(expected[k] - unoptimized[k]))) for k in expected)
    print(f"{name}: {' '.join(types)}; optimized vs unoptimized max |diff| {worst:.2e}")


def main(names: list[str]) -> None:
    os.environ.setdefault("FLAGS_enable_pir_api", "0")
    import paddle
    from paddle_legacy_shim import install
    install()   # the encoder's layers call 3.3.1's C-only APIs
    paddle.enable_static()
    for name in names or CASES:
        write_case(paddle, name)


if __name__ == "__main__":
    main(sys.argv[1:])

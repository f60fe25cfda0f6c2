"""Build PIR test fixtures with a real PaddlePaddle 3.x in its default PIR mode, into
tests/data/paddle/pir/<case>/:
- training cases from Paddle's own layers (and the op zoo of tools/paddle_pir_zoo.py): the forward program
  as Paddle serializes it (forward.json, the loss fetched as "loss"), feed.npz, params.npz, and the loss
  and gradients Paddle computes for it in PIR mode (paddle.static.gradients): loss.npy, grads.npz; plus
  Paddle's own training program with its grad ops (backward.json.gz; control flow with its cf stacks);
- translated_<case>: a legacy fixture's program through Paddle's legacy-to-PIR translator
  (tools/paddle_pir_translated.py);
- legacy_<case>: legacy ops PIR's Python API cannot append (nce, row_conv), built in a legacy program and
  translated, with Paddle's PIR backward;
- inference models saved by save_inference_model and jit.save (model.json + model.pdiparams; jit_bf16 under
  auto_cast bfloat16) with an input and Paddle's output.
meta.json lists the PIR op names each file uses. Not part of the package: gradc does not need Paddle.

    /path/to/paddle/python tools/paddle_pir_fixtures.py tests/data/paddle/pir [case ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle.base import core
from paddle_pir_cases import CASES
from paddle_pir_translated import TRANSLATED, build_translated, op_names
from paddle_programs import with_fetches, write_gz

LOSS_NAME = "loss"
# Without it Paddle 3.3.1 deletes the cf stack ops of a control-flow backward while writing the program
# (their grad ops still use them) and aborts; with it the stacks are written and the program loads back.
paddle.set_flags({"FLAGS_save_cf_stack_op": True})


def write_backward(main, loss, wrt, out: Path) -> list[str]:
    """Paddle's own training program (backward.json.gz): forward and grad ops, fetching the loss and
    every gradient under the names gradc gives them ("<var>@GRAD")."""
    fetches = [(LOSS_NAME, loss), *((f"{name}@GRAD", grad) for name, grad in wrt)]
    write_gz(out / "backward.json", with_fetches(main, fetches))   # gzipped: ten times the forward's size
    return sorted({*op_names(main), "pd_op.fetch"})   # the written program's: main's and its fetches


def parameter_values(program, scope) -> dict[str, np.ndarray]:
    values = {}
    for op in program.global_block().ops:
        if op.name() == "builtin.parameter":
            name = op.attrs()["parameter_name"]
            var = scope.find_var(name)
            if var is not None and var.get_tensor()._is_initialized():
                values[name] = np.array(var.get_tensor())
    return values


def _name(value) -> str:
    """A parameter's name, or the name of the data op that makes ``value`` (a translated one's only name)."""
    op = value.get_defining_op()
    return op.attrs()["name"] if op.name() == "pd_op.data" else value.name


def build(case: str, out_dir: Path, seed: int = 2024) -> None:
    """A case of ``CASES`` (built in PIR) or of ``LEGACY`` (a legacy program, translated), with Paddle's PIR
    backward of its loss over its parameters and float inputs."""
    paddle.enable_static()
    paddle.seed(seed)
    rng = np.random.default_rng(seed)
    main, startup = paddle.static.Program(), paddle.static.Program()
    if case in LEGACY:
        main, loss, feed, description = LEGACY[case](rng)
    else:
        with paddle.static.program_guard(main, startup):
            loss, feed, description = CASES[case](rng)
    mapping = paddle.pir.IrMapping()
    forward = main.clone(mapping)
    with paddle.static.program_guard(forward):
        paddle._pir_ops.fetch(mapping.look_up(loss), LOSS_NAME, 0).persistable = True
    out = out_dir / case
    out.mkdir(parents=True, exist_ok=True)
    core.serialize_pir_program(forward, str(out / "forward.json"), True, False, True)

    inputs = [op.result(0) for op in main.global_block().ops
              if op.name() == "pd_op.data" and not op.result(0).stop_gradient]
    params = [p for p in main.global_block().all_parameters() if not p.stop_gradient]
    with paddle.static.program_guard(main, startup):
        grads = paddle.static.gradients([loss], params + inputs)
    # a parameter the loss does not reach (nn.LSTM's flat weight buffer) gets no gradient
    wrt = [(_name(v), g) for v, g in zip(params + inputs, grads) if g is not None]
    backward_ops = write_backward(main, loss, wrt, out)
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    scope = paddle.static.global_scope()
    values_before = parameter_values(main, scope)  # batch_norm's run updates its running stats
    names = [name for name, _ in wrt]
    fetched = executor.run(main, feed=feed, fetch_list=[loss] + [g for _, g in wrt])
    np.savez(out / "feed.npz", **feed)
    np.savez(out / "params.npz", **values_before)
    np.savez(out / "grads.npz", **{f"{n}@GRAD": g for n, g in zip(names, fetched[1:])})
    np.save(out / "loss.npy", fetched[0])
    meta = {"case": case, "seed": seed, "paddle_version": paddle.__version__, "description": description,
            "loss": LOSS_NAME, "params_grads": [[n, f"{n}@GRAD"] for n in names],
            "pir_ops": op_names(forward), "pir_backward_ops": backward_ops}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{case}: loss {float(fetched[0]):.6f}, {len(names)} grads, ops: {meta['pir_ops']}")


class SmallCnn(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = paddle.nn.Conv2D(3, 4, 3, padding=1)
        self.norm = paddle.nn.BatchNorm2D(4)
        self.fc = paddle.nn.Linear(16, 5)

    def forward(self, x):
        h = F.avg_pool2d(F.relu(self.norm(self.conv(x))), 2)
        return F.softmax(self.fc(paddle.flatten(h, 1)))


class Bfloat16Mlp(paddle.nn.Layer):
    """Linear -> relu -> Linear under paddle.amp.auto_cast(bfloat16, O1): casts to and from bfloat16 in PIR."""

    def __init__(self):
        super().__init__()
        self.hidden, self.out = paddle.nn.Linear(8, 16), paddle.nn.Linear(16, 3)

    def forward(self, x):
        with paddle.amp.auto_cast(level="O1", dtype="bfloat16"):
            return self.out(F.relu(self.hidden(x)))


def fetch_name(program) -> str:
    return next(op.attrs()["name"] for op in program.global_block().ops if op.name() == "pd_op.fetch")


def save_meta(out: Path, case: str, seed: int, feed: dict, expected, output: str, description: str, program):
    np.savez(out / "feed.npz", **feed)
    np.save(out / "expected.npy", expected)
    meta = {"case": case, "seed": seed, "paddle_version": paddle.__version__, "output": output,
            "description": description, "pir_ops": op_names(program)}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{case}: output {output} {expected.shape}, ops: {meta['pir_ops']}")


def randomize_running_stats(program, rng) -> None:
    """Running mean/variance other than 0/1, so a test-mode batch_norm computes something visible."""
    scope = paddle.static.global_scope()
    for name in parameter_values(program, scope):
        if name.endswith((".w_1", ".w_2")) and "norm" in name:
            tensor = scope.find_var(name).get_tensor()
            shape = np.array(tensor).shape
            value = rng.uniform(0.5, 1.5, shape) if name.endswith(".w_2") else rng.standard_normal(shape)
            tensor.set(value.astype("float32"), paddle.CPUPlace())


def build_inference(case: str, out_dir: Path, seed: int = 2024) -> None:
    """save_inference_model of a static program (fc -> relu -> batch_norm (test) -> fc -> softmax)."""
    paddle.enable_static()
    paddle.seed(seed)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [-1, 6], "float32")
        hidden = paddle.nn.BatchNorm1D(8)(F.relu(paddle.nn.Linear(6, 8)(x)))
        prob = F.softmax(paddle.nn.Linear(8, 3)(hidden))
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    randomize_running_stats(main, np.random.default_rng(seed + 1))
    out = out_dir / case
    out.mkdir(parents=True, exist_ok=True)
    paddle.static.save_inference_model(str(out / "model"), [x], [prob], executor, program=main)
    program, feeds, fetches = paddle.static.load_inference_model(str(out / "model"), executor)
    feed = {"x": np.random.default_rng(seed).standard_normal((4, 6)).astype("float32")}
    (expected,) = executor.run(program, feed=feed, fetch_list=fetches)
    save_meta(out, case, seed, feed, expected, fetch_name(program), "save_inference_model: fc -> relu -> batch_norm "
              "(test) -> fc -> softmax", program)


JIT_LAYERS = {   # case -> (layer, input shape, description)
    "jit": (SmallCnn, [2, 3, 4, 4], "jit.save of a dygraph layer: conv -> batch_norm -> relu -> avg pool -> fc -> "
                                    "softmax"),
    "jit_bf16": (Bfloat16Mlp, [4, 8], "jit.save of a dygraph layer under auto_cast bfloat16 O1: cast -> matmul -> "
                                      "add -> relu -> matmul -> add in bfloat16, cast back"),
}


def build_jit(case: str, out_dir: Path, seed: int = 2024) -> None:
    """paddle.jit.save of a dygraph layer of JIT_LAYERS."""
    make_layer, shape, description = JIT_LAYERS[case]
    paddle.disable_static()
    paddle.seed(seed)
    layer = make_layer()
    layer.eval()
    out = out_dir / case
    out.mkdir(parents=True, exist_ok=True)
    spec = [paddle.static.InputSpec([None, *shape[1:]], "float32", "x")]
    paddle.jit.save(paddle.jit.to_static(layer, input_spec=spec, full_graph=True), str(out / "model"))
    feed = {"x": np.random.default_rng(seed).standard_normal(shape).astype("float32")}
    paddle.enable_static()
    executor = paddle.static.Executor(paddle.CPUPlace())
    program, _, fetches = paddle.static.load_inference_model(str(out / "model"), executor)
    (expected,) = executor.run(program, feed=feed, fetch_list=fetches)
    save_meta(out, case, seed, feed, expected, fetch_name(program), description, program)


def legacy_static_nn(rng):
    """The legacy ops of paddle.static.nn and paddle.text that Paddle's PIR Python API cannot append (nce,
    row_conv) or appends only in legacy mode (cvm, auc): a legacy program of them, with a loss of nce's
    cost and cvm's output (their grads in PIR, over X and Input), the others' outputs computed beside it.
    nce's negatives are fixed (custom_neg_classes); class_center_sample's labels hold num_samples classes
    (nothing drawn)."""
    feed = {"x": rng.standard_normal((3, 4)), "label": rng.integers(0, 6, (3, 1)),
            "w": rng.standard_normal((6, 4)), "b": rng.standard_normal((6, 1)),
            "seq": rng.standard_normal((2, 5, 4)), "ahead": rng.standard_normal((3, 4)),
            "counts": rng.uniform(0.5, 3.0, (3, 6)), "cvm": rng.uniform(0.5, 3.0, (3, 2)),
            "predict": rng.uniform(0.0, 1.0, (6, 2)), "truth": rng.integers(0, 2, (6, 1)),
            "pos": np.zeros((1, 16), np.int64), "neg": np.zeros((1, 16), np.int64),
            "emission": rng.standard_normal((2, 3, 4)), "transition": rng.standard_normal((4, 4)),
            "lengths": np.array([3, 2]), "classes": np.array([4, 1, 7, 1])}
    feed = {k: v.astype("float32") if v.dtype == np.float64 else v for k, v in feed.items()}
    with paddle.pir_utils.OldIrGuard():
        main = paddle.static.Program()
        with paddle.static.program_guard(main, paddle.static.Program()):
            var = {k: paddle.static.data(k, list(v.shape), v.dtype.name) for k, v in feed.items()}
            # the translator carries the flag to the ops' results. Not W and Bias: 3.3.1's PIR vjp of nce swaps
            # their gradients (W gets Bias's, [6, 1])
            for name in ("x", "counts"):
                var[name].stop_gradient = False
            block = main.global_block()

            def append(type, inputs, outputs, attrs=None):
                made = {slot: block.create_var(name=f"{type}.{slot}", dtype=dtype) for slot, dtype in outputs.items()}
                block.append_op(type=type, inputs={s: var[n] for s, n in inputs.items()}, outputs=made, attrs=attrs)
                return made

            append("nce", {"Input": "x", "Label": "label", "Weight": "w", "Bias": "b"},
                   {"Cost": "float32", "SampleLogits": "float32", "SampleLabels": "int64"},
                   {"num_total_classes": 6, "num_neg_samples": 2, "custom_neg_classes": [1, 4]})
            append("row_conv", {"X": "seq", "Filter": "ahead"}, {"Out": "float32"})
            append("cvm", {"X": "counts", "CVM": "cvm"}, {"Y": "float32"}, {"use_cvm": True})
            append("auc", {"Predict": "predict", "Label": "truth", "StatPos": "pos", "StatNeg": "neg"},
                   {"AUC": "float64", "StatPosOut": "int64", "StatNegOut": "int64"},
                   {"num_thresholds": 15, "slide_steps": 0})
            append("viterbi_decode", {"Input": "emission", "Transition": "transition", "Length": "lengths"},
                   {"Scores": "float32", "Path": "int64"}, {"include_bos_eos_tag": True})
            append("class_center_sample", {"Label": "classes"},
                   {"RemappedLabel": "int64", "SampledLocalClassCenter": "int64"}, {"num_classes": 8, "num_samples": 3})
        desc = main.desc.serialize_to_string()
    program = paddle.base.libpaddle.pir.translate_to_pir(core.ProgramDesc(desc))
    ops = program.global_block().ops
    result = {op.name(): op.result(0) for op in ops}
    with paddle.static.program_guard(program):
        loss = paddle.add(paddle.mean(result["pd_op.nce"]), paddle.mean(result["pd_op.cvm"]))
    return program, loss, feed, ("legacy nce, row_conv, cvm, auc, viterbi_decode, class_center_sample through "
                                 "translate_to_pir")


def legacy_lrn(rng):
    """Legacy lrn (fluid's layers.lrn; paddle.nn.LocalResponseNorm computes it with pool ops), in a legacy
    program translated, with Paddle's PIR backward."""
    feed = {"x": rng.uniform(0.5, 2.0, (2, 5, 3, 3)).astype("float32")}
    with paddle.pir_utils.OldIrGuard():
        main = paddle.static.Program()
        with paddle.static.program_guard(main, paddle.static.Program()):
            x = paddle.static.data("x", [2, 5, 3, 3], "float32")
            x.stop_gradient = False
            block = main.global_block()
            made = {slot: block.create_var(name=f"lrn.{slot}", dtype="float32") for slot in ("Out", "MidOut")}
            block.append_op(type="lrn", inputs={"X": x}, outputs=made,
                            attrs={"n": 3, "k": 1.5, "alpha": 0.01, "beta": 0.6})
        desc = main.desc.serialize_to_string()
    program = paddle.base.libpaddle.pir.translate_to_pir(core.ProgramDesc(desc))
    out = next(op for op in program.global_block().ops if op.name() == "pd_op.lrn").result(0)
    with paddle.static.program_guard(program):
        weights = paddle.to_tensor(rng.standard_normal((2, 5, 3, 3)).astype("float32"))
        loss = paddle.mean(paddle.multiply(out, weights))
    return program, loss, feed, "legacy lrn through translate_to_pir"


LEGACY = {"legacy_static_nn": legacy_static_nn, "legacy_lrn": legacy_lrn}


BUILDERS = {**{case: build for case in (*CASES, *LEGACY)}, "inference": build_inference,
           **dict.fromkeys(JIT_LAYERS, build_jit),
            **dict.fromkeys(TRANSLATED, build_translated)}

if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/pir")
    for name in sys.argv[2:] or list(BUILDERS):
        with paddle.utils.unique_name.guard():  # names that do not depend on which cases ran before
            BUILDERS[name](name, target)

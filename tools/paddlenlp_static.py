"""Check gradc on PaddleNLP's models trained in legacy static mode with dropout on: each model class built from its
config at tools/paddlenlp_export.py's tiny size (hidden 64, 2 layers, 4 heads, vocabulary 1,000) with hidden and
attention dropout 0.1, in training mode, under paddle.static.program_guard (FLAGS_enable_pir_api=0); a token
cross-entropy over its logits (masked LMs: every position a target; causal LMs: the next token; encoder-decoders: the
decoder's), Paddle's AdamW (weight decay 0.01) minimize, Paddle's startup after paddle.seed(SEED), and two steps on
one batch. Two steps, one per interpreter (the Paddle step one model a process):

    FLAGS_enable_pir_api=0 PYTHONPATH=tools /path/to/paddle/python tools/paddlenlp_static.py paddle DEPS OUT_DIR \
        BertForMaskedLM
    PYTHONPATH=src:tools .venv/bin/python tools/paddlerec_static.py gradc OUT_DIR

DEPS holds PaddleNLP 3.0.0b4 and the light packages its import needs (as for tools/paddlenlp_export.py, whose stubs
stand in for the heavy ones). The Paddle step writes OUT_DIR/<model class>/ as tools/paddlerec_static.py's does
(forward.pb, train.pb, startup.pb, params.npz, feed.npz, step1.npz, step2.npz, meta.json); its gradc step seeds gradc
as paddle.seed seeded Paddle, replays Paddle's startup (its draws), runs Paddle's training program and gradc's own
compile of forward.pb with AdamW, and prints how far each is from Paddle's losses, gradients and parameters.

    FLAGS_enable_pir_api=0 PYTHONPATH=tools /path/to/paddle/python tools/paddlenlp_static.py fixture DEPS CLASS

writes the test fixture tests/data/paddle/nlp_dropout/<CLASS>/ (tests/test_nlp_dropout_training.py) at a smaller size
(FIXTURE) in the layout of tools/paddle_vision_training.py's (forward.pb, startup.pb, feed.npz, init.npz, grads.npz,
losses.npy, final.npz, the float64 run where kept, meta.json), AdamW's epsilon 1e-4 as there.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

SEED, LR, WEIGHT_DECAY = 0, 1e-3, 0.01
FIXTURE_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "nlp_dropout"
MODELS = ["BertForMaskedLM", "ErnieForMaskedLM", "RobertaForMaskedLM", "ElectraForMaskedLM", "GPTForCausalLM",
          "T5ForConditionalGeneration", "BartForConditionalGeneration"]
ENCODER_DECODERS = ("T5ForConditionalGeneration", "BartForConditionalGeneration")
CAUSAL = ("GPTForCausalLM",)
DROPOUT = dict(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,   # BERT, ERNIE, RoBERTa, ELECTRA, GPT
               dropout_rate=0.1,                                           # T5
               dropout=0.1, attention_dropout=0.1, activation_dropout=0.0)  # BART (its default activation dropout)




@dataclass(frozen=True)
class Case:
    """A model's size, batch and AdamW's epsilon."""
    sizes: dict = field(default_factory=dict)   # over paddlenlp_export.TINY
    batch: int = 2
    length: int = 16
    epsilon: float = 1e-8
    dtype: str = "float32"


CHECK = Case()
# small enough to commit: vocabulary 100, hidden 32, 2 heads; AdamW's epsilon 1e-4, as the vision fixtures' Adam
# (1e-8 turns a gradient that is 0 but for rounding, the attention keys' bias's, into a whole step either way)
FIXTURE = Case({"vocab_size": 100, "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64,
                "max_position_embeddings": 32,
                # the same sizes under T5's and BART's names (BERT's, ERNIE's and GPT's configs have none of them)
                "d_model": 32, "num_heads": 2, "d_ff": 64, "d_kv": 16, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64,
                "encoder_attention_heads": 2, "decoder_attention_heads": 2}, 2, 8, 1e-4)


def batch(case: Case) -> dict[str, np.ndarray]:
    """Token ids in [1, vocabulary) (no padding id 0) and the targets."""
    rng = np.random.default_rng(SEED)
    vocabulary = case.sizes.get("vocab_size", 1000)
    return {name: rng.integers(1, vocabulary, (case.batch, case.length)).astype("int64")
            for name in ("input_ids", "decoder_input_ids", "labels")}


def build(class_name: str, case: Case):
    """-> main (after minimize), startup, the forward program before it, the loss var, the feed's names."""
    import paddle
    from paddle.utils import unique_name
    from paddle_legacy_shim import install
    from paddlenlp_export import TINY, _stub_unused_imports
    _stub_unused_imports()
    import paddlenlp.transformers as transformers
    install()   # 3.3.1's paddle.matmul, triu, ... have no legacy static path of their own (after PaddleNLP's imports)
    if case.dtype == "float64" and class_name.startswith("T5"):
        _t5_norm_in_model_dtype()
    model_class = getattr(transformers, class_name)
    config_class = model_class.config_class
    sizes = {key: value for key, value in {**TINY, **case.sizes, **DROPOUT, "dtype": case.dtype}.items()
             if not isinstance(getattr(config_class, key, None), property)}
    names = ["input_ids", "decoder_input_ids", "labels"] if class_name in ENCODER_DECODERS else ["input_ids", "labels"]
    main, startup = paddle.static.Program(), paddle.static.Program()
    paddle.set_default_dtype(case.dtype)
    with unique_name.guard(), paddle.static.program_guard(main, startup):
        feeds = {name: paddle.static.data(name, [case.batch, case.length], "int64") for name in names}
        model = model_class(config_class(**sizes))
        model.train()
        extra = {"decoder_input_ids": feeds["decoder_input_ids"]} if class_name in ENCODER_DECODERS else {}
        logits = _first_variable(model(feeds["input_ids"], **extra))
        labels = feeds["labels"]
        if class_name in CAUSAL:   # position t predicts token t + 1
            logits, labels = logits[:, :-1], feeds["input_ids"][:, 1:]
        loss = paddle.nn.functional.cross_entropy(logits.reshape([-1, logits.shape[-1]]), labels.reshape([-1, 1]))
        forward = main.clone()
        paddle.optimizer.AdamW(LR, epsilon=case.epsilon, weight_decay=WEIGHT_DECAY).minimize(loss)
    paddle.set_default_dtype("float32")
    return main, startup, forward, loss.name, names


def _static_weight_init() -> None:
    """PaddleNLP's _init_weights set a parameter from a tensor (RoBERTa, ELECTRA, T5: `weight.set_value(paddle.normal
    (...))`) and BART registers a buffer made by paddle.zeros, both for dygraph only. In legacy static mode the ops that
    made such a value move from the main program to the startup program, which then assigns it to the parameter (as
    an initializer would; their draws are then the startup's, which gradc replays); a buffer stays a main-program
    value."""
    from paddle.base import framework
    from paddle.nn import Layer
    set_value, register_buffer = framework.Parameter.set_value, Layer.register_buffer

    def static_set_value(self, value, scope=None):
        if not isinstance(value, framework.Variable):
            return set_value(self, value, scope)
        main = framework.default_main_program().global_block()
        startup = framework.default_startup_program().global_block()
        needed, indices = {value.name}, []
        for index in reversed(range(len(main.ops))):   # value's op and the ops before it that made its inputs
            op = main.ops[index]
            if needed & set(op.output_arg_names):
                indices.append(index)
                needed |= {n for n in op.input_arg_names if not main.var(n).persistable}
        for index in reversed(indices):
            op = main.ops[index]
            for name in op.input_arg_names + op.output_arg_names:
                if not startup.has_var(name):
                    var = main.var(name)
                    startup.create_var(name=name, shape=var.shape, dtype=var.dtype, persistable=var.persistable)
            startup.append_op(type=op.type, inputs={k: op.input(k) for k in op.input_names},
                              outputs={k: op.output(k) for k in op.output_names}, attrs=op.all_attrs())
        startup.append_op(type="assign", inputs={"X": [value.name]}, outputs={"Out": [self.name]})
        for index in indices:   # descending: each removal leaves the other indices in place
            main._remove_op(index)
        return None

    def static_register_buffer(self, name, tensor, persistable=True):
        if isinstance(tensor, framework.Variable) and not framework.in_dygraph_mode():
            self._buffers[name] = tensor
            return None
        return register_buffer(self, name, tensor, persistable)

    framework.Parameter.set_value, Layer.register_buffer = static_set_value, static_register_buffer


def _t5_norm_in_model_dtype() -> None:
    """T5's layer norm takes its variance in float32 whatever the model's dtype; in a float64 program Paddle's
    backward then gives `rsqrt_grad` a float64 gradient of a float32 value and stops (`dtype() == ...` 10 != 11).
    The float64 reference run takes it in the model's dtype, the float32 program is unchanged."""
    import paddle
    from paddlenlp.transformers.t5 import modeling

    def forward(self, hidden_states):
        variance = paddle.pow(hidden_states, 2).mean(axis=-1, keepdim=True)
        return self.weight * (hidden_states * paddle.rsqrt(variance + self.variance_epsilon))

    modeling.T5LayerNorm.forward = forward


def _first_variable(output):
    """The logits: a model's output, or the first of its tuple or ModelOutput (legacy static Variables)."""
    while isinstance(output, (tuple, list, dict)):
        output = next(iter(output.values())) if isinstance(output, dict) else output[0]
    return output


def paddle_step(out: Path, class_name: str) -> None:
    """Build the model's training program, run Paddle's startup (seeded) and two steps, write them as
    tools/paddlerec_static.py's gradc step reads them."""
    import paddle
    paddle.enable_static()
    _static_weight_init()
    paddle.seed(SEED)
    main, startup, forward, loss, names = build(class_name, CHECK)
    out.mkdir(parents=True, exist_ok=True)
    for stem, program in (("forward", forward), ("train", main), ("startup", startup)):
        (out / f"{stem}.pb").write_bytes(program.desc.serialize_to_string())
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    exe.run(startup)
    persistable = [v.name for v in main.list_vars() if v.persistable and v.name not in ("feed", "fetch")
                   and scope.find_var(v.name) is not None and scope.find_var(v.name).get_tensor()._is_initialized()]
    np.savez(out / "params.npz", **{n: np.array(scope.find_var(n).get_tensor()) for n in persistable})
    feed = {name: value for name, value in batch(CHECK).items() if name in names}
    np.savez(out / "feed.npz", **feed)
    block = main.global_block()
    grads = [p.name + "@GRAD" for p in main.all_parameters() if block.has_var(p.name + "@GRAD")]
    for step in (1, 2):
        value, *grad_values = exe.run(main, feed=feed, fetch_list=[loss, *grads] if step == 1 else [loss])
        np.savez(out / f"step{step}.npz", **{"@loss": np.asarray(value)},
                 **{f"@grad:{g}": np.asarray(v) for g, v in zip(grads, grad_values)},
                 **{n: np.array(scope.find_var(n).get_tensor()) for n in persistable})
    adamw = next(op for op in block.ops if op.type == "adamw")
    optimizer = {"type": "adamw", **{a: adamw.attr(a) for a in ("beta1", "beta2", "epsilon", "lazy_mode")}, "lr": LR,
                 "weight_decay": WEIGHT_DECAY}
    dropouts = sorted({round(op.attr("dropout_prob"), 6) for op in block.ops if op.type == "dropout"})
    (out / "meta.json").write_text(json.dumps({"loss": loss, "optimizer": optimizer, "seed": SEED,
                                               "dropout_ops": sum(op.type == "dropout" for op in block.ops),
                                               "dropout_rates": dropouts}))
    print(class_name, "losses", [float(np.load(out / f"step{s}.npz")["@loss"]) for s in (1, 2)], "dropout ops",
          sum(op.type == "dropout" for op in block.ops), dropouts, flush=True)


def write_fixture(class_name: str) -> str:
    """Paddle's float32 run of FIXTURE (startup seeded as tools/paddle_vision_training.py seeds it, its steps) and its
    float64 run from the same parameters and generator state, kept where float32 rounding exceeds half the tolerance."""
    import paddle
    from coverage.fixture_io import fresh_dir, serialize
    from paddle_vision_training import SEED as STARTUP_SEED
    from paddle_vision_training import STEPS, close, train
    paddle.enable_static()
    _static_weight_init()
    main, startup, forward, loss, names = build(class_name, FIXTURE)
    params = sorted(p.name for p in main.all_parameters())
    feed = {name: value for name, value in batch(FIXTURE).items() if name in names}
    init, grads, losses, final, rng_state = train(main, startup, loss, params, feed)
    main64, startup64, *_ = build(class_name, replace(FIXTURE, dtype="float64"))
    init64 = {name: value.astype("float64") for name, value in init.items()}
    _, grads64, losses64, final64, _ = train(main64, startup64, loss, params, feed, init64, rng_state)
    keep64 = not (close(grads64, grads) and close(final64, final) and close({"l": losses64}, {"l": losses}))
    out = fresh_dir(FIXTURE_DIR / class_name)
    (out / "forward.pb").write_bytes(serialize(forward))
    (out / "startup.pb").write_bytes(serialize(startup))
    np.savez_compressed(out / "feed.npz", **feed)
    for stem, values in (("init", init), ("grads", grads), ("final", final)) + (
            (("grads64", grads64), ("final64", final64)) if keep64 else ()):
        np.savez_compressed(out / f"{stem}.npz", **values)
    np.save(out / "losses.npy", losses)
    if keep64:
        np.save(out / "losses64.npy", losses64)
    adamw = next(op for op in main.global_block().ops if op.type == "adamw")
    meta = {"model": class_name, "paddle_version": paddle.__version__, "paddlenlp_version": _paddlenlp_version(),
            "sizes": {**FIXTURE.sizes, "batch": FIXTURE.batch, "length": FIXTURE.length}, "seed": STARTUP_SEED,
            "steps": STEPS, "dropout": DROPOUT["hidden_dropout_prob"], "optimizer": "adamw",
            "hyperparameters": {"learning_rate": LR, "beta1": adamw.attr("beta1"), "beta2": adamw.attr("beta2"),
                                "epsilon": FIXTURE.epsilon, "weight_decay": WEIGHT_DECAY},
            "loss": loss, "params": params, "float64_kept": keep64,
            "dropout_ops": sum(op.type == "dropout" for op in main.global_block().ops)}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{sum(v.size for v in init.values())} parameter values, losses {np.round(losses, 5).tolist()}" + (
        ", float64 kept" if keep64 else "")


def _paddlenlp_version() -> str:
    import paddlenlp
    return paddlenlp.__version__


if __name__ == "__main__":
    sys.path.insert(0, str(Path(sys.argv[2]).resolve()))
    if sys.argv[1] == "fixture":
        print(sys.argv[3], write_fixture(sys.argv[3]), flush=True)
    else:
        paddle_step(Path(sys.argv[3]).resolve() / sys.argv[4], sys.argv[4])

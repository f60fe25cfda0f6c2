"""Text generation as users export it, checked in gradc against Paddle 3.3.1: a decoding loop (a `while` op) that
feeds each sampled token back, its key/value caches growing a step at a time. Two kinds of program:

- PaddleNLP's own export (3.0.0b4, `GenerationMixin.to_static`, which jit-saves `sample_d2s`) of a causal LM built
  from its config at tools/paddlenlp_export.py's tiny size (seed 0, fused kernels off), `use_top_p` False: top_k is
  an input, 1 decodes greedily (an argmax branch), more samples with `paddle.multinomial` from the top_k tokens. Its
  `use_top_p` True export writes `pd_op.top_p_sampling`, which Paddle 3.3.1 has no CPU kernel for: CLASS@topp
  exports it with that op replaced by what PaddleNLP's CPU `sample` does (its TopPProcess filter, then multinomial),
  top_p and temperature inputs, a batch of 2 (its top_p tensor takes the traced batch, [0, 1] for -1). CLASS@eos
  makes the model's eos id the first token greedy decoding gives the first row, so that row stops at once.
- SAMPLER and BEAM (tools/paddle_decode_loops.py): decoding loops made of Paddle's own layers, a
  `paddle.nn.TransformerDecoder` over a fed memory with its incremental caches carried by
  `paddle.static.nn.while_loop`: sampling with temperature, top-k and top-p as PaddleNLP's CPU `sample` filters (top_k
  1 greedy), and a beam search of 3 beams (its caches reordered by the chosen beams, the tokens by gather_tree).

Each case is run with two feeds, greedy and sampled (SEED: paddle.seed before Paddle's run, gradc.seed before gradc's;
BEAM has one); prompts of 6 tokens, the second row left-padded by 2 (attention mask 0), 8 new tokens.

    /path/to/paddle/python tools/paddle_generation.py paddle DEPS OUT_DIR [CASE ...]   # export, run in Paddle
    PYTHONPATH=src .venv/bin/python tools/paddle_generation.py gradc OUT_DIR            # run in gradc, compare
    /path/to/paddle/python tools/paddle_generation.py fixture DEPS                      # tests/data/paddle/generation

With FLAGS_enable_pir_api=0 the Paddle step saves legacy programs (inference.pdmodel), as Paddle 2 users shipped them.

DEPS holds PaddleNLP as for tools/paddlenlp_export.py. The Paddle step writes OUT_DIR/<case>/ (inference.json,
inference.pdiparams, feed_<mode>.npz, paddle_<mode>.npz: Paddle's outputs in fetch order); the fixture step writes
tests/data/paddle/generation/<case>/ at a smaller size (vocabulary 100, hidden 32) for tests/test_generation_loops.py
(<case>-legacy with FLAGS_enable_pir_api=0).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
from paddle_decode_loops import DECODE_LOOPS, export_decode_loop

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "generation"
CASES = ["GPTForCausalLM", "GPTForCausalLM@eos", "GPTForCausalLM@topp", "LlamaForCausalLM", "LlamaForCausalLM@topp",
         "ChatGLMv2ForCausalLM", "Qwen2ForCausalLM", "GemmaForCausalLM", "MixtralForCausalLM", "QWenForCausalLM",
         "BloomForCausalLM", *DECODE_LOOPS]
FIXTURES = ["GPTForCausalLM@eos", *DECODE_LOOPS]
LEGACY_FIXTURES = ["GPTForCausalLM@eos", "BEAM"]   # written <case>-legacy with FLAGS_enable_pir_api=0
SMALL = dict(vocab_size=100, hidden_size=32, num_attention_heads=2, intermediate_size=64, max_position_embeddings=32,
             num_key_value_heads=2, head_dim=16)
PROMPT, PAD, NEW_TOKENS, SEED = 6, 2, 8, 7
MODES = {"greedy": dict(top_k=1, top_p=1.0, temperature=1.0), "sampled": dict(top_k=5, top_p=0.8, temperature=0.7)}


def prompt(vocabulary: int) -> dict[str, np.ndarray]:
    """Two prompts, the second left-padded (pad id 0, attention mask 0), and their positions."""
    ids = np.random.default_rng(0).integers(3, vocabulary, (2, PROMPT)).astype("int64")
    ids[1, :PAD] = 0
    mask = (ids != 0).astype("int64")
    return {"input_ids": ids, "attention_mask": mask, "position_ids": np.tile(np.arange(PROMPT), (2, 1))}


def paddlenlp_model(class_name: str, small: bool):
    """A tiny PaddleNLP causal LM (seed 0) with its generation's ids: bos 1, eos 2, pad 0."""
    import paddle
    from paddlenlp_export import TINY, _stub_unused_imports
    _stub_unused_imports()
    import paddlenlp.transformers as transformers
    model_class = getattr(transformers, class_name)
    config_class = model_class.config_class
    sizes = {**TINY, **(SMALL if small else {}), "use_cache": True, "bos_token_id": 1, "eos_token_id": 2,
             "pad_token_id": 0}
    paddle.seed(0)
    model = model_class(config_class(**{k: v for k, v in sizes.items()
                                        if not isinstance(getattr(config_class, k, None), property)}))
    model.eval()
    return model


def export_paddlenlp(out: Path, case: str, small: bool) -> dict[str, dict]:
    """PaddleNLP's to_static of CASE; -> each mode's feed."""
    import paddle
    class_name, _, variant = case.partition("@")
    model = paddlenlp_model(class_name, small)
    given = prompt(model.config.vocab_size)
    eos = model.config.eos_token_id
    if variant == "eos":   # the first row's first greedy token ends it
        logits = model(paddle.to_tensor(given["input_ids"][:1]), use_cache=False)
        eos = int(paddle.argmax((logits[0] if isinstance(logits, tuple) else logits)[0, -1]))
    if _legacy_static_paths():   # the model again (the same weights), its layers built with the shim's functions
        model = paddlenlp_model(class_name, small)
    model.config.eos_token_id = model.generation_config.eos_token_id = eos
    top_p = variant == "topp"
    if top_p:   # its top_p tensor is paddle.full([batch, 1]) of the traced batch: [0, 1] for a batch of -1
        _top_p_on_cpu()
        specs = model._get_model_inputs_spec(None)
        model._get_model_inputs_spec = lambda dtype: {name: paddle.static.InputSpec([2, None], "int64", name)
                                                      for name in specs}
    model.to_static(str(out / "inference"), {"use_top_p": top_p, "bos_token_id": 1, "eos_token_id":
                                             model.config.eos_token_id, "pad_token_id": 0})
    knobs = {mode: {"top_p": np.array([knobs["top_p"]], "float32"),
                    "temperature": np.array([knobs["temperature"]], "float32")} if top_p else
             {"top_k": np.array([knobs["top_k"]])} for mode, knobs in MODES.items()}
    return {mode: {**given, "max_new_tokens": np.array([NEW_TOKENS]), **knobs[mode]} for mode in MODES}


def _top_p_on_cpu() -> None:
    """`paddle.tensor.top_p_sampling` (GPU only in Paddle 3.3.1) as PaddleNLP's CPU `sample` does it: its
    TopPProcess filter (sort, cumsum, set_value, scatter, where) and paddle.multinomial."""
    import paddle
    from paddlenlp.generation.logits_process import TopPProcess

    def top_p_sampling(probs, top_p, *args, **kwargs):
        ids = paddle.multinomial(TopPProcess(probs, top_p, 1))
        return paddle.index_sample(probs, ids), ids

    paddle.tensor.top_p_sampling = top_p_sampling


def run_in_paddle(out: Path, feeds: dict[str, dict]) -> None:
    """Each mode's feed and Paddle's outputs of the saved program, seeded SEED."""
    import paddle
    paddle.enable_static()
    executor = paddle.static.Executor(paddle.CPUPlace())
    program, names, fetches = paddle.static.load_inference_model(str(out / "inference"), executor)
    for mode, feed in feeds.items():
        feed = {name: feed[name] for name in names}
        paddle.seed(SEED)
        np.savez(out / f"feed_{mode}.npz", **feed)
        np.savez(out / f"paddle_{mode}.npz", *executor.run(program, feed=feed, fetch_list=fetches))


def paddle_case(out: Path, case: str, small: bool = False) -> str:
    import paddle
    paddle.disable_static()   # the layers are built in dygraph (the run before left static mode on)
    out.mkdir(parents=True, exist_ok=True)
    feeds = (export_decode_loop(out, case, MODES, NEW_TOKENS, _legacy_static_paths) if case in DECODE_LOOPS
             else export_paddlenlp(out, case, small))
    run_in_paddle(out, feeds)
    return "OK"


def _legacy_static_paths() -> bool:
    """Whether this saves a legacy inference.pdmodel (FLAGS_enable_pir_api=0); if so, paddle.matmul, triu, ... (no
    legacy static path of their own in 3.3.1) get the shim's, after PaddleNLP's imports and before the layers."""
    legacy = os.environ.get("FLAGS_enable_pir_api") == "0"
    if legacy:
        from paddle_legacy_shim import install
        install()
    return legacy


def saved_program(folder: Path) -> Path:
    """The program paddle.jit.save wrote: PIR's inference.json, or a legacy inference.pdmodel."""
    return next(folder / name for name in ("inference.json", "inference.pdmodel") if (folder / name).exists())


def gradc_outputs(folder: Path, mode: str) -> list[np.ndarray]:
    """gradc's outputs of folder's saved program on its mode's feed, seeded SEED."""
    import gradc
    from gradc.io.pdiparams import read_params
    program = gradc.load(saved_program(folder))
    scope = gradc.Scope()
    saved = folder / "inference.pdiparams"
    for name, value in (read_params(saved, program) if saved.exists() else {}).items():
        scope[name] = value
    fetches = [op.input("X")[0] for op in program.global_block.ops if op.type == "fetch"]
    gradc.seed(SEED)
    return gradc.Executor().run(program, dict(np.load(folder / f"feed_{mode}.npz")), fetches, scope)


def compare(folder: Path) -> dict:
    """Per mode: whether the ids are Paddle's, and how far any float output (the scores) is, relative."""
    import gradc
    report = {"ops": gradc.load(saved_program(folder)).num_ops()}
    for mode in sorted(p.stem.removeprefix("paddle_") for p in folder.glob("paddle_*.npz")):
        paddles = np.load(folder / f"paddle_{mode}.npz")
        ours = gradc_outputs(folder, mode)
        ids = [i for i, value in enumerate(ours) if np.asarray(value).dtype.kind == "i"]
        floats = [i for i in range(len(ours)) if i not in ids]
        report[mode] = {"ids_equal": all(np.array_equal(ours[i], paddles[f"arr_{i}"]) for i in ids),
                        "shape": list(np.shape(ours[ids[0]])),
                        "floats": max((float(np.abs(ours[i] - paddles[f"arr_{i}"]).max() /
                                             max(np.abs(paddles[f"arr_{i}"]).max(), 1e-30)) for i in floats),
                                      default=None)}
    return report


def main() -> None:
    from suite_export import export_each, in_child
    if in_child(Path(sys.argv[1]).resolve()):   # one case: DEPS OUT_DIR CASE
        print(paddle_case(Path(sys.argv[2]) / sys.argv[3].replace("@", "-"), sys.argv[3]), flush=True)
        return
    step = sys.argv[1]
    if step == "gradc":
        for folder in sorted(p.parent for p in Path(sys.argv[2]).glob("*/inference.pdiparams")):
            print(folder.name, json.dumps(compare(folder)), flush=True)
    elif step == "fixture":
        sys.path.insert(0, str(Path(sys.argv[2]).resolve()))
        legacy = os.environ.get("FLAGS_enable_pir_api") == "0"
        for case in LEGACY_FIXTURES if legacy else FIXTURES:
            folder = FIXTURE_DIR / (case.replace("@", "-") + ("-legacy" if legacy else ""))
            print(case, paddle_case(folder, case, small=True), flush=True)
            for leftover in folder.glob("*.pdiparams.info"):
                leftover.unlink()
    else:
        deps, out_dir = Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve()
        export_each(__file__, deps, out_dir, sys.argv[4:] or CASES, timeout=600)


if __name__ == "__main__":
    main()

"""Text generation programs as Paddle 3.3.1 saves them (tools/paddle_generation.py): a decoding `while` loop feeding
each token back with growing key/value caches. PaddleNLP's own export of a GPT (`to_static`: top_k an input, 1 an
argmax branch, more a multinomial draw; its eos id ends the first row at once) and loops of Paddle's Transformer
decoder layers, one sampling with temperature, top-k and top-p, one a beam search of 3 beams (caches gathered by
beam, tokens traced back by gather_tree); as PIR programs and (`-legacy`) as legacy ones. gradc, seeded as Paddle
was, gives Paddle's tokens and scores."""

import numpy as np
import pytest

import gradc
from fixtures import DATA

FOLDER = DATA / "generation"
SEED = 7   # tools/paddle_generation.py's


def generate(case: str, mode: str, seed: int = SEED) -> list[np.ndarray]:
    from gradc.io.pdiparams import read_params
    folder = FOLDER / case
    legacy = folder / "inference.pdmodel"
    program = gradc.load(legacy if legacy.exists() else folder / "inference.json")
    assert gradc.verify(program) == []
    scope = gradc.Scope()
    saved = folder / "inference.pdiparams"
    for name, value in (read_params(saved, program) if saved.exists() else {}).items():
        scope[name] = value
    fetches = [op.input("X")[0] for op in program.global_block.ops if op.type == "fetch"]
    gradc.seed(seed)
    return gradc.Executor().run(program, dict(np.load(folder / f"feed_{mode}.npz")), fetches, scope)


RUNS = sorted((run.parent.name, run.stem.removeprefix("paddle_")) for run in FOLDER.glob("*/paddle_*.npz"))


def test_the_fixtures_cover_greedy_sampled_and_beam_search():
    assert RUNS == [("BEAM", "beam"), ("BEAM-legacy", "beam"), ("GPTForCausalLM-eos", "greedy"),
                    ("GPTForCausalLM-eos", "sampled"), ("GPTForCausalLM-eos-legacy", "greedy"),
                    ("GPTForCausalLM-eos-legacy", "sampled"), ("SAMPLER", "greedy"), ("SAMPLER", "sampled")]


@pytest.mark.parametrize("case, mode", RUNS)
def test_generated_tokens_are_paddles(case, mode):
    paddles = np.load(FOLDER / case / f"paddle_{mode}.npz")
    outputs = generate(case, mode)
    assert len(outputs) == len(paddles.files)
    for i, value in enumerate(outputs):
        if value.dtype.kind == "i":
            np.testing.assert_array_equal(value, paddles[f"arr_{i}"])
        else:   # the generated tokens' (beams') summed log-probabilities
            np.testing.assert_allclose(value, paddles[f"arr_{i}"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["GPTForCausalLM-eos", "SAMPLER"])
def test_sampling_draws_from_the_seeded_stream_and_greedy_does_not(case):
    assert not np.array_equal(generate(case, "sampled", SEED)[0], generate(case, "sampled", SEED + 1)[0])
    np.testing.assert_array_equal(generate(case, "greedy", SEED)[0], generate(case, "greedy", SEED + 1)[0])


def test_a_beam_search_saved_for_inference_differentiates_through_every_iteration():
    """A saved inference program's while is test-mode, which keeps no step scopes (and whose grad Paddle refuses):
    differentiated, it runs in training mode. The summed beam scores' gradients (float64) match central differences:
    the beams chosen stay put under a 1e-6 step."""
    from gradc.gradcheck import float64_copy
    from gradc.io.pdiparams import read_params
    folder = FOLDER / "BEAM-legacy"
    program = gradc.load(folder / "inference.pdmodel")
    assert [op.attrs["is_test"] for op in program.global_block.ops if op.type == "while"] == [True]
    scores = [op.input("X")[0] for op in program.global_block.ops if op.type == "fetch"][1]
    wide, params, feed = float64_copy(program, read_params(folder / "inference.pdiparams", program),
                                      dict(np.load(folder / "feed_beam.npz")))
    block = wide.global_block
    block.create_var("loss", [], block.var(scores).dtype)
    block.append_op("reduce_sum", {"X": [scores]}, {"Out": ["loss"]}, {"reduce_all": True})
    forward = wide.clone()
    checked = ["linear_19.b_0", "layer_norm_5.w_0", "embedding_1.w_0"]

    def run(program, values, fetches):
        scope = gradc.Scope()
        for name, value in values.items():
            scope[name] = value
        return gradc.Executor().run(program, feed, fetches, scope)

    pairs = gradc.append_backward(wide, "loss", parameter_list=checked)
    grads = run(wide, params, [grad for _, grad in pairs])
    rng = np.random.default_rng(0)
    for (name, _), grad in zip(pairs, grads):
        assert np.abs(grad).max() > 1e-3, name   # all zero when the loop kept no iterations
        for index in [np.unravel_index(i, grad.shape) for i in rng.choice(grad.size, 2, replace=False)]:
            shifted = [params[name].copy() for _ in range(2)]
            shifted[0][index] += 1e-6
            shifted[1][index] -= 1e-6
            up, down = (run(forward, {**params, name: value}, ["loss"])[0] for value in shifted)
            np.testing.assert_allclose(grad[index], (up - down) / 2e-6, rtol=1e-5, atol=1e-7, err_msg=name)

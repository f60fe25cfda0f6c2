"""An LLM fine-tuner's week (docs/tools.md): a tiny LLaMA-style decoder built with Paddle 3.3.1's ops
(tools/paddle_user_week17.py: RMSNorm and rotary embeddings by hand, a -1e4 causal mask, SwiGLU, tied embeddings,
cross-entropy with ignore_index), its frozen base and LoRA adapters on q and v trained with AdamW, warmup + cosine and
global-norm clipping, the adapters merged for greedy generation with a key/value cache (step by step with `gradc run`,
and as one while loop), legacy and PIR; each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week17"
META = json.loads((WEEK / "meta.json").read_text())
SCHEDULE = ("LinearWarmup(learning_rate=CosineAnnealingDecay(learning_rate=0.05, T_max=6), warmup_steps=2, "
            "start_lr=0.0, end_lr=0.05)")
ADAMW = ("--optimizer", "adamw", "--weight-decay", "0.01", "--no-decay", "*_B", "--clip-global-norm", "1.0")
CACHES = [f"cache_{kind}{layer}" for layer in range(2) for kind in "kv"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files as the user has them: the fixture's programs unpacked beside its arrays."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week17"))
    return out


def _train(files, program, *extra):
    """gradc train of a compiled program over data.npz in batches of 2 from Paddle's startup and the pretrained base;
    the step losses and the parameters it saved."""
    startup = str(program).replace(".pb", ".startup.pb").replace(".json", ".startup.json")
    run = gradc_cli("train", program, "--startup", files / "startup.pb", "--startup", startup, "--params",
                    files / "base.npz", "--data", files / "data.npz", "--batch-size", 2, "--json", "--log-every", 1,
                    "--save-params", program.with_suffix(".npz"), *extra)
    assert run.returncode == 0, run.stderr
    return _step_losses(run.stdout), dict(np.load(program.with_suffix(".npz")))


def _step_losses(lines: str) -> list[float]:
    return [next(iter(line["values"].values())) for line in map(json.loads, lines.splitlines())
            if line["event"] == "step"]


@pytest.fixture(scope="module")
def trained(files):
    """lora.pb compiled with only the adapters trained (--param '*lora*') and Paddle's AdamW settings, the schedule
    written by the host (--lr-schedule to train too), trained 6 steps."""
    compiled = gradc_cli("compile", files / "lora.pb", "-o", files / "train.pb", "--param", "*lora*", *ADAMW,
                         "--lr-schedule", SCHEDULE)
    assert compiled.returncode == 0, compiled.stderr
    return _train(files, files / "train.pb", "--lr-schedule", SCHEDULE)


def test_only_the_adapters_train_to_paddles_losses_and_the_base_stays_bit_identical(trained):
    """Before, --param took names only: the 8 adapters of this 2-layer model were 8 options (64 for a 7B model's 32
    layers), and '*lora*' was refused ("parameter(s) not declared in block 0: *lora*"). A legacy .pb keeps no
    trainable=False (Paddle's own parse of it trains every parameter too), so without --param the 20 frozen base
    weights would train. Now a glob names them: the 6 losses are Paddle's minimize's (3.5012 ... 3.6499), every base
    weight is the pretrained one bit for bit, and the adapters are Paddle's after 6 steps (to 1.2e-5: Adam divides
    float32 rounding by the small second moments of B's first steps)."""
    losses, params = trained
    np.testing.assert_allclose(losses, META["losses"], rtol=1e-6)
    base, adapters = np.load(WEEK / "base.npz"), np.load(WEEK / "adapters.npz")
    assert all(np.array_equal(params[name], base[name]) for name in base.files)
    for name in (name for name in adapters.files if "@" not in name):
        assert not np.allclose(adapters[name], adapters[f"{name}@initial"], atol=0.05), name   # they did move
        np.testing.assert_allclose(params[name], adapters[name], atol=2e-5, err_msg=name)


def _batch_and_params(files):
    """The first batch, and the base with Paddle's trained adapters, as .npz files."""
    data, adapters = np.load(files / "data.npz"), np.load(WEEK / "adapters.npz")
    np.savez(files / "batch.npz", tokens=data["tokens"][:2], labels=data["labels"][:2])
    np.savez(files / "all.npz", **np.load(files / "base.npz"),
             **{name: adapters[name] for name in adapters.files if "@" not in name})
    return files / "batch.npz", files / "all.npz"


def test_name_globs_of_compile_and_check(files):
    """--param, --no-grad and check's --wrt take globs; a glob that matches nothing is one line naming the names.
    (l0.attn_norm gets no gradient with the projections frozen: Paddle marked its output stop_gradient, every input
    of it being frozen, and the file keeps that mark; embed, read beside the token ids into a stop_gradient output, is
    told frozen by it since week 59.)"""
    run = gradc_cli("compile", files / "lora.pb", "-o", files / "none.pb", "--param", "*loar*")
    assert run.returncode == 1
    assert run.stderr.startswith("gradc: error: --param '*loar*' matches no parameter of block 0 (of its 28: embed, ")
    run = gradc_cli("compile", files / "lora.pb", "-o", files / "no_grad.pb", "--no-grad", "l?.w*", "--json")
    graded = [row["parameter"] for row in json.loads(run.stdout)["parameters"]]
    adapters = ["lora_q_A", "lora_q_B", "lora_v_A", "lora_v_B"]
    assert graded == ["final_norm", *[f"l0.{name}" for name in adapters], "l0.mlp_norm", "l1.attn_norm",
                      *[f"l1.{name}" for name in adapters], "l1.mlp_norm"]
    batch, params = _batch_and_params(files)
    run = gradc_cli("check", files / "lora.pb", "--feed", batch, "--params", params,
                    "--wrt", "*lora_v*", "--max-elements", 3)
    assert run.returncode == 0, run.stderr
    assert [line.split()[0] for line in run.stdout.splitlines()[:-1]] == ["l0.lora_v_A", "l0.lora_v_B",
                                                                          "l1.lora_v_A", "l1.lora_v_B"]


def test_recompute_and_the_schedule_as_ops_give_the_same_training(files, trained):
    """--recompute auto (12 segments of the 215 forward ops) trains bit for bit as without it, and the warmup + cosine
    written as ops (--lr-schedule cosine --warmup-steps 2) gives Paddle's rates: both to Paddle's losses."""
    runs = {}
    for name, extra in (("ops", ()), ("recomputed", ("--recompute", "auto"))):
        compiled = gradc_cli("compile", files / "lora.pb", "-o", files / f"{name}.pb", "--param", "*lora*", *ADAMW,
                             "--lr", "0.05", "--lr-schedule", "cosine", "--decay-steps", 6, "--warmup-steps", 2, *extra)
        assert compiled.returncode == 0, compiled.stderr
        runs[name] = _train(files, files / f"{name}.pb")
    assert "recompute: 12 segments" in compiled.stdout
    assert runs["ops"][0] == runs["recomputed"][0]
    assert all(np.array_equal(runs["ops"][1][name], runs["recomputed"][1][name]) for name in runs["ops"][1])
    np.testing.assert_allclose(runs["ops"][0], META["losses"], rtol=1e-6)


def test_check_nan_lets_a_causal_masks_minus_inf_through_and_still_catches_a_fed_one(files, trained):
    """Before, gradc train --check-nan stopped at the first step's fill_any_like (op 174) writing the second layer's
    -inf mask (paddle.where with full_like(-inf), as masked_fill writes it): "wrote -Inf ... it read X=tmp_53", so
    no model with an -inf causal mask could be watched for NaN. Now an infinity the op's attributes ask for passes, and
    so does one an earlier op's checked output carried in (the where, the scores); the softmax absorbs it, the steps
    give Paddle's losses. A NaN, or an infinity fed in, is still caught where it is first read."""
    common = ("--startup", files / "startup.pb", "--startup", files / "train.startup.pb", "--params",
              files / "base.npz", "--batch-size", 2, "--lr-schedule", SCHEDULE, "--check-nan")
    run = gradc_cli("train", files / "train.pb", *common, "--data", files / "data.npz", "--json", "--log-every", 1)
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(_step_losses(run.stdout), META["losses"], rtol=1e-6)
    scope = gradc.Scope()
    gradc.load_params(scope, files / "train.npz", gradc.load(files / "lora.pb"))
    scope["embed"] = np.where(np.arange(32)[:, None] == 5, np.float32(np.inf), scope["embed"]).astype(np.float32)
    executor = gradc.Executor()
    executor.check_finite = True
    data = np.load(files / "data.npz")
    with pytest.raises(gradc.ExecutionError, match=r"block 0, op 0 \(lookup_table_v2\) wrote Inf into "
                                                   r"'embedding_0.tmp_0'"):
        executor.run(gradc.load(files / "lora.pb"), feed={"tokens": np.full((2, 8), 5), "labels": data["labels"][:2]},
                     fetch_list=[META["loss"]], scope=scope)


def test_precision_takes_the_masks_minus_inf_for_exact(files):
    """Before, gradc precision of the LoRA program put the -inf mask's fill_any_like (op 174) first, its error and
    growth inf (-inf - -inf in float32 against float64), and every op reading the mask after it had an infinite
    input error, growth 0. Now equal infinities are no error: every error and growth is finite, the largest value is
    taken over finite values, and the loss's softmax is there with its rounding (1.4e-6, growth 2.2, the top row on an
    AVX-512 machine; 3.9e-7 where numpy and OpenBLAS run their AVX2 kernels, whose top row is an elementwise_mul at
    growth 1.8: the ranking is rounding's)."""
    batch, params = _batch_and_params(files)
    run = gradc_cli("precision", files / "lora.pb", "--feed", batch, "--params", params,
                    "--top", 500, "--json")
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)["rows"]
    assert all(np.isfinite(row["error"]) and np.isfinite(row["inputs"]) for row in rows)
    assert np.isfinite(rows[0]["growth"])
    assert next(row for row in rows if row["type"] == "softmax_with_cross_entropy")["error"] < 3e-6
    assert next(row for row in rows if row["op"] == 174)["error"] == 0


def test_token_labels_read_through_cross_entropys_unsqueeze_are_checked_and_scored(files, trained):
    """F.cross_entropy of logits [B, S, V] and labels [B, S] feeds the op an unsqueezed copy of the labels. Before,
    gradc took that copy for the labels, found no data array of its name, and so: gradc evaluate --topk 1,5 printed the
    loss and no accuracy at all (no word why), and a label outside the vocabulary went unchecked up front, failing in
    the kernel at its batch (step 5 here). Now the labels are followed back through the reshape: the accuracy of the
    78 scored tokens (ignore_index -100 left out) is numpy's over the same logits, and a bad label is refused first."""
    evaluated = gradc_cli("evaluate", files / "train.pb", "--params", files / "train.npz", "--data",
                          files / "data.npz", "--batch-size", 2, "--topk", "1,5", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    result = json.loads(evaluated.stdout)
    scope = gradc.Scope()
    gradc.load_params(scope, files / "train.npz", gradc.load(files / "lora.pb"))
    data = dict(np.load(files / "data.npz"))
    (logits,) = gradc.Executor().run(gradc.load(files / "lora.pb"), feed=data, fetch_list=[META["logits"]],
                                     scope=scope)
    labels = data["labels"].reshape(-1)
    kept = labels != -100
    rank = (logits.reshape(-1, 32)[kept] > logits.reshape(-1, 32)[kept, labels[kept]][:, None]).sum(1)
    assert kept.sum() == 78
    assert result["acc_top1"] == pytest.approx(np.mean(rank < 1)) and result["acc_top5"] == pytest.approx(
        np.mean(rank < 5))
    data["labels"][9, 3] = 40
    np.savez(files / "bad.npz", **data)
    run = gradc_cli("train", files / "train.pb", "--startup", files / "startup.pb", "--startup",
                    files / "train.startup.pb", "--params", files / "base.npz", "--data", files / "bad.npz",
                    "--batch-size", 2, "--lr-schedule", SCHEDULE)
    assert run.returncode == 1
    assert run.stderr.strip().endswith("array 'labels' holds the label 40 (example 10), but block 0, op 213 "
                                       "(softmax_with_cross_entropy) has 32 classes (the last dim of "
                                       "'matmul_v2_26.tmp_0'): a label is 0 to 31, or -100 (its ignore_index) to "
                                       "leave an example out")


def test_paddles_own_pir_training_program_trains_from_its_startup(files):
    """Before, Paddle's PIR minimize program (AdamW) could not be trained with its startup program: its accumulators
    are persistable `pd_op.data` ops, which gradc took for inputs ("data.npz has no array
    'l1.lora_v_B_moment1_0', which block 0, op 361 (adamw) reads"). Now they are state: 6 steps give Paddle's PIR
    losses. The PIR forward keeps the base's stop_gradient, so compile freezes it with no --param; gradc info, which
    called every persistable var that is no parameter "optimizer state, statistics", now says what the program does
    with each: the 20 frozen weights are read only, the accumulators Paddle's minimize adds optimizer state."""
    expected = np.load(WEEK / "pir_losses.npy")
    run = gradc_cli("train", files / "pir_train.json", "--startup", files / "pir_startup.json", "--params",
                    files / "base.npz", "--data", files / "data.npz", "--batch-size", 2, "--lr-schedule", SCHEDULE,
                    "--json", "--log-every", 1)
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(_step_losses(run.stdout), expected, rtol=1e-6)
    info = {name: gradc_cli("info", files / f"{name}.json").stdout for name in ("pir_forward", "pir_train")}
    assert ("parameters: 8 (512 values); other persistable vars: 20 (read only: frozen weights 20)"
            in info["pir_forward"])
    assert ("other persistable vars: 53 (optimizer state 33; read only: frozen weights 20)" in info["pir_train"]
            and "inputs:\n  labels  int64[-1, 8]\n  tokens  int64[-1, 8]\n" in info["pir_train"])
    compiled = gradc_cli("compile", files / "pir_forward.json", "-o", files / "pir.pb", *ADAMW, "--json")
    assert sorted(row["parameter"] for row in json.loads(compiled.stdout)["parameters"]) == sorted(
        name for name in np.load(WEEK / "adapters.npz").files if "@" not in name)


def _merged(params: dict) -> dict:
    """The base with each adapter merged in: W + A B * alpha / rank (rank 4, alpha 8)."""
    merged = {name: value for name, value in params.items() if "lora" not in name}
    for layer in range(2):
        for proj in "qv":
            a, b = (params[f"l{layer}.lora_{proj}_{m}"].astype(np.float64) for m in "AB")
            merged[f"l{layer}.w{proj}"] = (params[f"l{layer}.w{proj}"] + a @ b * 2.0).astype(np.float32)
    return merged


def test_greedy_generation_step_by_step_with_gradc_run(files, trained):
    """Before, a decoding step's `gradc run --out` held its caches as concat_4.tmp_0, ..., and the next step is fed
    cache_k0, ...: every step needed Python between the runs. Now --fetch NAME=KEY stores a value as KEY, so each
    step's --out is the next step's --feed; the 6 tokens of the model merged from gradc's adapters are Paddle's, and
    the prefill's logits, merged from Paddle's adapters, Paddle's to 2e-6."""
    np.savez(files / "merged.npz", **_merged(trained[1]))
    generation = np.load(WEEK / "generation.npz")
    np.savez(files / "state0.npz", tokens=generation["prompt"],
             **{name: np.zeros((2, 2, 0, 8), np.float32) for name in CACHES})
    fetches = [f"{META['step']['next_token']}=tokens",
               *(f"{var}={name}" for var, name in zip(META["step"]["caches"], CACHES))]
    for step in range(6):
        run = gradc_cli("run", files / "step.pb", "--params", files / "merged.npz", "--feed",
                        files / f"state{step}.npz", *(arg for fetch in fetches for arg in ("--fetch", fetch)),
                        "--out", files / f"state{step + 1}.npz")
        assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"{META['step']['next_token']} (as tokens): int64[2, 1]")
    tokens = np.concatenate([np.load(files / f"state{step}.npz")["tokens"] for step in range(1, 7)], axis=1)
    np.testing.assert_array_equal(tokens, generation["tokens"])
    adapters = np.load(WEEK / "adapters.npz")
    np.savez(files / "paddle_merged.npz", **_merged({**np.load(WEEK / "base.npz"), **adapters}))
    prefill = gradc_cli("run", files / "step.pb", "--params", files / "paddle_merged.npz", "--feed",
                        files / "state0.npz",
                        "--fetch", f"{META['step']['logits']}=logits", "--out", files / "prefill.npz")
    assert prefill.returncode == 0, prefill.stderr
    assert np.abs(np.load(files / "prefill.npz")["logits"] - generation["prefill_logits"]).max() < 2e-6
    twice = gradc_cli("run", files / "step.pb", "--params", files / "merged.npz", "--feed", files / "state0.npz",
                      "--fetch", f"{META['step']['logits']}=x", "--fetch", f"{META['step']['caches'][0]}=x")
    assert twice.returncode == 1 and "two values would be stored as x in --out" in twice.stderr


def test_generation_as_one_while_loop_and_the_merged_pir_export(files, trained):
    """Held as found: the greedy while loop (its caches growing a position an iteration) gives Paddle's tokens from
    the adapters gradc trained; Paddle's jit.save of the merged model (PIR, fused_rms_norm) runs in gradc to its
    Predictor's logits."""
    np.savez(files / "merged.npz", **_merged(trained[1]))
    generation = np.load(WEEK / "generation.npz")
    np.savez(files / "prompt.npz", prompt=generation["prompt"])
    run = gradc_cli("run", files / "generate.pb", "--params", files / "merged.npz", "--feed", files / "prompt.npz",
                    "--fetch", f"{META['generate']}=tokens", "--out", files / "generated.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_array_equal(np.load(files / "generated.npz")["tokens"], generation["tokens"])
    pir = np.load(WEEK / "pir.npz")
    program = gradc.load(files / "merged.json")
    assert any(op.type == "fused_rms_norm_quant" for op in program.global_block.ops)
    scope = gradc.Scope()
    gradc.load_params(scope, files / "merged.pdiparams", program)
    (logits,) = gradc.Executor().run(program, feed={"tokens": pir["tokens"]}, fetch_list=["fetch_name_0"],
                                     scope=scope)
    assert np.abs(logits - pir["logits"]).max() < 5e-6

"""A vision-language retrieval engineer's week (docs/tools.md): a small CLIP-style dual encoder (a tiny ViT image tower,
a causal text tower picking the end token by argmax and take_along_axis, L2-normalised projections, a learnable
temperature clipped at 100, the symmetric InfoNCE loss) built with Paddle 3.3.1's layers
(tools/paddle_user_week35.py), trained by AdamW with warmup and cosine, decay left off biases, norms and the
temperature, and global-norm clipping; retrieval recall and zero-shot classification, each tower exported (legacy and
PIR), a linear probe on the frozen image tower. Each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week35"
META = json.loads((WEEK / "meta.json").read_text())
CLIP, PROBE = META["clip"], META["probe"]
SCHEDULE = ("LinearWarmup(learning_rate=CosineAnnealingDecay(0.01, T_max=4), warmup_steps=2, start_lr=0.0, "
            "end_lr=0.01)")
NO_DECAY = [arg for glob in ("*.b_*", "layer_norm*", "embedding*", "image_tower*", "logit_scale")
            for arg in ("--no-decay", glob)]
ADAMW = ("--optimizer", "adamw", "--lr", 0.01, "--weight-decay", 0.1, "--clip-global-norm", 1.0, *NO_DECAY)
# the attention layers' key biases: softmax ignores a shift of every key's score, so their gradient is 0 but for
# float32 rounding, and AdamW's steps of it are the rounding's (as week 33 found)
KEY_BIASES = {"linear_1.b_0", "linear_8.b_0"}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files as the user has them, the CLIP model compiled with the warmup-cosine schedule as ops and with
    Paddle's scheduler (stepped by gradc train)."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week35"))
    compiled = gradc_cli("compile", out / "clip.pb", "-o", out / "clip_adamw.pb", *ADAMW, "--lr-schedule", "cosine",
                         "--warmup-steps", 2, "--decay-steps", 4)
    assert compiled.returncode == 0, compiled.stderr
    compiled = gradc_cli("compile", out / "clip.pb", "-o", out / "clip_host.pb", *ADAMW, "--lr-schedule", SCHEDULE)
    assert compiled.returncode == 0, compiled.stderr
    data = np.load(out / "data.npz")
    np.savez(out / "batch.npz", image=data["image"][:8], tokens=data["tokens"][:8])
    return out


def _train(files, program, *options, save="trained_gradc.npz"):
    """gradc train, 6 steps of 8 pairs from Paddle's startup program (gradc's run of it gives Paddle's initial
    weights exactly): the losses."""
    run = gradc_cli("train", files / program, "--startup", files / "clip_startup.pb", "--data", files / "data.npz",
                    "--batch-size", 8, "--json", "--log-every", 1, "--save-params", files / save, *options)
    assert run.returncode == 0, run.stderr
    steps = [line for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "step"]
    return [step["values"][CLIP["loss"]] for step in steps]


def _assert_paddles_weights(saved, paddle, names):
    for name in names:
        np.testing.assert_allclose(saved[name], paddle[name], atol=1e-3 if name in KEY_BIASES else 2e-6, err_msg=name)


def test_compiled_clip_trains_to_paddles_steps_with_warmup_cosine_and_decay_left_out(files):
    """gradc compile --optimizer adamw ... --no-decay (biases, norms, embeddings, class token and positions, the
    temperature) --lr-schedule cosine --warmup-steps 2 --decay-steps 4 is Paddle's LinearWarmup around
    CosineAnnealingDecay(T_max=4) with apply_decay_param_fun: Paddle's 6 losses (4.4036 ... 2.5151) to 1e-7 relative
    and its 45 parameters to 1.2e-6, the key biases aside (no fault)."""
    losses = _train(files, "clip_adamw.pb", "--startup", files / "clip_adamw.startup.pb")
    host = _train(files, "clip_host.pb", "--startup", files / "clip_host.startup.pb", "--lr-schedule", SCHEDULE)
    np.testing.assert_allclose(host, losses, rtol=1e-7)   # Paddle's scheduler stepped on the host: the same rates
    np.testing.assert_allclose(losses, CLIP["losses"], rtol=5e-7)
    saved, paddle = np.load(files / "trained_gradc.npz"), np.load(files / "trained.npz")
    assert sorted(saved.files) == sorted(paddle.files) == sorted(CLIP["parameters"])
    _assert_paddles_weights(saved, paddle, CLIP["parameters"])


def test_check_nan_passes_clips_causal_mask_of_minus_infinity(files):
    """CLIP's causal mask is -inf above the diagonal, written by paddle.assign of a numpy array (an assign_value op
    whose values are Scalars). Before, train --check-nan stopped at once: "block 0, op 49 (assign_value) wrote -Inf
    into 'assign_0.tmp_0'; it read nothing", though the infinity is the program's own literal (a fill_constant's
    passed). Now Paddle's own training program, its schedule stepped on the host, trains under --check-nan to
    Paddle's losses (1e-7) and weights."""
    losses = _train(files, "clip_train.pb", "--lr-schedule", SCHEDULE, "--check-nan")
    np.testing.assert_allclose(losses, CLIP["losses"], rtol=5e-7)
    _assert_paddles_weights(np.load(files / "trained_gradc.npz"), np.load(files / "trained.npz"), CLIP["parameters"])
    nan = np.full((6, 6), np.nan, np.float32)   # a NaN literal is still caught
    program = gradc.load(files / "clip.pb")
    mask = next(op for op in program.global_block.ops if op.type == "assign_value")
    mask.attrs["values"] = gradc.ops.creation.scalars(nan.ravel().tolist())
    scope, executor = gradc.Scope(), gradc.Executor()
    gradc.load_params(scope, files / "trained.npz", program)
    executor.check_finite = True
    with pytest.raises(gradc.errors.ExecutionError, match=r"op 49 \(assign_value\) wrote NaN"):
        executor.run(program, feed=dict(np.load(files / "batch.npz")), fetch_list=[CLIP["loss"]], scope=scope)


def test_linear_probe_takes_the_trained_tower_and_its_own_head_from_two_files(files):
    """The probe's program names its head linear_7, as the CLIP program names a text-tower layer of another shape.
    Before, --params trained.npz --params probe_init.npz stopped at the first file: "'linear_7.w_0' ... has shape
    [16, 16], but the program declares [16, 4]", though the second file's value wins. Now each name's winning value
    is checked: Momentum's 4 steps give Paddle's losses to 1e-7 and its head to 2e-7; the tower does not move."""
    compiled = gradc_cli("compile", files / "probe.pb", "-o", files / "probe_momentum.pb", "--optimizer", "momentum",
                         "--lr", 0.1, "--momentum", 0.9)
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("train", files / "probe_momentum.pb", "--params", files / "trained.npz", "--params",
                    files / "probe_init.npz", "--startup", files / "probe_momentum.startup.pb", "--data",
                    files / "data.npz", "--batch-size", 8, "--steps", 4, "--json", "--log-every", 1, "--save-params",
                    files / "probe_gradc.npz")
    assert run.returncode == 0, run.stderr
    steps = [line for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "step"]
    np.testing.assert_allclose([step["values"][PROBE["loss"]] for step in steps], PROBE["losses"], rtol=5e-7)
    saved, paddle = np.load(files / "probe_gradc.npz"), np.load(files / "probe_trained.npz")
    for name in PROBE["probe"]:
        np.testing.assert_allclose(saved[name], paddle[name], atol=5e-7, err_msg=name)
    np.testing.assert_array_equal(saved["conv2d_0.w_0"], np.load(files / "trained.npz")["conv2d_0.w_0"])
    # the Python API too: a list of files, a later one's value winning; a wrong shape that wins is still refused
    program, scope = gradc.load(files / "probe.pb"), gradc.Scope()
    gradc.load_params(scope, [files / "trained.npz", files / "probe_init.npz"], program)
    assert scope["linear_7.w_0"].shape == (16, 4)
    with pytest.raises(gradc.GradcError, match=r"'linear_7.w_0'.*has shape \[16, 16\], but the program declares"):
        gradc.load_params(scope, [files / "probe_init.npz", files / "trained.npz"], program)


def test_retrieval_recall_and_test_loss_are_paddles(files):
    """gradc evaluate of the forward program on the 16 test pairs (one batch: InfoNCE's negatives are the batch's)
    gives Paddle's test-mode loss 3.24159 to 1e-6 and its four recall ops (paddle.static.accuracy of the
    similarities against arange, i2t and t2i at 1 and 5) exactly; so does --recall over the whole set (no fault)."""
    recalls = CLIP["recalls"]
    fetches = [arg for name in recalls.values() for arg in ("--fetch", name)]
    scored = gradc_cli("evaluate", files / "clip.pb", "--params", files / "trained.npz", "--data",
                       files / "test_data.npz", "--batch-size", 16, "--loss", CLIP["loss"], *fetches, "--json")
    assert scored.returncode == 0, scored.stderr
    results = json.loads(scored.stdout)
    paddle = np.load(files / "paddle_test.npz")
    np.testing.assert_allclose(results["loss"], paddle["loss"], rtol=1e-6)
    assert {key: results[name] for key, name in recalls.items()} == CLIP["test_recalls"]
    # --recall ranks over the whole set, so batches of 5 give the same (the accuracy ops' are per batch)
    for way, (query, gallery) in {"i2t": ("image", "text"), "t2i": ("text", "image")}.items():
        ranked = gradc_cli("evaluate", files / "clip.pb", "--params", files / "trained.npz", "--data",
                           files / "test_data.npz", "--batch-size", 5, "--topk", "1,5", "--recall",
                           f"{CLIP[query + '_embedding']},{CLIP[gallery + '_embedding']}", "--json")
        assert ranked.returncode == 0, ranked.stderr
        found = json.loads(ranked.stdout)
        assert [found["recall@1"], found["recall@5"]] == [CLIP["test_recalls"][f"{way}_recall@{k}"] for k in (1, 5)]


def _embeddings(files, model, params, key, tmp_path):
    ran = gradc_cli("run", files / model, "--params", files / params, "--feed", files / "test_data.npz", "-o",
                    tmp_path / "out.npz")
    assert ran.returncode == 0, ran.stderr
    out = np.load(tmp_path / "out.npz")
    return out[key if key in out.files else out.files[0]]


def test_train_eval_gives_each_epochs_recall_as_evaluate_does(files):
    """Before, gradc train --eval had no --recall: the epoch's evaluation averaged the fetched scalars, the in-batch
    accuracy ops' recall among them, and the set's recall@k needed gradc evaluate --recall of saved parameters. Now
    train takes --recall and --topk (the code is evaluate's): the epoch's recall@1 and @5 over test_data.npz are what
    evaluate gives of the parameters that epoch ended with."""
    pair = f"{CLIP['image_embedding']},{CLIP['text_embedding']}"
    run = gradc_cli("train", files / "clip_adamw.pb", "--startup", files / "clip_startup.pb", "--startup",
                    files / "clip_adamw.startup.pb", "--data", files / "data.npz", "--batch-size", 8, "--json",
                    "--eval", files / "test_data.npz", "--recall", pair, "--topk", "1,5", "--save-params",
                    files / "recall_epoch.npz")
    assert run.returncode == 0, run.stderr
    (epoch,) = [line["eval"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    scored = gradc_cli("evaluate", files / "clip.pb", "--params", files / "recall_epoch.npz", "--data",
                       files / "test_data.npz", "--recall", pair, "--topk", "1,5", "--json")
    assert scored.returncode == 0, scored.stderr
    evaluated = json.loads(scored.stdout)
    assert [epoch["recall@1"], epoch["recall@5"]] == [evaluated["recall@1"], evaluated["recall@5"]]
    assert 0 < epoch["recall@1"] < epoch["recall@5"]


def test_each_towers_exports_give_paddles_embeddings_and_zero_shot_classes(files, tmp_path):
    """Paddle's save_inference_model of each tower and its PIR jit.save (the text tower's mask built by full(-inf)
    and triu) run by gradc give Paddle's embeddings and the Predictor's to 1.5e-7; so do gradc export's of each
    tower from clip.pb, legacy and PIR (Paddle's Predictor, given them, the same: checked by hand). The zero-shot
    classes (the prompts' embeddings as the classifier) are Paddle's (no fault)."""
    paddle, predictor = np.load(files / "paddle_test.npz"), np.load(files / "predictor_pir.npz")
    images = _embeddings(files, "image_tower.pdmodel", "image_tower.pdiparams", CLIP["image_embedding"], tmp_path)
    texts = _embeddings(files, "text_tower.pdmodel", "text_tower.pdiparams", CLIP["text_embedding"], tmp_path)
    np.testing.assert_allclose(images, paddle["image_embedding"], atol=3e-7)
    np.testing.assert_allclose(texts, paddle["text_embedding"], atol=3e-7)
    for tower in ("image_tower", "text_tower"):
        exported = _embeddings(files, f"{tower}_pir.json", f"{tower}_pir.pdiparams", "", tmp_path)
        np.testing.assert_allclose(exported, predictor[f"{tower}_fetch_name_0"], atol=3e-7)
    for tower, name, fed in (("image", CLIP["image_embedding"], "image"), ("text", CLIP["text_embedding"], "tokens")):
        for suffix in ("", ".json"):
            made = gradc_cli("export", files / "clip.pb", "-o", files / f"gradc_{tower}{suffix}", "--input", fed,
                             "--fetch", f"{name}={tower}_embedding", "--params", files / "trained.npz")
            assert made.returncode == 0, made.stderr
            model = f"gradc_{tower}" + (suffix or ".pdmodel")
            np.testing.assert_allclose(_embeddings(files, model, f"gradc_{tower}.pdiparams", "", tmp_path),
                                       paddle[f"{tower}_embedding"], atol=3e-7)
    np.savez(tmp_path / "prompts_feed.npz", tokens=paddle["prompts"])
    prompts = gradc_cli("run", files / "text_tower.pdmodel", "--params", files / "text_tower.pdiparams", "--feed",
                        tmp_path / "prompts_feed.npz", "-o", tmp_path / "prompts.npz")
    assert prompts.returncode == 0, prompts.stderr
    classifier = np.load(tmp_path / "prompts.npz")[CLIP["text_embedding"]]
    np.testing.assert_allclose(classifier, paddle["prompt_embedding"], atol=3e-7)
    np.testing.assert_array_equal(np.argmax(images @ classifier.T, 1),
                                  np.argmax(paddle["image_embedding"] @ paddle["prompt_embedding"].T, 1))


def test_gradients_agree_with_central_differences_at_paddles_trained_weights(files):
    """gradc check of the InfoNCE loss on a batch of 8 at Paddle's trained weights: every parameter (the
    temperature, class token, positions and the take_along_axis-picked end tokens included) agrees with float64
    central differences along 2 random directions (elementwise, 20 an element, 9.0e-10 at most: by hand)."""
    checked = gradc_cli("check", files / "clip_adamw.pb", "--params", files / "trained.npz", "--feed",
                        files / "batch.npz", "--directions", 2, "--json")
    assert checked.returncode == 0, checked.stdout
    report = json.loads(checked.stdout)
    assert report["ok"] and len(report["vars"]) == 45
    assert max(var["max_abs_error"] for var in report["vars"]) < 1e-8


def test_diff_of_paddles_training_program_and_gradcs_compile_of_it_shows_only_a_counters_name(files):
    """gradc compile of clip.pb with Paddle's optimizer, clip, decay exclusions and its scheduler (host-stepped) is
    Paddle's own training program but for one name (Paddle's global counter names the clip's fill_constant 15, gradc
    the first free number). Before, gradc diff also reported 46 more ops changed: the clip's 45 elementwise_mul with
    Paddle's extra attributes Scale_x / Scale_y / Scale_out 1 (oneDNN's int8 scales) and its sqrt's use_cudnn False,
    each absent from gradc's ops and each the default."""
    compared = gradc_cli("diff", files / "clip_train.pb", files / "clip_host.pb")
    lines = compared.stdout.splitlines()
    assert lines[0] == "block 0: 3 ops changed, 1 var added, 1 var removed", compared.stdout
    assert len(lines) == 6 and all("fill_constant_15.tmp_0" in line or "fill_constant_0.tmp_0" in line
                                   for line in lines[1:]), compared.stdout


def test_the_end_token_picked_by_advanced_indexing_gets_paddles_gradients(files):
    """The text tower picking the end token as OpenAI's CLIP writes it, x[arange(B), argmax(tokens)] (Paddle writes
    broadcast_tensors, stack and gather_nd): gradc compile's gradients at Paddle's initial weights on the first batch
    are Paddle's to 1.1e-6 of each var's largest, the key bias aside (its gradient is rounding, 4.7e-9), and the loss
    is the take_along_axis model's (no fault)."""
    compiled = gradc_cli("compile", files / "clip_indexed.pb", "-o", files / "clip_indexed_backward.pb")
    assert compiled.returncode == 0, compiled.stderr
    program = gradc.load(files / "clip_indexed_backward.pb")
    assert {"broadcast_tensors", "gather_nd_grad"} <= {op.type for op in program.global_block.ops}
    scope, paddle = gradc.Scope(), np.load(files / "indexed_grads.npz")
    gradc.Executor().run(gradc.load(files / "clip_startup.pb"), scope=scope)
    names = [name for name in paddle.files if name != "loss"]
    loss, *grads = gradc.Executor().run(program, feed=dict(np.load(files / "batch.npz")), scope=scope,
                                         fetch_list=[CLIP["loss"], *(f"{name}@GRAD" for name in names)])
    np.testing.assert_allclose(loss, paddle["loss"], rtol=2e-7)
    np.testing.assert_allclose(loss, CLIP["losses"][0], rtol=2e-7)
    for name, grad in zip(names, grads):
        scale = 1.0 if name in KEY_BIASES else np.abs(paddle[name]).max()
        np.testing.assert_allclose(grad / scale, paddle[name] / scale, atol=3e-6, err_msg=name)


def test_evaluate_topk_of_a_contrastive_model_says_why_it_gives_no_accuracy(files):
    """The user asks gradc evaluate --topk 1,5 for recall@1/5. The InfoNCE's labels are the program's arange, not an
    array of the data, so there is no top-k accuracy to give. Before, the option was dropped without a word (the loss
    alone printed); now a note says why and names --recall (over the whole set) and the program's own accuracy ops,
    which --fetch averages within each batch (the recalls above). With --recall, or without --topk, nothing is said;
    a classifier with data labels still gets its accuracy."""
    scored = gradc_cli("evaluate", files / "clip.pb", "--params", files / "trained.npz", "--data",
                       files / "test_data.npz", "--batch-size", 16, "--topk", "1,5")
    assert scored.returncode == 0, scored.stderr
    assert ("gradc: note: --topk: no top-k accuracy: no class scores of the program are scored against labels of the "
            "data (labels the program computes, as a contrastive loss's arange, are not the data's); a two-tower "
            "model's recall@k over the whole set: --recall QUERY,GALLERY; its own accuracy ops, within each batch, "
            "average with --fetch: " + ", ".join(CLIP["recalls"].values())) in scored.stderr
    quiet = gradc_cli("evaluate", files / "clip.pb", "--params", files / "trained.npz", "--data",
                      files / "test_data.npz", "--batch-size", 16)
    assert "note" not in quiet.stderr and quiet.stdout == scored.stdout
    recalled = gradc_cli("evaluate", files / "clip.pb", "--params", files / "trained.npz", "--data",
                         files / "test_data.npz", "--topk", "1,5", "--recall", f"{CLIP['image_embedding']},"
                         f"{CLIP['text_embedding']}", "--json")
    assert recalled.returncode == 0 and "note" not in recalled.stderr, recalled.stderr
    probe = gradc_cli("evaluate", files / "probe.pb", "--params", files / "trained.npz", "--params",
                      files / "probe_trained.npz", "--data", files / "test_data.npz", "--topk", "1,2", "--json")
    assert probe.returncode == 0 and "note" not in probe.stderr, probe.stderr
    assert {"acc_top1", "acc_top2"} <= set(json.loads(probe.stdout))


def test_info_says_what_optimizer_a_training_program_holds(files):
    """Before, gradc info of Paddle's training program listed op counts alone: which parameters apply_decay_param_fun
    left undecayed, the clip and where the rate comes from took gradc show's 366 ops to find. Now one line says them,
    for Paddle's program (the rate the host's scheduler sets) and for gradc's compile with the schedule as ops."""
    shown = gradc_cli("info", files / "clip_train.pb")
    assert shown.returncode == 0, shown.stderr
    assert ("optimizer: adamw 45; weight decay 0.1, off for 30 (conv2d_0.b_0, embedding_0.w_0, embedding_1.w_0, "
            "image_tower_0.w_0, image_tower_0.w_1, layer_norm_0.b_0, ... (30 in all)); gradients clipped to a global "
            "norm of 1; learning rate learning_rate_0, no op writes it: a constant, or a scheduler's that the host "
            "sets (gradc train --lr-schedule)") in shown.stdout.splitlines()
    facts = json.loads(gradc_cli("info", files / "clip_adamw.pb", "--json").stdout)["optimizer"]
    paddle = json.loads(gradc_cli("info", files / "clip_train.pb", "--json").stdout)["optimizer"]
    assert facts["decay_off"] == paddle["decay_off"] and len(facts["decay_off"]) == 30
    assert sorted(set(CLIP["parameters"]) - set(facts["decay_off"])) == CLIP["decayed"]
    assert facts["rates_written"] == ["learning_rate_0"] and paddle["rates_written"] == []
    assert json.loads(gradc_cli("info", files / "clip.pb", "--json").stdout)["optimizer"] is None

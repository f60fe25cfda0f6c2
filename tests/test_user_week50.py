"""A sequential-recommendation engineer's week (docs/tools.md): SASRec (item embedding with padding_idx 0, learned
positions, causal TransformerEncoderLayer blocks, LayerNorm) trained by BPR over sampled negatives under Adam and a
LinearWarmup schedule, and by full softmax cross entropy (ignore_index 0) through the item table's transpose under
AdamW; GRU4Rec (nn.GRU with sequence lengths) under Adam; against Paddle 3.3.1's (tools/paddle_user_week50.py);
central differences; the last position's scores over the catalogue exported, run, and scored by hit@K and NDCG@K of
the next item. Each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from user_weeks import assert_weights_like_paddles, save_first, train_steps, trained_outputs

WEEK = DATA / "user_week50"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("sasrec_bpr", "sasrec_ce", "gru4rec")
SAMPLED = "sasrec_sampled"   # negatives drawn in the program by paddle.randint after paddle.seed(50)
WARMUP = "LinearWarmup(0.01, 3, 0.0, 0.01)"
COMPILE = {"sasrec_bpr": ("--optimizer", "adam", "--lr-schedule", WARMUP),
           "sasrec_ce": ("--optimizer", "adamw", "--lr", 0.01, "--weight-decay", 0.01),
           "gru4rec": ("--optimizer", "adam", "--lr", 0.01)}
TRAIN = {"sasrec_bpr": ("--lr-schedule", WARMUP)}
# the attention key projections' biases: their gradient is zero but for rounding (a softmax is shift-invariant), which
# Adam's normalisation turns into steps of the rate's size
SHIFT_INVARIANT = {"sasrec_bpr": {"linear_1.b_0"}, "sasrec_ce": {"linear_7.b_0", "linear_13.b_0"}}
SCORES = "matmul_v2_4.tmp_0_slice_0"   # sasrec_ce's last position's scores over the catalogue


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model; each model's first batch; the held-out next items."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week50"), (*MODELS, SAMPLED))
    for model in MODELS:
        save_first(out / model, 8)
    test = np.load(out / "sasrec_ce" / "test.npz")
    np.savez(out / "heldout.npz", seq=test["seq"], next_item=test["next_item"])
    return out


def _train(program, startup, folder, *extra):
    return train_steps(program, startup, folder / "data.npz", 8, *extra)


@pytest.mark.parametrize("model", MODELS)
def test_each_recommender_trains_to_paddles_losses_and_weights(files, model):
    """gradc compile with the user's optimizer and train from Paddle's initial weights: 5 steps give Paddle's losses
    to 1e-6 relative and its weights to 1e-6 (3e-7 held on an AVX-512 machine; 4.2e-7 where numpy and OpenBLAS run
    their AVX2 kernels), the warmup schedule given to train, AdamW's decay and the GRU's
    sequence lengths included (no fault)."""
    folder = files / model
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "train_gradc.pb", *COMPILE[model])
    assert compiled.returncode == 0, compiled.stderr
    run = _train(folder / "train_gradc.pb", folder / "train_gradc.startup.pb", folder, "--params",
                 folder / "init.npz", "--save-params", folder / "trained_gradc.npz", *TRAIN.get(model, ()))
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)
    assert_weights_like_paddles(folder, 1e-6, SHIFT_INVARIANT.get(model, set()))


@pytest.mark.parametrize("model", MODELS)
def test_paddles_own_training_programs_train_in_gradc(files, model):
    """Paddle's own minimize() programs from its startup give its 5 losses (1e-6) (no fault)."""
    run = _train(files / model / "train.pb", files / model / "startup.pb", files / model, *TRAIN.get(model, ()))
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_run_gives_paddles_outputs(files, model):
    """gradc run on Paddle's trained weights gives each output its executor gave on the first batch: BPR's positive
    and negative logits, the tied output layer's logits at every position, the GRU's final state (no fault)."""
    ours, paddle, outputs = trained_outputs(files, model, META[model], files / model / "first.npz")
    for key in outputs:
        np.testing.assert_allclose(ours[key], paddle[key], rtol=1e-5, atol=1e-6, err_msg=key)


@pytest.mark.parametrize("model", MODELS)
def test_check_of_each_recommender_against_central_differences(files, model):
    """gradc check on Paddle's trained weights: every parameter agrees with float64 central differences, through the
    causal -inf mask, the padding row, the tied output layer and the GRU's lengths (no fault)."""
    run = gradc_cli("check", files / model / "forward.pb", "--params", files / model / "trained.npz", "--feed",
                    files / model / "first.npz", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["problems"] == [] and len(result["vars"]) == len(np.load(files / model / "init.npz").files) - (
        model == "gru4rec")   # the GRU's flat weight buffer, which no op reads


def test_negatives_drawn_in_the_program_are_paddles_draws(files):
    """BPR with its negatives drawn by paddle.randint in the program, anew each step: Paddle's own minimize() program
    and gradc's compilation, from Paddle's startup with --paddle-stream --seed 50 (paddle.seed(50)), draw Paddle's
    initial weights and negatives: its 5 losses to 1e-6 (no fault)."""
    folder = files / SAMPLED
    stream = ("--paddle-stream", "--seed", 50)
    own = _train(folder / "train.pb", folder / "startup.pb", folder, *stream)
    np.testing.assert_allclose(step_losses(own), META[SAMPLED]["losses"], rtol=1e-6)
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "t.pb", "--optimizer", "adam", "--lr", 0.01)
    assert compiled.returncode == 0, compiled.stderr
    ours = _train(folder / "t.pb", folder / "startup.pb", folder, "--startup", folder / "t.startup.pb", *stream)
    np.testing.assert_allclose(step_losses(ours), META[SAMPLED]["losses"], rtol=1e-6)


def test_a_paddle_warmup_left_out_of_train_is_named_as_paddles_own(files):
    """Paddle's own minimize() program under LinearWarmup from 0, trained without --lr-schedule: every step at the
    startup's rate, 0 (the third loss is not Paddle's), and the warning says a scheduler given to Paddle's optimizer is
    the host's to step. It said only "a Paddle scheduler given to gradc compile --lr-schedule is written by the host",
    which this program never saw."""
    run = _train(files / "sasrec_bpr" / "train.pb", files / "sasrec_bpr" / "startup.pb", files / "sasrec_bpr")
    losses = step_losses(run)
    assert losses[:2] == pytest.approx(META["sasrec_bpr"]["losses"][:2], rel=1e-6)
    assert losses[2] != pytest.approx(META["sasrec_bpr"]["losses"][2], rel=1e-4)
    assert "a Paddle scheduler (given to Paddle's optimizer, as a warm-up from 0, or to gradc compile --lr-schedule) " \
           "is stepped by the host" in run.stderr


def test_a_schedule_spelt_as_paddle_code_spells_it(files):
    """--lr-schedule 'paddle.optimizer.lr.LinearWarmup(...)' (the class as a Paddle script names it, a nested
    paddle.optimizer.lr.CosineAnnealingDecay too) reads as LinearWarmup(...) does: Paddle's losses, whose steps stay
    within the warm-up and the cosine's first rate. It was refused: "cannot read the learning-rate schedule"."""
    folder = files / "sasrec_bpr"
    spelt = ("paddle.optimizer.lr.LinearWarmup(learning_rate=paddle.optimizer.lr.CosineAnnealingDecay(0.01, 10), "
             "warmup_steps=3, start_lr=0.0, end_lr=0.01)")
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "spelt.pb", "--optimizer", "adam",
                         "--lr-schedule", spelt)
    assert compiled.returncode == 0, compiled.stderr
    run = _train(folder / "spelt.pb", folder / "spelt.startup.pb", folder, "--params", folder / "init.npz",
                 "--lr-schedule", spelt.replace("paddle.optimizer.lr.", "lr.", 1))
    np.testing.assert_allclose(step_losses(run), META["sasrec_bpr"]["losses"], rtol=1e-6)
    other = gradc_cli("compile", folder / "forward.pb", "-o", folder / "other.pb", "--optimizer", "adam",
                      "--lr-schedule", "torch.optim.lr_scheduler.LinearWarmup(0.01, 3, 0.0, 0.01)")
    assert other.returncode == 1 and "cannot read the learning-rate schedule" in other.stderr


def test_paddles_pir_training_program_trains_in_gradc(files):
    """The BPR SASRec built and minimized by Paddle in PIR static mode (its startup draws the legacy run's values)
    trains in gradc, the warmup given to train, to Paddle's 5 PIR losses (1e-6) (no fault)."""
    run = _train(files / "sasrec_bpr_pir_train.json", files / "sasrec_bpr_pir_startup.json", files / "sasrec_bpr",
                 "--params", files / "sasrec_bpr" / "init.npz", *TRAIN["sasrec_bpr"])
    pir = json.loads((WEEK / "pir_losses.json").read_text())["sasrec_bpr"]
    np.testing.assert_allclose(step_losses(run), pir, rtol=1e-6)


def _ranks(scores: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Each row's 0-based rank of its item, highest score first (no ties in these scores)."""
    return (scores > scores[np.arange(len(items)), items][:, None]).sum(axis=1)


def test_exported_scorer_runs_to_paddles_scores(files):
    """gradc export of gradc's compilation, last position's scores as 'scores': the .pdmodel and the PIR .json run to
    the scores Paddle's pruned scorer gave on the held-out sequences (no fault)."""
    folder = files / "sasrec_ce"
    assert gradc_cli("compile", folder / "forward.pb", "-o", folder / "ce.pb", *COMPILE["sasrec_ce"]).returncode == 0
    paddle = np.load(folder / "test.npz")["scores"]
    for target in ("sasrec.pdmodel", "sasrec.json"):
        export = gradc_cli("export", folder / "ce.pb", "--params", folder / "trained.npz", "--input", "seq",
                           "--fetch", f"{SCORES}=scores", "-o", files / target)
        assert export.returncode == 0, export.stderr
        params = files / target.replace(".pdmodel", ".pdiparams").replace(".json", ".pdiparams")
        run = gradc_cli("run", files / target, "--params", params, "--feed", files / "heldout.npz", "-o",
                        files / f"{target}.npz")
        assert run.returncode == 0, run.stderr
        np.testing.assert_allclose(np.load(files / f"{target}.npz")["scores"], paddle, rtol=1e-5, atol=2e-6)


def test_ranking_takes_the_next_item_id_for_hit_and_ndcg(files):
    """evaluate --ranking SCORES,NEXT_ITEM of scores over the catalogue [N, 30] against the id of the item that came
    next [N]: hit@K and NDCG@K as numpy gives them from Paddle's scores, MRR and the AUC too; --mask leaves the
    padding item 0 out of the ranking. It was refused: "the scores [16, 30] and the relevance 'next_item' [16] differ
    in shape", and reported no hit@K at all."""
    folder = files / "sasrec_ce"
    export = gradc_cli("export", folder / "forward.pb", "--params", folder / "trained.npz", "--input", "seq",
                       "--fetch", f"{SCORES}=scores", "-o", files / "ranked")
    assert export.returncode == 0, export.stderr
    test = np.load(folder / "test.npz")
    catalogue = np.ones((len(test["seq"]), 30), np.int64)
    catalogue[:, 0] = 0
    np.savez(files / "heldout_masked.npz", seq=test["seq"], next_item=test["next_item"], catalogue=catalogue)
    for data, mask, scores, items in (("heldout.npz", (), test["scores"], test["next_item"]),
                                      ("heldout_masked.npz", ("--mask", "catalogue"), test["scores"][:, 1:],
                                       test["next_item"] - 1)):
        run = gradc_cli("evaluate", files / "ranked.pdmodel", "--params", files / "ranked.pdiparams", "--data",
                        files / data, "--ranking", "scores,next_item", "--topk", "1,5,10", *mask, "--json")
        assert run.returncode == 0, run.stderr
        result, ranks = json.loads(run.stdout), _ranks(scores, items)
        for k in (1, 5, 10):
            assert result[f"hit@{k}"] == pytest.approx(np.mean(ranks < k), abs=1e-12)
            assert result[f"ndcg@{k}"] == pytest.approx(np.mean(np.where(ranks < k, 1 / np.log2(ranks + 2), 0)),
                                                        abs=1e-6)
        assert result["mrr"] == pytest.approx(np.mean(1 / (ranks + 1)), abs=1e-6)
        assert result["query_auc"] == pytest.approx(np.mean(1 - ranks / (scores.shape[1] - 1)), abs=1e-6)
    np.savez(files / "heldout_bad.npz", seq=test["seq"], next_item=test["next_item"] + 30)
    run = gradc_cli("evaluate", files / "ranked.pdmodel", "--params", files / "ranked.pdiparams", "--data",
                    files / "heldout_bad.npz", "--ranking", "scores,next_item")
    assert run.returncode == 1 and run.stderr.startswith("gradc: error: ") and "outside the 30 entries" in run.stderr


def test_held_out_next_items_evaluate_the_training_program_without_its_targets(files):
    """evaluate (and train --eval) of the compiled training program on held-out sequences and their next items, which
    hold no per-position 'target' for the loss: the loss is left out with a note and the ranking metrics are those of
    the exported scorer; an --early-stop watching that loss is refused up front, naming a metric to watch. It failed:
    "the fetches need 'target', which is neither fed nor computed from the feeds"."""
    folder = files / "sasrec_ce"
    assert gradc_cli("compile", folder / "forward.pb", "-o", folder / "ce2.pb", *COMPILE["sasrec_ce"]).returncode == 0
    ranking = ("--ranking", f"{SCORES},next_item", "--topk", "5,10")
    run = gradc_cli("evaluate", folder / "ce2.pb", "--params", folder / "trained.npz", "--data", files / "heldout.npz",
                    *ranking, "--json")
    assert run.returncode == 0, run.stderr
    assert "the loss 'tmp_14' needs 'target', which the data does not hold" in run.stderr
    result, test = json.loads(run.stdout), np.load(folder / "test.npz")
    ranks = _ranks(test["scores"], test["next_item"])
    assert "loss" not in result and result["unfed_losses"] == {"tmp_14": "target"}
    assert result["hit@10"] == pytest.approx(np.mean(ranks < 10), abs=1e-12)
    text = gradc_cli("evaluate", folder / "ce2.pb", "--params", folder / "trained.npz", "--data",
                     files / "heldout.npz", *ranking)
    assert "loss: none (tmp_14 needs 'target', which the data does not hold)" in text.stdout
    train = ("train", folder / "ce2.pb", "--startup", folder / "ce2.startup.pb", "--params", folder / "init.npz",
             "--data", folder / "data.npz", "--batch-size", 8, "--eval", files / "heldout.npz", *ranking)
    run = gradc_cli(*train, "--json")
    assert run.returncode == 0, run.stderr
    epoch = next(line for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch")
    assert epoch["eval"]["hit@10"] == pytest.approx(result["hit@10"], abs=1e-12)   # 5 steps: Paddle's weights
    refused = gradc_cli(*train, "--early-stop", 1)
    assert refused.returncode == 1 and "early stopping watches 'tmp_14', which needs 'target'" in refused.stderr
    assert "--monitor ndcg@5" in refused.stderr


def test_ranking_refuses_scores_at_every_position_saying_why(files):
    """--ranking of an export fetching the logits at every position [N, 6, 30]: refused in one line saying that it
    takes [N, L] or [N] scores and that a sequence model's are its last position's. It said "'matmul_v2_4.tmp_0'
    [-1, 6, 30] is a score an example: give the data's query ids too", which no query ids would have made right."""
    folder = files / "sasrec_ce"
    export = gradc_cli("export", folder / "forward.pb", "--params", folder / "trained.npz", "--input", "seq",
                       "--fetch", "matmul_v2_4.tmp_0", "-o", files / "every.json")
    assert export.returncode == 0, export.stderr
    run = gradc_cli("evaluate", files / "every.json", "--params", files / "every.pdiparams", "--data",
                    files / "heldout.npz", "--ranking", "matmul_v2_4.tmp_0,next_item")
    assert run.returncode == 1 and len(run.stderr.splitlines()) == 1
    assert "'matmul_v2_4.tmp_0' [-1, 6, 30] has 3 axes: give scores [N, L]" in run.stderr
    assert "the last position's, x[:, -1, :]" in run.stderr

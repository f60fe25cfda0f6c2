"""A search-ranking engineer's week (docs/tools.md): a pointwise MLP (BCE), a pairwise scorer (RankNet, margin ranking,
hinge embedding and the legacy hinge_loss op), a listwise ranker (ListNet over -inf-masked padded lists and
LambdaRank weights from argsort ranks) and a two-tower retriever (a sparse Embedding with padding_idx, normalized
towers, in-batch and gathered negatives), trained by Adam (lazy_mode), Adagrad, clipping and L2 decay against Paddle
3.3.1's (tools/paddle_user_week49.py); ranking gradient corners against Paddle's and central differences; NDCG@k, MRR
and a query's AUC by gradc evaluate; a PIR document tower run by gradc. Each fault found, as the behaviour it has
now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from gradc.central_differences import numeric_grad, settled
from user_weeks import assert_weights_like_paddles, save_corner_feeds, save_first, train_steps, trained_outputs

WEEK = DATA / "user_week49"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("pointwise", "pairwise", "listwise", "twotower", "clipped", "decayed", "adagrad")
COMPILE = {"pointwise": ("--optimizer", "adam"), "pairwise": ("--optimizer", "adagrad", "--lr", 0.05),
           "listwise": ("--optimizer", "adam"), "twotower": ("--optimizer", "adam", "--opt", "lazy_mode=True"),
           "clipped": ("--optimizer", "adam", "--opt", "lazy_mode=True", "--clip-global-norm", 1.0),
           "decayed": ("--optimizer", "adam", "--opt", "lazy_mode=True", "--l2", 0.01),
           "adagrad": ("--optimizer", "adagrad", "--lr", 0.05)}
# the trained weights' largest difference from Paddle's (Adagrad's rate of 0.05 multiplies the rounding: 8.3e-7 on an
# AVX-512 machine, 1.2e-6 where numpy and OpenBLAS run their AVX2 kernels)
WEIGHTS_ATOL = {"adagrad": 3e-6}
# the listwise scorer's output bias: its gradient is zero but for rounding (ListNet's softmax and the pairs'
# differences are shift-invariant), which Adam's normalisation turns into steps of the rate's size
SHIFT_INVARIANT = {"listwise": {"linear_5.b_0"}}
CORNERS = {"margin_ties": "a b", "ranknet_ties": "s", "masked_softmax": "x", "normalize_small": "x",
           "lambda_ties": "s"}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model; each model's first batch, and each corner's feed."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week49"), MODELS)
    for model in MODELS:
        save_first(out / model, 8)
    save_corner_feeds(out, CORNERS)
    return out


def _train(program, startup, folder, *extra):
    return train_steps(program, startup, folder / "data.npz", 8, *extra)


@pytest.mark.parametrize("model", MODELS)
def test_each_ranker_trains_to_paddles_losses_and_weights(files, model):
    """gradc compile with the optimizer the user chose and train from Paddle's initial weights: 5 steps give Paddle's
    losses to 1e-6 relative (2.5e-7 measured) and its weights to 3e-7 (Adagrad's to 3e-6), the sparse embedding's
    lazy Adam, global-norm clipping and L2 decay of its SelectedRows gradient included (no fault)."""
    folder = files / model
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "train_gradc.pb", "--lr", 0.01,
                         *COMPILE[model])
    assert compiled.returncode == 0, compiled.stderr
    run = _train(folder / "train_gradc.pb", folder / "train_gradc.startup.pb", folder, "--params",
                 folder / "init.npz", "--save-params", folder / "trained_gradc.npz")
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)
    assert_weights_like_paddles(folder, WEIGHTS_ATOL.get(model, 3e-7), SHIFT_INVARIANT.get(model, set()))


@pytest.mark.parametrize("model", MODELS)
def test_paddles_own_training_programs_train_in_gradc(files, model):
    """Paddle's own minimize() programs (its sparse lookup grad, lazy adam, adagrad, clipping of SelectedRows) from
    its startup give its 5 losses (1e-6) (no fault)."""
    run = _train(files / model / "train.pb", files / model / "startup.pb", files / model)
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)


@pytest.mark.parametrize("model", ("pointwise", "pairwise", "listwise", "twotower"))
def test_run_gives_paddles_outputs(files, model):
    """gradc run on Paddle's trained weights gives each output its executor gave on the first batch: scores, the
    four pairwise losses, ListNet and LambdaRank's parts, both towers' unit vectors and the logits (no fault)."""
    ours, paddle, outputs = trained_outputs(files, model, META[model], files / model / "first.npz")
    for key in outputs:
        np.testing.assert_allclose(ours[key], paddle[key], rtol=1e-6, atol=1e-6, err_msg=key)


@pytest.mark.parametrize("model", ("pointwise", "pairwise", "listwise"))
def test_check_of_each_ranking_loss_against_central_differences(files, model):
    """gradc check on Paddle's trained weights: every parameter element agrees with float64 central differences,
    through -inf-masked softmax and log_softmax, argsort ranks and the hinge_loss op (no fault)."""
    run = gradc_cli("check", files / model / "forward.pb", "--params", files / model / "trained.npz", "--feed",
                    files / model / "first.npz", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["problems"] == [] and len(result["vars"]) == 4


def test_check_of_the_two_tower_names_the_sparse_padding_row(files):
    """Every tower parameter agrees with central differences; the sparse embedding differs at its padding row only,
    which Paddle's sparse kernel trains (left as found in week 37). check's text said why, its --json problem did
    not ('the gradient of 'embedding_0.w_0' differs ... compiled 0.6452, numeric 0', nothing more); now it says what
    the text says."""
    run = gradc_cli("check", files / "twotower" / "forward.pb", "--params", files / "twotower" / "trained.npz",
                    "--feed", files / "twotower" / "first.npz", "--json")
    result = json.loads(run.stdout)
    assert run.returncode == 1
    bad = [var for var in result["vars"] if not var["ok"]]
    assert [var["var"] for var in bad] == ["embedding_0.w_0"] and bad[0]["mismatch"]["index"][0] == 0
    assert run.stderr == "" and "padding_idx 0: its padding row gets the output gradient" in \
        result["problems"][0]["message"]


@pytest.mark.parametrize("name", sorted(CORNERS))
def test_ranking_corner_gradients_are_paddles_and_central_differences(files, name):
    """margin ranking and RankNet with tied scores, a softmax over -inf-masked entries, normalize at a zero vector
    and next to one, LambdaRank weights from argsort of tied scores: gradc's float64 gradients are Paddle's to 1e-15
    and check agrees at every element. normalize_small was refused ('gradients differ from central differences':
    compiled -2.19613e+12, numeric -2.19613e+06 at the zero vector), its slope 1/1e-12 holding only within 1e-12 of
    it, so any step of 1e-6 measured 1/step; steps inside it now measure it."""
    inputs = CORNERS[name].split()
    wrt = [arg for var in inputs for arg in ("--wrt", var)]
    assert gradc_cli("compile", files / f"corner_{name}.pb", "-o", files / f"c_{name}.pb", *wrt).returncode == 0
    fetches = [arg for var in inputs for arg in ("--fetch", f"{var}@GRAD={var}")]
    run = gradc_cli("run", files / f"c_{name}.pb", "--feed", files / f"feed_{name}.npz", *fetches, "-o",
                    files / f"c_{name}.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / f"c_{name}.npz"), np.load(files / "corners.npz")
    for var in inputs:
        np.testing.assert_allclose(ours[var], paddle[f"{name}_{var}@GRAD"], rtol=1e-15, atol=1e-15, err_msg=var)
    run = gradc_cli("check", files / f"corner_{name}.pb", "--feed", files / f"feed_{name}.npz", *wrt, "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["problems"] == [], run.stdout


def test_a_wrong_gradient_near_a_zero_vector_still_misses():
    """The steps inside a tiny region take an estimate only where it agrees at two steps in a row: half of
    normalize's true slope at a zero vector, or one off by 1%, still misses at every step."""
    w, value = np.array([0.7, -1.3]), np.zeros(2)

    def f():
        return float(np.sum(w * value / max(np.linalg.norm(value), 1e-12)))

    numeric = numeric_grad(f, value, 1e-6)
    for wrong in (w * 0.5e12, w * 1.01e12):
        assert not np.allclose(settled(f, value, 1e-6, np.arange(2), wrong, numeric, 1e-5, 1e-7), wrong, rtol=1e-5)
    right = w * 1e12
    np.testing.assert_allclose(settled(f, value, 1e-6, np.arange(2), right, numeric, 1e-5, 1e-7), right, rtol=1e-5)


def _ndcg_mrr_auc(lists, k):
    """Host-side: NDCG@k (gain 2^rel - 1, discount 1/log2(rank + 1)), MRR and each query's AUC, each averaged."""
    ndcg, mrr, auc = [], [], []
    for scores, rel in lists:
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        if max(rel) > 0:
            dcg = sum((2 ** rel[i] - 1) / np.log2(r + 2) for r, i in enumerate(order[:k]))
            ideal = sum((2 ** g - 1) / np.log2(r + 2) for r, g in enumerate(sorted(rel, reverse=True)[:k]))
            ndcg.append(dcg / ideal)
            mrr.append(1 / (1 + next(r for r, i in enumerate(order) if rel[i] > 0)))
        pairs = [(a, b) for a in range(len(rel)) for b in range(len(rel)) if rel[a] > 0 and rel[b] <= 0]
        if pairs:
            auc.append(np.mean([1.0 if scores[a] > scores[b] else 0.5 if scores[a] == scores[b] else 0.0
                                for a, b in pairs]))
    return np.mean(ndcg), np.mean(mrr), np.mean(auc)


def test_evaluate_ranks_padded_lists_of_different_sizes(files):
    """gradc evaluate had no ranking metric (--ranking: 'No such option'). Now --ranking SCORES,RELEVANCE with --mask
    gives NDCG@k, MRR and the mean AUC of each query over the lists' real entries (2 to 6 a query); on Paddle's
    trained weights they are a host-side computation's from Paddle's own scores of the first 8 queries."""
    folder, scores = files / "listwise", META["listwise"]["scores"]
    run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                    folder / "first.npz", "--ranking", f"{scores},labels", "--mask", "mask", "--topk", "1,3",
                    "--batch-size", 3, "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    first, paddle = np.load(folder / "first.npz"), np.load(folder / "outputs.npz")["scores"]
    lists = [(row[mask > 0].tolist(), rel[mask > 0].tolist())
             for row, rel, mask in zip(paddle, first["labels"], first["mask"])]
    for k in (1, 3):
        ndcg, mrr, auc = _ndcg_mrr_auc(lists, k)
        assert result[f"ndcg@{k}"] == pytest.approx(ndcg, abs=1e-12)
    assert (result["mrr"], result["query_auc"]) == pytest.approx((mrr, auc), abs=1e-12)
    assert len({len(scores) for scores, _ in lists}) > 2 and "acc" not in result


def test_evaluate_ranks_a_pointwise_model_by_query_ids_across_batches(files, tmp_path):
    """A pointwise model's documents grouped by the data's query ids (groups of 3 to 11, batches of 7 cutting through
    them): --ranking SCORE,CLICK,QID gives the host-side numbers of gradc run's scores, the same at any batch size."""
    folder, score = files / "pointwise", META["pointwise"]["score"]
    data = dict(np.load(folder / "data.npz"))
    data["qid"] = np.repeat(np.arange(6), [3, 9, 5, 8, 11, 4])
    np.savez(tmp_path / "ranked.npz", **data)
    run = gradc_cli("run", folder / "forward.pb", "--params", folder / "trained.npz", "--feed", tmp_path /
                    "ranked.npz", "--fetch", f"{score}=score", "-o", tmp_path / "scores.npz")
    assert run.returncode == 0, run.stderr
    scores = np.load(tmp_path / "scores.npz")["score"].reshape(-1)
    lists = [(scores[data["qid"] == q].tolist(), data["click"].reshape(-1)[data["qid"] == q].tolist())
             for q in range(6)]
    ndcg, mrr, auc = _ndcg_mrr_auc(lists, 5)
    for batch in (7, 40):
        run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data", tmp_path /
                        "ranked.npz", "--ranking", f"{score},click,qid", "--topk", 5, "--batch-size", batch, "--json")
        assert run.returncode == 0, run.stderr
        result = json.loads(run.stdout)
        assert (result["ndcg@5"], result["mrr"], result["query_auc"]) == pytest.approx((ndcg, mrr, auc), abs=1e-6)


@pytest.mark.parametrize("ranking, code, message", [
    ("x", 2, "give SCORES,RELEVANCE (scores [N, L], a query a row) or SCORES,RELEVANCE,QUERY"),
    ("{score},click", 1, "is a score an example: give the data's query ids too, SCORES,RELEVANCE,QUERY"),
    ("{score},clicks,qid", 1, "the data has no array 'clicks' (it holds click, feats)"),
    ("nope,click,qid", 1, "'nope' is not computed by the forward part of the program")])
def test_evaluate_ranking_refuses_what_it_cannot_rank(files, ranking, code, message):
    """One line naming what is wrong: a malformed option (a usage error), scores of one document an example without
    query ids, arrays the data lacks, a var the program does not compute."""
    folder = files / "pointwise"
    run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                    folder / "data.npz", "--ranking", ranking.format(score=META["pointwise"]["score"]))
    assert run.returncode == code and message in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.count("\n") == 1


def test_pir_document_tower_runs_to_paddles_predictor(files):
    """The trained document tower paddle.jit.save'd in PIR mode (F.normalize's PIR form: p_norm, maximum, divide),
    run by gradc: the Predictor's (oneDNN off) unit vectors to 1.8e-7, and the legacy program's (no fault)."""
    paddle = np.load(files / "predictor_pir.npz")
    np.savez(files / "docs.npz", docs=paddle["docs"])
    run = gradc_cli("run", files / "doc_tower.json", "--params", files / "doc_tower.pdiparams", "--feed",
                    files / "docs.npz", "-o", files / "pir_out.npz")
    assert run.returncode == 0, run.stderr
    ours = np.load(files / "pir_out.npz")["fetch_name_0"]
    np.testing.assert_allclose(ours, paddle["predicted"], rtol=0, atol=3e-7)
    np.testing.assert_allclose(ours, np.load(files / "twotower" / "outputs.npz")["d"], rtol=0, atol=3e-7)


def test_train_evaluates_and_stops_early_by_ndcg(files, tmp_path):
    """train --eval takes --ranking too: each epoch reports ndcg@K, mrr and query_auc, --early-stop --monitor mrr
    keeps the best epoch, whose mrr gradc evaluate gives again; a pointwise model's query ids, which the program does
    not read, stay in the eval data (they were left out, then 'feed var 'qid' is not declared in block 0')."""
    folder, score = files / "pointwise", META["pointwise"]["score"]
    data = dict(np.load(folder / "data.npz"))
    data["qid"] = np.repeat(np.arange(6), [3, 9, 5, 8, 11, 4])
    np.savez(tmp_path / "ranked.npz", **data)
    assert gradc_cli("compile", folder / "forward.pb", "-o", tmp_path / "t.pb", "--optimizer", "adam").returncode == 0
    run = gradc_cli("train", tmp_path / "t.pb", "--startup", tmp_path / "t.startup.pb", "--params", folder /
                    "init.npz", "--data", folder / "data.npz", "--batch-size", 8, "--epochs", 2, "--eval", tmp_path /
                    "ranked.npz", "--ranking", f"{score},click,qid", "--topk", 5, "--early-stop", 1, "--monitor", "mrr",
                    "--save-params", tmp_path / "kept.npz", "--json")
    assert run.returncode == 0, run.stderr
    epochs = [line["eval"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    assert [sorted(epoch) for epoch in epochs] == [["hit@5", "mean_0.tmp_0", "mrr", "ndcg@5", "query_auc"]] * 2
    again = gradc_cli("evaluate", folder / "forward.pb", "--params", tmp_path / "kept.npz", "--data", tmp_path /
                      "ranked.npz", "--ranking", f"{score},click,qid", "--topk", 5, "--json")
    kept = max(epochs, key=lambda epoch: epoch["mrr"])
    assert json.loads(again.stdout)["mrr"] == pytest.approx(kept["mrr"], abs=1e-12)


@pytest.mark.parametrize("model", ("listwise", "twotower"))
def test_paddles_pir_training_programs_train_to_its_losses(files, model):
    """The listwise ranker (where, -inf, argsort, sort, log2 in pd_op form) and the two-tower model (F.normalize's
    PIR form) minimized in PIR static mode: gradc trains Paddle's serialized programs from its initial values to its
    5 PIR losses (1e-6; 7e-8 measured). In PIR mode Paddle gives the sparse=True table a dense embedding_grad, so
    its two-tower losses leave the legacy run's from step 2 (7.6643 against 7.6663): gradc follows each program."""
    run = train_steps(files / f"{model}_pir_train.json", files / f"{model}_pir_startup.json",
                      files / model / "data.npz", 8, "--params", files / f"{model}_pir_init.npz", "--fetch", "loss")
    losses = json.loads((WEEK / "pir_losses.json").read_text())[model]
    np.testing.assert_allclose(step_losses(run), losses, rtol=1e-6)


def _evaluated_with_clicks(files, tmp_path, clicks, *options):
    """evaluate --ranking of the pointwise ranker on its data with every click set to ``clicks``, 5 queries of 8."""
    folder = files / "pointwise"
    data = dict(np.load(folder / "data.npz"))
    data["click"], data["qid"] = np.full_like(data["click"], clicks), np.repeat(np.arange(5), 8)
    np.savez(tmp_path / "same.npz", **data)
    return gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data", tmp_path /
                     "same.npz", "--ranking", f"{META['pointwise']['score']},click,qid", *options)


def test_evaluate_ranking_of_a_set_without_a_relevant_document_is_undefined(files, tmp_path):
    """No relevant document in any query: each metric "nan" in --json (it printed the literal NaN, no JSON number,
    and then refused the set, which stopped train --eval unsaved), with a note saying why."""
    run = _evaluated_with_clicks(files, tmp_path, 0, "--json")
    assert run.returncode == 0, run.stderr
    assert ("has a relevant document (relevance > 0) in 'click': NDCG, MRR and the AUC are undefined (nan)"
            in run.stderr), run.stderr
    result = json.loads(run.stdout, parse_constant=lambda literal: pytest.fail(f"{literal} in --json"))
    assert result["mrr"] == result["query_auc"] == "nan"


def test_evaluate_ranking_of_queries_with_only_relevant_documents_reports_all_but_the_auc(files, tmp_path):
    """Fault: a set whose every query holds only relevant documents was refused whole, though NDCG, hit@k and MRR
    are defined there (all 1: every document relevant); only the AUC, which needs an irrelevant one, is not: left
    out, with a note saying so."""
    run = _evaluated_with_clicks(files, tmp_path, 1, "--json", "--topk", "1,3")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert {key: doc[key] for key in ("ndcg@1", "ndcg@3", "hit@1", "hit@3", "mrr")} == dict.fromkeys(
        ("ndcg@1", "ndcg@3", "hit@1", "hit@3", "mrr"), 1.0)
    assert "query_auc" not in doc
    assert "both relevant and irrelevant documents in 'click': the AUC is undefined, query_auc left out" in run.stderr
    text = _evaluated_with_clicks(files, tmp_path, 1)
    assert text.returncode == 0 and "mrr: 1" in text.stdout.splitlines() and "query_auc" not in text.stdout

"""A mixture-of-experts engineer's week (docs/tools.md): a small transformer-style classifier whose FFN is a sparse MoE
layer built from Paddle's basic ops (a switch layer with capacity, one_hot / cumsum / einsum / bmm; a noisy top-2 with
index_select, gather and scatter_nd_add; a loop over experts with nonzero, gather_nd and masked_select), with a
load-balancing loss and a router z-loss, trained by AdamW against Paddle 3.3.1's (tools/paddle_user_week44.py); the
routing ops' gradient corners against Paddle's and float64 central differences; a PIR export run by gradc. Each fault
found, as the behaviour it has now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from user_weeks import assert_weights_like_paddles, save_corner_feeds, save_first, train_steps, trained_outputs

WEEK = DATA / "user_week44"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("switch", "top2", "loop")
TUNED_SCHEDULE = "LinearWarmup(CosineAnnealingDecay(0.01, T_max=6), 2, 0.0, 0.01)"
# the attention's key bias: its gradient is zero but for rounding (softmax is shift-invariant), which Adam's
# normalisation turns into steps of the rate's size, differing between any two executors
KEY_BIASES = {"switch": "linear_2.b_0", "top2": "linear_9.b_0", "loop": "linear_17.b_0", "tuned": "linear_32.b_0"}
CORNERS = {"topk_ties": "x", "scatter_add": "x updates", "scatter_overwrite": "x updates", "index_select": "x",
           "gather": "x", "masked_select": "x", "einsum_diag": "x", "einsum_trace_mul": "x y", "argsort": "x",
           "argmax": "x"}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model; feeds of each model's first batch and of each corner."""
    out = tmp_path_factory.mktemp("week44")
    unpacked(WEEK, out, (*MODELS, "tuned"))
    for model in MODELS:
        save_first(out / model, 4)
    save_corner_feeds(out, CORNERS)
    return out


def _train(program, startup, folder, *extra):
    return train_steps(program, startup, folder / "data.npz", 4, *extra)


@pytest.mark.parametrize("model", MODELS)
def test_each_moe_classifier_trains_to_paddles_losses_and_weights(files, model):
    """gradc compile --optimizer adamw --weight-decay 0.01 and train from Paddle's initial weights: 6 steps give
    Paddle's losses to 1e-6 relative (through topk, one_hot, cumsum capacity, einsum, bmm, index_select, gather,
    scatter_nd_add, nonzero, gather_nd, masked_select, logsumexp) and its weights to 3e-7, but the key bias (no
    fault)."""
    folder = files / model
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "train_gradc.pb", "--optimizer", "adamw",
                         "--lr", 0.01, "--weight-decay", 0.01)
    assert compiled.returncode == 0, compiled.stderr
    run = _train(folder / "train_gradc.pb", folder / "train_gradc.startup.pb", folder, "--params",
                 folder / "init.npz", "--save-params", folder / "trained_gradc.npz")
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)
    assert_weights_like_paddles(folder, 3e-7, {KEY_BIASES[model]})


def test_warmup_cosine_adamw_without_decay_on_biases_and_clipped_trains_to_paddles(files):
    """AdamW(LinearWarmup(CosineAnnealingDecay(0.01, 6), 2, 0, 0.01), weight_decay 0.05, apply_decay_param_fun leaving
    out biases and LayerNorms, ClipGradByGlobalNorm(1.0)) as gradc compile --lr-schedule ... --no-decay '*.b_0'
    --no-decay 'layer_norm*' --clip-global-norm 1: Paddle's 6 losses (1e-6) and weights (6e-8 measured) (no fault)."""
    folder = files / "tuned"
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "train_gradc.pb", "--optimizer", "adamw",
                         "--lr-schedule", TUNED_SCHEDULE, "--weight-decay", 0.05, "--no-decay", "*.b_0", "--no-decay",
                         "layer_norm*", "--clip-global-norm", 1.0)
    assert compiled.returncode == 0, compiled.stderr
    run = _train(folder / "train_gradc.pb", folder / "train_gradc.startup.pb", folder, "--params", folder / "init.npz",
                 "--lr-schedule", TUNED_SCHEDULE, "--save-params", folder / "trained_gradc.npz")
    np.testing.assert_allclose(step_losses(run), META["tuned"]["losses"], rtol=1e-6)
    assert_weights_like_paddles(folder, 3e-7, {KEY_BIASES["tuned"]})


@pytest.mark.parametrize("model", (*MODELS, "tuned"))
def test_paddles_own_adamw_programs_train_in_gradc(files, model):
    """Paddle's own minimize() programs from its startup give its 6 losses (1e-6) (no fault)."""
    folder = files / model
    run = _train(folder / "train.pb", folder / "startup.pb", folder,
                 *(("--lr-schedule", TUNED_SCHEDULE) if model == "tuned" else ()))
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_run_gives_paddles_logits_and_expert_loads(files, model):
    """gradc run on Paddle's trained weights: the logits (2.4e-7), the expert load counts (the switch's 8, 5, 6, 1:
    4 tokens past the capacity of 8 dropped), the balance loss and the z-loss as Paddle's executor gave (no fault)."""
    ours, paddle, outputs = trained_outputs(files, model, META[model], files / model / "first.npz")
    for key in outputs:
        np.testing.assert_allclose(ours[key], paddle[key], rtol=1e-6, atol=3e-7, err_msg=key)
    np.testing.assert_array_equal(ours["load"], paddle["load"])
    assert ours["load"].sum() == (20 if model == "switch" else 48 if model == "top2" else 24)


@pytest.mark.parametrize("model", MODELS)
def test_check_of_each_moe_loss_against_central_differences(files, model):
    """gradc check on Paddle's trained weights: every parameter along 2 random directions agrees with float64
    central differences (the routing does not flip at eps) (no fault)."""
    run = gradc_cli("check", files / model / "forward.pb", "--params", files / model / "trained.npz", "--feed",
                    files / model / "first.npz", "--directions", 2, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["problems"] == [] and len(result["vars"]) == (33 if model == "loop" else 19 if model == "switch"
                                                                 else 20)


@pytest.mark.parametrize("model, wrt", [("switch", "top_k_v2_0.tmp_0"), ("top2", "top_k_v2_0.tmp_0"),
                                        ("loop", "top_k_v2_0.tmp_0"), ("switch", "softmax_with_cross_entropy_0.*")])
def test_check_of_topk_values_holds_the_routing(files, model, wrt):
    """--wrt topk's values (the gate probs the experts' outputs are weighted by) was refused: 'top_k_v2 (block 0, op
    28) also writes vars the rest reads, which a run without it would lack' (its indices, the routing; and the op index
    was that of a copy, not the program's). Now the writer's other outputs are held at their values, which is the
    partial derivative the compiled gradient is: every element agrees with central differences."""
    run = gradc_cli("check", files / model / "forward.pb", "--params", files / model / "trained.npz", "--feed",
                    files / model / "first.npz", "--wrt", wrt, "--max-elements", 30, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["problems"] == [] and result["vars"]


@pytest.mark.parametrize("name", sorted(CORNERS))
def test_routing_corner_gradients_are_paddles_and_central_differences(files, name):
    """topk's values with ties, scatter with duplicate indices, index_select / gather with repeated ids, masked_select,
    einsum with a repeated subscript ('ii->i', 'ii,ij->j'), take_along_axis by argsort / argmax: gradc's float64
    gradients are Paddle's to 1e-15 but scatter(overwrite=True)'s updates (the next test), and check agrees with
    central differences at every element (ties and sorting at kinks are noted, not compared)."""
    inputs = CORNERS[name].split()
    wrt = [arg for var in inputs for arg in ("--wrt", var)]
    assert gradc_cli("compile", files / f"corner_{name}.pb", "-o", files / f"c_{name}.pb", *wrt).returncode == 0
    fetches = [arg for var in inputs for arg in ("--fetch", f"{var}@GRAD={var}")]
    run = gradc_cli("run", files / f"c_{name}.pb", "--feed", files / f"feed_{name}.npz", *fetches, "-o",
                    files / f"c_{name}.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / f"c_{name}.npz"), np.load(files / "corners.npz")
    for var in inputs:
        if (name, var) != ("scatter_overwrite", "updates"):
            np.testing.assert_allclose(ours[var], paddle[f"{name}_{var}@GRAD"], rtol=0, atol=1e-15, err_msg=var)
    run = gradc_cli("check", files / f"corner_{name}.pb", "--feed", files / f"feed_{name}.npz", *wrt,
                    "--max-elements", 30, "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["problems"] == [], run.stdout


def test_scatter_overwrite_with_duplicates_gives_the_last_writer_alone_its_gradient(files):
    """paddle.scatter(x, [1, 3, 1, 1], updates, overwrite=True): row 1 holds updates[3], the last write, so only
    updates[3] gets row 1's gradient; Paddle 3.3.1 gives it to updates[0] and [2] too (its fault: central differences
    give 0 there, as gradc does). gradc's kernel of Paddle's own scatter_grad op gives the right number too."""
    paddle, w = np.load(files / "corners.npz"), np.load(files / "feed_scatter_overwrite.npz")["w"].reshape(5, 3)
    assert gradc_cli("compile", files / "corner_scatter_overwrite.pb", "-o", files / "scatter_gradc.pb", "--wrt",
                     "updates").returncode == 0
    for program in ("scatter_gradc.pb", "corner_scatter_overwrite_paddle.pb"):
        run = gradc_cli("run", files / program, "--feed", files / "feed_scatter_overwrite.npz", "--fetch",
                        "updates@GRAD=updates", "-o", files / "scatter_out.npz")
        assert run.returncode == 0, run.stderr
        np.testing.assert_array_equal(np.load(files / "scatter_out.npz")["updates"], [0 * w[0], w[3], 0 * w[0], w[1]])
    np.testing.assert_array_equal(paddle["scatter_overwrite_updates@GRAD"], [w[1], w[3], w[1], w[1]])


@pytest.mark.parametrize("name", ["topk_ties", "scatter_add", "masked_select", "einsum_trace_mul"])
def test_paddles_own_corner_gradient_programs_run_to_its_gradients(files, name):
    """Paddle's own gradient programs (its top_k_v2_grad, scatter_grad, masked_select_grad, einsum_grad) run by gradc
    give its gradients to 1e-15 (no fault)."""
    inputs = CORNERS[name].split()
    fetches = [arg for var in inputs for arg in ("--fetch", f"{var}@GRAD={var}")]
    run = gradc_cli("run", files / f"corner_{name}_paddle.pb", "--feed", files / f"feed_{name}.npz", *fetches, "-o",
                    files / f"p_{name}.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / f"p_{name}.npz"), np.load(files / "corners.npz")
    for var in inputs:
        np.testing.assert_allclose(ours[var], paddle[f"{name}_{var}@GRAD"], rtol=0, atol=1e-15, err_msg=var)


def test_an_einsum_written_last_is_the_loss(files):
    """loss = paddle.einsum('nd,nd->', x, x): gradc refused, 'cannot pick the loss by itself: the last op writes
    several float scalars (einsum_0.tmp_1, einsum_0.tmp_2, einsum_0.tmp_0)', einsum's InnerCache outputs (declared
    scalars, no grad op reads them) counted. Now the Out is the loss; its gradient is Paddle's (2x) exactly."""
    compiled = gradc_cli("compile", files / "einsum_loss.pb", "-o", files / "einsum_loss_gradc.pb", "--wrt", "x")
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("run", files / "einsum_loss_gradc.pb", "--feed", files / "einsum_loss.npz", "--fetch",
                    "x@GRAD=g", "-o", files / "einsum_loss_out.npz")
    assert run.returncode == 0, run.stderr
    paddle = np.load(files / "einsum_loss.npz")
    np.testing.assert_array_equal(np.load(files / "einsum_loss_out.npz")["g"], paddle["grad"])


def test_nll_loss_written_last_is_the_loss(tmp_path):
    """F.nll_loss(reduction='mean') as the last op: refused the same way ('the last op writes several float scalars
    (nll_loss_0.tmp_0, nll_loss_0.tmp_1)', its Total_weight, which no grad op differentiates). Now its Out is the
    loss, and the gradient is Paddle's exactly (found by tools/compile_digests.py after the einsum fix)."""
    case = np.load(DATA / "ops" / "loss" / "nll_mean.npz")
    np.savez(tmp_path / "feed.npz", x=case["feed/x"], label=case["feed/label"])
    compiled = gradc_cli("compile", DATA / "ops" / "loss" / "nll_mean.forward.pb", "-o", tmp_path / "nll.pb",
                         "--wrt", "x")
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("run", tmp_path / "nll.pb", "--feed", tmp_path / "feed.npz", "--fetch", "x@GRAD=g", "-o",
                    tmp_path / "out.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["g"], case["grad/x@GRAD"])


def test_einsum_caches_are_not_named_as_loss_candidates(files):
    """Compiling the switch classifier noted 'float scalars no op reads besides it: einsum_0.tmp_1, einsum_0.tmp_2,
    einsum_1.tmp_1, einsum_1.tmp_2; if one of them is the loss, name it': einsum's caches, never a loss. Now no note."""
    run = gradc_cli("compile", files / "switch" / "forward.pb", "-o", files / "switch_gradc.pb")
    assert run.returncode == 0, run.stderr
    assert "einsum" not in run.stderr and "note" not in run.stderr


def test_pir_export_runs_to_paddles_predictor(files):
    """The switch classifier built in PIR static mode and save_inference_model'd, run by gradc: the logits are the
    Predictor's (oneDNN off) and Paddle's executor's to 1.8e-7, and the expert loads the same (no fault)."""
    run = gradc_cli("run", files / "switch_pir.json", "--params", files / "switch_pir.pdiparams", "--feed",
                    files / "switch" / "first.npz", "-o", files / "pir_out.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / "pir_out.npz"), np.load(files / "predictor_pir.npz")
    for prefix in ("", "executor_"):
        np.testing.assert_allclose(ours["fetch_name_0"], paddle[f"{prefix}logits"], rtol=0, atol=3e-7)
        np.testing.assert_array_equal(ours["fetch_name_1"], paddle[f"{prefix}load"])


def test_a_per_token_array_beside_per_sequence_ones_is_refused_with_the_shape_to_give(files, tmp_path):
    """The noise flattened to one row per token ([tokens, E] beside [sequences, ...]) was refused naming only --feed,
    which feeds an array whole at every step: not this one's case. The refusal now says how many rows each example
    holds and the shape to give (the fixture's [sequences, tokens, E], reshaped in the program)."""
    folder, data = files / "top2", dict(np.load(files / "top2" / "data.npz"))
    sequences, tokens, experts = data["noise"].shape
    np.savez(tmp_path / "flat.npz", **{**data, "noise": data["noise"].reshape(-1, experts)})
    run = gradc_cli("train", folder / "train.pb", "--startup", folder / "startup.pb", "--data", tmp_path / "flat.npz",
                    "--batch-size", 4)
    assert run.returncode == 1 and run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert (f"'noise' holds {tokens} rows for each of {sequences} examples: give it as [{sequences}, {tokens}, ...] "
            f"and reshape it in the program") in run.stderr

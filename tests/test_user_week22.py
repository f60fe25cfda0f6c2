"""A metric-learning engineer's week (docs/tools.md): a CLIP-style two-tower model with a clipped learnable logit scale
and the symmetric InfoNCE loss, an ArcFace head written by hand (acos, cos(theta + m), a one-hot mask: Paddle's
margin_cross_entropy has no CPU kernel) and a batch-hard triplet loss (where + argmax/argmin, index_sample), built with
Paddle 3.3.1's ops (tools/paddle_user_week22.py), trained, checked, exported tower by tower and scored by recall@k
with gradc; each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week22"
META = json.loads((WEEK / "meta.json").read_text())
OPTIMIZERS = {"clip": ("--optimizer", "adam", "--lr", "0.01"),
              "arcface": ("--optimizer", "momentum", "--lr", "0.05", "--momentum", "0.9"),
              "triplet": ("--optimizer", "sgd", "--lr", "0.1")}
TOWERS = {"image": ("image", META["clip"]["image_embed"]), "text": ("tokens", META["clip"]["text_embed"])}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files as the user has them: the fixture's programs unpacked beside its arrays."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week22"))
    return out


def _step_losses(lines: str) -> list[float]:
    return [next(iter(line["values"].values())) for line in map(json.loads, lines.splitlines())
            if line["event"] == "step"]


def _train(files, kind: str):
    """gradc compile with Paddle's optimizer settings, then gradc train over the shared data.npz in batches of 8 from
    Paddle's initial values: the run."""
    compiled = gradc_cli("compile", files / f"{kind}.pb", "-o", files / f"{kind}_train.pb", *OPTIMIZERS[kind])
    assert compiled.returncode == 0, compiled.stderr
    return gradc_cli("train", files / f"{kind}_train.pb", "--startup", files / f"{kind}_train.startup.pb",
                     "--params", files / f"init_{kind}.npz", "--data", files / "data.npz", "--batch-size", 8, "--json",
                     "--log-every", 1, "--save-params", files / f"{kind}_gradc.npz")


@pytest.mark.parametrize("kind", ["clip", "arcface", "triplet"])
def test_each_loss_trains_to_paddles_losses_from_one_shared_data_set(files, kind):
    """Before, the data set of images, captions and class labels (data.npz, one for the three losses) was refused by
    each program that does not read one of its arrays: "feed var 'label' is not declared in block 0 (the program's
    inputs: image, tokens)"; Paddle's executor warns "The variable label is not found in program" and runs. Now the
    array is left out with one warning naming it, and the 4 steps give Paddle's losses: the symmetric InfoNCE
    (5.2056 ... 6.8545, Adam), ArcFace (15.390 ... 8.3085, momentum), the batch-hard triplet (0.0991 ... 0.0160,
    SGD)."""
    run = _train(files, kind)
    assert run.returncode == 0, run.stderr
    unread = "tokens" if kind != "clip" else "label"
    assert f"holds arrays the program does not read ({unread}; its inputs: " in run.stderr
    np.testing.assert_allclose(_step_losses(run.stdout), META[kind]["losses"], rtol=2e-6)


def test_a_misnamed_array_is_still_refused_by_the_input_it_leaves_out(files):
    """Only arrays beside every input the program reads are left out: data without the captions is still refused,
    naming the op that reads them."""
    data = np.load(files / "data.npz")
    np.savez(files / "no_captions.npz", image=data["image"], captions=data["tokens"])
    _train(files, "clip")
    run = gradc_cli("train", files / "clip_train.pb", "--startup", files / "clip_train.startup.pb", "--params",
                    files / "init_clip.npz", "--data", files / "no_captions.npz", "--batch-size", 8)
    assert run.returncode == 1
    assert run.stderr.startswith(f"gradc: error: data '{files / 'no_captions.npz'}': has no array 'tokens', which "
                                 f"block 0, op 9 (lookup_table_v2) reads")


@pytest.mark.parametrize("kind", ["clip", "arcface", "triplet"])
def test_the_gradients_agree_with_float64_central_differences(files, kind):
    """gradc check of each loss at Paddle's initial values: the logit scale through exp and clip, p_norm and its
    division by max(norm, 1e-12), acos and cos at the margin, the one-hot mask, where, argmax/argmin and index_sample
    all agree with central differences (to 2e-9)."""
    data = np.load(files / "data.npz")
    names = ("image", "tokens") if kind == "clip" else ("image", "label")
    np.savez(files / f"{kind}_batch.npz", **{name: data[name][:8] for name in names})
    run = gradc_cli("check", files / f"{kind}.pb", "--feed", files / f"{kind}_batch.npz", "--params",
                    files / f"init_{kind}.npz", "--json")
    assert run.returncode == 0, run.stderr or run.stdout


def test_acos_gradient_near_the_clip_is_right_in_float32_where_paddles_is_not():
    """Paddle's float32 acos gradient near ArcFace's clip is -1/sqrt(1 - x*x) with 1 - x*x rounded: 2.5e-5 off at
    x = 0.9999 against float64; gradc's, -1/sqrt((1 - x)(1 + x)), stays within 5e-8 at the four cosines."""
    x = np.float32(META["acos_near_clip"]["x"])
    exact = -1 / np.sqrt(1 - x.astype(np.float64) ** 2)
    net = gradc.layers.ProgramBuilder()
    cosine = net.data("x", [4], "float32", stop_gradient=False)
    (angle,) = net.op("acos", {"X": cosine})
    (grad_name,) = gradc.gradients(net.program, angle, [cosine])
    (grad,) = gradc.Executor().run(net.program, feed={"x": x}, fetch_list=[grad_name])
    assert grad.dtype == np.float32
    np.testing.assert_allclose(grad, exact, rtol=5e-8)
    paddle_error = np.abs(np.float64(META["acos_near_clip"]["paddle"]) / exact - 1)
    assert paddle_error.max() > 2e-5


@pytest.mark.parametrize("tower", ["image", "text"])
def test_each_tower_exports_alone_to_the_predictors_embeddings(files, tower):
    """gradc export of the CLIP program with one tower's input and embedding, from Paddle's trained weights: the other
    tower's parameters and the logit scale are left out, as in Paddle's save_inference_model of the tower, and
    gradc run of it gives the Predictor's unit embeddings of the 16 gallery pairs to 1.2e-7."""
    feed, embed = TOWERS[tower]
    exported = gradc_cli("export", files / "clip.pb", "--params", files / "clip_trained.npz", "--input", feed,
                         "--fetch", embed, "-o", files / f"{tower}_gradc")
    assert exported.returncode == 0, exported.stderr
    model = gradc.load(files / f"{tower}_gradc.pdmodel")
    paddles = gradc.load(files / f"{tower}_tower.pdmodel")
    assert [op.type for op in model.global_block.ops] == [op.type for op in paddles.global_block.ops]
    predictor = np.load(files / "predictor.npz")
    np.savez(files / f"{tower}_gallery.npz", **{feed: predictor[f"gallery_{feed}"]})
    run = gradc_cli("run", files / f"{tower}_gradc.pdmodel", "--params", files / f"{tower}_gradc.pdiparams",
                    "--feed", files / f"{tower}_gallery.npz", "--out", files / f"{tower}_embeddings.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(files / f"{tower}_embeddings.npz")[embed], predictor[f"{tower}_embed"],
                               atol=2e-7)


def _recall(image_embed, text_embed, k: int) -> float:
    ranks = np.argsort(-(text_embed @ image_embed.T), axis=1)[:, :k]
    return float(np.mean([i in row for i, row in enumerate(ranks)]))


def test_one_towers_embeddings_from_the_training_program_and_recall_at_k(files):
    """Before, gradc run of the CLIP program for the gallery's image embeddings alone (--fetch the image tower's
    output, only images fed) stopped at the text tower: "op 9 (lookup_table_v2) reads var 'tokens' (slot Ids), which
    is not fed"; Paddle's exe.run(use_prune=True) runs what the fetch needs. Now, with --fetch and an input left out
    that the fetches do not need, only the ops they need run: each tower's embeddings are the Predictor's, and the
    recall@1 and @5 of captions to images they give are Paddle's (0.1875 and 0.8125 of 16). A fetch that needs the
    input left out is still refused by the op that reads it."""
    predictor = np.load(files / "predictor.npz")
    embeddings = {}
    for tower, (feed, embed) in TOWERS.items():
        np.savez(files / f"only_{feed}.npz", **{feed: predictor[f"gallery_{feed}"]})
        run = gradc_cli("run", files / "clip.pb", "--params", files / "clip_trained.npz", "--feed",
                        files / f"only_{feed}.npz", "--fetch", embed, "--out", files / f"{tower}_run.npz")
        assert run.returncode == 0, run.stderr
        embeddings[tower] = np.load(files / f"{tower}_run.npz")[embed]
        np.testing.assert_allclose(embeddings[tower], predictor[f"{tower}_embed"], atol=2e-7)
    for k in (1, 5):
        assert _recall(embeddings["image"], embeddings["text"], k) == META["clip"]["recall"][str(k)]
    run = gradc_cli("run", files / "clip.pb", "--params", files / "clip_trained.npz", "--feed",
                    files / "only_image.npz", "--fetch", META["clip"]["loss"])
    assert run.returncode == 1
    assert "op 9 (lookup_table_v2) reads var 'tokens' (slot Ids), which is not fed" in run.stderr


def test_near_the_clip_paddles_softmax_floor_bends_the_loss_not_its_gradient(files):
    """At a logit scale of 99.5 (a parameter of 4.6, just under the clip's log 100) from the initial weights, some
    true pairs' logits lie more than 64 below their row's largest: Paddle's CPU softmax_with_cross_entropy floors
    x - max(x) at -64, so its loss is 33.9289 where the float64 InfoNCE is 34.7420, while its gradient of the scale
    (34.6349) is the float64 InfoNCE's derivative, not that of the floored loss. gradc gives Paddle's loss and
    gradient; gradc check, differencing the floored loss (29.82), reports the scale's gradient as differing. Left as
    found (docs/tools.md): the floor is Paddle's forward, and its gradient is the one that trains."""
    near = META["clip"]["near_the_clip"]
    params = dict(np.load(files / "init_clip.npz")) | {"logit_scale": np.float32([near["logit_scale"]])}
    np.savez(files / "near_clip.npz", **params)
    data = np.load(files / "data.npz")
    np.savez(files / "first_pairs.npz", image=data["image"][:8], tokens=data["tokens"][:8])
    run = gradc_cli("check", files / "clip.pb", "--feed", files / "first_pairs.npz", "--params",
                    files / "near_clip.npz", "--wrt", "logit_scale", "--json")
    assert run.returncode == 1
    (checked,) = json.loads(run.stdout)["vars"]
    assert checked["mismatch"]["compiled"] == pytest.approx(near["grad"], rel=1e-6)
    assert checked["mismatch"]["numeric"] == pytest.approx(29.8218, rel=1e-4)
    scope = gradc.Scope()
    for name, value in params.items():
        scope[name] = value
    (loss,) = gradc.Executor().run(gradc.load(files / "clip.pb"), feed={"image": data["image"][:8],
                                                                       "tokens": data["tokens"][:8]},
                                   fetch_list=[META["clip"]["loss"]], scope=scope)
    assert loss == pytest.approx(near["loss"], rel=1e-6)
    wide = {name: value.astype(np.float64) for name, value in params.items()}

    def unit(rows):
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    hidden = np.maximum(data["image"][:8] @ wide["img_fc1.w_0"] + wide["img_fc1.b_0"], 0)
    images = unit(hidden @ wide["img_fc2.w_0"] + wide["img_fc2.b_0"])
    texts = unit(wide["word_embed"][data["tokens"][:8]].mean(1) @ wide["txt_fc.w_0"] + wide["txt_fc.b_0"])
    logits = images @ texts.T * np.exp(near["logit_scale"])

    def cross_entropy(rows):
        shifted = rows - rows.max(1, keepdims=True)
        return np.mean(np.log(np.exp(shifted).sum(1)) - np.diag(shifted))

    assert (cross_entropy(logits) + cross_entropy(logits.T)) / 2 == pytest.approx(34.7420, rel=1e-5)


def test_evaluate_gives_the_recall_at_k_of_captions_to_images_over_the_whole_set(files):
    """Before, gradc evaluate had no recall@k: the user ranked the towers' embeddings in numpy. --recall TEXT,IMAGE
    ranks every caption's similarity to every image of the set, across the batches (of 8, the InfoNCE's in-program
    labels' size): Paddle's 0.1875 and 0.8125 of 16, as the Predictor's embeddings give them; within each batch of 8
    alone they would be others. A pair of vars not [N, D] of one D is one error line."""
    predictor = np.load(files / "predictor.npz")
    np.savez(files / "gallery.npz", image=predictor["gallery_image"], tokens=predictor["gallery_tokens"])
    pair = f"{TOWERS['text'][1]},{TOWERS['image'][1]}"
    args = ("evaluate", files / "clip.pb", "--params", files / "clip_trained.npz", "--data", files / "gallery.npz",
            "--batch-size", 8)
    run = gradc_cli(*args, "--recall", pair, "--topk", "1,5", "--json")
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)
    image, text = predictor["image_embed"], predictor["text_embed"]
    for k in (1, 5):
        assert results[f"recall@{k}"] == META["clip"]["recall"][str(k)] == _recall(image, text, k)
    halves = np.mean([_recall(image[at:at + 8], text[at:at + 8], 5) for at in (0, 8)])
    assert halves != results["recall@5"]
    refused = gradc_cli(*args, "--recall", f"{TOWERS['text'][1]},tmp_2")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr == (f"gradc: error: data '{files / 'gallery.npz'}': evaluation: --recall: the embeddings "
                              f"'{TOWERS['text'][1]}' [-1, 8] and 'tmp_2' [] are not [N, D] of one D\n")

"""A word-embedding and knowledge-graph engineer's week (docs/tools.md): skip-gram with hand-made negatives over sparse
embeddings (SGD, Adam lazy and not, Adagrad), paddle.static.nn.nce (uniform and custom_dist samplers),
F.hsigmoid_loss (default and custom trees), TransE with its entities renormalised between steps, DistMult/ComplEx with
a softplus loss, cosine neighbours and filtered KG ranks, built with Paddle 3.3.1's layers
(tools/paddle_user_week37.py); gradc's tools on the SelectedRows gradients; each fault found, as the behaviour it has
now."""

import json
import pickle

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week37"
META = json.loads((WEEK / "meta.json").read_text())
OPTIMIZERS = {"sgd": ("sgd", 0.5), "adam": ("adam", 0.05), "adam_lazy": ("adam", 0.05, "--opt", "lazy_mode=True"),
              "adagrad": ("adagrad", 0.3)}
PADDED = "embedding_0.w_0"   # skip-gram's centre words: padding_idx 0, the first batch's fourth word


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return unpacked(WEEK, tmp_path_factory.mktemp("week37"))


def _train(files, model, data, optimizer, start=None):
    """gradc compile --optimizer ... and gradc train from Paddle's start, 5 steps of 8: the losses and the tables."""
    name, lr, *extra = OPTIMIZERS[optimizer]
    compiled = files / f"{model}_{optimizer}_gradc.pb"
    made = gradc_cli("compile", files / f"{model}.pb", "-o", compiled, "--optimizer", name, "--lr", lr, *extra)
    assert made.returncode == 0, made.stderr
    saved = files / f"{model}_{optimizer}_gradc.npz"
    run = gradc_cli("train", compiled, "--params", files / f"{start or model}_start.npz", "--startup",
                    compiled.with_suffix(".startup.pb"), "--data", files / f"{data}.npz", "--batch-size", 8,
                    "--json", "--log-every", 1, "--save-params", saved)
    assert run.returncode == 0, run.stderr
    steps = [line for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "step"]
    key = f"{model}_{optimizer}" if f"{model}_{optimizer}" in META else model
    return [step["values"][META[key]["loss"]] for step in steps], np.load(saved), key


def _agree(files, model, data, optimizer, rtol, atol):
    losses, saved, key = _train(files, model, data, optimizer)
    np.testing.assert_allclose(losses, META[key]["losses"], rtol=rtol)
    paddle = np.load(files / f"{model}_{optimizer}_trained.npz")
    for name in paddle.files:
        np.testing.assert_allclose(saved[name], paddle[name], atol=atol, err_msg=name)


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_skipgram_over_sparse_tables_trains_to_paddles_steps(files, optimizer):
    """Skip-gram with 4 hand-made negatives, both tables Embedding(sparse=True): Paddle's 5 losses to 1.7e-7
    relative and both tables to 4.9e-7 with SGD, Adam, lazy Adam and Adagrad (no fault), but for the padding row:
    the padded word's logits are exactly 0, where Paddle's sigmoid cross-entropy gradient is wrong (the next test),
    and Paddle's sparse kernel gives the padding row that position's gradient, as gradc does."""
    losses, saved, key = _train(files, "skipgram", "words", optimizer)
    np.testing.assert_allclose(losses, META[key]["losses"], rtol=5e-7)
    paddle = np.load(files / f"skipgram_{optimizer}_trained.npz")
    np.testing.assert_allclose(saved["embedding_0.w_1"], paddle["embedding_0.w_1"], atol=1e-6)
    np.testing.assert_allclose(saved[PADDED][1:], paddle[PADDED][1:], atol=1e-6)


def test_sigmoid_cross_entropy_gradient_at_a_zero_logit_is_right_where_paddles_is_off_by_one():
    """Paddle 3.3.1's gradient of binary_cross_entropy_with_logits at a logit of exactly 0 is sigmoid(0) - y - 1
    (-1.5 for y = 1, -0.5 for y = 0: dygraph and static alike); a padded word's logits are all 0. gradc's is
    sigmoid(0) - y, which float64 central differences give (check_op raises where they differ)."""
    grads = gradc.gradcheck.check_op("sigmoid_cross_entropy_with_logits",
                                     {"X": np.zeros((1, 2)), "Label": np.array([[1.0, 0.0]])})
    out_grad = np.random.default_rng(0).standard_normal((1, 2))   # check_op's seeded Out@GRAD
    np.testing.assert_allclose(grads["X0"], np.array([[-0.5, 0.5]]) * out_grad, rtol=1e-12)


@pytest.mark.parametrize("sampler", ["uniform", "custom_dist"])
def test_nce_written_sparse_trains_with_paddles_samples(files, sampler):
    """paddle.static.nn.nce(is_sparse=True, seed=7) writes remote_prefetch=True. Before, gradc refused to run it:
    "attribute remote_prefetch=True is not supported (parameter-server tables are not supported)"; Paddle runs it
    locally. Now SGD gives Paddle's 5 losses to 9.5e-8 relative and its tables to 3e-8: its uniform and custom_dist
    (alias) samples drawn as Paddle draws them from the seed."""
    _agree(files, f"nce_{sampler}", "words", "sgd", rtol=5e-7, atol=1e-6)


@pytest.mark.parametrize(("model", "data"), [("nce_uniform", "words"), ("hsigmoid_custom", "words_custom")])
def test_nce_and_hsigmoid_sparse_weight_gradients_train_lazy_adam_as_paddle(files, model, data):
    """With is_sparse, Paddle's nce_grad writes its Weight's gradient as a SelectedRows of the sampled classes
    (sorted, once each) and hierarchical_sigmoid_grad its W's as one of the path nodes: Adam(lazy_mode=True)
    updates those rows only. Before, gradc wrote them dense, and lazy Adam moved every row with a moment: losses
    1.9e-3 (nce) and 2.1e-3 (hsigmoid) relative off Paddle's, tables 0.11 and 0.06. Now 1.8e-7 and 0, tables 6e-8."""
    _agree(files, model, data, "adam_lazy", rtol=5e-7, atol=1e-6)
    program = gradc.load(files / f"{model}_adam_lazy_gradc.pb")
    weight = "nce_0.w_0@GRAD" if model.startswith("nce") else "create_parameter_0.w_0@GRAD"
    assert program.global_block.var(weight).type == gradc.ir.VarType.SELECTED_ROWS


@pytest.mark.parametrize("model", ["hsigmoid", "hsigmoid_custom"])
def test_hsigmoid_trees_train_to_paddles_steps(files, model):
    """F.hsigmoid_loss over the default tree of 30 words and over a custom 3-level tree (path_table / path_code,
    is_sparse: Paddle's sparse kernel refuses the default tree), SGD: Paddle's losses to 1.1e-7, tables to 6e-8.
    Before, the compiled program copied W before the op (an assign to W@SAVE@0@1, read by its grad op: W_Out, which
    Paddle's layer names W itself, was taken for a write of W), which Paddle's program does not (gradc diff); now
    none is made."""
    _agree(files, model, "words_custom" if "custom" in model else "words", "sgd", rtol=5e-7, atol=1e-6)
    program, paddles = (gradc.load(files / f"{model}_sgd_{which}.pb").global_block for which in ("gradc", "train"))
    assert [op.type for op in program.ops] == [op.type for op in paddles.ops]
    assert not [name for name in program.vars if "@SAVE" in name]


def test_complex_distmult_with_a_padding_entity_trains_with_adagrad(files):
    """ComplEx-style DistMult scores, F.softplus(-y * score), Adagrad: Paddle's losses to 6.4e-8, tables to 4.2e-7."""
    _agree(files, "distmult", "kg", "adagrad", rtol=5e-7, atol=2e-6)


def test_transe_renormalised_between_steps_by_its_own_program(files):
    """TransE (L1 of h + r - t, margin ranking against corrupted triples, SGD) and the user's renorm program, run
    in one gradc.Scope after each step through the Python API: Paddle's 5 losses to 1.8e-7 and tables to 3e-8."""
    program = gradc.load(files / "transe.pb")
    startup = gradc.minimize(program, optimizer="sgd", lr=0.5)
    renorm = gradc.load(files / "renorm.pb")
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(startup, scope=scope)
    gradc.load_params(scope, files / "transe_start.npz", program)
    triples, losses = dict(np.load(files / "kg.npz")), []
    for step in range(5):
        feed = {key: value[step * 8:(step + 1) * 8] for key, value in triples.items()}
        losses.append(float(executor.run(program, feed=feed, fetch_list=[META["transe"]["loss"]], scope=scope)[0]))
        executor.run(renorm, scope=scope)
    np.testing.assert_allclose(losses, META["transe"]["losses"], rtol=5e-7)
    paddle = np.load(files / "transe_sgd_trained.npz")
    for name in paddle.files:
        np.testing.assert_allclose(scope[name], paddle[name], atol=1e-6)
    assert np.linalg.norm(scope["embedding_0.w_0"], axis=1).max() <= 1 + 1e-6


def test_cosine_neighbours_and_filtered_ranks_are_paddles(files):
    """gradc run of the neighbours program (topk 5 of the normalised table's products) on the lazy-free Adam
    table: Paddle's 40 neighbours exactly, similarities to 1.8e-7; the filtered-rank program on the TransE tables:
    Paddle's 8 ranks, mean rank 11.75 and hits@10 0.375 exactly."""
    paddle, names = np.load(files / "paddle_eval.npz"), META["eval"]
    for program, params, fetches in (("neighbours", "skipgram_adam", ("similar", "nearest")),
                                     ("kg_rank", "transe_sgd", ("ranks", "mean_rank", "hits10"))):
        ran = gradc_cli("run", files / f"{program}.pb", "--params", files / f"{params}_trained.npz", "--feed",
                        files / "eval_feed.npz", *[arg for key in fetches for arg in ("--fetch", names[key])],
                        "-o", files / f"{program}_out.npz")
        assert ran.returncode == 0, ran.stderr
        out = np.load(files / f"{program}_out.npz")
        for key in fetches:
            np.testing.assert_allclose(out[names[key]], paddle[key], atol=5e-7, err_msg=key)
    assert float(paddle["mean_rank"]) == 11.75 and float(paddle["hits10"]) == 0.375


def test_check_compares_sparse_gradients_and_names_the_padding_row(files):
    """Before, gradc check of a program with Embedding(sparse=True) crashed: "internal error: TypeError: float()
    argument must be a string or a real number, not 'SelectedRows'". Now the gradients compare as the tables they
    stand for: the context table agrees with float64 central differences to 1e-10, and the centre table differs at
    its padding row only (the output gradient of the padded position, which Paddle's sparse kernel gives it; the
    loss does not depend on that row), which the error now says instead of blaming the loss's Label."""
    args = ("check", files / "skipgram.pb", "--params", files / "skipgram_start.npz", "--feed",
            files / "first_batch.npz", "--max-elements", 240)
    np.savez(files / "first_batch.npz", **{key: value[:8] for key, value in np.load(files / "words.npz").items()})
    agreed = gradc_cli(*args, "--wrt", "embedding_0.w_1")
    assert agreed.returncode == 0, agreed.stderr
    assert "embedding_0.w_1    240/240" in agreed.stdout
    padded = gradc_cli(*args)
    assert padded.returncode == 1 and "MISMATCH at [0, " in padded.stdout
    assert padded.stderr.startswith("gradc: error: gradients differ from central differences for embedding_0.w_0; "
                                    "embedding_0.w_0 is read by lookup_table_v2 (block 0, op 0) padding_idx 0: its "
                                    "padding row gets the output gradient of the padding positions")
    assert "Label" not in padded.stderr and padded.stderr.count("\n") == 1


def test_precision_compares_the_sparse_table_gradients(files):
    """Before, gradc precision left the lookups' SelectedRows gradients out and read lazy Adam's inputs as exact
    ("inputs 0.0e+00", growth 2.88 blamed on Adam, no own error). Now both lookup_table_v2_grad rows are listed
    and Adam's inputs' error is the gradient's (1e-7), its own error measured (3.4e-7)."""
    _, _, _ = _train(files, "skipgram", "words", "adam_lazy")
    compiled = files / "skipgram_adam_lazy_gradc.pb"
    np.savez(files / "first_batch.npz", **{key: value[:8] for key, value in np.load(files / "words.npz").items()})
    shown = gradc_cli("precision", compiled, "--params", files / "skipgram_start.npz", "--startup",
                      compiled.with_suffix(".startup.pb"), "--feed", files / "first_batch.npz", "--top", 30,
                      "--json")
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)["rows"]
    assert {row["output"] for row in rows if row["type"] == "lookup_table_v2_grad"} == {
        "embedding_0.w_0@GRAD", "embedding_0.w_1@GRAD"}
    adam = [row for row in rows if row["type"] == "adam"]
    assert len(adam) == 2 and all(row["inputs"] > 1e-8 and row["own"] is not None for row in adam)


def test_checkpoint_pair_holds_what_paddles_training_program_asks_for(files):
    """--save-params .pdparams / .pdopt of the lazy-Adam skip-gram hold Paddle's training program's persistables by
    Paddle's names (Paddle's set_program_state of them ran its next step, checked once by hand; no fault)."""
    _train(files, "skipgram", "words", "adam_lazy")
    compiled = files / "skipgram_adam_lazy_gradc.pb"
    names = set()
    for suffix in (".pdparams", ".pdopt"):
        saved = gradc_cli("train", compiled, "--params", files / "skipgram_start.npz", "--startup",
                          compiled.with_suffix(".startup.pb"), "--data", files / "words.npz", "--batch-size", 8,
                          "--save-params", files / f"lazy{suffix}")
        assert saved.returncode == 0, saved.stderr
        with open(files / f"lazy{suffix}", "rb") as handle:
            names |= set(pickle.load(handle))
    paddle = gradc.load(files / "skipgram_adam_lazy_train.pb").global_block
    assert names == {name for name, var in paddle.vars.items() if var.persistable and name not in ("feed", "fetch")}


def test_the_lookup_exported_as_pir_runs_as_paddles_predictor(files):
    """Paddle's jit.save of the trained lookup (normalised vectors, padding_idx 0) run by gradc gives the
    Predictor's 30 vectors to 6e-8; gradc export --format pir of the centre lookup runs to the trained table, the
    padding row 0 (Paddle's Predictor gives the same on gradc's export: checked once by hand; no fault)."""
    np.savez(files / "all_words.npz", words=np.arange(30, dtype=np.int64),
             centre=np.arange(30, dtype=np.int64).reshape(-1, 1))
    ran = gradc_cli("run", files / "embed_pir.json", "--params", files / "embed_pir.pdiparams", "--feed",
                    files / "all_words.npz", "-o", files / "vectors.npz")
    assert ran.returncode == 0, ran.stderr
    np.testing.assert_allclose(np.load(files / "vectors.npz")["fetch_name_0"],
                               np.load(files / "predictor_pir.npz")["fetch_name_0"], atol=2e-7)
    exported = gradc_cli("export", files / "skipgram.pb", "-o", files / "lookup", "--input", "centre", "--fetch",
                         "embedding_0.tmp_0", "--params", files / "skipgram_adam_trained.npz", "--format", "pir")
    assert exported.returncode == 0, exported.stderr
    ran = gradc_cli("run", files / "lookup.json", "--params", files / "lookup.pdiparams", "--feed",
                    files / "all_words.npz", "-o", files / "lookup.npz")
    assert ran.returncode == 0, ran.stderr
    table = np.load(files / "skipgram_adam_trained.npz")[PADDED]
    looked_up = np.load(files / "lookup.npz")["embedding_0.tmp_0"].reshape(30, -1)
    np.testing.assert_array_equal(looked_up[1:], table[1:])
    assert not looked_up[0].any()


def test_info_says_which_tables_get_sparse_gradients_and_how_they_are_updated(files):
    """Before, gradc info of Paddle's lazy-Adam training program said "training program (7 backward, 2 optimizer
    ops)" and nothing of its SelectedRows gradients or lazy_mode (only gradc show's var list had them); a forward
    program did not say which ops ask for sparse gradients. Now one line names them, with their update."""
    shown = gradc_cli("info", files / "skipgram_adam_lazy_train.pb")
    assert shown.returncode == 0, shown.stderr
    assert ("sparse gradients (SelectedRows: only the rows a batch touches): embedding_0.w_0 (adam, lazy_mode), "
            "embedding_0.w_1 (adam, lazy_mode)") in shown.stdout.splitlines()
    facts = json.loads(gradc_cli("info", files / "hsigmoid_custom.pb", "--json").stdout)
    assert facts["sparse_gradients"] == {"create_parameter_0.w_0": "hierarchical_sigmoid is_sparse",
                                         "embedding_0.w_0": "lookup_table_v2 is_sparse"}
    assert json.loads(gradc_cli("info", files / "transe.pb", "--json").stdout)["sparse_gradients"] == {}


def test_the_skipgram_in_pir_mode_trains_to_paddles_steps(files):
    """The skip-gram in Paddle 3's PIR static mode (nn.Embedding(sparse=True) both; paddle.static.nn.embedding and nce
    are legacy-only there), Adam(lazy_mode=True): Paddle's PIR training program run by gradc, and gradc's compile
    of the saved model.json, give Paddle's 5 losses to 1e-7 relative and its tables to 6e-8, the padding row
    included: Paddle's PIR backward writes a dense pd_op.embedding_grad whatever sparse=True says (so lazy_mode moves
    every row with a moment, and the padding row gets no gradient), and gradc's compile of it does the same (no
    fault)."""
    paddle = np.load(files / "pir_skipgram_paddle.npz")
    compiled = gradc_cli("compile", files / "pir_skipgram_model.json", "-o", files / "pir_gradc.pb", "--optimizer",
                         "adam", "--lr", 0.05, "--opt", "lazy_mode=True")
    assert compiled.returncode == 0, compiled.stderr
    for program, startup, loss in (("pir_skipgram_train.json", "pir_skipgram_startup.json", "loss"),
                                   ("pir_gradc.pb", "pir_gradc.startup.pb", "fetch_name_0")):
        run = gradc_cli("train", files / program, "--params", files / "pir_skipgram_params.npz", "--startup",
                        files / startup, "--data", files / "words.npz", "--batch-size", 8, "--json", "--log-every", 1,
                        "--save-params", files / "pir_trained.npz")
        assert run.returncode == 0, run.stderr
        losses = [line["values"][loss] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "step"]
        np.testing.assert_allclose(losses, paddle["loss"], rtol=5e-7)
        trained = np.load(files / "pir_trained.npz")
        for name in trained.files:
            np.testing.assert_allclose(trained[name], paddle[f"trained.{name}"], atol=1e-6, err_msg=name)


def test_train_runs_the_renorm_program_after_every_step(files):
    """Before, gradc train had no way to run TransE's renormalisation between steps (the Python loop above only);
    now --after-step renorm.pb runs it on the trained values after each step: Paddle's 5 losses to 1.8e-7 and tables
    to 3e-8. A program that reads inputs is refused before the first step, naming it."""
    compiled = gradc_cli("compile", files / "transe.pb", "-o", files / "transe_sgd.pb", "--optimizer", "sgd", "--lr",
                         0.5)
    assert compiled.returncode == 0, compiled.stderr
    args = ("train", files / "transe_sgd.pb", "--params", files / "transe_start.npz", "--startup",
            files / "transe_sgd.startup.pb", "--data", files / "kg.npz", "--batch-size", 8)
    run = gradc_cli(*args, "--after-step", files / "renorm.pb", "--json", "--log-every", 1, "--save-params",
                    files / "transe_renormed.npz")
    assert run.returncode == 0, run.stderr
    losses = [line["values"][META["transe"]["loss"]] for line in map(json.loads, run.stdout.splitlines())
              if line["event"] == "step"]
    np.testing.assert_allclose(losses, META["transe"]["losses"], rtol=5e-7)
    paddle, saved = np.load(files / "transe_sgd_trained.npz"), np.load(files / "transe_renormed.npz")
    for name in paddle.files:
        np.testing.assert_allclose(saved[name], paddle[name], atol=1e-6, err_msg=name)
    fed = gradc_cli(*args, "--after-step", files / "kg_rank.pb")
    assert fed.returncode == 1 and fed.stderr == (
        f"gradc: error: --after-step program '{files / 'kg_rank.pb'}': it reads the input(s) head, known, relation, "
        "tail, and runs unfed after each step\n")


@pytest.mark.parametrize(("model", "data"), [("nce_uniform", "words"), ("hsigmoid_custom", "words_custom")])
def test_a_pir_write_of_sparse_weight_gradients_runs_dense_and_says_so(files, model, data):
    """gradc compile -o train.json of the lazy-Adam nce and hsigmoid models: before, nce_grad and hsigmoid_loss_grad
    kept is_sparse, and Paddle's executor refused the file ("FeedOp, FetchOp, ArrayLengthOp can only output a dense
    tensor": its kernels made the weight's gradient SelectedRows); the embedding's was written dense, silently, so
    lazy Adam updated every row. Now all three are written dense, as Paddle's PIR backward writes an
    Embedding(sparse=True)'s, Paddle runs the file to gradc's losses (nce 1.30106, 1.27106, 1.28156, 1.24825,
    1.22193; checked once by hand), and a note says what changed."""
    compiled = gradc_cli("compile", files / f"{model}.pb", "-o", files / f"{model}_lazy.json", "--optimizer", "adam",
                         "--lr", 0.05, "--opt", "lazy_mode=True")
    assert compiled.returncode == 0, compiled.stderr
    weight = "nce_0.w_0" if model.startswith("nce") else "create_parameter_0.w_0"
    assert (f"gradc: note: PIR holds the sparse (SelectedRows) gradients of embedding_0.w_0, {weight} dense"
            if model.startswith("nce") else
            f"gradc: note: PIR holds the sparse (SelectedRows) gradients of {weight}, embedding_0.w_0 dense") \
        in compiled.stderr
    program = gradc.load(files / f"{model}_lazy.json").global_block
    grads = [op for op in program.ops if op.type in ("nce_grad", "hierarchical_sigmoid_grad")]
    assert len(grads) == 1 and not grads[0].attrs.get("is_sparse")
    assert json.loads(gradc_cli("info", files / f"{model}_lazy.json", "--json").stdout)["sparse_gradients"] == {}
    run = gradc_cli("train", files / f"{model}_lazy.json", "--params", files / f"{model}_start.npz", "--startup",
                    files / f"{model}_lazy.startup.json", "--data", files / f"{data}.npz", "--batch-size", 8)
    assert run.returncode == 0, run.stderr

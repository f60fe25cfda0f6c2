"""Four earlier users' weeks again in Paddle 3's PIR (docs/tools.md): MAML and Meta-SGD (week 21), the SR net (week
23), the wide-and-deep tabular model (week 24), distillation and a masked MLP (week 27), built by Paddle 3.3.1's
layers in PIR mode (tools/paddle_pir_weeks.py): its save_inference_model JSON compiled by gradc, and its own PIR
training programs, train to Paddle's per-step numbers. Each fault found, as the behaviour it has now."""

import gzip
import json
import shutil

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.gradcheck import compare_program
from gradc.pir import load_pir
from user_weeks import assert_as_close_to_float64

WEEKS = DATA / "pir_weeks"
META = json.loads((WEEKS / "meta.json").read_text())
TASKS = DATA / "user_week21" / "tasks.npz"
# each case: the optimizer as Paddle's, the data as its steps took it
CASES = {"maml": (["--optimizer", "adam", "--lr", "0.001"], ["--data", TASKS, "--episodes"]),
         "fomaml": (["--optimizer", "adam", "--lr", "0.001"], ["--data", TASKS, "--episodes"]),
         "metasgd": (["--optimizer", "adam", "--lr", "0.001"], ["--data", TASKS, "--episodes"]),
         "distill": (["--optimizer", "adam", "--lr", "0.01", "--loss", "fetch_name_0"],
                     ["--data", DATA / "user_week27" / "data.npz", "--batch-size", "16"]),
         "pruned": (["--optimizer", "momentum", "--lr", "0.05", "--momentum", "0.9", "--weight-decay", "0.001"],
                    ["--data", DATA / "user_week27" / "data.npz", "--batch-size", "16"]),
         "tabular": (["--optimizer", "adam", "--lr", "0.01"],
                     ["--data", DATA / "user_week24" / "train.csv", "--batch-size", "32"]),
         "sr": (["--optimizer", "adam", "--lr", "0.01", "--loss", "fetch_name_0"],
                ["--data", DATA / "user_week23" / "data.npz", "--batch-size", "4"])}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The weeks' files as the user has them, the programs unpacked."""
    out = tmp_path_factory.mktemp("pir_weeks")
    for case in [*CASES, "classify"]:
        (out / case).mkdir()
        for path in (WEEKS / case).iterdir():
            if path.suffix == ".gz":
                (out / case / path.stem).write_bytes(gzip.decompress(path.read_bytes()))
            else:
                shutil.copy(path, out / case / path.name)
    return out


def _paddle(case: str):
    return np.load(WEEKS / case / "paddle.npz")


def _train(files, case: str, program: str, startup: str, *extra) -> list[dict]:
    """`gradc train` of the case's program from its start, a line of --json per step."""
    done = gradc_cli("train", files / case / program, "--startup", files / case / startup, "--params",
                     files / case / "params.npz", *CASES[case][1], "--json", "--log-every", "1", "--save-params",
                     files / case / f"{program}.trained.npz", *extra)
    assert done.returncode == 0, done.stderr
    return [line for line in map(json.loads, done.stdout.splitlines()) if line["event"] == "step"]


def _assert_trained_like_paddle(files, case: str, program: str, rtol: float) -> None:
    """The weights after training as Paddle's, within ``rtol`` of their largest, or, where Paddle's float64 run of
    the case is kept (paddle64.npz), as close to it as Paddle's float32 weights are (twice their distance): MAML's w2
    after 8 Adam steps through second derivatives is 5.3e-5 off float64 in Paddle's float32 and 4.3e-5 in gradc's,
    which then differ by 1e-5, in either direction by the CPU's OpenBLAS kernels."""
    trained, paddle = np.load(files / case / f"{program}.trained.npz"), _paddle(case)
    exact = np.load(WEEKS / case / "paddle64.npz") if (WEEKS / case / "paddle64.npz").exists() else None
    for name in META[case]["params"]:
        expected = paddle[f"trained.{name}"]
        atol = rtol * np.abs(expected).max()
        if exact is None:
            np.testing.assert_allclose(trained[name], expected, rtol=0, atol=atol, err_msg=name)
        else:
            assert_as_close_to_float64(trained[name], [expected], exact[f"trained.{name}"], atol, name)


def _compiled(files, case: str) -> str:
    if not (files / case / "gradc_train.json").exists():
        done = gradc_cli("compile", files / case / "model.json", "-o", files / case / "gradc_train.json",
                         *CASES[case][0])
        assert done.returncode == 0, done.stderr
    return "gradc_train.json"


@pytest.mark.parametrize("case", ["maml", "metasgd"])
def test_paddles_pir_maml_with_double_grad_ops_trains_to_its_losses_reporting_the_outer_loss(files, case):
    """Before, Paddle's PIR training program of MAML was refused: "2 PIR op type(s) gradc cannot translate:
    pd_op.square_double_grad ...; pd_op.subtract_double_grad" (the second derivative of the support MSE); and, once
    read, `gradc train` reported the support loss (reduce_mean_0.tmp_0) beside the outer one: a PIR program keeps no
    op_role, and the query's forward, computed from the inner gradients, was taken for backward ops, so the support
    loss was not seen as an inner objective. Now the rows translate them to square_grad_grad and
    elementwise_sub_grad_grad, and the report is Paddle's fetched loss alone: its 8 losses, and its weights."""
    program = load_pir(gzip.decompress((WEEKS / case / "train.json.gz").read_bytes()))
    assert {"square_grad_grad", "elementwise_sub_grad_grad", "matmul_v2_grad_grad"} <= {
        op.type for op in program.global_block.ops}
    steps = _train(files, case, "train.json", "startup.json")
    assert [list(step["values"]) for step in steps] == [["loss"]] * 8
    np.testing.assert_allclose([step["values"]["loss"] for step in steps], _paddle(case)["loss"], rtol=3e-7)
    _assert_trained_like_paddle(files, case, "train.json", 6e-6)


@pytest.mark.parametrize("case", ["maml", "fomaml", "metasgd"])
def test_maml_saved_by_save_inference_model_compiles_and_trains_to_paddles_outer_losses(files, case):
    """Before, `gradc info model.json` named the support loss as the loss ("the backward starts from it, a PIR
    program's seed"), and `gradc train` of gradc's compile of it reported that support loss (MAML 7.893 mean, where
    the outer losses' is 6.214). Now info names the fetched outer loss, and the compiled program trains to Paddle's
    8 outer losses and weights (second derivatives by gradc's own backward), reporting them."""
    done = gradc_cli("info", files / case / "model.json", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["loss"] == "fetch_name_0"
    steps = _train(files, case, _compiled(files, case), "gradc_train.startup.json")
    assert [list(step["values"]) for step in steps] == [["fetch_name_0"]] * 8
    np.testing.assert_allclose([step["values"]["fetch_name_0"] for step in steps], _paddle(case)["loss"], rtol=3e-7)
    _assert_trained_like_paddle(files, case, "gradc_train.json", 6e-6)


def test_maml_outer_loss_gradient_is_central_differences(files):
    """No fault: the meta-gradient of the saved PIR model, through the inner step's PIR grad ops, agrees with float64
    central differences."""
    program, params = gradc.load(files / "maml" / "model.json"), dict(np.load(files / "maml" / "params.npz"))
    feed = {name: value[0] for name, value in np.load(TASKS).items()}
    _, checks = compare_program(program, feed, META["maml"]["params"], "fetch_name_0", params, float64=True,
                                directions=3)
    assert len(checks) == 6 and [check.var for check in checks if check.mismatch is not None] == []


@pytest.mark.parametrize("case", ["distill", "sr"])
def test_a_loss_named_at_compile_is_reported_by_train_of_the_pir_program(files, case):
    """Before, a PIR model fetching several scalars (distillation's loss, KL and feature MSE; the SR net's loss and
    PSNR), compiled with `--loss fetch_name_0` to a .json, trained without a report: "no value to report: the program
    has no scalar loss gradc can pick (a loss of one value per example is not one)": PIR keeps no op_role, so the
    named loss was lost in the file. Now the backward's seed is written as Paddle writes it (ones like the loss,
    pd_op.full_like), and train reports the loss: Paddle's per-step losses, and its weights."""
    steps = _train(files, case, _compiled(files, case), "gradc_train.startup.json")
    assert [list(step["values"]) for step in steps] == [["fetch_name_0"]] * 6
    np.testing.assert_allclose([step["values"]["fetch_name_0"] for step in steps], _paddle(case)["loss"], rtol=2e-6)
    _assert_trained_like_paddle(files, case, "gradc_train.json", 1e-6)


@pytest.mark.parametrize("case", ["fomaml", "distill", "pruned", "tabular", "sr"])
def test_paddles_pir_training_programs_train_to_its_losses_and_weights(files, case):
    """No fault: Paddle's own PIR minimize programs of the other cases give its per-step losses and weights. In PIR
    Paddle trains first-order MAML (its legacy minimize returned no parameter gradient, week 21): 6 pairs, no
    second-order op, and gradc's training of Paddle's program and of its compile of model.json agree with it."""
    steps = _train(files, case, "train.json", "startup.json")
    np.testing.assert_allclose([step["values"]["loss"] for step in steps], _paddle(case)["loss"], rtol=2e-6)
    _assert_trained_like_paddle(files, case, "train.json", 1e-6)


def test_a_fetched_accuracy_is_no_loss_candidate(files):
    """Before, `gradc compile model.json` of the tabular model (fetching the loss, the AUC and the accuracy) stopped:
    "cannot pick the loss by itself: the last op writes several float scalars (fetch_name_0, fetch_name_2)", the
    accuracy among them (an auc's was left out, an accuracy's not). Now metrics and gradients are no fetched loss
    candidates: it compiles with the loss picked, and the AUC and accuracy fetched per step are Paddle's."""
    steps = _train(files, "tabular", _compiled(files, "tabular"), "gradc_train.startup.json",
                   "--fetch", "fetch_name_0", "--fetch", "fetch_name_1", "--fetch", "fetch_name_2")
    paddle = _paddle("tabular")
    for name, key in (("fetch_name_0", "loss"), ("fetch_name_1", "auc"), ("fetch_name_2", "accuracy")):
        np.testing.assert_allclose([step["values"][name] for step in steps], paddle[key], rtol=2e-6, err_msg=key)
    _assert_trained_like_paddle(files, "tabular", "gradc_train.json", 1e-6)


def test_pir_keeps_trainable_false_so_the_masks_and_the_teacher_stay_frozen(files):
    """No fault (week 27's legacy programs needed --no-grad): PIR keeps trainable=False, so gradc compile gives the
    pruned MLP's masks and the distillation's teacher no gradient; the masks stay 0/1, every masked weight 0."""
    assert not any(name.endswith("_mask@GRAD") or name.startswith("teacher") for name in
                   gradc.load(files / "pruned" / _compiled(files, "pruned")).global_block.vars
                   if name.endswith("@GRAD"))
    steps = _train(files, "pruned", _compiled(files, "pruned"), "gradc_train.startup.json")
    np.testing.assert_allclose([step["values"]["fetch_name_0"] for step in steps], _paddle("pruned")["loss"],
                               rtol=2e-6)
    trained = np.load(files / "pruned" / "gradc_train.json.trained.npz")
    start = np.load(WEEKS / "pruned" / "params.npz")
    for weight in ("fc1.w", "fc2.w"):
        np.testing.assert_array_equal(trained[f"{weight}_mask"], start[f"{weight}_mask"])
        assert (trained[weight][start[f"{weight}_mask"] == 0] == 0).all()
    distill = gradc.load(files / "distill" / _compiled(files, "distill")).global_block.vars
    assert not [name for name in distill if name.startswith("teacher") and name.endswith("@GRAD")]


def test_paddles_pir_batchmean_kl_divides_by_minus_one_and_gradc_runs_what_the_program_says(files):
    """Found in Paddle (left as it is): PIR's F.kl_div(reduction="batchmean") divides by input.shape[0], which is -1
    for a batch declared -1, so the KL term is minus its sum and the distillation maximises it (Paddle's losses
    -35.9 ... -101.6). gradc runs the program as written: its KL is Paddle's, negative, at every step."""
    paddle = _paddle("distill")
    assert (paddle["kl"] < 0).all()
    steps = _train(files, "distill", _compiled(files, "distill"), "gradc_train.startup.json",
                   "--fetch", "fetch_name_1")
    np.testing.assert_allclose([step["values"]["fetch_name_1"] for step in steps], paddle["kl"], rtol=2e-6)


def test_evaluate_of_a_model_fetching_several_scalars_says_which_and_takes_loss(files):
    """Before, `gradc evaluate` of the SR model (fetching its loss and PSNR) said "the program has no loss and no class
    scores ...; name the scalars to average (--fetch NAME) or the labels (--label NAME)": it has a loss, gradc could
    not pick between two, and --loss, the option that says which, went unnamed. Now the error names the candidates
    and --loss; with it the loss and the PSNR are averaged. `gradc run` of the saved model at the start gives
    Paddle's first loss."""
    common = ("--params", files / "sr" / "params.npz", "--data", DATA / "user_week23" / "data.npz", "--batch-size", "4")
    refused = gradc_cli("evaluate", files / "sr" / "model.json", *common)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
    assert "several float scalars (fetch_name_0, fetch_name_1)" in refused.stderr
    assert "name the loss (--loss NAME)" in refused.stderr
    done = gradc_cli("evaluate", files / "sr" / "model.json", *common, "--loss", "fetch_name_0", "--fetch",
                     "fetch_name_1", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["examples"] == 24 and result["loss_var"] == "fetch_name_0"
    first = {name: value[:4] for name, value in np.load(DATA / "user_week23" / "data.npz").items()}
    program, scope = gradc.load(files / "sr" / "model.json"), gradc.Scope()
    gradc.load_params(scope, files / "sr" / "params.npz", program)
    (loss,) = gradc.Executor().run(program, first, ["fetch_name_0"], scope)
    np.testing.assert_allclose(float(loss), _paddle("sr")["loss"][0], rtol=1e-6)


def test_five_way_maml_paddle_cannot_minimize_in_pir_trains_in_gradc(files):
    """No fault; Paddle fails: its PIR minimize of the 5-way classification MAML stops, "op
    'pd_op.cross_entropy_with_softmax_grad' has no grad op" (as its legacy one did). gradc evaluates the saved PIR
    model to Paddle's outer loss and accuracy on the 8 tasks, its meta-gradient agrees with float64 central
    differences, and compiled with Adam it trains: the query loss falls, the accuracy rises, over 10 epochs."""
    assert "cross_entropy_with_softmax_grad' has no grad op" in META["classify"]["paddle_minimize"]
    model, tasks = files / "classify" / "model.json", DATA / "user_week21" / "classify" / "tasks.npz"
    common = ("--params", files / "classify" / "params.npz", "--data", tasks, "--episodes")
    done = gradc_cli("evaluate", model, *common, "--fetch", "fetch_name_0", "--fetch", "fetch_name_1", "--json")
    assert done.returncode == 0, done.stderr
    means, paddle = json.loads(done.stdout), _paddle("classify")
    np.testing.assert_allclose([means["fetch_name_0"], means["fetch_name_1"]],
                               [paddle["loss"].mean(), paddle["accuracy"].mean()], rtol=1e-6)
    feed = {name: value[0] for name, value in np.load(tasks).items()}
    _, checks = compare_program(gradc.load(model), feed, META["classify"]["params"], "fetch_name_0",
                                dict(np.load(files / "classify" / "params.npz")), float64=True, directions=3)
    assert len(checks) == 3 and [check.var for check in checks if check.mismatch is not None] == []
    assert gradc_cli("compile", model, "-o", files / "classify" / "train.json", "--optimizer", "adam", "--lr",
                     "0.001").returncode == 0
    done = gradc_cli("train", files / "classify" / "train.json", "--startup", files / "classify" / "train.startup.json",
                     *common, "--epochs", "10", "--fetch", "fetch_name_0", "--fetch", "fetch_name_1", "--json")
    assert done.returncode == 0, done.stderr
    epochs = [line["train"] for line in map(json.loads, done.stdout.splitlines()) if line["event"] == "epoch"]
    assert epochs[-1]["fetch_name_0"] < epochs[0]["fetch_name_0"] - 0.15
    assert epochs[-1]["fetch_name_1"] > epochs[0]["fetch_name_1"] + 0.1


def test_dygraph_maml_saved_by_jit_save_compiles_and_trains_to_paddles_dygraph_losses(files):
    """No fault: MAML in dygraph, its inner step by paddle.grad(create_graph=True), saved by paddle.jit.save (the
    inner backward's grad ops in the saved PIR forward): gradc compile --optimizer adam trains it to the losses and
    weights of Paddle's dygraph Adam, a task a step."""
    jit = WEEKS / "jit_maml"
    (files / "jit_maml").mkdir(exist_ok=True)
    model = files / "jit_maml" / "model.json"
    model.write_bytes(gzip.decompress((jit / "model.json.gz").read_bytes()))
    assert gradc_cli("compile", model, "-o", files / "jit_maml" / "train.json", "--optimizer", "adam", "--lr",
                     "0.001").returncode == 0
    done = gradc_cli("train", files / "jit_maml" / "train.json", "--startup", files / "jit_maml" / "train.startup.json",
                     "--params", jit / "params.npz", "--data", TASKS, "--episodes", "--json", "--log-every", "1",
                     "--save-params", files / "jit_maml" / "trained.npz")
    assert done.returncode == 0, done.stderr
    steps = [line["values"] for line in map(json.loads, done.stdout.splitlines()) if line["event"] == "step"]
    paddle = np.load(jit / "paddle.npz")
    np.testing.assert_allclose([step["fetch_name_0"] for step in steps], paddle["loss"], rtol=3e-7)
    trained = np.load(files / "jit_maml" / "trained.npz")
    for name in META["jit_maml"]["params"]:
        expected = paddle[f"trained.{name}"]
        np.testing.assert_allclose(trained[name], expected, rtol=0, atol=1e-6 * np.abs(expected).max(), err_msg=name)


def test_the_fetched_scalar_summing_the_others_is_the_loss(files):
    """Before, the distillation model (fetching its loss, KL and feature MSE) compiled and evaluated only with
    `--loss fetch_name_0`: "cannot pick the loss by itself: the last op writes several float scalars". The loss sums
    the other two (weighted, with the cross entropy): it is picked, with a note, and trains to Paddle's losses; the SR
    net's loss and PSNR, neither a sum of the other, still need --loss (the error above)."""
    done = gradc_cli("compile", files / "distill" / "model.json", "-o", files / "distill" / "default.json",
                     *CASES["distill"][0][:4])
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == ("gradc: note: the loss is fetch_name_0, the fetched float scalar that sums "
                                           "the others (fetch_name_1, fetch_name_2); name another with --loss (loss= "
                                           "in Python)")
    steps = _train(files, "distill", "default.json", "default.startup.json")
    np.testing.assert_allclose([step["values"]["fetch_name_0"] for step in steps], _paddle("distill")["loss"],
                               rtol=2e-6)
    scored = gradc_cli("evaluate", files / "distill" / "model.json", "--params", files / "distill" / "params.npz",
                       *CASES["distill"][1], "--json")
    assert json.loads(scored.stdout)["loss_var"] == "fetch_name_0"


def test_a_scalar_computed_from_the_loss_otherwise_is_no_total():
    """A PSNR from the loss (a log of it) fetched beside it: neither sums the other, so neither is picked, where a
    sum of the loss's terms is; the pick takes weighted terms through scale and elementwise_sub too."""
    net = gradc.ProgramBuilder()
    x, label = net.data("x", [-1, 4]), net.data("label", [-1, 1], "int64")
    logits = net.fc(x, 3)
    entropy, energy = net.cross_entropy_loss(logits, label), net.mean(net.op("square", {"X": logits})[0])
    weighted = net.op("scale", {"X": energy}, {"scale": 0.5})[0]
    total = net.op("elementwise_sub", {"X": entropy, "Y": weighted})[0]
    log = net.op("log10", {"X": total})[0]
    for names, picked in (([total, entropy, energy], total), ([total, log], None), ([entropy, energy], None)):
        program = net.program.clone()
        for column, name in enumerate(names):
            program.global_block.append_op("fetch", {"X": [name]}, {"Out": ["fetch"]}, {"col": column})
        assert gradc.backward.loss.default_loss(program, notice=False) == picked

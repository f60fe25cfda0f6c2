"""A neural-architecture-search researcher's week (docs/tools.md): a DARTS search cell (zero, identity, avg and max
pool, 3x3 and dilated 3x3 convs on each of 3 edges, mixed by softmax(alpha)) trained bilevel against Paddle 3.3.1's
(tools/paddle_user_week53.py): the architecture alpha by Adam on a validation batch's loss, the weights by Momentum on
a training batch's, each optimizer over its own parameters, in one program (Paddle's two minimize()s, gradc's two
compiles, its Python API) and in PIR; the second-order loss through one virtual SGD step of the weights checked
against central differences; the argmax architecture exported and run; a Gumbel-softmax variant checked. Each fault
found, as the behaviour it has now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked

WEEK = DATA / "user_week53"
META = json.loads((WEEK / "meta.json").read_text())
SEARCH = META["search"]
WEIGHTS = ("--param", "conv2d_*", "--param", "linear_*")
ARCH = ("--param", "arch_alpha", "--optimizer", "adam", "--lr", 0.01)
MOMENTUM = ("--optimizer", "momentum", "--momentum", 0.9, "--lr", 0.05)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked; the first batch of both splits, and the splits apart (train.npz, val.npz)."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week53"))
    data = dict(np.load(out / "data.npz"))
    np.savez(out / "first.npz", **{name: value[:8] for name, value in data.items()})
    np.savez(out / "train.npz", x=data["x"], y=data["y"])
    np.savez(out / "val.npz", xv=data["xv"], yv=data["yv"])
    return out


def _train(program, startups, data=("data.npz",), *extra, folder):
    options = [item for path in startups for item in ("--startup", folder / path)]
    options += [item for path in data for item in ("--data", folder / path)]
    return gradc_cli("train", folder / program, *options, "--params", folder / "init.npz", "--batch-size", 8,
                     "--json", "--log-every", 1, "--fetch", SEARCH["train_loss"], "--fetch", SEARCH["val_loss"], *extra)


def _both_losses(run) -> list:
    assert run.returncode == 0, run.stderr
    return [[line["values"][SEARCH["train_loss"]], line["values"][SEARCH["val_loss"]]]
            for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "step"]


def _paddles_losses() -> list:
    return [list(pair) for pair in zip(SEARCH["train_losses"], SEARCH["val_losses"])]


def _assert_paddles_weights(path):
    ours, paddle = np.load(path), np.load(WEEK / "trained.npz")
    for name in paddle.files:
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=2e-7, err_msg=name)


def test_paddles_bilevel_program_trains_to_its_losses(files, tmp_path):
    """Paddle's program of two minimize()s (Adam on alpha over the validation loss, Momentum on the 16 weights over
    the training loss) from its startup and initial values: its 4 training and 4 validation losses to 1e-6 and its
    trained alpha and weights to 2e-7 (no fault)."""
    run = _train("train.pb", ["startup.pb"], ("data.npz",), "--save-params", tmp_path / "p.npz", folder=files)
    np.testing.assert_allclose(_both_losses(run), _paddles_losses(), rtol=1e-6)
    _assert_paddles_weights(tmp_path / "p.npz")


def test_the_two_levels_compile_one_after_the_other(files, tmp_path):
    """gradc compile of the architecture step (--param arch_alpha, Adam, on the validation loss), then of the weights'
    step onto that program (--param the weights, Momentum, on the training loss), as Paddle's second minimize() appends
    one: the second compile was refused ("the program already has backward ops (op_role 1); compile the forward
    program ..."), which left a command-line user no way to a bilevel program. Now the two trained from Paddle's
    initial values give Paddle's 8 losses (1e-6) and its trained alpha and weights (2e-7)."""
    first = gradc_cli("compile", files / "forward.pb", "-o", tmp_path / "a.pb", "--loss", SEARCH["val_loss"], *ARCH)
    assert first.returncode == 0, first.stderr
    second = gradc_cli("compile", tmp_path / "a.pb", "-o", tmp_path / "aw.pb", "--loss", SEARCH["train_loss"],
                       *WEIGHTS, *MOMENTUM)
    assert second.returncode == 0, second.stderr
    run = _train(tmp_path / "aw.pb", [tmp_path / "a.startup.pb", tmp_path / "aw.startup.pb"], ("data.npz",),
                 "--save-params", tmp_path / "p.npz", folder=files)
    np.testing.assert_allclose(_both_losses(run), _paddles_losses(), rtol=1e-6)
    _assert_paddles_weights(tmp_path / "p.npz")


def test_a_loss_already_differentiated_is_still_refused(files, tmp_path):
    """The second optimizer takes a loss no backward starts from: the validation loss again is refused, saying how a
    second optimizer is given."""
    first = gradc_cli("compile", files / "forward.pb", "-o", tmp_path / "a.pb", "--loss", SEARCH["val_loss"], *ARCH)
    assert first.returncode == 0, first.stderr
    again = gradc_cli("compile", tmp_path / "a.pb", "-o", tmp_path / "aa.pb", "--loss", SEARCH["val_loss"],
                      *MOMENTUM)
    assert again.returncode == 1 and "a second optimizer, as a second minimize()" in again.stderr, again.stderr


def test_python_api_minimizes_twice_in_one_program(files):
    """gradc's optimizers minimize() twice on one program (parameter_list=[alpha], then the weights), run by an
    Executor loop: Paddle's losses and trained values (no fault)."""
    import gradc
    from gradc import optimizers

    prog = gradc.load(files / "forward.pb")
    startups = [optimizers.Adam(learning_rate=0.01).minimize(prog, SEARCH["val_loss"], parameter_list=["arch_alpha"]),
                optimizers.Momentum(learning_rate=0.05, momentum=0.9).minimize(prog, SEARCH["train_loss"],
                                                                               parameter_list=SEARCH["weights"])]
    scope, executor = gradc.Scope(), gradc.Executor()
    for startup in startups:
        executor.run(startup, scope=scope)
    gradc.load_params(scope, files / "init.npz", prog)
    data, losses = dict(np.load(files / "data.npz")), []
    for step in range(4):
        feed = {name: value[step * 8:(step + 1) * 8] for name, value in data.items()}
        losses.append([float(v) for v in executor.run(prog, feed=feed, scope=scope,
                                                      fetch_list=[SEARCH["train_loss"], SEARCH["val_loss"]])])
    np.testing.assert_allclose(losses, _paddles_losses(), rtol=1e-6)


def test_the_splits_train_from_two_data_sets(files, tmp_path):
    """The training and validation splits as two files (x, y and xv, yv), as DARTS's two loaders: --data twice kept the
    last alone ("data 'val.npz': has no array 'x'"). Now both, a batch of each a step: Paddle's 8 losses, and --eval
    takes both too (the same means as the one file's)."""
    run = _train("train.pb", ["startup.pb"], ("train.npz", "val.npz"), "--eval", files / "train.npz", "--eval",
                 files / "val.npz", folder=files)
    np.testing.assert_allclose(_both_losses(run), _paddles_losses(), rtol=1e-6)
    joined = [line for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"][0]["eval"]
    one = _train("train.pb", ["startup.pb"], ("data.npz",), "--eval", files / "data.npz", folder=files)
    assert [line for line in map(json.loads, one.stdout.splitlines()) if line["event"] == "epoch"][0]["eval"] == joined


def test_data_sets_given_together_are_checked(files, tmp_path):
    """Splits of different sizes, or an input in two of them, are one error line each naming the files."""
    val = dict(np.load(files / "val.npz"))
    np.savez(tmp_path / "short.npz", **{name: value[:20] for name, value in val.items()})
    short = _train("train.pb", ["startup.pb"], ("train.npz", tmp_path / "short.npz"), folder=files)
    assert short.returncode == 1 and "as many examples each: data" in short.stderr and " 32, " in short.stderr
    np.savez(tmp_path / "twice.npz", x=val["xv"], xv=val["xv"], yv=val["yv"])
    twice = _train("train.pb", ["startup.pb"], ("train.npz", tmp_path / "twice.npz"), folder=files)
    assert twice.returncode == 1 and "'x' is in more than one of" in twice.stderr, twice.stderr


def test_evaluate_takes_the_splits_together(files):
    """gradc evaluate --data twice: both losses over the two files, as over the one file holding both."""
    def evaluate(*data):
        run = gradc_cli("evaluate", files / "forward.pb", "--params", files / "trained.npz", *data, "--loss",
                        SEARCH["train_loss"], "--loss", SEARCH["val_loss"], "--json")
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout)
    together = evaluate("--data", files / "train.npz", "--data", files / "val.npz")
    assert together == evaluate("--data", files / "data.npz") and together["examples"] == 32


def test_paddles_pir_search_program_trains(files):
    """The search program minimized in PIR static mode (two optimizers over their own parameters): gradc trains
    Paddle's serialized program from its initial values to its 4 PIR training losses (1e-6) (no fault)."""
    run = gradc_cli("train", files / "search_pir_train.json", "--startup", files / "search_pir_startup.json",
                    "--params", files / "search_pir_init.npz", "--data", files / "data.npz", "--batch-size", 8,
                    "--fetch", "train_loss", "--json", "--log-every", 1)
    losses = json.loads((WEEK / "pir_losses.json").read_text())["search"]
    np.testing.assert_allclose(step_losses(run), losses, rtol=1e-6)


def _alpha_gradient(program, loss, values, feed):
    import gradc

    prog = gradc.load(program)
    (pair,) = gradc.append_backward(prog, loss, ["arch_alpha"])
    scope = gradc.Scope()
    gradc.load_params(scope, values, prog)
    (grad,) = gradc.Executor().run(prog, feed=feed, fetch_list=[pair[1]], scope=scope)
    return np.asarray(grad)


def test_second_order_gradient_agrees_with_central_differences(files):
    """The unrolled loss (the validation loss at w' = w - 0.05 dL_train/dw, paddle.static.gradients inside the program):
    gradc check by arch_alpha agrees with float64 central differences (Paddle's own executor stops at its second
    gradient: 'mean_3.tmp_0@GRAD not in VariableScope'), and the gradient differs from the first-order one (no
    fault)."""
    run = gradc_cli("check", files / "unrolled.pb", "--params", files / "init.npz", "--feed", files / "first.npz",
                    "--wrt", "arch_alpha", "--loss", META["unrolled"]["val_loss"], "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert [row["var"] for row in json.loads(run.stdout)["vars"]] == ["arch_alpha"]
    feed = dict(np.load(files / "first.npz"))
    second = _alpha_gradient(files / "unrolled.pb", META["unrolled"]["val_loss"], files / "init.npz", feed)
    first = _alpha_gradient(files / "forward.pb", SEARCH["val_loss"], files / "init.npz", feed)
    assert np.abs(second - first).max() > 1e-3 * np.abs(first).max()


def test_the_discrete_architecture_exports_and_runs(files, tmp_path):
    """The argmax architecture (zero left out), written with Paddle's layers: gradc export of it with the trained
    weights runs on the validation images to Paddle's logits (5e-7) (no fault)."""
    exported = gradc_cli("export", files / "discrete.pb", "-o", tmp_path / "cell", "--params", files / "trained.npz",
                         "--input", "x", "--fetch", f"{META['discrete']['discrete_logits']}=logits")
    assert exported.returncode == 0, exported.stderr
    np.savez(tmp_path / "images.npz", x=np.load(files / "data.npz")["xv"])
    run = gradc_cli("run", tmp_path / "cell.pdmodel", "--params", tmp_path / "cell.pdiparams", "--feed",
                    tmp_path / "images.npz", "-o", tmp_path / "out.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["logits"],
                               np.load(files / "outputs.npz")["discrete_logits"], rtol=0, atol=5e-7)


def test_gumbel_variant_checks_with_a_fixed_draw(files):
    """The Gumbel-softmax relaxation (F.gumbel_softmax of each edge's alpha): with --seed every run of the comparison
    draws the same noise, and every gradient agrees with central differences (no fault)."""
    run = gradc_cli("check", files / "gumbel.pb", "--params", files / "init.npz", "--feed", files / "first.npz",
                    "--seed", 3, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "arch_alpha" in [row["var"] for row in json.loads(run.stdout)["vars"]]


def test_check_of_the_bilevel_program_checks_each_level_against_its_own_loss(files):
    """gradc check of Paddle's program of two minimize()s checked all 17 parameters against the validation loss
    alone (the last op's scalar), so the weights' gradients Momentum steps on, the training loss's, went unchecked.
    Now each parameter against the loss its optimizer steps on: alpha against the validation loss, the 16 weights
    against the training loss, each agreeing with central differences and each var's record naming its loss."""
    run = gradc_cli("check", files / "train.pb", "--params", files / "init.npz", "--feed", files / "first.npz",
                    "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["losses"] == [SEARCH["val_loss"], SEARCH["train_loss"]] and result["loss"] is None
    expected = {"arch_alpha": SEARCH["val_loss"], **{name: SEARCH["train_loss"] for name in SEARCH["weights"]}}
    assert {row["var"]: row["loss"] for row in result["vars"]} == expected
    text = gradc_cli("check", files / "train.pb", "--params", files / "init.npz", "--feed", files / "first.npz")
    assert f"{SEARCH['train_loss']} 16 (conv2d_0.b_0, ...)" in text.stdout, text.stdout


def test_check_of_paddles_pir_bilevel_program_checks_each_level_against_its_own_loss(files):
    """PIR keeps no op_role: the second minimize()'s seed, after alpha's Adam, was taken for an optimizer op, so check
    found one loss and checked all 17 parameters against the validation loss. Now as the legacy program's."""
    run = gradc_cli("check", files / "search_pir_train.json", "--params", files / "search_pir_init.npz", "--feed",
                    files / "first.npz", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {row["var"]: row["loss"] for row in json.loads(run.stdout)["vars"]}
    assert {name: rows[name] for name in SEARCH["weights"]} == dict.fromkeys(SEARCH["weights"], "train_loss")
    assert rows["arch_alpha"] not in (None, "train_loss") and len(rows) == 17


def test_check_with_a_loss_named_checks_every_parameter_against_it(files):
    """--loss keeps the check of one loss over every parameter that reaches it, as before."""
    run = gradc_cli("check", files / "train.pb", "--params", files / "init.npz", "--feed", files / "first.npz",
                    "--loss", SEARCH["train_loss"], "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["loss"] == SEARCH["train_loss"] and len(result["vars"]) == 17
    assert all("loss" not in row for row in result["vars"])


def test_the_second_order_step_compiles_from_the_unrolled_loss(files, tmp_path):
    """DARTS's second-order step in one program: Adam on alpha over the unrolled loss, then Momentum on the weights
    over the training loss, whose gradients paddle.static.gradients already takes inside (the virtual step). The
    second compile was refused ("the program already has backward ops") because a backward starts from the training
    loss, though only gradients()' seed does, whose loss op stays a forward op; a loss a minimize() differentiated is
    still refused. Now one step from Paddle's initial values moves alpha by Adam's first step along the unrolled
    gradient (whose signs differ from the first-order one's in 9 of 18 places), and check pairs each parameter with
    its own loss (alpha the unrolled one)."""
    unrolled, train = META["unrolled"]["val_loss"], META["unrolled"]["train_loss"]
    first = gradc_cli("compile", files / "unrolled.pb", "-o", tmp_path / "u.pb", "--loss", unrolled, *ARCH)
    assert first.returncode == 0, first.stderr
    second = gradc_cli("compile", tmp_path / "u.pb", "-o", tmp_path / "uw.pb", "--loss", train, *WEIGHTS, *MOMENTUM)
    assert second.returncode == 0, second.stderr
    run = gradc_cli("train", tmp_path / "uw.pb", "--startup", tmp_path / "u.startup.pb", "--startup",
                    tmp_path / "uw.startup.pb", "--params", files / "init.npz", "--data", files / "first.npz",
                    "--batch-size", 8, "--save-params", tmp_path / "p.npz")
    assert run.returncode == 0, run.stderr
    feed, init = dict(np.load(files / "first.npz")), np.load(files / "init.npz")["arch_alpha"]
    gradient = _alpha_gradient(files / "unrolled.pb", unrolled, files / "init.npz", feed)
    np.testing.assert_allclose(np.load(tmp_path / "p.npz")["arch_alpha"],
                               init - 0.01 * gradient / (np.abs(gradient) + 1e-8), rtol=0, atol=1e-6)
    check = gradc_cli("check", tmp_path / "uw.pb", "--params", files / "init.npz", "--feed", files / "first.npz",
                      "--json")
    assert check.returncode == 0, check.stdout + check.stderr
    rows = {row["var"]: row["loss"] for row in json.loads(check.stdout)["vars"]}
    assert rows["arch_alpha"] == unrolled and rows["conv2d_0.w_0"] == train


def test_check_says_a_hard_gumbel_draw_leaves_the_architecture_flat(files, tmp_path):
    """F.gumbel_softmax(hard=True) (GDAS's one-hot draw): alpha's gradient is 0 everywhere, in Paddle as in gradc, and
    so are central differences, so check said only "ok" and the architecture would never train. Now the summary names
    the vars with a gradient of 0 at every element and the hard gumbel_softmax ops, and the straight-through estimator
    to write instead; the soft draw says nothing of it."""
    import gradc

    program = gradc.load(files / "gumbel.pb")
    for op in program.global_block.ops:
        if op.type == "gumbel_softmax":
            op.attrs["hard"] = True
    gradc.save(program, tmp_path / "hard.pb")
    run = gradc_cli("check", tmp_path / "hard.pb", "--params", files / "init.npz", "--feed", files / "first.npz",
                    "--seed", 3)
    assert run.returncode == 0, run.stderr
    assert "arch_alpha, " in run.stdout and ": a gradient of 0 at every element, central differences too" in run.stdout
    assert "block 0, op 1 (gumbel_softmax)" in run.stdout and "straight-through" in run.stdout
    soft = gradc_cli("check", files / "gumbel.pb", "--params", files / "init.npz", "--feed", files / "first.npz",
                     "--seed", 3)
    assert soft.returncode == 0 and "a gradient of 0" not in soft.stdout, soft.stdout

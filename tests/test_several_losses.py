"""Several losses (`--loss A --loss B`, `append_backward(program, [A, B])`): one backward whose parameter gradients
are those of the losses' sum, as the same model with an explicit sum op and one loss gives them; gradc check checks
that sum; a repeated, unknown or integer loss is refused naming it."""

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from gradc.errors import GradError
from gradc.layers import ProgramBuilder
from json_checks import document, refused, strict

CE, SQUARED = "mean_0.tmp_0", "square_0.tmp_0"   # a classifier head's mean, a regression head's per-example loss


def two_heads(summed: bool) -> ProgramBuilder:
    """A shared hidden layer, a classifier head and a regression head; ``summed``: their total written by a sum op."""
    net = ProgramBuilder()
    x, label = net.data("x", [-1, 8]), net.data("label", [-1, 1], "int64")
    target = net.data("target", [-1, 1])
    hidden = net.fc(x, 16, act="tanh")
    logits = net.fc(hidden, 4)
    assert net.cross_entropy_loss(logits, label) == CE
    error = net.op("elementwise_sub", {"X": net.fc(hidden, 1), "Y": target}, {"axis": -1})[0]
    assert net.op("square", {"X": error})[0] == SQUARED
    if summed:
        total = net.op("reduce_sum", {"X": SQUARED}, {"reduce_all": True, "dim": []})[0]
        net.op("sum", {"X": [CE, total]}, names=["total"])
    net.op("arg_max", {"X": logits}, {"axis": -1}, names=["predicted"])   # an integer var a loss cannot be
    return net


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("heads")
    heads = two_heads(summed=False)
    gradc.save(heads.program, directory / "heads.pb")
    gradc.save(two_heads(summed=True).program, directory / "summed.pb")
    gradc.save(heads.startup, directory / "startup.pb")
    rng = np.random.default_rng(0)
    np.savez(directory / "feed.npz", x=rng.standard_normal((6, 8)).astype("float32"),
             label=rng.integers(0, 4, (6, 1)), target=rng.standard_normal((6, 1)).astype("float32"))
    return directory


def parameter_grads(files, training: str) -> dict[str, np.ndarray]:
    program, scope, executor = gradc.load(files / training), gradc.Scope(), gradc.Executor()
    executor.run(gradc.load(files / "startup.pb"), scope=scope)
    with np.load(files / "feed.npz") as feed:
        fed = dict(feed)
    params = [name for name, var in program.global_block.vars.items() if var.is_parameter]
    return dict(zip(params, executor.run(program, fed, [f"{name}@GRAD" for name in params], scope)))


def test_two_losses_train_as_their_sum_with_one_loss(files):
    two = gradc_cli("compile", files / "heads.pb", "-o", files / "two.pb", "--loss", CE, "--loss", SQUARED, "--json")
    assert two.returncode == 0 and "one value per example" in two.stderr   # the regression head's loss: seeded ones
    doc = strict(two.stdout)
    assert (doc["loss"], doc["losses"], len(doc["parameters"])) == (None, [CE, SQUARED], 6)
    one = document(gradc_cli("compile", files / "summed.pb", "-o", files / "one.pb", "--loss", "total", "--json"))
    assert (one["loss"], one["losses"]) == ("total", ["total"])
    assert gradc.load(files / "two.pb").num_ops() < gradc.load(files / "one.pb").num_ops()   # no sum op, no backward
    summed, several = parameter_grads(files, "one.pb"), parameter_grads(files, "two.pb")
    assert sorted(several) == sorted(summed) and len(several) == 6
    for name, grad in summed.items():
        assert np.abs(grad).max() > 1e-3   # each head's parameters and the shared layer's get a gradient
        np.testing.assert_allclose(several[name], grad, rtol=1e-5, atol=1e-7, err_msg=name)
    text = gradc_cli("compile", files / "heads.pb", "-o", files / "text.pb", "--loss", CE, "--loss", SQUARED).stdout
    assert f"the gradients are those of the sum of the losses {CE} + {SQUARED}" in text.splitlines()
    assert (files / "text.pb").read_bytes() == (files / "two.pb").read_bytes()


def test_python_append_backward_of_two_losses_is_one_backward():
    program = two_heads(summed=False).program
    with pytest.warns(gradc.GradcWarning, match=rf"loss '{SQUARED}' has shape \[-1, 1\], one value per example"):
        pairs = gradc.append_backward(program, [CE, SQUARED], any_shape=True)
    assert len(pairs) == 6 and [op.type for op in program.global_block.ops].count("fill_any_like") == 1
    with pytest.raises(GradError, match=rf"^loss\(es\) given twice: {CE}: give each loss once$"):
        gradc.append_backward(two_heads(summed=False).program, [CE, CE])


@pytest.mark.parametrize("command", ["compile", "check"])
def test_a_repeated_unknown_or_integer_loss_is_refused_naming_it(files, command, tmp_path):
    out = ("-o", tmp_path / "out.pb") if command == "compile" else ("--feed", files / "feed.npz", "--startup",
                                                                    files / "startup.pb")
    run = lambda *losses: gradc_cli(command, files / "heads.pb", *out,   # noqa: E731
                                    *[a for loss in losses for a in ("--loss", loss)], "--json")
    assert refused(run(CE, SQUARED, CE), code=2) == (
        f"gradc: error: Invalid value for '--loss': '{CE}' given twice: give each loss once "
        f"(see gradc {command} --help)")
    assert "loss 'nowhere' is not written by any op of block 0" in refused(run(CE, "nowhere"))
    assert "loss 'predicted' must be a float var (block 0, written by op" in refused(run("predicted", CE))
    assert not (tmp_path / "out.pb").exists()


def test_check_of_two_losses_checks_their_sums_gradients(files):
    given = ("--feed", files / "feed.npz", "--startup", files / "startup.pb", "--max-elements", "6")
    several = gradc_cli("check", files / "heads.pb", *given, "--loss", CE, "--loss", SQUARED, "--json")
    doc = strict(several.stdout)
    summed = document(gradc_cli("check", files / "summed.pb", *given, "--loss", "total", "--json"))
    assert (doc["loss"], doc["losses"], doc["ok"], len(doc["vars"])) == (None, [CE, SQUARED], True, 6)
    assert [(v["var"], v["checked"]) for v in doc["vars"]] == [(v["var"], v["checked"]) for v in summed["vars"]]
    assert [v["max_abs_error"] for v in doc["vars"]] == pytest.approx([v["max_abs_error"] for v in summed["vars"]],
                                                                      abs=1e-9)
    one = strict(gradc_cli("check", files / "heads.pb", *given, "--loss", CE, "--json").stdout)
    assert one["ok"] and [v["var"] for v in one["vars"]] == ["fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"]
    text = gradc_cli("check", files / "heads.pb", *given, "--loss", CE, "--loss", SQUARED)
    assert text.returncode == 0 and text.stdout.splitlines()[-1] == (
        f"6 var(s) checked: compiled gradients agree with central differences (the sum of the losses {CE} + "
        f"{SQUARED})")


def test_evaluate_of_two_losses_reports_their_sum_and_each(files):
    given = ("--startup", files / "startup.pb", "--data", files / "feed.npz")
    several = document(gradc_cli("evaluate", files / "summed.pb", *given, "--loss", CE, "--loss", "reduce_sum_0.tmp_0",
                                 "--json"))
    total = document(gradc_cli("evaluate", files / "summed.pb", *given, "--loss", "total", "--json"))
    assert (several["loss_var"], several["loss_vars"]) == (None, [CE, "reduce_sum_0.tmp_0"])
    assert (total["loss_var"], total["loss_vars"]) == ("total", ["total"])
    assert several["loss"] == pytest.approx(total["loss"], rel=1e-6)
    assert several["loss"] == pytest.approx(several[CE] + several["reduce_sum_0.tmp_0"], rel=1e-12)
    text = gradc_cli("evaluate", files / "summed.pb", *given, "--loss", CE, "--loss", "reduce_sum_0.tmp_0").stdout
    assert f"loss: {several['loss']:.6g} ({CE} + reduce_sum_0.tmp_0)" in text.splitlines()
    assert f"{CE}: {several[CE]:.6g}" in text.splitlines()


def test_a_program_compiled_for_two_losses_trains_reporting_each(files):
    heads = [CE, "reduce_sum_0.tmp_0"]
    assert gradc_cli("compile", files / "summed.pb", "-o", files / "sgd.pb", "--loss", heads[0], "--loss", heads[1],
                     "--optimizer", "sgd").returncode == 0
    startups = ("--startup", files / "startup.pb", "--startup", files / "sgd.startup.pb")
    trained = gradc_cli("train", files / "sgd.pb", *startups, "--feed", files / "feed.npz", "--steps", "3", "--json")
    steps = [strict(line)["values"] for line in trained.stdout.splitlines()[:3]]
    assert trained.returncode == 0 and [list(values) for values in steps] == [heads] * 3
    assert steps[2][heads[1]] < steps[0][heads[1]] and steps[2][CE] < steps[0][CE]   # both heads learn
    evaluated = document(gradc_cli("evaluate", files / "sgd.pb", *startups, "--data", files / "feed.npz", "--json"))
    assert evaluated["loss_vars"] == heads and evaluated[heads[1]] == pytest.approx(steps[0][heads[1]], rel=1e-6)
    info = document(gradc_cli("info", files / "sgd.pb", "--json"))
    assert (info["loss"], info["loss_found"]) == (CE, f"op_role marks the losses {CE}, reduce_sum_0.tmp_0; the "
                                                      f"backward differentiates their sum")


def test_info_of_two_per_example_losses_of_one_compile_says_the_backward_differentiates_their_sum(files):
    """Fault: two losses with a batch dim, seeded by fill_any_like (it reads the loss), were not seen as seeds, and
    info said each starts its own backward."""
    per_example = "softmax_with_cross_entropy_0.tmp_1"   # the classifier head's loss before its mean
    compiled = gradc_cli("compile", files / "heads.pb", "-o", files / "per_example.pb", "--loss", SQUARED,
                         "--loss", per_example)
    assert compiled.returncode == 0, compiled.stderr
    seeds = [op for op in gradc.load(files / "per_example.pb").global_block.ops if op.type == "fill_any_like"]
    assert [op.output("Out") for op in seeds] == [[f"{SQUARED}@GRAD"], [f"{per_example}@GRAD"]]
    info = document(gradc_cli("info", files / "per_example.pb", "--json"))
    assert info["loss_found"] == (f"op_role marks the losses {per_example}, {SQUARED}; the backward differentiates "
                                  "their sum")

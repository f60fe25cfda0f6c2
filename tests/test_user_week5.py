"""A debugging researcher's week (docs/tools.md): programs Paddle 3.3.1 built whose training goes wrong
(tools/paddle_user_week5.py), debugged with gradc's tools; each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.training import Trainer

WEEK = DATA / "user_week5"


def _meta(case: str) -> dict:
    return json.loads((WEEK / case / "meta.json").read_text())


def _compiled(case: str, tmp_path, *extra) -> tuple:
    """`gradc compile --optimizer sgd` at the rate Paddle trained the case with; the command's result too."""
    out = tmp_path / f"{case}.pb"
    done = gradc_cli("compile", WEEK / case / "forward.pb", "-o", out, "--optimizer", "sgd", "--lr",
                     str(_meta(case)["lr"]), *extra)
    assert done.returncode == 0, done.stderr
    return out, done


def _train(case: str, tmp_path, *options):
    program, _ = _compiled(case, tmp_path)
    return gradc_cli("train", program, "--startup", WEEK / case / "startup.pb", "--startup",
                     program.with_suffix(".startup.pb"), "--feed", WEEK / case / "feed.npz", "--paddle-stream",
                     "--seed", "5", *options)


def test_check_nan_names_the_values_the_op_read(tmp_path):
    # a batch whose last feature is constant: its std is 0, and the division by it the first NaN
    done = _train("batch_std", tmp_path, "--steps", "3", "--check-nan")
    assert done.returncode == 1
    assert done.stderr.startswith("gradc: error: step 1: block 0, op 6 (elementwise_div) wrote NaN into 'tmp_2' "
                                  "(output Out); a forward op; it read X=tmp_1 float32[8, 4] min ")
    assert "Y=sqrt_0.tmp_0 float32[1, 4] min 0 max " in done.stderr and done.stderr.endswith("(1 zero)\n")
    assert _meta("batch_std")["losses"][0] == "nan"   # Paddle's first loss too


def test_check_nan_of_a_learning_rate_too_high_shows_the_exploded_weights(tmp_path):
    done = _train("lr_blowup", tmp_path, "--steps", "6", "--check-nan")
    assert done.returncode == 1 and _meta("lr_blowup")["losses"][3] == "inf"   # Paddle's fourth loss
    line = done.stderr.strip()
    assert line.startswith("gradc: error: step 4: block 0, op 3 (matmul_v2) wrote -Inf into 'linear_1.tmp_0' "
                           "(output Out); a forward op; it read X=relu_0.tmp_0 float32[8, 16] min 0 max ")
    weights = float(line.split("Y=linear_0.w_0 float32[16, 1] min ")[1].split()[0])
    assert weights < -1e19   # three steps at rate 2 took the weights to -5e19


def test_check_nan_says_when_the_backward_made_it():
    net = gradc.ProgramBuilder()
    hidden = net.op("relu", {"X": net.fc(net.data("x", [-1, 2]), 2)})[0]
    loss = net.mean(net.op("sqrt", {"X": hidden})[0])   # sqrt of 0 is finite; its derivative is not
    trainer = Trainer(net.program, [net.startup, gradc.minimize(net.program, loss, "sgd", lr=0.1)], check_nan=True)
    trainer.scope["fc_0.w_0"] = np.array([[1, -1], [1, -1]], np.float32)
    trainer.scope["fc_0.b_0"] = np.zeros(2, np.float32)
    with np.errstate(divide="ignore"), pytest.raises(gradc.ExecutionError, match=(
            r"^step 1: block 0, op \d+ \(sqrt_grad\) wrote Inf into 'relu_0.tmp_0@GRAD' \(output X@GRAD\); a backward "
            r"op; it read Out=sqrt_0.tmp_0 float32\[2, 2\] min 0 max 1.41421 \(2 zeros\), Out@GRAD=")):
        trainer.train_step({"x": np.ones((2, 2), np.float32)})


def test_a_softmax_that_underflows_trains_on_as_in_paddle(tmp_path):
    # Paddle's CPU softmax clips x - max(x) at -64: log(softmax) is -64 at worst, never -inf (then 0 * -inf = NaN)
    done = _train("log_zero", tmp_path, "--steps", "4", "--json")
    assert done.returncode == 0, done.stderr
    losses = [json.loads(line)["values"]["tmp_1"] for line in done.stdout.splitlines()[:4]]
    assert losses == pytest.approx([float(v) for v in _meta("log_zero")["losses"]], rel=1e-6)   # 2.60291, 16, 0, 0


def test_softmax_log_softmax_and_cross_entropy_floor_the_shifted_logits_at_minus_64():
    logits = np.array([[0.0, -1000.0, -60.0], [0.0, -1000.0, 5.0]], np.float32)
    net = gradc.ProgramBuilder()
    x = net.data("x", [-1, 3])
    label = net.data("label", [-1, 1], "int64")
    soft, log_soft = net.op("softmax", {"X": x})[0], net.op("log_softmax", {"X": x})[0]
    loss = net.op("softmax_with_cross_entropy", {"Logits": x, "Label": label}, outputs=["Loss"])[0]
    got = gradc.Executor().run(net.program, {"x": logits, "label": np.array([[1], [1]])},
                               [soft, log_soft, loss], gradc.Scope())
    # Paddle 3.3.1's CPU kernels on these logits
    assert got[0][0] == pytest.approx([1.0, 1.6038109e-28, 8.7565109e-27], rel=1e-6)
    assert got[1][1] == pytest.approx([-5.0067153, -64.006714, -6.7153489e-03], rel=1e-6)
    assert got[2][:, 0] == pytest.approx([64.0, 64.00672], rel=1e-6)


def test_train_logs_each_parameters_gradient_norm(tmp_path):
    paddle = _meta("lr_blowup")["grad_norms"]
    done = _train("lr_blowup", tmp_path, "--steps", "3", "--log-grad-norms", "--json")
    steps = [json.loads(line) for line in done.stdout.splitlines()[:3]]
    for step, expected in zip(steps, paddle):
        norms = step["grad_norms"]["parameters"]
        assert norms == pytest.approx({name: float(v) for name, v in expected.items()}, rel=1e-5)
        assert step["grad_norms"]["total"] == pytest.approx(np.sqrt(sum(n * n for n in norms.values())))
    text = _train("lr_blowup", tmp_path, "--steps", "2", "--log-grad-norms").stdout.splitlines()
    assert text[1] == ("  grad norms: total 63.43; linear_0.w_0 47.71, linear_1.w_0 37.48, linear_0.b_0 15.21, "
                       "linear_1.b_0 10.5")
    assert text[3].startswith("  grad norms: total 2.822e+06; linear_1.w_0 2.432e+06")


def test_grad_norms_of_clipped_gradients_say_they_are_after_the_clip(tmp_path):
    program, _ = _compiled("lr_blowup", tmp_path, "--clip-global-norm", "1.0")
    done = gradc_cli("train", program, "--startup", WEEK / "lr_blowup" / "startup.pb", "--startup",
                     program.with_suffix(".startup.pb"), "--feed", WEEK / "lr_blowup" / "feed.npz", "--steps", "1",
                     "--log-grad-norms", "--json")
    assert done.stderr == ("gradc: warning: the optimizer's ops rewrite the gradients in place (an elementwise_mul: "
                           "clipping or weight decay): the norms logged are those after it\n")
    assert json.loads(done.stdout.splitlines()[0])["grad_norms"]["total"] == pytest.approx(1.0)


def test_grad_norms_of_a_program_without_a_backward_is_one_line(tmp_path):
    done = gradc_cli("train", WEEK / "lr_blowup" / "forward.pb", "--feed", WEEK / "lr_blowup" / "feed.npz",
                     "--log-grad-norms")
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "gradc: error:" in done.stderr


def test_compile_says_which_parameters_get_no_gradient_and_why(tmp_path):
    _, done = _compiled("frozen", tmp_path)
    assert done.stderr.splitlines() == [
        "gradc: note: parameters frozen, without a gradient: 1 (linear_5.w_0): not trainable (stop_gradient, "
        "Paddle's ParamAttr(trainable=False))",
        "gradc: warning: parameters that get no gradient and will not train: 2 (linear_4.b_0, linear_4.w_0): its "
        "path to the loss goes through 'relu_0.tmp_0', which is stop_gradient (a detach, or stop_gradient = True "
        "left on a layer's output)"]
    _, chosen = _compiled("lr_blowup", tmp_path, "--no-grad", "linear_0.w_0")
    assert chosen.stderr == ("gradc: note: parameters frozen, without a gradient: 1 (linear_0.w_0): in the no-grad "
                             "set (--no-grad)\n")
    _, picked = _compiled("lr_blowup", tmp_path, "--param", "linear_0.w_0")
    assert picked.stderr == ""   # --param chose them


def test_precision_of_an_amp_program_shows_each_ops_dtype():
    case = DATA / "gpu_lowprec" / "o1_float16"
    done = gradc_cli("precision", case / "train.json", "--feed", case / "feed.npz", "--params", case / "params.npz",
                     "--top", "16")
    rows = {line.split()[2]: line.split()[3] for line in done.stdout.splitlines()[1:-1]}
    assert rows["linear_v2_0.tmp_0"] == "float16" and rows["layer_norm_0.tmp_1"] == "float32"
    assert "about eps (float32 1.2e-07, float16 9.8e-04) when exact" in done.stdout.splitlines()[-1]


def test_check_says_which_parameters_it_did_not_check_because_they_get_no_gradient():
    case = WEEK / "frozen"
    done = gradc_cli("check", case / "forward.pb", "--startup", case / "startup.pb", "--feed", case / "feed.npz")
    assert done.returncode == 0 and done.stdout.splitlines()[-1].startswith("3 var(s) checked")
    assert [line.split(":")[1] for line in done.stderr.splitlines()] == [" note", " warning"]
    assert "2 (linear_4.b_0, linear_4.w_0): its path to the loss goes through 'relu_0.tmp_0'" in done.stderr

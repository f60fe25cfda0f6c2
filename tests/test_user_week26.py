"""A mixed-precision trainer's week (docs/tools.md): a small CNN (Conv2D, max pooling, Linear, cross entropy) and a
transformer-ish MLP (Linear, LayerNorm, a softmax self-attention by matmul, gelu, mse) built with Paddle 3.3.1's
layers and trained with paddle.static.amp.decorate's Adam and dynamic loss scaling (tools/paddle_user_week26.py):
the CNN at O1 in float16, the MLP at O2 (float16 parameters, float32 master weights), each as a CUDA build writes it
and as the CPU build writes it (float32 with the loss-scaling ops), an inf in the batch at step 3, a loss scale too
large for float32; then checked, measured for precision and exported in float16. gradc offers no AMP of its own
(no compile option casts a program): the programs are Paddle's. Each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week26"
META = json.loads((WEEK / "meta.json").read_text())
STEPS, BAD, BATCH = META["steps"], META["bad_step"], META["batch"]
LOSS = "mean_0.tmp_0"
SCALING = ("loss_scaling_0", "num_good_steps_0", "num_bad_steps_0")
FLOAT16_SHARE = 5e-3   # of a value's norm, as tests/test_gpu_amp_static.py: measured at most 3.2e-3 here
MASTER = "_fp32_master_0"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files as the user has them: the programs unpacked beside the arrays, each model's batches in a data
    file of its own, its first batch, and Paddle's trained values of each run."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week26"))
    data, paddle = np.load(out / "data.npz"), np.load(out / "paddle.npz")
    for model in ("cnn", "mlp"):
        np.savez(out / f"{model}_data.npz", x=data[f"{model}_x"], y=data[f"{model}_y"])
        np.savez(out / f"{model}_batch.npz", x=data[f"{model}_x"][:BATCH], y=data[f"{model}_y"][:BATCH])
    for run in ("cnn", "mlp", "huge"):
        np.savez(out / f"{run}_paddle.npz", **{key.split("/", 1)[1]: paddle[key] for key in paddle.files
                                               if key.startswith(f"{run}/")})
    return out


def _steps(lines: str) -> list[dict]:
    return [line["values"] for line in map(json.loads, lines.splitlines()) if line["event"] == "step"]


def _feed(files, model: str, step: int) -> dict:
    return {key: value[step * BATCH:(step + 1) * BATCH] for key, value in np.load(files / f"{model}_data.npz").items()}


def _step_by_step(files, model: str, program: str, init: str, **overrides) -> tuple[list[dict], gradc.Scope]:
    """The program trained STEPS steps from Paddle's values after its startup: each step's loss, loss-scaling state
    and the values every parameter had before it."""
    prog, scope, executor = gradc.load(files / program), gradc.Scope(), gradc.Executor()
    for name, value in {**np.load(files / init), **overrides}.items():
        scope[name] = value
    params = [name for name, var in prog.global_block.vars.items() if var.is_parameter]
    record = []
    for step in range(STEPS):
        before = {name: np.array(scope[name]) for name in params}
        (loss,) = executor.run(prog, _feed(files, model, step), [LOSS], scope)
        record.append({"loss": float(loss), "before": before,
                       **{name: np.asarray(scope[name]).reshape(-1)[0].item() for name in SCALING}})
    return record, scope


@pytest.mark.parametrize("model", ["cnn", "mlp"])
def test_train_reports_the_loss_not_the_loss_times_its_scale(files, model):
    """decorate marks loss * loss_scaling as the loss, the backward's start. Before, gradc train without --fetch
    reported that product: the MLP's 'tmp_1=1239.82' at step 2 where its loss was 1.2108 (scale 1024), and gradc info
    and evaluate named it the loss (evaluate: 'loss 1572.0' for 1.535). Now each reports the loss the user wrote, the
    mean, before the scale (and before O2's cast to float32): Paddle's losses to 1e-6."""
    run = gradc_cli("train", files / f"{model}_cpu.pb", "--startup", files / f"{model}_startup.pb", "--data",
                    files / f"{model}_data.npz", "--batch-size", BATCH, "--json", "--log-every", 1)
    assert run.returncode == 0, run.stderr
    losses = [step[LOSS] for step in _steps(run.stdout)]
    assert [list(step) for step in _steps(run.stdout)] == [[LOSS]] * STEPS
    np.testing.assert_allclose(np.array(losses, float), META[model]["losses"], rtol=1e-6)
    info = gradc_cli("info", files / f"{model}_amp.pb")
    scaled = "tmp_0" if model == "cnn" else "tmp_2"
    assert (f"loss: {LOSS} (paddle.static.amp's loss scaling multiplies it into {scaled}, which op_role marks the "
            f"loss and the backward starts from)\n") in info.stdout
    scored = gradc_cli("evaluate", files / f"{model}_amp.pb", "--params", files / f"{model}_amp_init.npz", "--data",
                       files / f"{model}_batch.npz", "--json")
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["loss"] == pytest.approx(META[model]["losses"][0], rel=1e-3)


@pytest.mark.parametrize("run, model, overrides", [
    ("cnn", "cnn", {}), ("mlp", "mlp", {}),
    ("huge", "cnn", {"loss_scaling_0": np.array([3e38], np.float32)})])
def test_the_cpu_builds_amp_program_skips_the_overflowing_steps_as_paddle(files, run, model, overrides):
    """The CPU build's program (float32, with check_finite_and_unscale and update_loss_scaling) stepped by gradc's
    Executor from Paddle's startup values: the losses Paddle's executor gave to 1e-6, the loss scale and the good and
    bad step counters exactly (1024, 2048 after two good steps, halved by the inf at step 3). The step that
    overflows changes no parameter, and Paddle's trained parameters and Adam moments agree to 1e-5 of their norm
    (measured: at most 6.3e-6, the moment of the MLP's output bias, whose gradient is a sum of residuals that nearly
    cancels). From a scale of 3e38 the scaled gradients overflow float32 at step 1: the scale halves to 1.5e38, the
    next step succeeds at that scale, the third overflows again, as in Paddle (no fault)."""
    record, scope = _step_by_step(files, model, f"{model}_cpu.pb", f"{model}_init.npz", **overrides)
    np.testing.assert_allclose([step["loss"] for step in record], META[run]["losses"], rtol=1e-6)
    for name in SCALING:
        assert [step[name] for step in record] == META[run][name], name
    scales = [float(overrides.get("loss_scaling_0", [1024.0])[0]), *META[run]["loss_scaling_0"]]
    skipped = [step for step in range(STEPS - 1) if scales[step + 1] < scales[step]]
    assert skipped == ([0, 2, BAD] if run == "huge" else [BAD])
    for step in skipped:
        before, after = record[step]["before"], record[step + 1]["before"]
        assert after and all(np.array_equal(after[name], value) for name, value in before.items())
    paddle = np.load(files / f"{run}_paddle.npz")
    for name in paddle.files:
        value = np.asarray(scope[name], np.float64)
        assert np.linalg.norm(value - paddle[name]) <= 1e-5 * max(np.linalg.norm(paddle[name]), 1e-30), name


def _on_the_master(name: str, scope: gradc.Scope) -> str:
    """The O2 program's name of a CPU-build persistable: a float16 parameter's value (and its moments) live on its
    float32 master."""
    param = next((name[:len(key) - len(MASTER)] for key in scope.keys()
                  if key.endswith(MASTER) and name.startswith(key[:-len(MASTER)])), None)
    return name if param is None else param + MASTER + name[len(param):]


@pytest.mark.parametrize("model", ["cnn", "mlp"])
def test_the_cuda_builds_float16_program_trains_like_paddles_float32_run(files, model):
    """The CUDA build's program (CNN: O1, 15 casts around conv2d and matmul_v2; MLP: O2, float16 Linear weights on
    float32 masters, LayerNorm's kept float32), which Paddle's CPU build cannot run, trained by gradc from Paddle's
    startup values (and amp_init's casts): the same steps overflow and the loss scale and its counters are exactly
    Paddle's float32 run's; the losses are its to 1e-3 (measured 8.5e-4: float16 rounds to 4.9e-4), the parameters
    and masters to FLOAT16_SHARE of their norm (not the moments: the first moment of the MLP's output bias, a sum of
    residuals that nearly cancels, is 3% off, as float16 residuals give). Each float16 parameter is its master
    rounded (no fault)."""
    record, scope = _step_by_step(files, model, f"{model}_amp.pb", f"{model}_amp_init.npz")
    assert [op.type for op in gradc.load(files / f"{model}_amp.pb").global_block.ops].count("cast") == \
        META[model]["casts"]
    for name in SCALING:
        assert [step[name] for step in record] == META[model][name], name
    np.testing.assert_allclose([step["loss"] for step in record], META[model]["losses"], rtol=1e-3)
    paddle = np.load(files / f"{model}_paddle.npz")
    for name in (name for name in paddle.files if name.endswith(("w_0", "b_0"))):
        value = np.asarray(scope[_on_the_master(name, scope)], np.float64)
        assert np.linalg.norm(value - paddle[name]) <= FLOAT16_SHARE * np.linalg.norm(paddle[name]), name
    masters = [key for key in scope.keys() if key.endswith(MASTER)]
    assert len(masters) == (6 if model == "mlp" else 0)
    for master in masters:
        param = np.asarray(scope[master[:-len(MASTER)]])
        assert param.dtype == np.float16 and np.array_equal(param, np.asarray(scope[master]).astype(np.float16))


@pytest.mark.parametrize("program, init", [("cnn_cpu.pb", "cnn_init.npz"), ("mlp_amp.pb", "mlp_amp_init.npz")])
def test_check_of_an_amp_training_program_differentiates_the_loss_before_its_scale(files, program, init):
    """gradc check of a training program checks its forward part. Before, it differentiated the scaled loss, the
    float scalar no op reads: at decorate's default scale 2**15 every gradient was 32768 times the loss's, and so
    was the error against central differences (the CNN's conv2d_0.w_0: 1.74e-5 where the loss's is 5.3e-10), which
    a larger scale would have pushed past the tolerance. Now the loss checked is the one decorate scales (named
    in the output), and its gradients agree to 1e-8 (the O2 MLP's float16 forward in its float64 copy too)."""
    values = dict(np.load(files / init))
    values["loss_scaling_0"] = np.array([2.0**15], np.float32)
    np.savez(files / "default_scale.npz", **values)
    batch = program.split("_")[0] + "_batch.npz"
    run = gradc_cli("check", files / program, "--params", files / "default_scale.npz", "--feed", files / batch,
                    "--json")
    assert run.returncode == 0, run.stdout
    checked = json.loads(run.stdout)
    assert checked["loss"] == LOSS
    assert len(checked["vars"]) == (4 if program.startswith("cnn") else 8)
    assert max(var["max_abs_error"] for var in checked["vars"]) < 1e-8


def test_precision_of_the_float16_program_finds_each_op_rounding_once(files):
    """gradc precision of the O2 MLP against its float64 run: every float16 output's own error (the op alone in
    float64 on what it read) is within half a float16 epsilon, one rounding, as CUDA's float16 kernels compute in
    float32 and round what they write. Before, softmax_grad's was 3.27 eps (3.2e-3: numpy's float16 arithmetic
    rounded each step and summed d * out in float16) and layer_norm's 0.73 eps; the largest error of the whole
    program was softmax_grad's 4.9e-3, now 3.3e-3."""
    run = gradc_cli("precision", files / "mlp_amp.pb", "--params", files / "mlp_amp_init.npz", "--feed",
                    files / "mlp_batch.npz", "--json", "--top", 100)
    assert run.returncode == 0, run.stderr
    rows = [row for row in json.loads(run.stdout)["rows"] if row["dtype"] == "float16"]
    assert {"softmax", "softmax_grad", "layer_norm_grad", "matmul_v2", "gelu"} <= {row["type"] for row in rows}
    assert max(row["own"] / row["eps"] for row in rows) <= 0.5
    assert max(row["error"] for row in rows) < 4 * np.finfo(np.float16).eps


def _forward_and_grad(op: str, attrs: dict, x: np.ndarray, dout: np.ndarray, dtype: str) -> tuple:
    """The op's output on x and the gradient gradc's backward gives x for the output's gradient dout (the loss
    sum(out * dout)), all in ``dtype``."""
    net = gradc.layers.ProgramBuilder()
    xv, dv = net.data("x", list(x.shape), dtype), net.data("dout", list(x.shape), dtype)
    net.block.var(xv).is_parameter, net.block.var(xv).stop_gradient = True, False
    out = net.op(op, {"X": xv}, attrs, outputs=["Y" if op == "layer_norm" else "Out"])[0]
    loss = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": out, "Y": dv})[0]}, {"reduce_all": True})[0]
    gradc.append_backward(net.program, loss)
    feed = {"x": x.astype(dtype), "dout": dout.astype(dtype)}
    return tuple(gradc.Executor().run(net.program, feed, [out, xv + "@GRAD"], gradc.Scope()))


@pytest.mark.parametrize("op, attrs", [("softmax", {"axis": -1}), ("log_softmax", {"axis": -1}),
                                       ("layer_norm", {"begin_norm_axis": 1, "epsilon": 1e-5})])
def test_float16_softmax_and_layer_norm_round_their_float32_result_once(op, attrs):
    """Each kernel's float16 results are its computation in float32 (or wider) on the same float16 values, rounded
    once to float16, bit for bit: the forward as the float32 program's output rounded; the grad as the float32
    program's (layer_norm: its Mean and Variance are float32 in both), or as the float64 formula on the float16 Out
    rounded (softmax: out (d - sum(d out)); log_softmax: d - exp(out) sum(d)). Before, numpy's float16 arithmetic
    gave other values: the forward of softmax in 44 of 96 elements (by up to 1.6e-3 of the value), of log_softmax
    in 19, of layer_norm in 44."""
    rng = np.random.default_rng(26)
    x, dout = (rng.standard_normal((6, 16)).astype(np.float16) for _ in range(2))
    (out, grad), (out32, grad32) = (_forward_and_grad(op, attrs, x, dout, dtype) for dtype in ("float16", "float32"))
    assert out.dtype == grad.dtype == np.float16
    np.testing.assert_array_equal(out, out32.astype(np.float16))
    wide, d = out.astype(np.float64), dout.astype(np.float64)
    expected = {"softmax": lambda: wide * (d - (d * wide).sum(-1, keepdims=True)),
                "log_softmax": lambda: d - np.exp(wide) * d.sum(-1, keepdims=True),
                "layer_norm": lambda: grad32}[op]()
    np.testing.assert_array_equal(grad, expected.astype(np.float16))


@pytest.mark.parametrize("suffix", ["pdmodel", "json"])
def test_the_o2_model_trained_by_gradc_exports_in_float16_and_predicts_as_paddles(files, suffix):
    """gradc train of the O2 program from Paddle's startup (--save-params: the float16 weights, LayerNorm's float32),
    gradc export (legacy .pdmodel and PIR .json) and gradc run: a float16 model whose float16 outputs are within
    2e-3 of the norm of Paddle's Predictor's on its float32 model trained by Paddle (measured 1.1e-3), both formats
    alike. Paddle's CPU Predictor cannot run the float16 export (no float16 matmul_v2 kernel on a CPU);
    Paddle's float32 model runs in gradc to 1e-6 (no fault)."""
    trained = gradc_cli("train", files / "mlp_amp.pb", "--startup", files / "mlp_amp_startup.pb", "--data",
                        files / "mlp_data.npz", "--batch-size", BATCH, "--save-params", files / "o2.npz")
    assert trained.returncode == 0, trained.stderr
    exported = files / f"mlp16.{suffix}"
    run = gradc_cli("export", files / "mlp_amp.pb", "-o", exported, "--input", "x", "--fetch", "linear_2.tmp_1=out",
                    "--params", files / "o2.npz")
    assert run.returncode == 0, run.stderr
    predictor = np.load(files / "predictor.npz")
    np.savez(files / "images.npz", x=predictor["x"])
    run = gradc_cli("run", exported, "--params", exported.with_suffix(".pdiparams"), "--feed", files / "images.npz",
                    "-o", files / f"out_{suffix}.npz")
    assert run.returncode == 0, run.stderr
    out = np.load(files / f"out_{suffix}.npz")["out"]
    assert out.dtype == np.float16
    assert np.linalg.norm(out - predictor["out"]) < 2e-3 * np.linalg.norm(predictor["out"])
    saved = gradc_cli("run", files / "mlp_infer.pdmodel", "--params", files / "mlp_paddle.npz", "--feed",
                      files / "images.npz", "-o", files / "float32.npz")
    assert saved.returncode == 0, saved.stderr
    np.testing.assert_allclose(np.load(files / "float32.npz")[META["infer"]["out"]], predictor["out"], atol=1e-6)


def test_gradc_has_no_amp_its_float32_training_is_decorates_until_an_overflow(files):
    """gradc compile has no AMP option (no casts, no loss scaling: the AMP programs here are Paddle's). The float32
    forward compiled with Adam(0.01) trains as Paddle's CPU-build AMP program bit for bit while no step overflows (a
    power-of-two loss scale multiplies and divides the gradients exactly): the same first 3 losses, Paddle's to
    1e-6. At the inf in step 3 the plain program has no step to skip: every parameter turns nan."""
    compiled = gradc_cli("compile", files / "cnn_forward.pb", "-o", files / "plain.pb", "--optimizer", "adam",
                         "--lr", 0.01)
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("train", files / "plain.pb", "--startup", files / "cnn_startup.pb", "--startup",
                    files / "plain.startup.pb", "--data", files / "cnn_data.npz", "--batch-size", BATCH, "--json",
                    "--log-every", 1, "--save-params", files / "plain.npz")
    assert run.returncode == 0, run.stderr
    plain = [float(step[LOSS]) for step in _steps(run.stdout)]
    amp, _ = _step_by_step(files, "cnn", "cnn_cpu.pb", "cnn_init.npz")
    assert plain[:BAD] == [step["loss"] for step in amp[:BAD]]
    np.testing.assert_allclose(plain[:BAD], META["cnn"]["losses"][:BAD], rtol=1e-6)
    assert all(np.isnan(value).all() for value in np.load(files / "plain.npz").values())


def test_check_nan_lets_loss_scaling_skip_an_overflow_and_stops_at_the_inf_in_the_batch(files):
    """gradc train --check-nan of the CPU build's program from a loss scale of 3e38. Before, it stopped at step 1:
    "block 0, op 10 (elementwise_mul) wrote Inf into 'tmp_0'", the scaled loss, an overflow the program's loss
    scaling exists to skip. Now NaN and Inf in the scaled loss, the gradients and the unscale's outputs pass (the
    step is skipped and the scale halves, Paddle's 1.5e38, 1.5e38, 7.5e37); the inf in the batch still stops it at
    step 4, in the first forward op that reads it."""
    values = dict(np.load(files / "cnn_init.npz"))
    values["loss_scaling_0"] = np.array([3e38], np.float32)
    np.savez(files / "huge_init.npz", **values)
    run = gradc_cli("train", files / "cnn_cpu.pb", "--params", files / "huge_init.npz", "--data",
                    files / "cnn_data.npz", "--batch-size", BATCH, "--check-nan", "--json", "--log-every", 1,
                    "--fetch", LOSS, "--fetch", "loss_scaling_0")
    assert run.returncode == 1
    steps = _steps(run.stdout)
    assert [step["loss_scaling_0"] for step in steps] == META["huge"]["loss_scaling_0"][:BAD]
    np.testing.assert_allclose([step[LOSS] for step in steps], META["huge"]["losses"][:BAD], rtol=1e-6)
    assert run.stderr.startswith("gradc: error: step 4: block 0, op 0 (conv2d) wrote Inf and -Inf into "
                                 "'conv2d_0.tmp_0' (output Output); a forward op")


def test_gradient_norms_of_an_amp_program_are_the_unscaled_ones_and_nan_at_a_skipped_step(files):
    """gradc train --log-grad-norms of the CPU build's program. Before, it warned that "an check_finite_and_unscale:
    clipping or weight decay" rewrote the gradients, and logged 0 for every parameter at a step whose overflow loss
    scaling skipped (update_loss_scaling zeroes the gradients): from a scale of 3e38, steps 1 and 3 read 'grad norms:
    total 0', as if the gradients had vanished. Now no warning (after the unscale the gradients are the loss's own:
    the norms are the plain float32 program's, 9.639 at step 1 from Paddle's startup), and NaN at a skipped step."""
    def norms(program: str, *values) -> tuple[list[dict], str]:
        run = gradc_cli("train", files / program, *values, "--data", files / "cnn_data.npz", "--batch-size", BATCH,
                        "--log-grad-norms", "--json", "--log-every", 1, "--steps", 3)
        assert run.returncode == 0, run.stderr
        return [line["grad_norms"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "step"], \
            run.stderr

    values = dict(np.load(files / "cnn_init.npz"))
    values["loss_scaling_0"] = np.array([3e38], np.float32)
    np.savez(files / "huge_init.npz", **values)
    huge, stderr = norms("cnn_cpu.pb", "--params", files / "huge_init.npz")
    assert stderr == ""
    assert [step["total"] for step in huge][::2] == ["nan", "nan"] and huge[1]["total"] > 1
    assert set(huge[0]["parameters"].values()) == {"nan"}
    scaled, _ = norms("cnn_cpu.pb", "--params", files / "cnn_init.npz")
    compiled = gradc_cli("compile", files / "cnn_forward.pb", "-o", files / "plain_norms.pb", "--optimizer", "adam",
                         "--lr", 0.01)
    assert compiled.returncode == 0, compiled.stderr
    plain, _ = norms("plain_norms.pb", "--startup", files / "cnn_startup.pb", "--startup",
                     files / "plain_norms.startup.pb")
    assert scaled[0] == plain[0] and scaled[0]["total"] == pytest.approx(9.639, abs=1e-3)


def test_a_step_whose_loss_is_not_finite_is_named_once(files):
    """The inf in the batch of step 4: decorate's program skips the step, and the loss of that batch is nan, so the
    epoch's mean is nan (train mean_0.tmp_0=nan). Before, nothing said which batch; now one warning names the step,
    the epoch and batch, and the value, and the mean stays the honest nan (later steps are not warned of)."""
    run = gradc_cli("train", files / "cnn_cpu.pb", "--startup", files / "cnn_startup.pb", "--data",
                    files / "cnn_data.npz", "--batch-size", BATCH, "--epochs", 2)
    assert run.returncode == 0, run.stderr
    warned = [line for line in run.stderr.splitlines() if "not finite" in line]
    assert warned == [f"gradc: warning: step {BAD + 1} (epoch 1, batch {BAD + 1}): {LOSS} is nan, so this epoch's "
                      f"mean of it is not finite either (--check-nan stops at the op that writes the first NaN or Inf; "
                      f"later steps are not told)"]
    assert f"train {LOSS}=nan" in run.stdout

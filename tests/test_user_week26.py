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
    params = [var.name for var in prog.global_block.all_parameters()]
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

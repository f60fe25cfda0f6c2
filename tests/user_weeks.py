"""What the user-week tests share beyond unpacking a week's files (fixtures.unpacked): the feeds their fixtures derive
(a model's first batch, each gradient corner's inputs), gradc train with a JSON line a step, and gradc's trained
weights held against Paddle's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cli_inprocess import gradc_cli
from fixtures import unpacked


def save_first(folder: Path, count: int) -> None:
    """folder/first.npz: the first ``count`` examples of each array of folder/data.npz (a model's first batch)."""
    data = np.load(folder / "data.npz")
    np.savez(folder / "first.npz", **{name: data[name][:count] for name in data.files})


def unpacked_with_firsts(week: Path, out: Path, models: tuple[str, ...], count: int) -> Path:
    """A week's files unpacked into ``out`` (fixtures.unpacked), each model's folder with its first batch of
    ``count`` examples (save_first)."""
    unpacked(week, out, models)
    for model in models:
        save_first(out / model, count)
    return out


def save_corner_feeds(out: Path, corners: dict[str, str], weights: str = "w") -> None:
    """out/feed_NAME.npz for each corner of out/corners.npz: its ``weights`` (the loss's sum(weights * f(x))) and its
    inputs (``corners``: name -> the inputs' names, space-separated)."""
    saved = np.load(out / "corners.npz")
    for name, inputs in corners.items():
        np.savez(out / f"feed_{name}.npz", **{weights: saved[f"{name}_{weights}"]},
                 **{var: saved[f"{name}_{var}"] for var in inputs.split()})


def train_steps(program, startup, data, batch_size: int, *extra):
    """gradc train of ``program`` from ``startup`` over ``data``, a JSON line each step (fixtures.step_losses)."""
    return gradc_cli("train", program, "--startup", startup, "--data", data, "--batch-size", batch_size, "--json",
                     "--log-every", 1, *extra)


def assert_weights_like_paddles(folder: Path, atol: float, skipped=()) -> None:
    """folder/trained_gradc.npz (gradc's weights after training) holds the names of folder/trained.npz (Paddle's) and
    their values to ``atol``, but the ``skipped`` names (rounding's alone: a shift-invariant bias)."""
    ours, paddle = np.load(folder / "trained_gradc.npz"), np.load(folder / "trained.npz")
    assert sorted(ours.files) == sorted(paddle.files)
    for name in set(paddle.files) - set(skipped):
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=atol, err_msg=name)


def assert_as_close_to_float64(ours, paddles: list, exact, floor, what: str) -> None:
    """gradc's float32 numbers ``ours`` within ``floor`` (a bound, or one per element) of Paddle's float32 ones
    ``paddles[0]``, or at most twice as far from Paddle's float64 run of the same steps, ``exact``, as Paddle's float32
    ones on any CPU kept (``paddles``), by largest absolute difference: float32 rounding differs by CPU (numpy's SIMD
    dispatch, OpenBLAS's kernels), and Adam's normalisation of a near-zero gradient's rounding turns it into a step of
    the rate's size."""
    ours, exact = np.asarray(ours, np.float64), np.asarray(exact, np.float64)
    samples = [np.asarray(values, np.float64) for values in paddles]
    if np.all(np.abs(ours - samples[0]) <= floor):
        return
    distance = np.abs(ours - exact).max()
    paddles_distance = max(np.abs(sample - exact).max() for sample in samples)
    assert distance <= 2 * paddles_distance, (what, distance, paddles_distance)


def trained_outputs(files: Path, model: str, meta: dict, feed: Path):
    """gradc run of files/MODEL/forward.pb on Paddle's trained weights and ``feed``, each output ``meta`` names (all
    but the loss and losses) fetched under its key: (gradc's outputs, Paddle's MODEL/outputs.npz, the keys)."""
    outputs = {key: name for key, name in meta.items() if key not in ("loss", "losses")}
    fetches = [arg for key, name in outputs.items() for arg in ("--fetch", f"{name}={key}")]
    run = gradc_cli("run", files / model / "forward.pb", "--params", files / model / "trained.npz", "--feed", feed,
                    *fetches, "-o", files / f"{model}_outputs.npz")
    assert run.returncode == 0, run.stderr
    return np.load(files / f"{model}_outputs.npz"), np.load(files / model / "outputs.npz"), list(outputs)

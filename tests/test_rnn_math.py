"""The numpy math of the fused rnn op (gradc.executor.kernels.rnn_math), without the registry: against
Paddle's values in the committed fixtures, and against float64 central differences of its own forward."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from gradc.executor.kernels.rnn_math import (
    RnnShape,
    rnn_backward,
    rnn_forward,
    sequence_length_problem,
    shape_problems,
)

DATA = Path(__file__).parent / "data" / "paddle" / "rnn"
MODES = ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"]


def _npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as archive:
        return {k: archive[k] for k in archive.files}


class FusedFixture:
    """A fixture whose loss is sum(mean(value * fed weights)) over the Out and States of one rnn op."""

    def __init__(self, case: str):
        self.dir = DATA / case
        self.meta = json.loads((self.dir / "meta.json").read_text())
        (op,) = self.meta["rnn_ops"]
        attrs = op["attrs"]
        self.shape = RnnShape(attrs["mode"], attrs["num_layers"], 1 + attrs["is_bidirec"], attrs["input_size"],
                              attrs["hidden_size"])
        self.feed, self.params = _npz(self.dir / "feed.npz"), _npz(self.dir / "params.npz")
        self.weight_names = op["inputs"]["WeightList"]
        self.state_names = op["inputs"]["PreState"]
        self.seq_len = self.feed[op["inputs"]["SequenceLength"][0]] if op["inputs"]["SequenceLength"] else None
        self.batch_major = not self.meta["time_major"]
        mask = self.dir / "dropout_state.npy"  # Paddle's random mask of the recorded run
        self.dropout = {"dropout_mask": np.load(mask), "dropout_prob": attrs["dropout_prob"]} if mask.exists() else {}

    def to_time_major(self, x):
        return x.transpose(1, 0, 2) if self.batch_major else x

    def inputs(self, dtype):
        x = self.to_time_major(self.feed["x"]).astype(dtype)
        steps, batch = x.shape[:2]
        zeros = np.zeros((self.shape.num_layers * self.shape.directions, batch, self.shape.hidden_size), dtype)
        states = [self.feed[n].astype(dtype) if n in self.feed else zeros for n in self.state_names]
        return x, states, [self.params[n].astype(dtype) for n in self.weight_names]

    def loss_and_grads(self, dtype):
        """The fixture's loss and every grad it records, computed by rnn_math in ``dtype``."""
        x, states, weights = self.inputs(dtype)
        out, finals, reserve = rnn_forward(self.shape, x, states, weights, self.seq_len, **self.dropout)
        values = {"Out": self.to_time_major(out), **{f"State{k}": s for k, s in enumerate(finals)}}
        terms = {role: self.feed[w].astype(dtype) for role, w in self.meta["loss_terms"]}
        loss = sum(np.mean(values[role] * w) for role, w in terms.items())
        seeds = {role: w / dtype(w.size) for role, w in terms.items()}
        dx, dstates, dweights = rnn_backward(self.shape, x, states, weights, reserve, self.to_time_major(seeds["Out"]),
                                             [seeds[f"State{k}"] for k in range(len(states))], self.seq_len,
                                             **self.dropout)
        grads = {f"{n}@GRAD": g for n, g in zip(self.weight_names, dweights)}
        grads["x@GRAD"] = self.to_time_major(dx)
        grads.update({f"{n}@GRAD": g for n, g in zip(self.state_names, dstates)})
        return loss, grads


FUSED = sorted(p.name for p in DATA.iterdir() if "loss_terms" in json.loads((p / "meta.json").read_text()))


def test_every_fused_fixture_is_found():
    assert len(FUSED) >= 15
    assert FusedFixture("lstm_l3_bi_seq_dropout").dropout["dropout_mask"].any()


@pytest.mark.parametrize("case", FUSED)
def test_matches_paddle_float32(case):
    fixture = FusedFixture(case)
    loss, grads = fixture.loss_and_grads(np.float32)
    assert loss.dtype == np.float32 and all(g.dtype == np.float32 for g in grads.values())
    np.testing.assert_allclose(loss, np.load(fixture.dir / "loss.npy"), rtol=1e-5, atol=1e-6)
    expected = _npz(fixture.dir / "grads.npz")
    right = [name for name in expected if name not in fixture.meta["paddle_wrong_grads"]]
    assert right
    for name in right:
        np.testing.assert_allclose(grads[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=name)


WRONG_IN_PADDLE = [case for case in FUSED if (DATA / case / "grads_fd64.npz").exists()]


@pytest.mark.parametrize("case", WRONG_IN_PADDLE)
def test_right_where_paddle_is_wrong(case):
    """Reverse direction + sequence lengths + nonzero initial states: Paddle's rnn_grad starts the reverse
    pass from a zeroed output instead of the carried initial state; float64 central differences decide."""
    fixture = FusedFixture(case)
    _, grads = fixture.loss_and_grads(np.float64)
    numeric = _npz(fixture.dir / "grads_fd64.npz")
    assert fixture.meta["paddle_wrong_grads"]
    for name, expected in numeric.items():
        np.testing.assert_allclose(grads[name], expected, rtol=1e-6, atol=1e-8, err_msg=name)


# ---------------------------------------------------------------- central differences of our own forward
def _problem(mode, layers, directions, seq, dropout=False, steps=3, batch=3, inp=2, hidden=2, seed=0):
    rng = np.random.default_rng(seed)
    shape = RnnShape(mode, layers, directions, inp, hidden)
    x = rng.standard_normal((steps, batch, inp))
    states = [0.5 * rng.standard_normal((layers * directions, batch, hidden)) for _ in range(shape.states)]
    weights = [rng.uniform(-0.8, 0.8, s) for s in shape.weight_shapes()]
    seq_len = np.array([3, 1, 2]) if seq else None
    mask = (rng.random((steps, batch, directions * hidden)) > 0.4).astype(np.uint8) if dropout else None
    w_out = rng.standard_normal((steps, batch, directions * hidden))
    w_states = [rng.standard_normal(s.shape) for s in states]
    extra = {"sequence_length": seq_len, "dropout_mask": mask, "dropout_prob": 0.4 if dropout else 0.0}

    def loss(x, states, weights):
        out, finals, _ = rnn_forward(shape, x, states, weights, **extra)
        return np.sum(out * w_out) + sum(np.sum(f * w) for f, w in zip(finals, w_states))

    out, _, reserve = rnn_forward(shape, x, states, weights, **extra)
    grads = rnn_backward(shape, x, states, weights, reserve, w_out, w_states, **extra)
    return loss, (x, states, weights), grads


def _check_directional(loss, args, grads, rng, eps=1e-6):
    """For each tensor on its own: the analytic grad along a random direction equals the central difference."""
    x, states, weights = args
    dx, dstates, dweights = grads
    tensors = [(x, dx)] + list(zip(states, dstates)) + list(zip(weights, dweights))
    for k, (tensor, grad) in enumerate(tensors):
        direction = rng.standard_normal(tensor.shape)
        tensor += eps * direction
        up = loss(*args)
        tensor -= 2 * eps * direction
        down = loss(*args)
        tensor += eps * direction
        numeric, analytic = (up - down) / (2 * eps), np.sum(grad * direction)
        assert abs(numeric - analytic) <= 1e-6 * (1 + abs(numeric)), (k, tensor.shape, numeric, analytic)


@pytest.mark.parametrize("mode,layers,directions,seq", list(itertools.product(MODES, [1, 2], [1, 2], [False, True])))
def test_backward_matches_central_differences(mode, layers, directions, seq):
    loss, args, grads = _problem(mode, layers, directions, seq)
    _check_directional(loss, args, grads, np.random.default_rng(1))


@pytest.mark.parametrize("mode", MODES)
def test_dropout_between_layers_uses_the_given_mask(mode):
    loss, args, grads = _problem(mode, 3, 2, True, dropout=True)
    _check_directional(loss, args, grads, np.random.default_rng(2))
    plain = _problem(mode, 3, 2, True)[0]
    assert not np.isclose(loss(*args), plain(*args))


@pytest.mark.parametrize("mode", MODES)
def test_sequence_lengths_pad_with_zeros_and_keep_the_last_valid_state(mode):
    """A padded batch gives each sequence what it gives alone, trimmed to its length."""
    shape = RnnShape(mode, 2, 2, 3, 4)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    states = [rng.standard_normal((4, 2, 4)).astype(np.float32) for _ in range(shape.states)]
    weights = [rng.uniform(-0.5, 0.5, s).astype(np.float32) for s in shape.weight_shapes()]
    out, finals, _ = rnn_forward(shape, x, states, weights, np.array([5, 3]))
    alone, alone_finals, _ = rnn_forward(shape, x[:3, 1:], [s[:, 1:] for s in states], weights)
    np.testing.assert_allclose(out[:3, 1:], alone, rtol=1e-6, atol=1e-6)
    assert not out[3:, 1].any()
    for final, expected in zip(finals, alone_finals):
        np.testing.assert_allclose(final[:, 1:], expected, rtol=1e-6, atol=1e-6)


def test_float32_stays_float32():
    shape = RnnShape("GRU", 2, 2, 3, 4)
    x = np.ones((4, 2, 3), np.float32)
    states = [np.zeros((4, 2, 4), np.float32)]
    weights = [np.full(s, 0.1, np.float32) for s in shape.weight_shapes()]
    out, finals, reserve = rnn_forward(shape, x, states, weights, np.array([4, 2]))
    dx, dstates, dweights = rnn_backward(shape, x, states, weights, reserve, np.ones_like(out), None,
                                         np.array([4, 2]))
    assert {a.dtype for a in [out, reserve, dx, *finals, *dstates, *dweights]} == {np.dtype(np.float32)}
    assert reserve.shape == shape.reserve_shape(4, 2) == (2, 2, 4, 2, 5 * 4)


# ---------------------------------------------------------------- validation the op will report
@pytest.mark.parametrize("case", FUSED)
def test_fixture_shapes_are_valid(case):
    fixture = FusedFixture(case)
    x, states, weights = fixture.inputs(np.float32)
    dims = [-1, -1, x.shape[2]], [[s.shape[0], -1, s.shape[2]] for s in states], [w.shape for w in weights]
    assert shape_problems(fixture.shape, *dims) == []
    if fixture.seq_len is not None:
        assert sequence_length_problem(fixture.seq_len, x.shape[0]) is None


def test_shape_problems_name_the_slot():
    shape = RnnShape("LSTM", 2, 2, 3, 4)
    weights = [list(w) for w in shape.weight_shapes()]
    state = [4, -1, 4]
    assert shape_problems(shape, [5, 2, 3], [state, state], weights) == []
    assert [slot for slot, _ in shape_problems(shape, [5, 2, 7], [state], weights[:-1])] == [
        "Input", "PreState", "WeightList"]
    wrong = weights[:5] + [[16, 3]] + weights[6:]
    assert shape_problems(shape, [5, 2, 3], [state, [2, 2, 4]], wrong) == [
        ("PreState[1]", "must be [num_layers * directions, B, hidden_size] = [4, 2, 4], got [2, 2, 4]"),
        ("WeightList[5]", "must be [16, 4], got [16, 3]")]


def test_sequence_length_problems():
    assert sequence_length_problem(np.array([3, 0, 2]), 3) is None
    assert "[4, -1]" in sequence_length_problem(np.array([4, 1, -1]), 3)
    assert "integer" in sequence_length_problem(np.array([1.0, 2.0]), 3)
    assert "[B=3]" in sequence_length_problem(np.array([1, 2]), 3, batch=3)

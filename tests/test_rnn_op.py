"""The fused rnn op in gradc's executor: Reserve is the bytes of the float buffer rnn_grad reads (the var
keeps Paddle's declared UINT8), dropout draws one 0/1 mask of Out's shape from numpy (the same mask for a
nonzero seed, a fresh one for seed 0), is_test runs without dropout, and shape inference declares the
outputs as Paddle does."""

import numpy as np
import pytest

import gradc
from gradc.ir import VarType
from gradc.ops.infer import InferContext
from gradc.rnn_shape import RnnShape
from programs import Net

STEPS, BATCH, INPUT, HIDDEN, LAYERS = 5, 4, 3, 6, 2


def rnn_program(**attrs):
    """A 2-layer bidirectional LSTM over fed Input and states; returns (net, outputs by slot, feed)."""
    net = Net("float32")
    shape = RnnShape("LSTM", LAYERS, 2, INPUT, HIDDEN)
    rng = np.random.default_rng(1)
    feed = {"x": rng.standard_normal((STEPS, BATCH, INPUT)).astype(np.float32)}
    for name in ("h0", "c0"):
        feed[name] = rng.standard_normal((LAYERS * 2, BATCH, HIDDEN)).astype(np.float32)
    weights = []
    for k, dims in enumerate(shape.weight_shapes()):
        weights.append(net.data(f"w{k}", list(dims)))
        feed[f"w{k}"] = rng.uniform(-0.5, 0.5, dims).astype(np.float32)
    for name in ("x", "h0", "c0"):
        net.data(name, list(feed[name].shape))
    op = net.block.append_op("rnn", {"Input": ["x"], "PreState": ["h0", "c0"], "WeightList": weights}, {},
                             {"mode": "LSTM", "num_layers": LAYERS, "is_bidirec": True, "input_size": INPUT,
                              "hidden_size": HIDDEN, **attrs})
    for slot, result in gradc.registry.get("rnn").infer(InferContext(op, net.block)).items():
        results = result if isinstance(result, list) else [result]
        op.outputs[slot] = [net.tmp(shape, dtype, prefix=slot) for shape, dtype in results]
    return net, op.outputs, feed


def run(net, names, feed):
    return gradc.Executor().run(net.program, feed, names, gradc.Scope())


def test_outputs_are_declared_as_paddle_declares_them():
    net, outs, _ = rnn_program()
    block = net.block
    assert block.var(outs["Out"][0]).shape == [STEPS, BATCH, 2 * HIDDEN]
    assert [block.var(name).shape for name in outs["State"]] == [[2 * LAYERS, BATCH, HIDDEN]] * 2
    assert block.var(outs["Reserve"][0]).dtype == block.var(outs["DropoutState"][0]).dtype == VarType.UINT8


def test_reserve_holds_the_bytes_of_the_float_buffer():
    net, outs, feed = rnn_program()
    (reserve,) = run(net, outs["Reserve"], feed)
    width = (4 + 2) * HIDDEN   # gates i f g o, then c and h
    assert reserve.dtype == np.uint8 and reserve.shape == (LAYERS, 2, STEPS, BATCH, width * 4)
    hidden_of_last_layer = reserve.view(np.float32)[-1, 0, :, :, -HIDDEN:]   # direction 0, time order
    out = run(net, outs["Out"], feed)[0]
    np.testing.assert_array_equal(hidden_of_last_layer, out[..., :HIDDEN])


def test_dropout_draws_one_mask_of_outs_shape_seeded_or_fresh():
    net, outs, feed = rnn_program(dropout_prob=0.3, seed=11)
    first, out = run(net, [outs["DropoutState"][0], outs["Out"][0]], feed)
    assert first.dtype == np.uint8 and first.shape == out.shape
    assert set(np.unique(first)) == {0, 1} and 0.2 < 1 - first.mean() < 0.4
    np.testing.assert_array_equal(run(net, outs["DropoutState"], feed)[0], first)
    net, outs, feed = rnn_program(dropout_prob=0.3)
    masks = [run(net, outs["DropoutState"], feed)[0] for _ in range(2)]
    assert not np.array_equal(*masks)


@pytest.mark.parametrize("attrs", [{"is_test": True}, {}])
def test_is_test_or_a_zero_probability_runs_without_dropout(attrs):
    plain_net, plain_outs, feed = rnn_program()
    plain = run(plain_net, plain_outs["Out"], feed)[0]
    net, outs, feed = rnn_program(dropout_prob=0.5 if attrs else 0.0, seed=3, **attrs)
    np.testing.assert_array_equal(run(net, outs["Out"], feed)[0], plain)
    training, outs, feed = rnn_program(dropout_prob=0.5, seed=3)
    assert not np.allclose(run(training, outs["Out"], feed)[0], plain)


@pytest.mark.parametrize("is_test", [False, True])
def test_dropout_state_without_dropout_is_written_as_paddle_writes_it(is_test):
    """Ones of Out's shape in training; in test mode Paddle leaves it unallocated, and a program that passes it on
    (PaddleOCR's SAR recognizer chains its rnn ops' DropoutState through assigns) reads it empty."""
    net, outs, feed = rnn_program(is_test=is_test)
    copy = net.tmp(None, VarType.UINT8)
    net.block.append_op("assign", {"X": outs["DropoutState"]}, {"Out": [copy]})
    state, out = run(net, [copy, outs["Out"][0]], feed)
    assert state.dtype == np.uint8
    if is_test:
        assert state.size == 0
    else:
        np.testing.assert_array_equal(state, np.ones(out.shape, np.uint8))

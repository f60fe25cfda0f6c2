"""The LoD lstm and gru ops and gru_unit (gradc.ops.lod_rnn) pinned against Paddle 3.3.1
(tests/data/paddle/lod_rnn_values.npz, written by tools/paddle_lod_rnn_values.py): Hidden, Cell and the
batch-major Batch* outputs (sequences longest first, step by step; reversed), H0/C0 per sequence, the grads, and
the sigmoid's clamp at 13, past which gradc's gradient is 0 where Paddle's is y (1 - y). Also gru's Weight read
as Paddle's flat [D, 2D] + [D, D] blocks, the one-level LoD Paddle takes, a gradient through Cell refused (Paddle
drops it), and lstm_grad's and gru_grad's second derivatives refused."""

from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc import ExecutionError, LoDTensor
from gradc.errors import GradError
from gradc.executor.kernels.lod_rnn import Layout
from gradc.gradcheck import compare_program
from gradc.layers import ProgramBuilder

PADDLE = np.load(Path(__file__).parent / "data" / "paddle" / "lod_rnn_values.npz")
LENGTHS = [2, 3]
OUTPUTS = {"lstm": ["Hidden", "Cell", "BatchGate", "BatchCellPreAct"],
           "gru": ["BatchGate", "BatchResetHiddenPrev", "BatchHidden", "Hidden"]}
ATTRS = {"lstm": {"use_peepholes": True, "is_reverse": True}, "gru": {"origin_mode": True}}


def weighted_hidden(op: str, inputs: dict, attrs: dict, weights: np.ndarray, lengths=LENGTHS):
    """One op over data vars named after their slots (Input fed as sequences of ``lengths``), its loss
    sum(Hidden * weights) differentiated: (program, feed, output names, {slot: grad name})."""
    net = ProgramBuilder()
    slots, feed = {}, {}
    for slot, value in inputs.items():
        rows = -1 if slot in ("Input", "H0", "C0") else value.shape[0]   # a row per sequence or per step
        slots[slot] = net.data(slot.lower(), [rows, *value.shape[1:]], "float32", stop_gradient=False,
                               lod_level=int(slot == "Input"))
        feed[slots[slot]] = LoDTensor.from_lengths(value, [lengths]) if slot == "Input" else value
    outputs = net.op(op, slots, attrs, outputs=OUTPUTS[op] if op in OUTPUTS else ["Hidden"])
    hidden = outputs[OUTPUTS[op].index("Hidden")] if op in OUTPUTS else outputs[0]
    feed[net.data("weights", list(weights.shape), "float32")] = weights
    product = net.op("elementwise_mul", {"X": hidden, "Y": "weights"}, {"axis": -1})[0]
    loss = net.op("reduce_sum", {"X": product}, {"dim": [0], "keep_dim": False, "reduce_all": True})[0]
    gradc.append_backward(net.program, loss)
    return net.program, feed, outputs, {slot: f"{name}@GRAD" for slot, name in slots.items()}


def paddle_case(op: str) -> tuple[dict, dict]:
    """(the inputs Paddle ran, {name: what Paddle computed}) for ``op``."""
    slots = {"lstm": ["Input", "H0", "C0", "Weight", "Bias"], "gru": ["Input", "H0", "Weight", "Bias"]}[op]
    return {slot: PADDLE[f"{op}.{slot}"] for slot in slots}, {key.split(".", 1)[1]: PADDLE[key] for key in PADDLE
                                                            if key.startswith(f"{op}.")}


@pytest.mark.parametrize("op", ["lstm", "gru"])
def test_outputs_batch_layout_and_grads_match_paddle(op):
    inputs, paddle = paddle_case(op)
    program, feed, outputs, grads = weighted_hidden(op, inputs, ATTRS[op], paddle["weights"])
    values = gradc.Executor().run(program, feed, [*outputs, *grads.values()], gradc.Scope())
    for name, value in zip([*OUTPUTS[op], *(f"{slot}@GRAD" for slot in grads)], values):
        expected = paddle[name].copy()
        if name == "Input@GRAD" and op == "lstm":
            # Paddle's gradient of the input gate clamped at 13 is y (1 - y) times the rest; the forward is flat there
            assert expected[1, 2] != 0 and value[1, 2] == 0
            expected[1, 2] = 0
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6, err_msg=f"{op} {name}")


def test_the_batch_layout_runs_the_longest_sequence_first_and_reversed_from_its_end():
    inputs, paddle = paddle_case("lstm")
    program, feed, outputs, _ = weighted_hidden("lstm", inputs, ATTRS["lstm"], paddle["weights"])
    hidden, cell, gates, cell_act = gradc.Executor().run(program, feed, outputs, gradc.Scope())
    # sequences rows 0-1 and 2-4; reversed: step 0 is rows 4 and 1, step 1 rows 3 and 0, step 2 row 2
    batch_rows = [4, 1, 3, 0, 2]
    np.testing.assert_allclose(gates[:, 6:] * cell_act, hidden[batch_rows], rtol=1e-6)   # h = o act(c)
    np.testing.assert_allclose(cell_act, np.tanh(cell[batch_rows]), rtol=1e-6)


def test_the_gate_sigmoid_clamps_its_input_at_13():
    inputs, paddle = paddle_case("lstm")
    program, feed, outputs, _ = weighted_hidden("lstm", inputs, ATTRS["lstm"], paddle["weights"])
    gates = gradc.Executor().run(program, feed, outputs, gradc.Scope())[2]
    # Input row 1 (batch row 1, the first step of the reversed first sequence) has its input gate at 20
    assert gates[1, 2] == np.float32(1 / (1 + np.exp(-13.0)))
    assert gates[1, 2] == paddle["BatchGate"][1, 2]


def test_gru_reads_its_weight_as_paddle_stores_it():
    """Weight's flat values: W_ur [D, 2D] first, then W_c [D, D] (not its column blocks)."""
    d = 2
    weight = np.arange(3 * d * d, dtype=np.float32).reshape(d, 3 * d) / 10
    h_prev, x = np.array([[0.5, -1.0]], np.float32), np.zeros((1, 3 * d), np.float32)
    net = ProgramBuilder()
    slots = {slot: net.data(slot.lower(), list(v.shape), "float32") for slot, v in
             (("Input", x), ("HiddenPrev", h_prev), ("Weight", weight))}
    gate, hidden = net.op("gru_unit", slots, {"activation": 0, "gate_activation": 0},
                          outputs=["Gate", "Hidden"])
    got_gate, got_hidden = gradc.Executor().run(net.program, {"input": x, "hiddenprev": h_prev, "weight": weight},
                                                [gate, hidden], gradc.Scope())
    w_ur, w_c = weight.reshape(-1)[:2 * d * d].reshape(d, 2 * d), weight.reshape(-1)[2 * d * d:].reshape(d, d)
    u, r = np.split(h_prev @ w_ur, 2, axis=1)
    c = (r * h_prev) @ w_c
    np.testing.assert_allclose(got_gate, np.concatenate([u, r, c], axis=1), rtol=1e-6)
    np.testing.assert_allclose(got_hidden, u * (c - h_prev) + h_prev, rtol=1e-6)


def test_more_than_one_lod_level_is_refused():
    inputs, paddle = paddle_case("gru")
    program, feed, outputs, _ = weighted_hidden("gru", inputs, {}, paddle["weights"])
    feed["input"] = LoDTensor.from_lengths(inputs["Input"], [[1, 1], LENGTHS])
    with pytest.raises(ExecutionError, match="Input has 2 LoD levels; gru takes at most 1"):
        gradc.Executor().run(program, feed, outputs, gradc.Scope())


def test_h0_needs_a_row_per_sequence():
    inputs, paddle = paddle_case("gru")
    program, feed, outputs, _ = weighted_hidden("gru", inputs, {}, paddle["weights"])
    feed["h0"] = np.zeros((3, 2), np.float32)
    with pytest.raises(ExecutionError, match=r"H0 has shape \[3, 2\], not \[2, 2\]"):
        gradc.Executor().run(program, feed, outputs, gradc.Scope())


def test_the_grad_reads_what_paddles_reads_and_cell_is_refused():
    """Paddle's lstm_grad has no Cell@GRAD slot (it silently drops a gradient through Cell): gradc refuses it."""
    inputs, paddle = paddle_case("lstm")
    program, _, outputs, _ = weighted_hidden("lstm", inputs, ATTRS["lstm"], paddle["weights"])
    lstm_grad = next(op for op in program.global_block.ops if op.type == "lstm_grad")
    assert sorted(lstm_grad.inputs) == ["BatchCellPreAct", "BatchGate", "Bias", "C0", "Cell", "H0", "Hidden",
                                        "Hidden@GRAD", "Input", "Weight"]   # Paddle's lstm_grad kernel reads all
    net = ProgramBuilder()
    slots = {slot: net.data(slot.lower(), [-1, *value.shape[1:]], "float32", stop_gradient=False,
                            lod_level=int(slot == "Input")) for slot, value in inputs.items()}
    cell = net.op("lstm", slots, outputs=["Cell"])[0]
    with pytest.raises(GradError, match=f"a gradient reaches its output '{cell}' \\(slot Cell\\)"):
        gradc.append_backward(net.program, net.mean(cell))


@pytest.mark.parametrize("op", ["lstm", "gru"])
def test_a_gradient_penalty_is_differentiated_four_times_by_nested_duals(op):
    """Their steps follow Input's LoD, known only at run time, so lstm_grad and gru_grad are not unrolled: their
    makers emit <op>_grad_grad along one direction (the kernels on duals), whose penalty gradient matches central
    differences (float64, Paddle's inputs); each later backward emits that op along one more direction, whose grads
    match central differences of the order before: the third and the fourth."""
    inputs, paddle = paddle_case(op)
    program, feed, _, grads = weighted_hidden(op, inputs, ATTRS[op], paddle["weights"])
    net_block = program.global_block
    square = net_block.create_var("square", None, net_block.var(grads["Weight"]).dtype)
    penalty = net_block.create_var("penalty", [], net_block.var(grads["Weight"]).dtype)
    net_block.append_op("square", {"X": [grads["Weight"]]}, {"Out": [square.name]})
    net_block.append_op("reduce_sum", {"X": [square.name]}, {"Out": [penalty.name]},
                        {"dim": [0], "keep_dim": False, "reduce_all": True})
    wrt = [name.removesuffix("@GRAD") for name in grads.values()] + ["weights"]
    _, checks = compare_program(program, feed, wrt, loss="penalty", rtol=1e-4, atol=1e-7, float64=True)
    assert [c.mismatch for c in checks] == [None] * len(wrt)
    (weight_grad,) = gradc.gradients(program, "penalty", ["weight"])
    assert [o.type for o in net_block.ops].count(f"{op}_grad_grad") == 1
    total = net_block.create_var("total", [], net_block.var(weight_grad).dtype)
    squared = net_block.create_var("total.square", None, net_block.var(weight_grad).dtype)
    net_block.append_op("square", {"X": [weight_grad]}, {"Out": [squared.name]})
    net_block.append_op("reduce_sum", {"X": [squared.name]}, {"Out": [total.name]}, {"reduce_all": True})
    _, checks = compare_program(program, feed, ["weight"], loss="total", rtol=1e-4, atol=1e-7, float64=True)
    assert [c.mismatch for c in checks] == [None]
    (third,) = gradc.gradients(program, "total", ["weight"])
    assert max(len(o.input("Input@GRAD@GRAD")) for o in net_block.ops if o.type == f"{op}_grad_grad") == 2
    fourth = net_block.create_var("fourth", [], net_block.var(third).dtype)
    net_block.append_op("reduce_sum", {"X": [third]}, {"Out": [fourth.name]}, {"reduce_all": True})
    _, checks = compare_program(program, feed, ["weight"], loss="fourth", rtol=1e-4, atol=1e-7, float64=True)
    assert [c.mismatch for c in checks] == [None]
    gradc.gradients(program, "fourth", ["weight"])
    assert max(len(o.input("Input@GRAD@GRAD")) for o in net_block.ops if o.type == f"{op}_grad_grad") == 3


def test_the_batch_layout_of_one_long_sequence_among_many_short_ones():
    """One sequence of 100,000 steps among 99,999 of one: the steps' sizes in one pass (counting the sequences
    still going at each step was 10^10 comparisons here, half a minute; the time is benchmarks' to watch, not a
    test's)."""
    lengths = np.r_[100_000, np.ones(99_999, np.int64)]
    layout = Layout(np.r_[0, np.cumsum(lengths)], reverse=False)
    assert [s.stop - s.start for s in layout.steps[:3]] == [100_000, 1, 1] and len(layout.steps) == 100_000
    assert layout.rows[:2].tolist() == [0, 100_000] and layout.rows[100_000] == 1


@pytest.mark.parametrize("is_reverse", [False, True])
def test_an_empty_sequence_gets_no_gradient_in_h0_and_c0(is_reverse):
    """Its initial state reaches no output. Paddle 3.3.1's lstm_grad gives that H0 row (and Weight@GRAD, and with
    is_reverse a C0 row) a wrong, nonzero gradient when a sequence is empty; gradc's agree with finite differences
    (tests/gradcheck_cases/lod_rnn.py has empty sequences with H0 and C0)."""
    rng = np.random.default_rng(3)
    d, lengths = 2, [2, 0, 3]
    inputs = {"Input": rng.standard_normal((5, 4 * d)).astype(np.float32), "H0": np.ones((3, d), np.float32),
              "C0": np.ones((3, d), np.float32), "Weight": rng.standard_normal((d, 4 * d)).astype(np.float32),
              "Bias": rng.standard_normal((1, 4 * d)).astype(np.float32)}
    program, feed, _, grads = weighted_hidden("lstm", inputs, {"use_peepholes": False, "is_reverse": is_reverse},
                                              np.ones((5, d), np.float32), lengths)
    dh0, dc0 = gradc.Executor().run(program, feed, [grads["H0"], grads["C0"]], gradc.Scope())
    assert not dh0[1].any() and not dc0[1].any()
    assert dh0[[0, 2]].all() and dc0[[0, 2]].all()

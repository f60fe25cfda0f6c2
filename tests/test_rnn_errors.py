"""Bad input to the fused rnn op, one clear error naming block, op index, op type and var: slots that
contradict the attributes fail `gradc compile` before anything runs (shape inference); sequence lengths
outside the time axis fail the run before the op computes anything; a Reserve that no rnn forward of these
inputs wrote is refused by rnn_grad."""

import numpy as np
import pytest

import gradc
from fixtures import Fixture
from gradc.errors import ExecutionError, ProgramError
from gradc.passes import VerifyPass
from test_cli import assert_clean_failure
from test_cli import gradc as gradc_cli


def program_and_rnn(case: str):
    program = gradc.load(Fixture(f"rnn/{case}").dir / "forward.pb")
    (op,) = [op for op in program.global_block.ops if op.type == "rnn"]
    return program, op


def test_a_weightlist_of_the_wrong_count_fails_compile(tmp_path):
    program, rnn = program_and_rnn("lstm_l2_bi")
    rnn.inputs["WeightList"].pop()
    gradc.save(program, tmp_path / "bad.pb")
    result = gradc_cli("compile", tmp_path / "bad.pb", "-o", tmp_path / "out.pb")
    assert_clean_failure(result, "block 0, op 3 (rnn)",
                         "WeightList LSTM with 2 layers and 2 direction(s) takes 16 tensors, got 15")
    assert not (tmp_path / "out.pb").exists()


def _swap_weights(program, rnn):
    weights = rnn.inputs["WeightList"]
    weights[0], weights[4] = weights[4], weights[0]


def _one_state(program, rnn):
    rnn.inputs["PreState"].pop()


def _wide_h0(program, rnn):
    program.global_block.var("h0").shape = [2, 3, 4]


def _long_lengths(program, rnn):
    program.global_block.var("seq_len").shape = [5]


def _attr(name, value):
    return lambda program, rnn: rnn.set_attr(name, value)


EDITS = {
    "swapped weights": ("lstm_l2_bi", _swap_weights,
                        "block 0, op 3 (rnn): WeightList[0] (lstm_cell_2.w_0) must be [16, 3], got [16, 8]"),
    "one state": ("lstm_l2_bi", _one_state, "PreState (fill_constant_1.tmp_0) LSTM takes 2 initial states, got 1"),
    "wide h0": ("lstm_seq_init", _wide_h0, "block 0, op 1 (rnn): PreState[0] (h0) must be [num_layers * directions, "
                                           "B, hidden_size] = [1, 3, 4], got [2, 3, 4]"),
    "lengths of 5": ("gru_bi_seq", _long_lengths, "block 0, op 2 (rnn): SequenceLength (seq_len) must be an "
                                                  "int32/int64 vector [B=3], got INT64 [5]"),
    "mode": ("gru", _attr("mode", "LSTMX"), "mode 'LSTMX' is not one of LSTM, GRU, RNN_TANH"),
    "input_size": ("gru", _attr("input_size", 7), "Input (transpose_0.tmp_0) must be [T, B, input_size=7]"),
    "hidden_size": ("gru", _attr("hidden_size", 5), "WeightList[0] (gru_cell_0.w_0) must be [15, 3]"),
    "dropout_prob": ("rnn_tanh", _attr("dropout_prob", 1.5), "dropout_prob=1.5 must lie in [0, 1]"),
}


@pytest.mark.parametrize("what", EDITS)
def test_slots_that_contradict_the_attributes_fail_verification(what):
    case, edit, message = EDITS[what]
    program, rnn = program_and_rnn(case)
    edit(program, rnn)
    program.mark_changed()
    with pytest.raises(ProgramError) as error:
        VerifyPass()(program)
    assert message in str(error.value)


@pytest.mark.parametrize("lengths, bad", [([5, 2, 3], [5]), ([4, -1, 3], [-1])])
def test_sequence_lengths_outside_the_time_axis_fail_the_run(lengths, bad):
    fixture = Fixture("rnn/gru_bi_seq")
    program = gradc.load(fixture.dir / "forward.pb")
    feed = {**fixture.npz("feed"), "seq_len": np.array(lengths, np.int64)}
    with pytest.raises(ExecutionError) as error:
        gradc.Executor().run(program, feed, [fixture.meta["loss"]], fixture.scope())
    assert str(error.value) == (f"block 0, op 2 (rnn): SequenceLength (seq_len) lengths must lie in [0, 4] "
                                f"(the time steps), got {bad}")


def test_a_reserve_no_rnn_forward_wrote_is_refused():
    fixture = Fixture("rnn/lstm_seq_init")
    program = gradc.load(fixture.dir / "forward.pb")
    gradc.append_backward(program, fixture.meta["loss"])
    (grad,) = [op for op in program.global_block.ops if op.type == "rnn_grad"]
    grad.inputs["Reserve"] = ["seq_len"]
    program.mark_changed()
    with pytest.raises(ExecutionError, match=r"op \d+ \(rnn_grad\): Reserve \(seq_len\) holds int64 \[3\], not the "
                                             r"bytes of the float32 \[1, 1, 4, 3, 24\]"):
        fixture.run(program)

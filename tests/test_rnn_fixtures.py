"""Paddle's recurrent models (tests/data/paddle/rnn, built by tools/paddle_rnn_fixtures.py from nn.LSTM,
nn.GRU, nn.SimpleRNN, nn.RNN over each cell, nn.BiRNN, while_loop over arrays, an LSTM language model)
through gradc: gradc compiles them and gets Paddle's loss and gradients (float32, rtol 1e-5, atol 1e-6);
Paddle's own backward programs run in gradc's executor; where Paddle's gradients are wrong, gradc's match
float64 central differences instead (and Paddle's do not)."""

import numpy as np
import pytest

import gradc
from fixtures import DATA, Fixture
from gradc import registry
from gradc.gradcheck import compare_program, float64_copy
from gradc.passes import VerifyPass
from gradc.proto import framework_pb2 as pb
from gradc.verify_shapes import check_shapes

CASES = sorted(path.name for path in (DATA / "rnn").iterdir())
DROPOUT = "lstm_l3_bi_seq_dropout"   # Paddle's random mask: gradc draws its own (checked below)


def fixture(case: str) -> Fixture:
    return Fixture(f"rnn/{case}")


def unregistered(case: str) -> set[str]:
    # the op types alone, from protobuf's parse: a twentieth of gradc.load's CPU, at collection in every xdist worker
    programs = [pb.ProgramDesc.FromString((fixture(case).dir / name).read_bytes())
                for name in ("forward.pb", "backward.pb")]
    return {op.type for program in programs for block in program.blocks for op in block.ops
            if registry.get(op.type) is None}


MISSING = {case: unregistered(case) for case in CASES}
RUNNABLE = [case for case in CASES if not MISSING[case] and case != DROPOUT]


def test_every_op_of_the_models_is_registered_but_family_cs():
    """flip (nn.RNN(is_reverse=True), nn.BiRNN) and sequence_mask (nn.RNN with sequence_length) come from
    the family that owns them (on main); until they are registered here those cases cannot run, and
    nothing else may be missing."""
    assert set().union(*MISSING.values()) <= {"flip", "sequence_mask"}
    assert {case for case, ops in MISSING.items() if ops} <= {
        "rnn_gru_cell_reverse_seq", "birnn_lstm_seq", "rnn_simple_relu_cell_seq", "rnn_gru_cell_seq_init"}
    assert len(RUNNABLE) >= 24


def compiled(case: str) -> gradc.Program:
    program = gradc.load(fixture(case).dir / "forward.pb")
    gradc.append_backward(program, fixture(case).meta["loss"])
    return program


def assert_matches(case: str, results: dict, skip=()) -> None:
    f = fixture(case)
    np.testing.assert_allclose(results[f.meta["loss"]], f.loss, rtol=1e-5, atol=1e-6)
    checked = [name for name in f.npz("grads") if name not in skip]
    assert checked or skip
    for name in checked:
        np.testing.assert_allclose(results[name], f.npz("grads")[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("case", RUNNABLE)
def test_shape_inference_agrees_with_paddles_declarations(case):
    """The forward passes `gradc compile`'s verification; the compiled and Paddle's backward programs'
    declared vars (Reserve and OutIndex as Paddle declares them, array grads) agree with inference."""
    VerifyPass()(gradc.load(fixture(case).dir / "forward.pb"))
    check_shapes(compiled(case))
    check_shapes(gradc.load(fixture(case).dir / "backward.pb"))


@pytest.mark.parametrize("case", RUNNABLE)
def test_gradc_backward_matches_paddle(case):
    """Every gradient Paddle gets right; the others are checked against central differences below."""
    assert_matches(case, fixture(case).run(compiled(case)), skip=fixture(case).meta["paddle_wrong_grads"])


@pytest.mark.parametrize("case", RUNNABLE)
def test_paddles_backward_program_runs_in_gradc(case):
    """Paddle's program as written gives Paddle's loss and gradients, except where Paddle's kernels are
    wrong (its rnn_grad and tensor_array_to_tensor_grad run on gradc's kernels here)."""
    f = fixture(case)
    assert_matches(case, f.run(gradc.load(f.dir / "backward.pb")), skip=f.meta["paddle_wrong_grads"])


def test_paddles_overwriting_array_grads_are_reproduced():
    """The overwrite bug lives in Paddle's backward program (a plain write_to_array for a read's grad), so
    gradc running that program gets Paddle's wrong numbers too; gradc's own backward adds (test above)."""
    f = fixture("while_array_reread")
    results = f.run(gradc.load(f.dir / "backward.pb"))
    for name in f.meta["paddle_wrong_grads"]:
        np.testing.assert_allclose(results[name], f.npz("grads")[name], rtol=1e-5, atol=1e-6, err_msg=name)


WRONG_IN_PADDLE = [case for case in RUNNABLE if fixture(case).meta["paddle_wrong_grads"]]


@pytest.mark.parametrize("case", WRONG_IN_PADDLE)
def test_right_where_paddle_is_wrong(case):
    """gru/lstm_bi_seq_init: Paddle's rnn_grad restarts the reverse direction of a shorter sequence from a
    zero state; while_array_reread: the grad of a read overwrites the slot's other grad;
    while_array_two_readers: two tensor_array_to_tensor grads share one buffer. gradc, in float64, matches
    float64 central differences of Paddle's own forward; Paddle's float32 gradients do not."""
    f = fixture(case)
    wide, feed, params = float64_copy(compiled(case), f.npz("feed"), f.npz("params"))
    scope = gradc.Scope()
    for name, value in params.items():
        scope[name] = value
    numeric = f.npz("grads_fd64")
    names = [f.meta["loss"], *numeric]
    results = dict(zip(names, gradc.Executor().run(wide, feed, names, scope)))
    np.testing.assert_allclose(results[f.meta["loss"]], np.load(f.dir / "loss64.npy"), rtol=1e-12)
    assert set(f.meta["paddle_wrong_grads"]) <= set(numeric)
    for name, expected in numeric.items():
        np.testing.assert_allclose(results[name], expected, rtol=1e-6, atol=1e-8, err_msg=name)
    paddle = f.npz("grads")
    assert all(not np.allclose(paddle[name], numeric[name], rtol=1e-3, atol=1e-5)
               for name in f.meta["paddle_wrong_grads"])


def test_dropout_between_layers_differentiates_through_its_mask():
    """The 3-layer dropout fixture: gradc's mask is its own (numpy, seeded here so central differences see
    one mask), 0/1 of Out's shape; the compiled gradients match float64 central differences."""
    f = fixture(DROPOUT)
    program = gradc.load(f.dir / "forward.pb")
    (rnn,) = [op for op in program.global_block.ops if op.type == "rnn"]
    assert rnn.attrs["dropout_prob"] == pytest.approx(0.4) and not rnn.attrs["is_test"]
    rnn.set_attr("seed", 17)
    program.mark_changed()
    mask, out = gradc.Executor().run(program, f.npz("feed"), [rnn.output("DropoutState")[0], rnn.output("Out")[0]],
                                     f.scope())
    assert mask.dtype == np.uint8 and mask.shape == out.shape and set(np.unique(mask)) == {0, 1}
    _, checks = compare_program(program, f.npz("feed"), ["x", "lstm_cell_0.w_0", "lstm_cell_3.w_1", "lstm_cell_5.b_0"],
                                f.meta["loss"], f.npz("params"), max_elements=6, float64=True)
    assert all(check.mismatch is None for check in checks), checks

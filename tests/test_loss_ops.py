"""The loss ops against their definitions (tests/loss_reference.py: brute force over every alignment or
path), the attributes that scale gradients on purpose (norm_by_times, fastemit_lambda), cross_entropy2's
outputs for ignored labels, and bad input: one error naming the block, op index, op type and the var."""

import numpy as np
import pytest

import gradc
from gradc.errors import ExecutionError, ProgramError
from gradc.ir import to_var_type
from gradc.verify_shapes import check_shapes
from loss_reference import ctc_loss, default_tree_path, hsigmoid_loss, rnnt_loss
from test_cli import assert_clean_failure
from test_cli import gradc as gradc_cli

rng = np.random.default_rng(31)


def program_of(op_type, inputs, attrs=None, shapes=None):
    """One op reading ``inputs`` (slot -> array), every output slot of its definition written to a var
    named after the slot; ``shapes`` overrides declared input shapes."""
    program = gradc.Program()
    block = program.global_block
    for slot, value in inputs.items():
        block.create_var(slot, (shapes or {}).get(slot, list(np.shape(value))), to_var_type(np.asarray(value).dtype))
    opdef = gradc.registry.get(op_type)
    for slot in opdef.outputs:
        block.create_var(slot, None, None)
    block.append_op(op_type, {slot: [slot] for slot in inputs}, {slot: [slot] for slot in opdef.outputs},
                    dict(attrs or {}))
    return program


def run(op_type, inputs, attrs=None, fetch=None):
    program = program_of(op_type, inputs, attrs)
    fetch = fetch or [gradc.registry.get(op_type).outputs[0]]
    return dict(zip(fetch, gradc.Executor().run(program, inputs, fetch, gradc.Scope())))


def log_softmax(x):
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_ctc_loss_is_the_probability_of_every_alignment():
    """Repeated labels (a blank between them is required), a blank other than 0, an empty label, sequences
    shorter than the batch's."""
    logits = rng.standard_normal((5, 4, 4))
    label = np.array([[1, 1, 3], [3, 0, 1], [0, 0, 0], [3, 1, 0]], np.int32)
    times, sizes = np.array([5, 4, 3, 5]), np.array([3, 2, 0, 3])
    loss = run("warpctc", {"Logits": logits, "Label": label, "LogitsLength": times, "LabelLength": sizes},
               {"blank": 2})["Loss"]
    expected = [ctc_loss(log_softmax(logits[:t, b]), label[b, :n], 2) for b, (t, n) in enumerate(zip(times, sizes))]
    np.testing.assert_allclose(loss[:, 0], expected, rtol=1e-10)


def test_rnnt_loss_is_the_probability_of_every_lattice_path():
    x = log_softmax(rng.standard_normal((3, 4, 3, 5)))
    label = np.array([[1, 4], [2, 2], [3, 0]], np.int32)
    times, sizes = np.array([4, 3, 2], np.int32), np.array([2, 2, 1], np.int32)
    loss = run("warprnnt", {"input": x, "label": label, "input_lengths": times, "label_lengths": sizes},
               {"blank": 0})["loss"]
    expected = [rnnt_loss(x[b, :t, :n + 1], label[b, :n], 0) for b, (t, n) in enumerate(zip(times, sizes))]
    np.testing.assert_allclose(loss, expected, rtol=1e-10)


def test_a_batch_without_labels_is_all_blanks():
    logits = rng.standard_normal((3, 2, 4))
    ctc = run("warpctc", {"Logits": logits, "Label": np.zeros((2, 0), np.int32), "LogitsLength": np.array([3, 2]),
                          "LabelLength": np.zeros(2, np.int64)})["Loss"]
    np.testing.assert_allclose(ctc[:, 0], -log_softmax(logits)[:, :, 0].cumsum(0)[[2, 1], [0, 1]], rtol=1e-12)
    x = log_softmax(rng.standard_normal((2, 3, 1, 4)))
    rnnt = run("warprnnt", {"input": x, "label": np.zeros((2, 0), np.int32),
                            "input_lengths": np.array([3, 2], np.int32), "label_lengths": np.zeros(2, np.int32)},
               {"blank": 1})["loss"]
    np.testing.assert_allclose(rnnt, -x[:, :, 0, 1].cumsum(1)[[0, 1], [2, 1]], rtol=1e-12)


def test_hsigmoid_default_tree_paths_of_unequal_length():
    """6 classes: leaves 6, 7 are two steps from the root, 8..11 three; the short paths add log 2 (Paddle)."""
    x, w, bias = rng.standard_normal((6, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 1))
    label = np.arange(6).reshape(6, 1)
    out = run("hierarchical_sigmoid", {"X": x, "W": w, "Label": label, "Bias": bias}, {"num_classes": 6})["Out"]
    expected = [hsigmoid_loss(x[i], w, default_tree_path(i, 6), bias, steps=3) for i in range(6)]
    np.testing.assert_allclose(out[:, 0], expected, rtol=1e-12)
    assert [len(default_tree_path(i, 6)) for i in range(6)] == [2, 2, 3, 3, 3, 3]


def _grads(op_type, inputs, attrs, wrt, out_slot):
    """The input grad with the loss grad seeded to ones."""
    program = program_of(op_type, inputs, attrs)
    out = run(op_type, inputs, attrs, [out_slot])[out_slot]
    program.global_block.var(out_slot).shape = list(out.shape)
    program.global_block.var(out_slot).dtype = to_var_type(out.dtype)
    gradc.backward.append_grad_ops(program, [out_slot])
    feed = {**inputs, f"{out_slot}@GRAD": np.ones_like(out)}
    return gradc.Executor().run(program, feed, [f"{wrt}@GRAD"], gradc.Scope())[0]


CTC_INPUTS = {"Logits": rng.standard_normal((4, 2, 3)), "Label": np.array([[1, 2], [2, 0]], np.int32),
              "LogitsLength": np.array([4, 2]), "LabelLength": np.array([2, 1])}


def test_norm_by_times_divides_each_sequence_gradient_by_its_length():
    plain = _grads("warpctc", CTC_INPUTS, {}, "Logits", "Loss")
    normed = _grads("warpctc", CTC_INPUTS, {"norm_by_times": True}, "Logits", "Loss")
    np.testing.assert_allclose(normed, plain / np.array([4, 2])[None, :, None], rtol=1e-12)
    assert np.abs(plain[2:, 1]).max() == 0  # steps past a sequence's length get no gradient


def test_fastemit_scales_the_gradient_of_label_emissions_only():
    x = log_softmax(rng.standard_normal((2, 3, 3, 4)))
    inputs = {"input": x, "label": np.array([[1, 3], [2, 0]], np.int32),
              "input_lengths": np.array([3, 2], np.int32), "label_lengths": np.array([2, 1], np.int32)}
    plain, fast = (run("warprnnt", inputs, {"fastemit_lambda": lam}, ["loss", "warprnntgrad"]) for lam in (0.0, 0.5))
    np.testing.assert_array_equal(fast["loss"], plain["loss"])
    blank = np.zeros(x.shape, bool)
    blank[..., 0] = True
    np.testing.assert_allclose(fast["warprnntgrad"][blank], plain["warprnntgrad"][blank], rtol=1e-12)
    np.testing.assert_allclose(fast["warprnntgrad"][~blank], 1.5 * plain["warprnntgrad"][~blank], rtol=1e-12)
    assert np.abs(plain["warprnntgrad"][~blank]).max() > 0.01


def test_cross_entropy2_ignored_labels_give_zero_loss_match_and_grad():
    x = rng.dirichlet(np.ones(4), 3)
    out = run("cross_entropy2", {"X": x, "Label": np.array([2, 7, 0])}, {"ignore_index": 7}, ["Y", "MatchX"])
    np.testing.assert_allclose(out["Y"], [-np.log(x[0, 2]), 0, -np.log(x[2, 0])])
    np.testing.assert_allclose(out["MatchX"], [[x[0, 2]], [0], [x[2, 0]]])
    grad = _grads("cross_entropy2", {"X": x, "Label": np.array([2, 7, 0])}, {"ignore_index": 7}, "X", "Y")
    expected = np.zeros_like(x)
    expected[0, 2], expected[2, 0] = -1 / x[0, 2], -1 / x[2, 0]
    np.testing.assert_allclose(grad, expected)


@pytest.mark.parametrize("reduction, total", [("mean", 2.5), ("sum", 2.5), ("none", 0.0)])
def test_nll_total_weight(reduction, total):
    """Total_weight sums the weights of the labels counted (Paddle leaves it 0 when nothing is reduced)."""
    out = run("nll_loss", {"X": rng.standard_normal((3, 3)), "Label": np.array([0, 2, 1]),
                           "Weight": np.array([1.0, 7.0, 1.5])}, {"ignore_index": 1, "reduction": reduction},
              ["Total_weight"])
    assert out["Total_weight"] == total


X45 = np.zeros((4, 5))
SHAPE_ERRORS = [
    ("nll_loss", {"X": X45, "Label": np.zeros(4, np.int64)}, {"reduction": "avg"}, "reduction 'avg' is not one of"),
    ("nll_loss", {"X": np.zeros((4, 5, 2)), "Label": np.zeros(4, np.int64)}, {}, "X must be [N, C] or [N, C, H, W]"),
    ("nll_loss", {"X": X45, "Label": np.zeros(3, np.int64)}, {}, "Label [3] must have shape [4]"),
    ("nll_loss", {"X": X45, "Label": np.zeros(4, np.int64), "Weight": np.ones(4)}, {}, "Weight [4] must have shape"),
    ("softmax_with_cross_entropy", {"Logits": X45, "Label": np.zeros((4, 2), np.int64)}, {},
     "Label [4, 2] must have shape [4, 1]"),
    ("softmax_with_cross_entropy", {"Logits": X45, "Label": np.zeros((4, 4))}, {"soft_label": True},
     "Label [4, 4] must have shape [4, 5] (soft labels"),
    ("softmax_with_cross_entropy", {"Logits": X45, "Label": np.zeros((1, 5), np.int64)},
     {"axis": 0, "numeric_stable_mode": False}, "axis 0 must be the last one"),
    ("cross_entropy2", {"X": X45, "Label": np.zeros((4, 2), np.int64)}, {}, "Label [4, 2] must have shape [4, 1]"),
    ("cross_entropy", {"X": X45, "Label": np.zeros((4, 4))}, {"soft_label": True},
     "Label [4, 4] must have the shape of X [4, 5] (soft labels)"),
    ("identity_loss", {"X": X45}, {"reduction": 3}, "reduction 3 is not one of"),
    ("kldiv_loss", {"X": X45, "Target": X45}, {"reduction": "avg"}, "reduction 'avg' is not one of"),
    ("log_loss", {"Predicted": X45, "Labels": np.zeros((4, 1))}, {}, "Labels [4, 1] must have the shape"),
    ("hierarchical_sigmoid", {"X": X45, "W": np.zeros((3, 4)), "Label": np.zeros((4, 1), np.int64)},
     {"num_classes": 4}, "W [3, 4] must have X's feature size 5"),
    ("hierarchical_sigmoid", {"X": X45, "W": np.zeros((3, 5)), "Label": np.zeros((4, 1), np.int64)},
     {"num_classes": 1}, "num_classes=1 must be at least 2"),
    ("hierarchical_sigmoid", {"X": X45, "W": np.zeros((3, 5)), "Label": np.zeros((4, 1), np.int64),
                              "PathTable": np.zeros((4, 2), np.int64)}, {}, "needs both PathTable and PathCode"),
    ("warpctc", {"Logits": np.zeros((6, 2, 5)), "Label": np.zeros((2, 3), np.int32)}, {},
     "give LogitsLength and LabelLength"),
    ("warpctc", {"Logits": np.zeros((6, 2, 5)), "Label": np.zeros((2, 3), np.int32), "LogitsLength": np.ones(2, int),
                 "LabelLength": np.ones(2, int)}, {"blank": 5}, "blank=5 must be a class in [0, 5)"),
    ("warpctc", {"Logits": np.zeros((6, 2, 5)), "Label": np.zeros((3, 3), np.int32), "LogitsLength": np.ones(2, int),
                 "LabelLength": np.ones(2, int)}, {}, "Label [3, 3] must be [2, max label length]"),
    ("warprnnt", {"input": np.zeros((2, 4, 3, 5)), "label": np.zeros((2, 3), np.int32),
                  "input_lengths": np.ones(2, np.int32), "label_lengths": np.ones(2, np.int32)}, {},
     "label [2, 3] must be [2, 2]"),
    ("warprnnt", {"input": np.zeros((2, 4, 3, 5)), "label": np.zeros((2, 2), np.int32),
                  "input_lengths": np.ones(3, np.int32), "label_lengths": np.ones(2, np.int32)}, {},
     "input_lengths [3] must be [2]"),
]


@pytest.mark.parametrize("op_type, inputs, attrs, message", SHAPE_ERRORS, ids=[f"{c[0]}:{c[3][:24]}" for c in
                                                                              SHAPE_ERRORS])
def test_bad_shapes_and_attributes_are_caught_before_running(op_type, inputs, attrs, message):
    with pytest.raises(ProgramError, match=rf"^block 0, op 0 \({op_type}\): .*{_escaped(message)}.*\[inputs: "):
        check_shapes(program_of(op_type, inputs, attrs))


def _escaped(text):
    return "".join("\\" + c if c in "[]().*+?" else c for c in text)


RUN_ERRORS = [
    ("nll_loss", {"X": X45, "Label": np.array([0, 5, 1, 2])}, {}, "Label holds 5: a label must be in [0, 5)"),
    ("softmax_with_cross_entropy", {"Logits": X45, "Label": np.array([[0], [-3], [1], [2]])}, {},
     "Label holds -3"),
    ("cross_entropy2", {"X": X45 + 0.2, "Label": np.array([[9], [0], [1], [2]])}, {}, "Label holds 9"),
    ("cross_entropy", {"X": X45 + 0.2, "Label": np.array([0, 1, -1, 2])}, {}, "Label holds -1"),
    ("hierarchical_sigmoid", {"X": X45, "W": np.zeros((3, 5)), "Label": np.array([[0], [4], [1], [2]])},
     {"num_classes": 4}, "Label holds 4"),
    ("warpctc", {**CTC_INPUTS, "LogitsLength": np.array([5, 2])}, {}, "LogitsLength holds [5, 2]"),
    ("warpctc", {**CTC_INPUTS, "Label": np.array([[1, 0], [2, 0]], np.int32)}, {}, "Label holds 0: labels must be"),
]


@pytest.mark.parametrize("op_type, inputs, attrs, message", RUN_ERRORS, ids=[c[0] for c in RUN_ERRORS])
def test_labels_paddle_rejects_fail_naming_the_op_and_the_vars(op_type, inputs, attrs, message):
    with pytest.raises(ExecutionError, match=rf"^block 0, op 0 \({op_type}\):? .*{_escaped(message)}.*Label"):
        run(op_type, inputs, attrs)


def test_hsigmoid_on_remote_tables_is_refused():
    inputs = {"X": X45, "W": np.zeros((3, 5)), "Label": np.zeros((4, 1), np.int64)}
    with pytest.raises(ExecutionError, match=r"hierarchical_sigmoid.*epmap=\['127.0.0.1:6174'\] is not supported"):
        run("hierarchical_sigmoid", inputs, {"num_classes": 4, "epmap": ["127.0.0.1:6174"]})


def test_the_command_line_reports_a_bad_loss_in_one_line(tmp_path):
    program = program_of("nll_loss", {"X": X45, "Label": np.zeros(4, np.int64)}, {"reduction": "batchmean"})
    gradc.save(program, tmp_path / "bad.pb")
    assert_clean_failure(gradc_cli("compile", tmp_path / "bad.pb", "-o", tmp_path / "out.pb", "--loss", "Out"),
                         "block 0, op 0 (nll_loss)", "reduction 'batchmean'", "X=X[4, 5]")
    assert not (tmp_path / "out.pb").exists()

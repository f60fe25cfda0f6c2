"""The legacy_nn ops beyond the registry walks: values Paddle 3.3.1 gives for the v1 resizes' scale and method
semantics, hinge_loss's and l1_norm's subgradients at their kinks, fc's padded weights and composite grad, and
fc's PIR round trip. Expected values were printed by Paddle 3.3.1 (legacy static mode)."""

import numpy as np
import pytest

import gradc
from gradc import ProgramError
from gradc.backward import append_grad_ops
from gradc.pir import parse_pir, serialize_pir
from gradc.verify_shapes import check_shapes

f32 = np.float32
IMAGE = np.arange(12, dtype=f32).reshape(1, 1, 3, 4)
RESIZE = {"align_corners": False, "align_mode": 1}


def program_of(op_type, inputs, attrs, out_slot="Out"):
    program = gradc.Program()
    block = program.global_block
    for slot, value in inputs.items():
        var = block.create_var(slot, list(np.shape(value)), gradc.ir.to_var_type(np.asarray(value).dtype))
        var.stop_gradient = np.asarray(value).dtype.kind != "f"
    block.create_var("out", None, None)
    block.append_op(op_type, {slot: [slot] for slot in inputs}, {out_slot: ["out"]}, attrs)
    check_shapes(program)
    return program


def described(program, out):
    """The program's out var given the shape and dtype of its value (the backward needs them)."""
    var = program.global_block.var("out")
    var.shape, var.dtype = list(out.shape), gradc.ir.to_var_type(out.dtype)
    return program


def run_op(op_type, inputs, attrs=None, out_slot="Out", out_grad=None, wrt=None):
    """Out of one op, and with ``out_grad`` also the grads of the inputs ``wrt`` (default: the float ones),
    through the compiled backward."""
    program = program_of(op_type, inputs, dict(attrs or {}), out_slot)
    out = gradc.Executor().run(program, inputs, ["out"], gradc.Scope())[0]
    if out_grad is None:
        return out
    described(program, out)
    append_grad_ops(program, ["out"])
    wrt = [slot for slot in inputs if np.asarray(inputs[slot]).dtype.kind == "f"] if wrt is None else wrt
    fetch = ["out", *(slot + "@GRAD" for slot in wrt)]
    return gradc.Executor().run(program, {**inputs, "out@GRAD": out_grad}, fetch, gradc.Scope())


def test_a_v1_scale_sets_the_sampling_ratio_even_when_outsize_sets_the_size():
    out = run_op("bilinear_interp", {"X": IMAGE, "OutSize": np.array([2, 3], np.int32)}, {"scale": 2.0, **RESIZE})
    np.testing.assert_allclose(out, [[[[0.0, 0.5, 1.0], [2.0, 2.5, 3.0]]]])


def test_a_v1_scale_input_may_give_one_scale_per_dim():
    out = run_op("bilinear_interp", {"X": IMAGE, "Scale": np.array([2.0, 1.5], f32)},
                 {"out_h": 2, "out_w": 2, **RESIZE})
    assert out.shape == (1, 1, 6, 6)
    np.testing.assert_allclose(out[0, 0, :, 1], [2 / 3, 8 / 3, 14 / 3, 20 / 3, 26 / 3, 26 / 3], rtol=1e-6)


def test_a_v1_scale_attribute_at_most_zero_is_none():
    out = run_op("bilinear_interp", {"X": IMAGE}, {"out_h": 2, "out_w": 3, "scale": -1.0, **RESIZE})
    np.testing.assert_allclose(out, [[[[0.0, 4 / 3, 8 / 3], [6.0, 22 / 3, 26 / 3]]]], rtol=1e-6)


def test_the_method_is_the_attribute_not_the_op_type():
    nearest = run_op("bilinear_interp", {"X": IMAGE}, {"out_h": 3, "out_w": 8, "interp_method": "nearest", **RESIZE})
    np.testing.assert_array_equal(nearest, IMAGE.repeat(2, axis=3))
    bicubic = run_op("bilinear_interp", {"X": IMAGE}, {"out_h": 3, "out_w": 8, "interp_method": "bicubic", **RESIZE})
    np.testing.assert_allclose(bicubic[0, 0, 0], [-0.10546875, 0.19140625, 0.66796875, 1.296875, 1.703125,
                                                  2.3320312, 2.8085938, 3.1054688], rtol=1e-6)


def test_hinge_loss_subgradient_is_zero_at_the_kink_and_labels_act_as_2y_minus_1():
    logits = np.array([[1.0], [-1.0], [0.5], [3.0], [0.2]])
    labels = np.array([[1.0], [0.0], [0.5], [2.0], [1.0]])
    loss, grad = run_op("hinge_loss", {"Logits": logits, "Labels": labels}, out_slot="Loss",
                        out_grad=np.ones((5, 1)), wrt=["Logits"])
    np.testing.assert_allclose(loss, [[0.0], [0.0], [1.0], [0.0], [0.8]])
    np.testing.assert_array_equal(grad, [[0.0], [0.0], [0.0], [0.0], [-1.0]])


def test_l1_norm_is_0_d_and_its_subgradient_at_zero_is_zero():
    out, grad = run_op("l1_norm", {"X": np.array([[0.0, -2.0, 3.0]], f32)}, out_grad=np.array(2.0, f32))
    assert out.shape == () and out == 5.0 and out.dtype == f32
    np.testing.assert_array_equal(grad, [[0.0, -2.0, 2.0]])


def test_fc_padded_weights_use_the_top_left_block():
    x, w = np.arange(6, dtype=f32).reshape(2, 3), np.arange(42, dtype=f32).reshape(7, 6) / 10
    out = run_op("fc", {"Input": x, "W": w}, {"padding_weights": True})
    np.testing.assert_allclose(out, [[3.0, 3.3], [8.4, 9.6]], rtol=1e-6)


def test_fc_is_differentiated_as_the_ops_it_fuses():
    rng = np.random.default_rng(3)
    x, w, bias = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5)), rng.standard_normal(5)
    dout = rng.standard_normal((2, 3, 5))
    attrs = {"in_num_col_dims": 2, "activation_type": "relu"}
    program = described(program_of("fc", {"Input": x, "W": w, "Bias": bias}, attrs), dout)
    append_grad_ops(program, ["out"])
    assert "fc_grad" not in [op.type for op in program.global_block.ops]
    out, dx, dw, dbias = run_op("fc", {"Input": x, "W": w, "Bias": bias}, attrs, out_grad=dout)
    pre = x @ w + bias
    np.testing.assert_allclose(out, np.maximum(pre, 0))
    masked = dout * (pre > 0)
    np.testing.assert_allclose(dx, masked @ w.T)
    np.testing.assert_allclose(dw, x.reshape(6, 4).T @ masked.reshape(6, 5))
    np.testing.assert_allclose(dbias, masked.sum(axis=(0, 1)))


def test_fc_with_weights_that_do_not_fit_is_refused_at_compile_time():
    with pytest.raises(ProgramError, match="fc.*Input flattens to \\[\\*, 12\\] at in_num_col_dims 1, but W uses 4"):
        program_of("fc", {"Input": np.zeros((2, 3, 4), f32), "W": np.zeros((4, 5), f32)}, {"in_num_col_dims": 1})


def test_fc_survives_a_pir_round_trip():
    inputs = {"Input": np.ones((2, 3), f32), "W": np.ones((3, 4), f32), "Bias": np.ones(4, f32)}
    program = program_of("fc", inputs, {"in_num_col_dims": 1, "activation_type": "relu", "padding_weights": False})
    again = parse_pir(serialize_pir(described(program, np.ones((2, 4), f32)), fetch=["out"]))
    fc = next(op for op in again.global_block.ops if op.type == "fc")
    assert (fc.attrs["in_num_col_dims"], fc.attrs["activation_type"], fc.attrs["padding_weights"]) == (1, "relu", False)
    assert sorted(fc.inputs) == ["Bias", "Input", "W"]


@pytest.mark.parametrize("op_type, inputs, attrs, out_slot", [
    ("bilinear_interp", {"X": IMAGE}, {"out_h": 4, "out_w": 5, **RESIZE}, "Out"),
    ("nearest_interp", {"X": IMAGE}, {"out_h": 4, "out_w": 5, "interp_method": "nearest", **RESIZE}, "Out"),
    ("fc", {"Input": IMAGE.reshape(3, 4), "W": np.ones((4, 2), f32), "Bias": np.ones(2, f32)}, {}, "Out"),
    ("hinge_loss", {"Logits": np.array([[0.5], [-2.0]], f32), "Labels": np.array([[1.0], [0.0]], f32)}, {}, "Loss"),
    ("l1_norm", {"X": IMAGE}, {}, "Out"),
])
def test_float32_in_float32_out_and_grads(op_type, inputs, attrs, out_slot):
    out = run_op(op_type, inputs, attrs, out_slot)
    results = run_op(op_type, inputs, attrs, out_slot, out_grad=np.ones(out.shape, f32),
                     wrt=["Logits"] if op_type == "hinge_loss" else None)
    assert [r.dtype for r in results] == [np.dtype(f32)] * len(results)

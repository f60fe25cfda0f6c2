"""Normalisation, dropout and embedding ops: values against numpy formulas, in-place running
stats, Paddle's grad op slots, and clear errors. Gradients themselves are in gradcheck_cases/nn.py."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradc
from gradc.gradcheck import check_op
from gradc.ir import VarType, to_var_type
from gradc.ops.infer import InferContext
from gradc.verify_shapes import check_shapes

rng = np.random.default_rng(0)
BN_OUTS = ("Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace")


def _bn_program(x_shape, attrs, dtype=VarType.FP32):
    """x -> batch_norm (running stats updated in place, as Paddle wires them) -> mean -> loss."""
    prog = gradc.Program()
    b = prog.global_block
    c = x_shape[-1] if attrs.get("data_layout") == "NHWC" else x_shape[1]
    b.create_var("x", list(x_shape), dtype)
    for name in ("scale", "bias"):
        b.create_var(name, [c], dtype, persistable=True, is_parameter=True)
    for name in ("mean", "var"):
        b.create_var(name, [c], dtype, persistable=True, stop_gradient=True)
    for name, shape in (("y", list(x_shape)), ("saved_mean", [c]), ("saved_inv_std", [c]), ("reserve", [-1]),
                        ("loss", [])):
        b.create_var(name, shape, dtype)
    b.append_op("batch_norm", {"X": ["x"], "Scale": ["scale"], "Bias": ["bias"], "Mean": ["mean"],
                               "Variance": ["var"], "MomentumTensor": []},
                {"Y": ["y"], "MeanOut": ["mean"], "VarianceOut": ["var"], "SavedMean": ["saved_mean"],
                 "SavedVariance": ["saved_inv_std"], "ReserveSpace": ["reserve"]}, attrs)
    b.append_op("reduce_mean", {"X": ["y"]}, {"Out": ["loss"]}, {"reduce_all": True})
    return prog


def _bn_scope(c):
    scope = gradc.Scope()
    scope["scale"], scope["bias"] = rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    scope["mean"], scope["var"] = rng.standard_normal(c).astype(np.float32), rng.uniform(0.5, 2, c).astype(np.float32)
    return scope


def test_batch_norm_training_updates_running_stats_in_place_across_runs():
    prog, scope, exe = _bn_program((4, 3, 2, 2), {"momentum": 0.8, "epsilon": 1e-5}), _bn_scope(3), gradc.Executor()
    scale, bias = scope["scale"].astype(np.float64), scope["bias"].astype(np.float64)
    mean, var = scope["mean"].astype(np.float64), scope["var"].astype(np.float64)
    for _ in range(2):
        x = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
        y, saved_mean, saved_inv = exe.run(prog, {"x": x}, ["y", "saved_mean", "saved_inv_std"], scope)
        batch_mean, batch_var = x.mean((0, 2, 3), dtype=np.float64), x.var((0, 2, 3), dtype=np.float64)
        mean, var = 0.8 * mean + 0.2 * batch_mean, 0.8 * var + 0.2 * batch_var  # biased batch variance
        np.testing.assert_allclose(scope["mean"], mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(scope["var"], var, rtol=1e-5, atol=1e-6)
        assert scope["mean"].dtype == np.float32 and y.dtype == np.float32
        inv = 1 / np.sqrt(batch_var + 1e-5)
        np.testing.assert_allclose(saved_mean, batch_mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(saved_inv, inv, rtol=1e-5)
        expected = (x - batch_mean[:, None, None]) * (inv * scale)[:, None, None] + bias[:, None, None]
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs", [{"is_test": True}, {"use_global_stats": True, "data_layout": "NHWC"}])
def test_batch_norm_global_stats_normalise_with_running_stats_and_leave_them(attrs):
    shape = (2, 2, 3, 3) if attrs.get("data_layout") == "NHWC" else (2, 3, 2, 2)
    prog, scope = _bn_program(shape, attrs), _bn_scope(3)
    before = {n: scope[n].copy() for n in ("mean", "var", "scale", "bias")}
    x = rng.standard_normal(shape).astype(np.float32)
    y, = gradc.Executor().run(prog, {"x": x}, ["y"], scope)
    np.testing.assert_array_equal(scope["mean"], before["mean"])
    np.testing.assert_array_equal(scope["var"], before["var"])
    channels_last = np.moveaxis(x, 1, -1) if "data_layout" not in attrs else x
    expected = (channels_last - before["mean"]) / np.sqrt(before["var"] + 1e-5) * before["scale"] + before["bias"]
    np.testing.assert_allclose(y, expected if "data_layout" in attrs else np.moveaxis(expected, -1, 1), rtol=1e-5,
                               atol=1e-6)


def test_batch_norm_momentum_tensor_overrides_the_attribute():
    prog, scope = _bn_program((4, 2), {"momentum": 0.9}), _bn_scope(2)
    prog.global_block.create_var("m", [1], VarType.FP32)
    prog.global_block.ops[0].inputs["MomentumTensor"] = ["m"]
    old = scope["mean"].copy()
    x = rng.standard_normal((4, 2)).astype(np.float32)
    gradc.Executor().run(prog, {"x": x, "m": np.array([0.5], np.float32)}, ["y"], scope)
    np.testing.assert_allclose(scope["mean"], 0.5 * old + 0.5 * x.mean(0), rtol=1e-5, atol=1e-6)


def test_batch_norm_grad_op_uses_paddles_slots_and_trains():
    prog = _bn_program((4, 3, 2, 2), {})
    check_shapes(prog)
    pairs = dict(gradc.append_backward(prog, "loss"))
    grad_op = next(op for op in prog.global_block.ops if op.type == "batch_norm_grad")
    assert sorted(s for s, a in grad_op.inputs.items() if a) == sorted(
        ["X", "Scale", "Bias", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace", "Y@GRAD"])
    assert grad_op.input("MeanOut") == ["mean"] and grad_op.input("SavedVariance") == ["saved_inv_std"]
    assert sorted(s for s, a in grad_op.outputs.items() if a) == ["Bias@GRAD", "Scale@GRAD", "X@GRAD"]
    assert set(pairs) == {"scale", "bias"}
    scope = _bn_scope(3)
    x = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    gbias, gscale = gradc.Executor().run(prog, {"x": x}, ["bias@GRAD", "scale@GRAD"], scope)
    np.testing.assert_allclose(gbias, np.full(3, 1 / 3), rtol=1e-5)  # d mean(y) / d bias
    np.testing.assert_allclose(gscale, np.zeros(3), atol=1e-6)        # normalised values sum to zero


PADDLE_CONV = Path(__file__).parent / "data" / "paddle" / "conv"


@pytest.mark.parametrize("program, op_type", [("forward.pb", "batch_norm"), ("backward.pb", "batch_norm_grad")])
def test_paddles_batch_norm_ops_give_paddles_numbers(program, op_type):
    """Paddle's own batch_norm / batch_norm_grad ops (all attrs and slots as saved), alone, on Paddle's values."""
    prog = gradc.load(PADDLE_CONV / program)
    block = prog.global_block
    block.ops[:] = [op for op in block.ops if op.type == op_type]
    with np.load(PADDLE_CONV / "values.npz") as v, np.load(PADDLE_CONV / "params.npz") as p:
        values, scope = dict(v), gradc.Scope()
        for name in p.files:
            scope[name] = p[name]
    op = block.ops[0]
    fetch = [n for n in op.output_names() if n in values]
    got = gradc.Executor().run(prog, {n: values[n] for n in op.input_names() if n in values}, fetch, scope)
    assert fetch
    for name, value in zip(fetch, got):
        np.testing.assert_allclose(value, values[name], rtol=1e-5, atol=1e-6, err_msg=name)


# ---------------------------------------------------------------- one-op programs
def _run(op_type, inputs, attrs=None, outputs=("Out",), dtypes=None):
    prog = gradc.Program()
    b = prog.global_block
    for slot, value in inputs.items():
        b.create_var(slot.lower(), list(value.shape), to_var_type(value.dtype))
    for slot in outputs:
        b.create_var(slot.lower() + "_out", None, (dtypes or {}).get(slot))  # None: kept as computed
    b.append_op(op_type, {s: [s.lower()] for s in inputs}, {s: [s.lower() + "_out"] for s in outputs}, attrs or {})
    feed = {s.lower(): v for s, v in inputs.items()}
    values = gradc.Executor().run(prog, feed, [s.lower() + "_out" for s in outputs], gradc.Scope())
    return dict(zip(outputs, values)), prog


def _infer(prog):
    op = prog.global_block.ops[0]
    return gradc.registry.get(op.type).infer(InferContext(op, prog.global_block, 0))


@pytest.mark.parametrize("axis", [1, 2])
def test_layer_norm_values_and_stat_shapes(axis):
    x = rng.standard_normal((2, 3, 4))
    d = int(np.prod(x.shape[axis:]))
    scale, bias = rng.standard_normal(d), rng.standard_normal(d)
    out, prog = _run("layer_norm", {"X": x, "Scale": scale, "Bias": bias}, {"begin_norm_axis": axis, "epsilon": 1e-3},
                     ("Y", "Mean", "Variance"))
    rows = x.reshape(-1, d)
    expected = (rows - rows.mean(1, keepdims=True)) / np.sqrt(rows.var(1, keepdims=True) + 1e-3) * scale + bias
    np.testing.assert_allclose(out["Y"], expected.reshape(x.shape), rtol=1e-6)
    np.testing.assert_allclose(out["Variance"], rows.var(1).reshape(x.shape[:axis]))
    assert out["Mean"].shape == x.shape[:axis]
    inferred = _infer(prog)
    assert inferred["Mean"][0] == list(x.shape[:axis]) and inferred["Y"][0] == [2, 3, 4]


def test_layer_norm_of_no_rows_gives_no_rows():
    """A FastSpeech2 whose initial duration predictor gives every phone 0 frames normalises an empty spectrogram
    [1, 0, d] (Paddle's output is [0, 80]): flattening it to [-1, d] rows was ambiguous, and the kernel failed."""
    x = np.zeros((1, 0, 4))
    out, _ = _run("layer_norm", {"X": x, "Scale": np.ones(4), "Bias": np.zeros(4)}, {"begin_norm_axis": 2},
                  ("Y", "Mean", "Variance"))
    assert out["Y"].shape == (1, 0, 4) and out["Mean"].shape == out["Variance"].shape == (1, 0)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_a_softmax_over_an_empty_axis_is_empty(op):
    """The attention scores of an empty spectrogram (an initial FastSpeech2's decoder) are [1, heads, T, 0]: numpy's
    max of an empty axis has no identity, and the kernel failed; Paddle gives an empty result."""
    out, _ = _run(op, {"X": np.zeros((1, 2, 3, 0))}, {"axis": -1}, ("Out",))
    assert out["Out"].shape == (1, 2, 3, 0)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_group_norm_values(layout):
    x = rng.standard_normal((2, 4, 3, 2))
    scale, bias = rng.standard_normal(4), rng.standard_normal(4)
    xin = np.moveaxis(x, 1, -1) if layout == "NHWC" else x
    out, prog = _run("group_norm", {"X": xin, "Scale": scale, "Bias": bias}, {"groups": 2, "data_layout": layout},
                     ("Y", "Mean", "Variance"))
    g = x.reshape(2, 2, -1)
    xhat = ((g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + 1e-5)).reshape(x.shape)
    expected = xhat * scale[:, None, None] + bias[:, None, None]
    np.testing.assert_allclose(out["Y"], np.moveaxis(expected, 1, -1) if layout == "NHWC" else expected, rtol=1e-6)
    np.testing.assert_allclose(out["Mean"], g.mean(2))
    assert _infer(prog)["Mean"][0] == [2, 2]


def test_group_norm_groups_must_divide_channels():
    with pytest.raises(gradc.ExecutionError, match="group_norm.*groups=3"):
        _run("group_norm", {"X": rng.standard_normal((2, 4, 3))}, {"groups": 3}, ("Y", "Mean", "Variance"))


@pytest.mark.parametrize("impl, factor", [("downgrade_in_infer", 1.0), ("upscale_in_train", 1 / 0.7)])
def test_dropout_training_mask(impl, factor):
    x = rng.standard_normal((50, 40)).astype(np.float32)
    attrs = {"dropout_prob": 0.3, "fix_seed": True, "seed": 5, "dropout_implementation": impl}
    dtypes = {"Mask": VarType.UINT8}
    first, _ = _run("dropout", {"X": x}, attrs, ("Out", "Mask"), dtypes)
    again, _ = _run("dropout", {"X": x}, attrs, ("Out", "Mask"), dtypes)
    mask = first["Mask"]
    assert mask.dtype == np.uint8 and set(np.unique(mask)) == {0, 1}
    np.testing.assert_array_equal(mask, again["Mask"])  # fix_seed: reproducible
    assert abs(mask.mean() - 0.7) < 0.05
    np.testing.assert_allclose(first["Out"], x * mask * factor, rtol=1e-6)
    other, _ = _run("dropout", {"X": x}, {**attrs, "seed": 6}, ("Out", "Mask"), dtypes)
    assert (other["Mask"] != mask).any()


def test_dropout_seed_tensor_wins_over_the_seed_attribute():
    x = rng.standard_normal((10, 10))
    masks = [_run("dropout", {"X": x, "Seed": np.array([seed], np.int32)}, {"fix_seed": True, "seed": attr_seed},
                  ("Out", "Mask"), {"Mask": VarType.UINT8})[0]["Mask"] for seed, attr_seed in ((3, 1), (3, 2), (4, 1))]
    np.testing.assert_array_equal(masks[0], masks[1])
    assert (masks[0] != masks[2]).any()


@pytest.mark.parametrize("impl, factor", [("downgrade_in_infer", 0.75), ("upscale_in_train", 1.0)])
def test_dropout_inference(impl, factor):
    x = rng.standard_normal((3, 4))
    out, _ = _run("dropout", {"X": x}, {"dropout_prob": 0.25, "is_test": True, "dropout_implementation": impl},
                  ("Out", "Mask"), {"Mask": VarType.UINT8})
    np.testing.assert_allclose(out["Out"], x * factor)


def test_dropout_grad_reads_the_mask_not_x():
    _, prog = _run("dropout", {"X": rng.standard_normal((3, 4))}, {"fix_seed": True}, ("Out", "Mask"),
                   {"Mask": VarType.UINT8})
    b = prog.global_block
    b.create_var("loss", [], VarType.FP64)
    b.append_op("reduce_mean", {"X": ["out_out"]}, {"Out": ["loss"]}, {"reduce_all": True})
    b.var("x").dtype = b.var("out_out").dtype = VarType.FP64
    assert gradc.gradients(prog, "loss", ["x"]) == ["x@GRAD"]
    grad_op = next(op for op in b.ops if op.type == "dropout_grad")
    assert {s for s, a in grad_op.inputs.items() if a} == {"Mask", "Out@GRAD"}


def test_lookup_table_v2_padding_rows_are_zero_and_get_no_grad():
    w = rng.standard_normal((5, 3))
    ids = np.array([[0, 2], [2, 4]])
    out, _ = _run("lookup_table_v2", {"W": w, "Ids": ids}, {"padding_idx": 2})
    np.testing.assert_array_equal(out["Out"], np.where((ids == 2)[..., None], 0, w[ids]))
    grads = check_op("lookup_table_v2", {"W": w, "Ids": ids}, {"padding_idx": 2})
    assert not grads["W0"][2].any() and grads["W0"][0].any()


def test_lookup_table_v2_out_of_range_id_names_the_op():
    with pytest.raises(gradc.ExecutionError, match="lookup_table_v2.*id 7 is out of range"):
        _run("lookup_table_v2", {"W": rng.standard_normal((5, 3)), "Ids": np.array([1, 7])})


def test_one_hot_v2():
    x = np.array([[1], [0], [3]])
    out, prog = _run("one_hot_v2", {"X": x}, {"depth": 4})
    np.testing.assert_array_equal(out["Out"], np.eye(4, dtype=np.float32)[x])
    assert out["Out"].dtype == np.float32 and _infer(prog)["Out"] == ([3, 1, 4], VarType.FP32)
    as_int, _ = _run("one_hot_v2", {"X": np.array([5, 1])}, {"depth": 3, "dtype": int(VarType.INT64),
                                                             "allow_out_of_range": True}, dtypes={"Out": VarType.INT64})
    np.testing.assert_array_equal(as_int["Out"], [[0, 0, 0], [0, 1, 0]])
    with pytest.raises(gradc.ExecutionError, match="one_hot_v2.*index 5 is out of range"):
        _run("one_hot_v2", {"X": np.array([5, 1])}, {"depth": 3})
    assert not gradc.registry.get("one_hot_v2").differentiable


# ---------------------------------------------------------------- random shapes and attributes
@settings(max_examples=12, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=2, max_size=4), st.sampled_from(["NCHW", "NHWC"]),
       st.booleans(), st.integers(0, 2**16))
def test_norm_grads_on_random_shapes(shape, layout, test_mode, seed):
    r = np.random.default_rng(seed)
    shape[0] = max(shape[0], 2)  # batch statistics need two samples
    c = shape[-1] if layout == "NHWC" else shape[1]
    x = r.standard_normal(shape)
    check_op("batch_norm", {"X": x, "Scale": r.standard_normal(c), "Bias": r.standard_normal(c),
                            "Mean": r.standard_normal(c), "Variance": r.uniform(0.5, 2, c)},
             {"data_layout": layout, "is_test": test_mode})
    axis = int(r.integers(1, len(shape)))
    d = int(np.prod(shape[axis:]))
    check_op("layer_norm", {"X": x, "Scale": r.standard_normal(d), "Bias": r.standard_normal(d)},
             {"begin_norm_axis": axis})
    groups = int(r.choice([g for g in range(1, c + 1) if c % g == 0]))
    check_op("group_norm", {"X": x, "Scale": r.standard_normal(c), "Bias": r.standard_normal(c)},
             {"groups": groups, "data_layout": layout})


def test_shape_inference_names_the_op_and_the_bad_slot():
    prog = _bn_program((4, 3, 2, 2), {})
    prog.global_block.var("scale").shape = [4]
    with pytest.raises(gradc.ProgramError, match="batch_norm.*Scale must be a vector of size 3"):
        check_shapes(prog)


def test_reusable_is_the_temporary_exactly_where_numpys_result_fits_it():
    """``reusable`` (the ``out`` of norm and optimizer ufuncs) gives the caller's array where numpy's result of a
    ufunc of it and the other operand has its dtype and shape, for like, per-channel, broadcasting and promoting
    operands and scalars, and None elsewhere."""
    from gradc.executor.kernels.broadcast import reusable
    rng = np.random.default_rng(0)
    checked = set()
    for _ in range(600):
        shape = tuple(int(d) for d in rng.integers(1, 4, rng.integers(0, 4)))
        dtype = (np.float32, np.float64, np.int32)[rng.integers(3)]
        temporary = np.zeros(shape, dtype)
        trailing = shape[rng.integers(0, len(shape) + 1):]   # some trailing dims, kept or redrawn (1 broadcasts)
        other_shape = (tuple(d if rng.random() < 0.6 else int(rng.integers(1, 4)) for d in trailing)
                       if rng.random() < 0.8 else tuple(int(d) for d in rng.integers(1, 4, 4)))   # or more dims
        other = (np.zeros(other_shape, (np.float32, np.float64, np.int64)[rng.integers(3)]) if rng.random() < 0.8
                 else (1.5, 2, np.float32(1.0))[rng.integers(3)])
        try:
            result = np.add(temporary, other)
        except ValueError:   # shapes that do not broadcast: numpy's own error, whatever reusable says
            continue
        fits = result.dtype == temporary.dtype and result.shape == temporary.shape
        assert (reusable(temporary, other) is temporary) == fits, (shape, dtype, np.shape(other), other)
        checked.add(fits)
    assert checked == {True, False}
    assert reusable([1.0], np.zeros(1)) is None   # not an array of the caller's

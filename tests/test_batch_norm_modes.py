"""batch_norm in every mode against a numpy reference: is_test x use_global_stats x trainable_statistics, 2-D
to 5-D inputs in both layouts, with and without Scale/Bias, the MomentumTensor, the running statistics it
updates in place, SavedMean/SavedVariance, ReserveSpace and the three gradients; and the modes where
Paddle 3.3.1 differs (its layer fixtures are in tests/data/paddle/ops/norm)."""

import itertools
import json

import numpy as np
import pytest

import gradc
from gradc.backward import append_grad_ops
from test_ops_vs_paddle import ROOT

rng = np.random.default_rng(7)
MODES = list(itertools.product([False, True], repeat=3))   # is_test, use_global_stats, trainable_statistics
SHAPES = {2: (5, 3), 3: (3, 3, 4), 4: (2, 3, 2, 3), 5: (2, 3, 2, 2, 2)}
OUTS = ("Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance")


def run(x, dy, attrs, affine=True, momentum_tensor=None):
    """The op's outputs (MeanOut/VarianceOut are Mean/Variance, updated in place) and input grads."""
    channels = x.shape[-1] if attrs.get("data_layout") == "NHWC" else x.shape[1]
    feed = {"X": x, "Mean": rng.standard_normal(channels), "Variance": rng.uniform(0.5, 2.0, channels)}
    if affine:
        feed.update(Scale=rng.standard_normal(channels), Bias=rng.standard_normal(channels))
    if momentum_tensor is not None:
        feed["MomentumTensor"] = np.array([momentum_tensor], np.float32)
    return feed, run_feed(feed, dy, attrs)


def run_feed(feed, dy, attrs):
    """The op's outputs and input grads for the inputs ``feed``, in X's dtype."""
    program = gradc.Program()
    block = program.global_block
    for name, value in feed.items():
        block.create_var(name, list(value.shape), gradc.ir.to_var_type(value.dtype))
    for name in ("Y", "SavedMean", "SavedVariance", "ReserveSpace"):
        block.create_var(name, None, gradc.ir.to_var_type(feed["X"].dtype))
    block.append_op("batch_norm", {slot: [slot] for slot in feed},
                    {"Y": ["Y"], "MeanOut": ["Mean"], "VarianceOut": ["Variance"], "SavedMean": ["SavedMean"],
                     "SavedVariance": ["SavedVariance"], "ReserveSpace": ["ReserveSpace"]}, attrs)
    block.var("Y").shape = list(feed["X"].shape)
    wanted = [s for s in ("X", "Scale", "Bias") if s in feed]
    append_grad_ops(program, ["Y"], no_grad_set={"Mean", "Variance", "MomentumTensor"})
    fetch = ["Y", "Mean", "Variance", "SavedMean", "SavedVariance", "ReserveSpace", *(s + "@GRAD" for s in wanted)]
    values = gradc.Executor().run(program, {**feed, "Y@GRAD": dy}, fetch, gradc.Scope())
    return dict(zip(["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace",
                     *(s + "@GRAD" for s in wanted)], values))


def reference(feed, dy, attrs):
    """Paddle's documented batch norm in numpy (channels first inside); epsilon and momentum are float32 attributes."""
    last, eps = attrs.get("data_layout") == "NHWC", float(np.float32(attrs.get("epsilon", 1e-5)))
    x = np.moveaxis(feed["X"], -1, 1) if last else feed["X"]
    g = np.moveaxis(dy, -1, 1) if last else dy
    axes, shape = (0, *range(2, x.ndim)), (1, -1) + (1,) * (x.ndim - 2)
    scale, bias = feed.get("Scale", np.ones(x.shape[1])), feed.get("Bias", np.zeros(x.shape[1]))
    momentum = float(feed["MomentumTensor"][0] if "MomentumTensor" in feed else np.float32(attrs.get("momentum", 0.9)))
    global_stats = (attrs.get("is_test") and not attrs.get("trainable_statistics")) or attrs.get("use_global_stats")
    if global_stats:
        mean, var = feed["Mean"], feed["Variance"]
        mean_out, var_out = mean, var
    else:
        mean, var = x.mean(axes), x.var(axes)
        mean_out, var_out = momentum * feed["Mean"] + (1 - momentum) * mean, momentum * feed["Variance"] + \
            (1 - momentum) * var
    inv = 1 / np.sqrt(var + eps)
    xhat = (x - mean.reshape(shape)) * inv.reshape(shape)
    size = x.size / x.shape[1]
    gs = g * scale.reshape(shape)
    if global_stats:
        dx = gs * inv.reshape(shape)
    else:
        dx = inv.reshape(shape) / size * (size * gs - gs.sum(axes).reshape(shape)
                                          - xhat * (gs * xhat).sum(axes).reshape(shape))
    back = (lambda a: np.moveaxis(a, 1, -1)) if last else (lambda a: a)
    return {"Y": back(xhat * scale.reshape(shape) + bias.reshape(shape)), "MeanOut": mean_out, "VarianceOut": var_out,
            "SavedMean": mean, "SavedVariance": inv, "X@GRAD": back(dx), "Scale@GRAD": (g * xhat).sum(axes),
            "Bias@GRAD": g.sum(axes)}


@pytest.mark.parametrize("rank", sorted(SHAPES))
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("is_test, use_global_stats, trainable_statistics", MODES)
def test_every_mode_matches_numpy(rank, layout, is_test, use_global_stats, trainable_statistics):
    shape = SHAPES[rank] if layout == "NCHW" or rank == 2 else SHAPES[rank][:1] + SHAPES[rank][2:] + (3,)
    attrs = {"is_test": is_test, "use_global_stats": use_global_stats, "trainable_statistics": trainable_statistics,
             "data_layout": layout, "momentum": 0.8, "epsilon": 1e-4}
    x, dy = rng.standard_normal(shape), rng.standard_normal(shape)
    feed, ours = run(x, dy, attrs, affine=rank != 3, momentum_tensor=0.6 if rank == 4 else None)
    expected = reference(feed, dy, attrs)
    global_stats = (is_test and not trainable_statistics) or use_global_stats
    for name, value in expected.items():
        if name.startswith("Saved") and global_stats:
            continue   # unused by the grad in this mode; Paddle leaves them unset
        if name in ours:
            np.testing.assert_allclose(ours[name], value, rtol=1e-10, atol=1e-12, err_msg=name)
    assert ours["ReserveSpace"].size == 0


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_float32_training_is_within_float32_rounding_of_float64(layout):
    """In training, dx comes from the Bias and Scale grads' sums; on an input whose mean is large against its
    spread, every output and grad stays within float32 rounding (sums of 400 terms) of the op in float64 on the
    same values."""
    shape = (4, 6, 10, 10) if layout == "NCHW" else (4, 10, 10, 6)
    x, dy = 50 + 3 * rng.standard_normal(shape), rng.standard_normal(shape)
    attrs = {"is_test": False, "data_layout": layout, "epsilon": 1e-5}
    feed, _ = run(x, dy, attrs)
    single = {name: value.astype(np.float32) for name, value in feed.items()}   # both runs read the same values
    exact = run_feed({name: value.astype(np.float64) for name, value in single.items()}, dy.astype(np.float32), attrs)
    ours = run_feed(single, dy.astype(np.float32), attrs)
    channel = 1 if layout == "NCHW" else -1
    axes = tuple(a for a in range(4) if a != channel % 4)
    per_channel = (lambda v: v.reshape(-1, 1, 1)) if layout == "NCHW" else (lambda v: v)
    g, xhat = dy.astype(np.float32).astype(np.float64), (single["X"] - per_channel(exact["SavedMean"])) * per_channel(
        exact["SavedVariance"])
    # a sum's rounding is relative to its terms' magnitudes, an elementwise value's to the largest value
    scales = {"Scale@GRAD": np.abs(g * xhat).sum(axes), "Bias@GRAD": np.abs(g).sum(axes)}
    for name in ("Y", "SavedMean", "SavedVariance", "X@GRAD", "Scale@GRAD", "Bias@GRAD"):
        assert ours[name].dtype == np.float32, name
        error = (np.abs(ours[name] - exact[name]) / scales.get(name, np.abs(exact[name]).max())).max()
        assert error < 1e-5, (name, error)   # x - mean rounds at 50 * 2^-24, an error of 1e-6 of x's spread


def test_one_value_per_channel_passes_x_through():
    """Paddle's special case: a batch of one sample with no spatial cells is not normalised in training."""
    x, dy = rng.standard_normal((1, 3)), rng.standard_normal((1, 3))
    feed, ours = run(x, dy, {})
    np.testing.assert_array_equal(ours["Y"], x)
    np.testing.assert_array_equal(ours["MeanOut"], feed["Mean"])
    np.testing.assert_array_equal(ours["X@GRAD"], dy)
    np.testing.assert_array_equal(ours["Scale@GRAD"], 0)


def _fixture(name):
    meta = next(m for m in json.loads((ROOT / "norm" / "cases.json").read_text())["cases"] if m["name"] == name)
    with np.load(ROOT / "norm" / "values.npz") as archive:
        return meta, {k[len(name) + 1:]: archive[k] for k in archive.files if k.startswith(name + "/")}


def test_momentum_tensor_overrides_the_attribute_where_paddle_ignores_it():
    from test_ops_vs_paddle import run_gradc
    meta, values = _fixture("batch_norm_momentum_tensor")
    ours = run_gradc(ROOT / "norm", meta, values)
    x = values["feed/x"]
    batch = x.mean((0, 2)), x.var((0, 2))
    for name, stat, initial in zip(("batch_norm_0.w_1", "batch_norm_0.w_2"), batch, (0.0, 1.0)):
        np.testing.assert_allclose(ours[f"after/{name}"], 0.7 * initial + 0.3 * stat, rtol=1e-6)
        np.testing.assert_allclose(values[f"after/{name}"], 0.9 * initial + 0.1 * stat, rtol=1e-6)  # Paddle


@pytest.mark.parametrize("attrs, reads_running_stats", [
    ({}, False), ({"use_global_stats": True}, True), ({"is_test": True}, True),
    ({"is_test": True, "trainable_statistics": True}, True)])
def test_grad_op_has_paddles_slots(attrs, reads_running_stats):
    """As Paddle's maker: the global-statistics modes also give batch_norm_grad the running statistics as
    Mean/Variance (Paddle's kernel crashes without them); gradc's kernel reads MeanOut/VarianceOut."""
    x = rng.standard_normal((2, 3, 2))
    program = gradc.Program()
    block = program.global_block
    for name, shape in (("X", [2, 3, 2]), ("Scale", [3]), ("Bias", [3]), ("Mean", [3]), ("Variance", [3])):
        block.create_var(name, shape, gradc.VarType.FP64)
    for name in ("Y", "SavedMean", "SavedVariance"):
        block.create_var(name, None, gradc.VarType.FP64)
    block.append_op("batch_norm", {s: [s] for s in ("X", "Scale", "Bias", "Mean", "Variance")},
                    {"Y": ["Y"], "MeanOut": ["Mean"], "VarianceOut": ["Variance"], "SavedMean": ["SavedMean"],
                     "SavedVariance": ["SavedVariance"]}, attrs)
    block.var("Y").shape = [2, 3, 2]
    append_grad_ops(program, ["Y"], no_grad_set={"Mean", "Variance"})
    grad = next(op for op in block.ops if op.type == "batch_norm_grad")
    assert {"X", "Scale", "Bias", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "Y@GRAD"} <= set(grad.inputs)
    assert ("Mean" in grad.inputs and "Variance" in grad.inputs) == reads_running_stats
    feed = {"X": x, "Scale": np.ones(3), "Bias": np.zeros(3), "Mean": np.zeros(3), "Variance": np.ones(3),
            "Y@GRAD": np.ones_like(x)}
    _, mean = gradc.Executor().run(program, feed, ["X@GRAD", "Mean"], gradc.Scope())
    updated = not reads_running_stats or attrs.get("trainable_statistics")
    assert (not np.allclose(mean, 0)) == bool(updated)   # the running mean moves only with batch statistics

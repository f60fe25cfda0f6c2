"""bfloat16 programs gradc builds and compiles (gradc.bfloat16): dtype attributes that name BF16, a norm's float32
statistics, optimizers' accumulators and master weights of bfloat16 parameters, as Paddle 3.3.1 declares them."""

from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.bfloat16 import from_bits, round_to_bfloat16
from gradc.layers import ProgramBuilder

DATA = Path(__file__).parent / "data" / "paddle" / "bf16"


def _one_op_bfloat16(op_type: str, inputs: dict, attrs: dict) -> tuple:
    """(gradc's value, its declared dtype) of one op built through its shape inference, fed float32 arrays."""
    net = ProgramBuilder()
    slots = {slot: net.data(slot.lower(), list(array.shape), array.dtype.name) for slot, array in inputs.items()}
    out = net.op(op_type, slots, attrs)[0]
    feed = {slots[slot]: array for slot, array in inputs.items()}
    return gradc.Executor().run(net.program, feed, [out], gradc.Scope())[0], net.block.var(out).dtype


def test_ops_whose_dtype_attribute_says_bfloat16_make_bfloat16_numbers():
    """fill_any_like (paddle.full_like / zeros_like of a bfloat16 tensor, or dtype bfloat16), one_hot_v2 and
    fill_constant_batch_size_like with dtype BF16, and reduce_sum with out_dtype BF16, compile and run: their
    values bfloat16 numbers (Paddle 3.3.1 runs each; its bfloat16 full_like 0.7 is 0x3F33, 0.69921875)."""
    x = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    bf16 = int(gradc.VarType.BF16)
    filled, dtype = _one_op_bfloat16("fill_any_like", {"X": x}, {"value": 0.7, "dtype": bf16})
    assert dtype == bf16 and np.all(filled == from_bits(np.uint16(0x3F33))) and filled.shape == (3, 4)
    ids = np.array([2, 0, 3], "int64")
    hot, dtype = _one_op_bfloat16("one_hot_v2", {"X": ids}, {"depth": 4, "dtype": bf16})
    assert dtype == bf16 and hot.dtype == np.float32
    np.testing.assert_array_equal(hot, np.eye(4, dtype="float32")[ids])
    batch, dtype = _one_op_bfloat16("fill_constant_batch_size_like", {"Input": x},
                                    {"shape": [-1, 2], "value": 0.1, "dtype": bf16})
    assert dtype == bf16 and batch.shape == (3, 2) and np.all(batch == round_to_bfloat16(np.float32(0.1)))
    total, dtype = _one_op_bfloat16("reduce_sum", {"X": x}, {"dim": [1], "out_dtype": bf16})
    assert dtype == bf16
    np.testing.assert_array_equal(total, round_to_bfloat16(x.astype("float64").sum(axis=1)))


def test_a_bfloat16_model_built_in_gradc_trains_with_master_weights():
    """ProgramBuilder takes Paddle's dtype name "bfloat16"; adam with multi_precision keeps float32 master weights
    of the bfloat16 parameters, and each parameter is its master rounded to bfloat16 after every step."""
    net = ProgramBuilder()
    x, w = net.data("x", [4, 6], "bfloat16"), net.parameter("w", [6, 3], "bfloat16")
    assert net.block.var(x).dtype == net.block.var(w).dtype == gradc.VarType.BF16
    h = net.op("cast", {"X": net.op("matmul_v2", {"X": x, "Y": w})[0]}, {"in_dtype": 22, "out_dtype": 5})[0]
    loss = net.mean(net.op("square", {"X": h})[0])
    startup = gradc.minimize(net.program, loss, "adam", lr=0.1, multi_precision=True)
    trainer = gradc.Trainer(net.program, [net.startup, startup], fetch=[loss])
    feed = {x: np.random.default_rng(0).standard_normal((4, 6)).astype("float32")}
    losses = [trainer.train_step(feed)[0] for _ in range(3)]
    assert losses[2] < losses[0]
    master = trainer.scope["w_fp32_master_0"]
    assert master.dtype == np.float32 and np.any(master.view(np.uint32) & 0xFFFF)
    np.testing.assert_array_equal(trainer.scope[w], round_to_bfloat16(master))


def test_a_norms_statistics_of_a_bfloat16_x_are_float32_as_paddle_declares_them():
    """layer_norm, group_norm, instance_norm and batch_norm (without Scale) of a float16 or bfloat16 X: Paddle
    declares Mean/Variance (Saved*) float32, and so does gradc's inference, so gradc verify passes Paddle's
    programs (every bfloat16 fixture) and a gradc-built norm keeps its statistics unrounded."""
    from gradc.verify_shapes import check_shapes

    for program in [*DATA.glob("*/*.pb")]:
        check_shapes(gradc.load(program))
    for dtype in ("float16", "bfloat16"):
        net = ProgramBuilder()
        x = net.data("x", [2, 4, 3, 3], dtype)
        outputs = {"layer_norm": ({"begin_norm_axis": 1}, ["Mean", "Variance"]),
                   "group_norm": ({"groups": 2}, ["Mean", "Variance"]),
                   "instance_norm": ({}, ["SavedMean", "SavedVariance"])}
        for op_type, (attrs, stats) in outputs.items():
            net.op(op_type, {"X": x}, attrs)
            op = net.block.ops[-1]
            assert net.block.var(op.output("Y")[0]).dtype == gradc.ir.to_var_type(dtype)
            assert all(net.block.var(op.output(slot)[0]).dtype == gradc.VarType.FP32 for slot in stats), op_type
        mean, variance = net.data("mean", [4]), net.data("variance", [4])
        net.op("batch_norm", {"X": x, "Mean": mean, "Variance": variance}, {},
               outputs=["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"])
        saved = net.block.ops[-1].output("SavedMean")[0]
        assert net.block.var(saved).dtype == gradc.VarType.FP32


# the accumulators Paddle 3.3.1's optimizers declare float32 for a float16/bfloat16 parameter without master
# weights (the others take the parameter's dtype)
FLOAT32_ACCUMULATORS = {"adam": {"Moment1", "Moment2", "Beta1Pow", "Beta2Pow"}, "lamb": {"Moment1", "Moment2",
                        "Beta1Pow", "Beta2Pow"}, "momentum": {"Velocity"}, "adamax": {"Moment", "InfNorm"},
                        "nadam": {"momentum_decay_pow", "beta2_pow", "mu_product", "moment1", "moment2"},
                        "radam": {"beta1_pow", "beta2_pow", "rho", "moment1", "moment2"}, "rmsprop": set(),
                        "adagrad": set(), "adadelta": set()}


@pytest.mark.parametrize("optimizer", sorted(FLOAT32_ACCUMULATORS))
def test_optimizer_accumulators_of_a_bfloat16_parameter_are_paddles_dtypes(optimizer):
    """Without multi_precision, Paddle keeps the Adam family's moments and beta pows (and momentum's velocity) in
    float32 for a bfloat16 parameter: in bfloat16, Adam's beta2 pow 0.999 is 1.0, its step 0, and the parameter
    never moved. gradc declares Paddle's dtypes, and the parameter trains."""
    net = ProgramBuilder()
    x, w = net.data("x", [4, 6], "bfloat16"), net.parameter("w", [6, 3], "bfloat16")
    h = net.op("cast", {"X": net.op("matmul_v2", {"X": x, "Y": w})[0]}, {"in_dtype": 22, "out_dtype": 5})[0]
    loss = net.mean(net.op("square", {"X": h})[0])
    startup = gradc.minimize(net.program, loss, optimizer, lr=0.05)
    update = next(op for op in net.block.ops if op.type == optimizer)
    dtypes = {slot: net.block.var(names[0]).dtype for slot, names in update.inputs.items()
              if names and slot.lower() not in ("param", "grad", "learningrate", "learning_rate")}
    assert {slot for slot, dtype in dtypes.items() if dtype == gradc.VarType.FP32} == FLOAT32_ACCUMULATORS[optimizer]
    trainer = gradc.Trainer(net.program, [net.startup, startup], fetch=[loss])
    before = trainer.scope[w].copy()
    feed = {x: np.random.default_rng(0).standard_normal((4, 6)).astype("float32")}
    losses = [trainer.train_step(feed)[0] for _ in range(3)]
    assert np.all(np.isfinite(losses)) and not np.array_equal(trainer.scope[w], before)


def test_a_sparse_gradient_for_a_bfloat16_var_stays_sparse_with_its_values_rounded():
    from gradc.bfloat16 import BFLOAT16
    from gradc.executor.selected_rows import SelectedRows
    from gradc.executor.stores import as_declared

    values = np.random.default_rng(0).standard_normal((2, 5)).astype("float32")
    stored = as_declared(None, "w@GRAD", SelectedRows(np.array([3, 1]), values, 6), BFLOAT16)
    assert isinstance(stored, SelectedRows) and stored.rows.tolist() == [3, 1] and stored.height == 6
    np.testing.assert_array_equal(stored.values, round_to_bfloat16(values))
    assert not np.array_equal(stored.values, values)

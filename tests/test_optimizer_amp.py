"""Paddle's training programs with dynamic loss scaling (paddle.static.amp.decorate O1/O2), ModelAverage, and the
optimizer ops of gradc.ops.optimizer_extra train in gradc as in Paddle (tools/paddle_optimizer_extra_fixtures.py ->
tests/data/paddle/optim_extra), and the edges of their kernels."""

from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.bfloat16 import round_to_bfloat16
from gradc.executor.kernels.optimizer_extra import _uniforms, gaussian_noise
from gradc.ir import to_var_type
from gradc.pir import parse_pir, serialize_pir
from one_op import run
from optim_cases import OptimCase, assert_trained_like_paddle, train

DATA = Path(__file__).parent / "data" / "paddle" / "optim_extra"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "meta.json").is_file())


@pytest.mark.parametrize("name", CASES)
def test_paddles_training_program_trains_like_paddle(name):
    case = OptimCase(name, DATA)
    losses, states = train(case, case.program())
    assert_trained_like_paddle(case, losses, states)


@pytest.mark.parametrize("name", ["amp_o1_sgd", "amp_o2_momentum", "amp_o1_adam", "asgd", "model_average"])
def test_the_training_program_written_as_pir_trains_like_paddle(name):
    """The ops with a PIR counterpart (ftrl, decayed_adagrad, dpsgd and sparse_momentum have none) written as
    PIR and read back; the scaled loss is read by the scaling op, so it is fetched to keep its name."""
    case = OptimCase(name, DATA)
    program = parse_pir(serialize_pir(case.program(), fetch=[case.meta["loss"]]))
    losses, states = train(case, program)
    assert_trained_like_paddle(case, losses, states)


@pytest.mark.parametrize("name", ["amp_o1_sgd", "amp_o2_momentum"])
def test_the_amp_fixtures_zero_the_bad_steps_gradients_and_move_the_scale(name):
    """The fixtures exercise what they claim: a step with an inf batch steps by a zero gradient (SGD leaves the
    parameters alone; momentum still moves them by its decayed velocity: Paddle zeroes the gradients, it does
    not skip the update), and the scale both shrinks and grows over the run."""
    case = OptimCase(name, DATA)
    bad = set(case.meta["settings"]["bad_steps"])
    states = [case.arrays("init"), *case.paddle_states()]
    for step in range(case.steps):
        before, after = states[step], states[step + 1]
        if name.endswith("sgd"):
            assert np.array_equal(before["linear_0.w_0"], after["linear_0.w_0"]) == (step in bad), f"step {step}"
        elif step in bad:
            velocity = "linear_0.w_0_velocity_0"
            np.testing.assert_allclose(after[velocity], np.float32(0.9) * before[velocity], rtol=1e-6)
    scales = [float(state["loss_scaling_0"].reshape(-1)[0]) for state in states]
    assert any(b < a for a, b in zip(scales, scales[1:])) and any(b > a for a, b in zip(scales, scales[1:]))


def test_model_average_applies_and_restores_like_paddle():
    case = OptimCase("model_average", DATA)
    scope = gradc.Scope()
    for name, value in case.arrays("init").items():
        scope[name] = value
    train(case, case.program(), scope=scope)
    executor = gradc.Executor()
    for program, expected in (("apply", "applied"), ("restore", "restored")):
        executor.run(gradc.load(case.directory / f"{program}.pb"), scope=scope)
        for name, value in case.arrays(expected).items():
            np.testing.assert_allclose(np.asarray(scope[name]), value, rtol=1e-5, atol=1e-7, err_msg=name)
    average = case.arrays("applied")["linear_0.w_0"]
    assert not np.allclose(average, case.arrays("final")["linear_0.w_0"])   # apply did change the weight


def test_gradcs_backward_of_a_bf16_forward_is_paddles():
    """paddle.static.amp.bf16 writes its casts in the forward: gradc's append_backward on that forward writes
    Paddle's backward ops and gradient dtypes, and runs them (Paddle 3.3.1's own CPU bfloat16 matmul_v2_grad
    crashes): every bfloat16 var holds its float32 computation rounded to bfloat16, as numpy's below."""
    program = gradc.load(DATA / "bf16" / "forward.pb")
    gradc.append_backward(program, "mean_0.tmp_0")
    theirs = gradc.load(DATA / "bf16" / "train.pb")
    ops = [op.type for op in theirs.global_block.ops if op.type != "sgd"]
    assert [op.type for op in program.global_block.ops] == ops
    for name, var in theirs.global_block.vars.items():
        if name.endswith("@GRAD"):
            assert program.global_block.var(name).dtype == var.dtype, name
    rng = np.random.default_rng(3)
    w, b = rng.standard_normal((3, 2)).astype("float32"), rng.standard_normal(2).astype("float32")
    x, y = rng.standard_normal((4, 3)).astype("float32"), rng.standard_normal((4, 2)).astype("float32")
    scope = gradc.Scope()
    scope["linear_0.w_0"], scope["linear_0.b_0"] = w, b
    loss, dw, db = gradc.Executor().run(program, {"x": x, "y": y},
                                        ["mean_0.tmp_0", "linear_0.w_0@GRAD", "linear_0.b_0@GRAD"], scope)
    r = round_to_bfloat16
    diff = r(r(r(r(x) @ r(w)) + r(b)) - r(y))
    grad = r(r(2 * diff / diff.size))
    np.testing.assert_array_equal(loss, np.mean(np.square(diff)))
    np.testing.assert_array_equal(dw, r(r(x).T @ grad))
    np.testing.assert_array_equal(db, r(grad.sum(0)))
    assert not np.array_equal(dw, (x.T @ (2 * (x @ w + b - y) / 8)).astype("float32"))   # the rounding shows


def loss_scaling(scale, good, bad, found, **attrs):
    return run("update_loss_scaling",
               {"X": [np.ones(2, "float32")], "FoundInfinite": np.array([found]),
                "PrevLossScaling": np.array([scale], "float32"), "InGoodSteps": np.array([good], "int32"),
                "InBadSteps": np.array([bad], "int32")}, attrs)


def test_the_scale_never_shrinks_below_one_nor_grows_to_inf():
    shrunk = loss_scaling(1.5, 4, 0, True, decr_every_n_nan_or_inf=1, decr_ratio=0.5)
    assert shrunk["LossScaling"].tolist() == [1.0] and shrunk["OutGoodSteps"].tolist() == [0]
    assert shrunk["Out"].tolist() == [0, 0]
    grown = loss_scaling(3e38, 1, 0, False, incr_every_n_steps=2, incr_ratio=2.0)
    assert grown["LossScaling"].tolist() == [np.float32(3e38)] and grown["OutGoodSteps"].tolist() == [0]
    assert grown["Out"].tolist() == [1, 1]


def test_bad_steps_count_up_to_decr_every_n_nan_or_inf():
    first = loss_scaling(8.0, 5, 0, True, decr_every_n_nan_or_inf=2, decr_ratio=0.25)
    assert (first["LossScaling"].tolist(), first["OutGoodSteps"].tolist(), first["OutBadSteps"].tolist()) == \
        ([8.0], [0], [1])
    second = loss_scaling(8.0, 0, 1, True, decr_every_n_nan_or_inf=2, decr_ratio=0.25)
    assert (second["LossScaling"].tolist(), second["OutBadSteps"].tolist()) == ([2.0], [0])


@pytest.mark.parametrize("scale, good, bad, found, attrs, expected", [
    (8.0, 0, 1, True, {"decr_every_n_nan_or_inf": 2, "decr_ratio": 1.5}, ([12.0], [0], [0])),
    (8.0, 0, 1, True, {"decr_every_n_nan_or_inf": 2, "decr_ratio": 0.0}, ([1.0], [0], [0])),
    (8.0, 1, 0, False, {"incr_every_n_steps": 2, "incr_ratio": 0.5}, ([4.0], [0], [0])),
    (8.0, -2, 0, False, {"incr_every_n_steps": -1}, ([16.0], [0], [0])),
    (8.0, 0, 0, True, {"decr_every_n_nan_or_inf": 0}, ([8.0], [0], [1])),
    (8.0, 2**31 - 1, 0, False, {}, ([8.0], [-(2**31)], [0])),
])
def test_update_loss_scaling_takes_any_attribute_and_wraps_its_counters_as_paddle(scale, good, bad, found, attrs,
                                                                                     expected):
    """Paddle 3.3.1 checks no range of the attributes (a decr_ratio over 1 grows the scale, one under 1 is not
    refused) and its int32 counters wrap: these are its outputs for these inputs, in place."""
    results = loss_scaling(scale, good, bad, found, **attrs)
    assert tuple(results[slot].tolist() for slot in ("LossScaling", "OutGoodSteps", "OutBadSteps")) == expected


def test_check_finite_and_unscale_zeroes_from_the_first_bad_tensor_on():
    """Tensors before the first one with an inf are unscaled; that one and those after are X * 0 (nan at inf)."""
    good, bad, later = np.array([2.0, 4.0], "float32"), np.array([np.inf, 1.0], "float32"), np.array([8.0], "float32")
    results = run("check_finite_and_unscale", {"X": [good, bad, later], "Scale": np.array([2.0], "float32")})
    assert results["FoundInfinite"].tolist() == [True]
    unscaled, zeroed, after = results["Out"]
    assert unscaled.tolist() == [1.0, 2.0] and np.isnan(zeroed[0]) and zeroed[1] == 0 and after.tolist() == [0]


def test_check_finite_and_unscale_of_float16_is_the_cuda_kernels():
    """float16 gradients (a GPU's program): the scale read as float32, every tensor unscaled in float32 and rounded,
    the one with an inf too and those after it (the CPU kernel's zeroing is not the CUDA one's)."""
    good, bad, later = (np.array(v, "float16") for v in ([2.0, 4.0], [np.inf, 1.0], [8.0]))
    results = run("check_finite_and_unscale", {"X": [good, bad, later], "Scale": np.array([2.0], "float32")})
    assert results["FoundInfinite"].tolist() == [True]
    unscaled, flagged, after = results["Out"]
    assert unscaled.dtype == np.float16 and unscaled.tolist() == [1.0, 2.0]
    assert flagged.tolist() == [np.inf, 0.5] and after.tolist() == [4.0]
    with pytest.raises(gradc.ExecutionError, match="reads it as float32"):
        run("check_finite_and_unscale", {"X": [good], "Scale": np.array([2.0], "float64")})


def test_dpsgd_draws_libstdcpps_minstd_uniforms():
    """std::minstd_rand seeded 7: first state 7 * 48271 = 337897; uniform_real_distribution<float> gives
    (state - 1) / (2^31 - 2) in float32; seeded the same, the noise is the same every run."""
    assert next(_uniforms(7, np.float32)) == np.float32(337896) / np.float32(2**31 - 2)
    assert gaussian_noise(7, 0.3, np.float32) == gaussian_noise(7, 0.3, np.float32)
    assert gaussian_noise(7, 0.3, np.float32) != gaussian_noise(8, 0.3, np.float32)


AVERAGE_STATE = ("sum_1", "sum_2", "sum_3", "num_accumulates", "old_num_accumulates", "num_updates")


def average_step(sums, accumulates=0, updates=0, in_place=True, **attrs) -> dict:
    """One average_accumulates on param [1, 2] and sums [s, s] for s in ``sums``; in place (as ModelAverage writes
    it) each out_ var is its in_ var, else the sums are written to fresh vars. -> name -> value after the op."""
    program, feed = gradc.Program(), {"param": np.array([1.0, 2.0], "float32")}
    feed.update({f"in_{name}": np.full(2, value, "float32") for name, value in zip(AVERAGE_STATE, sums)})
    feed.update({f"in_{name}": np.array([value]) for name, value in zip(AVERAGE_STATE[3:], (accumulates, 0, updates))})
    block = program.global_block
    for name, value in feed.items():
        block.create_var(name, list(value.shape), to_var_type(value.dtype))
    outputs = {f"out_{name}": f"in_{name}" if in_place or name.startswith(("num", "old")) else f"out_{name}"
               for name in AVERAGE_STATE}
    for name in set(outputs.values()) - set(feed):
        block.create_var(name, [2], to_var_type(np.dtype("float32")))
    block.append_op("average_accumulates", {slot: [slot] for slot in feed}, {k: [v] for k, v in outputs.items()},
                    attrs)
    values = gradc.Executor().run(program, feed, list(outputs.values()), gradc.Scope())
    return {slot: value.tolist() for slot, value in zip(outputs, values)}


def test_average_accumulates_moves_sum_1_into_sum_2_every_16384_updates():
    """Against the loss of precision of one long sum. Paddle's kernel reads an input after writing its output:
    in place the moved sum includes this step's parameter, into fresh vars it does not. The window
    (min_average_window 10000 by default) has not filled. Paddle 3.3.1's values for these inputs."""
    for in_place, moved in ((True, [111.0, 112.0]), (False, [110.0, 110.0])):
        results = average_step((10, 100, 1000), accumulates=5, updates=16383, in_place=in_place, average_window=0.5)
        assert results == {"out_sum_1": [0, 0], "out_sum_2": moved, "out_sum_3": [1000, 1000],
                           "out_num_accumulates": [6], "out_old_num_accumulates": [0], "out_num_updates": [16384]}


@pytest.mark.parametrize("average_window", [float("inf"), float("nan"), float("-inf"), 1e30])
def test_an_average_window_out_of_int64_fills_at_once_as_in_paddle(average_window):
    """num_updates * average_window out of int64's range converts to INT64_MIN on x86 (Paddle 3.3.1 on CPU):
    the first step already moves the sums into sum_3 (with this step's parameter in place, without it not)."""
    for in_place, moved in ((True, [111.0, 112.0]), (False, [110.0, 110.0])):
        results = average_step((10, 100, 1000), in_place=in_place, average_window=average_window,
                               min_average_window=0)
        assert results == {"out_sum_1": [0, 0], "out_sum_2": [0, 0], "out_sum_3": moved,
                           "out_num_accumulates": [0], "out_old_num_accumulates": [1], "out_num_updates": [1]}


def test_average_accumulates_counters_wrap_as_paddles_int64():
    results = average_step((0, 0, 0), accumulates=2**63 - 1, average_window=0.5, min_average_window=10)
    assert results["out_num_accumulates"] == [-(2**63)] and results["out_sum_1"] == [1.0, 2.0]

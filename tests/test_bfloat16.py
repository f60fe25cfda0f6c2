"""bfloat16 (gradc.bfloat16): paddle.static.amp.bf16's training programs train in gradc as in Paddle 3.3.1
(tools/paddle_bf16_fixtures.py -> tests/data/paddle/bf16, O1 with three optimizers and pure bfloat16), every
bfloat16 value Paddle's rounding of its float32 computation; feeds, parameter files and the rounding's edges."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.bfloat16 import from_bits, round_parameters, round_to_bfloat16, to_bits
from gradc.io.pdiparams import read_params, write_params

DATA = Path(__file__).parent / "data" / "paddle" / "bf16"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "train.pb").is_file())
ONE_ULP = 2.0 ** -7   # the spacing of bfloat16 numbers relative to their size, at most


def arrays(case: str, part: str) -> dict[str, np.ndarray]:
    with np.load(DATA / case / f"{part}.npz") as archive:
        return {name: archive[name] for name in archive.files}


def value(array: np.ndarray) -> np.ndarray:
    """A fixture array as gradc holds it: Paddle's bfloat16 bits (uint16) as float32 values."""
    return from_bits(array) if array.dtype == np.uint16 else array


def assert_like_paddle(got, paddle_array, what: str) -> None:
    """float32 values within float32 rounding of Paddle's; bfloat16 values Paddle's bit for bit, but for a value a
    float32 rounding difference upstream may tip to the neighbouring bfloat16 number (a BLAS of another summation
    order): one in a hundred at most, and that one a bfloat16 spacing away."""
    got, expected = np.asarray(got).reshape(paddle_array.shape), value(paddle_array)
    if paddle_array.dtype != np.uint16:
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7, err_msg=what)
        return
    assert got.dtype == np.float32 and not np.any(got.view(np.uint32) & 0xFFFF), f"{what}: not bfloat16 numbers"
    np.testing.assert_allclose(got, expected, rtol=ONE_ULP, atol=1e-30, err_msg=what)
    assert np.count_nonzero(got != expected) <= got.size // 100, f"{what}: {np.count_nonzero(got != expected)} differ"


@pytest.mark.parametrize("case", CASES)
def test_paddles_bfloat16_training_program_trains_like_paddle(case):
    meta = json.loads((DATA / case / "meta.json").read_text())
    program = gradc.load(DATA / case / "train.pb")
    scope = gradc.Scope()
    for name, array in arrays(case, "init").items():
        scope[name] = value(array)
    feeds, states, values = arrays(case, "feeds"), arrays(case, "states"), arrays(case, "values")
    losses = np.load(DATA / case / "losses.npy")
    executor = gradc.Executor()
    for step in range(meta["steps"]):
        fetch = [meta["loss"], *(values if step == 0 else [])]
        got = executor.run(program, {name: feeds[name][step] for name in feeds}, fetch, scope)
        assert_like_paddle(got[0], losses[step], f"step {step} loss")
        for name, result in zip(fetch[1:], got[1:]):
            assert_like_paddle(result, values[name], f"step {step} {name}")
        for name, states_of in states.items():
            assert_like_paddle(scope[name], states_of[step], f"after step {step}: {name}")
    assert meta["bfloat16_vars"] and all(program.global_block.var(n).dtype == gradc.VarType.BF16
                                         for n in meta["bfloat16_vars"])


@pytest.mark.parametrize("case", [case for case in CASES if (DATA / case / "forward.pb").exists()])
def test_gradcs_backward_of_paddles_bfloat16_forward_gives_paddles_gradients(case):
    """append_backward on the forward with decorate_bf16's casts: Paddle's backward ops, and on the first batch every
    activation and gradient Paddle's training program computed (bfloat16 ones and the float32 parameter grads)."""
    meta = json.loads((DATA / case / "meta.json").read_text())
    program = gradc.load(DATA / case / "forward.pb")
    gradc.append_backward(program, meta["loss"])
    paddles = [op for op in gradc.load(DATA / case / "train.pb").global_block.ops if op.attr("op_role") != 2]
    assert [op.type for op in program.global_block.ops] == [op.type for op in paddles]
    scope = gradc.Scope()
    for name, array in arrays(case, "init").items():
        scope[name] = value(array)
    feeds, values = arrays(case, "feeds"), arrays(case, "values")
    got = gradc.Executor().run(program, {name: feeds[name][0] for name in feeds}, list(values), scope)
    assert any(name.endswith("w_0@GRAD") for name in values)
    for name, result in zip(values, got):
        assert_like_paddle(result, values[name], name)


OPS = json.loads((DATA / "ops" / "meta.json").read_text())
# Paddle 3.3.1's bfloat16 elementwise_div_grad flips the sign of dY: dOut * Out / Y, from its rounded Out (its
# float32 kernel gives -dOut * Out / Y); gradc's is -dOut * X / Y^2 in float32, rounded once
PADDLE_SIGN_FLIPPED = {("divide", "y@GRAD")}
# Paddle's bfloat16 hard_swish_grad (oneDNN's) computes its slope in another float32 order: 4 of 768 values tip to
# the neighbouring bfloat16 number
FLOAT32_ORDER = {("hardswish", "x@GRAD")}


def op_run(name: str, program: gradc.Program, w) -> list[np.ndarray]:
    """gradc's append_backward and run of an ops/ program: its result and grads, as Paddle's run fetched them."""
    out, loss, grads = OPS["ops"][name]
    gradc.append_backward(program, loss, [grad.removesuffix("@GRAD") for grad in grads])
    with np.load(DATA / "ops" / "inputs.npz") as inputs:
        feed = {"x": inputs["x"], "y": inputs["y"], "w": w}
    return gradc.Executor().run(program, feed, [out, *grads], gradc.Scope())


@pytest.mark.parametrize("name", sorted(set(OPS["ops"]) - set(OPS["paddle_fails"]) - set(OPS["paddle_off"])))
def test_each_op_in_bfloat16_gives_paddles_values_and_gradients(name):
    """Every op Paddle 3.3.1 runs in bfloat16 on CPU, forward and grad, compiled by gradc: Paddle's bits. gelu's
    far negative tail (x < -3, where 1 + erf cancels in float32) differs in a few values, nearer the exact ones, and
    its grad in a few by a bfloat16 spacing;
    divide's dY is Paddle's negated (PADDLE_SIGN_FLIPPED), to bfloat16 rounding; hardswish's grad is Paddle's but
    for a few values a bfloat16 spacing away (FLOAT32_ORDER). dropout_downscale's 1 - p and full_like's value are
    rounded to bfloat16 first, as Paddle's kernels do."""
    with np.load(DATA / "ops" / f"{name}.npz") as archive:
        paddle = {key: archive[key] for key in archive.files}
    got = op_run(name, gradc.load(DATA / "ops" / f"{name}.pb"), paddle["w"])
    with np.load(DATA / "ops" / "inputs.npz") as inputs:
        x = round_to_bfloat16(inputs["x"])
    for key, value in zip(["out", *OPS["ops"][name][2]], got):
        if (name, key) in PADDLE_SIGN_FLIPPED:
            np.testing.assert_allclose(value, -paddle[key], rtol=2**-6, atol=2**-6 * np.max(np.abs(paddle[key])))
            assert np.all(np.sign(value) == -np.sign(paddle[key])), key
        elif (name, key) in FLOAT32_ORDER:
            assert_like_paddle(value, to_bits(paddle[key]), key)
        elif name == "gelu":
            differ = value != paddle[key]
            assert np.count_nonzero(differ) <= value.size // 25, key
            if key == "out":   # all in the tail, where gradc's is the nearer to gelu's exact value
                assert np.all(x[differ] < -3)
                exact = np.array([v * 0.5 * math.erfc(-v / math.sqrt(2)) for v in x[differ].astype(float)])
                assert np.all(np.abs(value[differ] - exact) < np.abs(paddle[key][differ] - exact))
            else:
                np.testing.assert_allclose(value, paddle[key], rtol=0, atol=1e-6 * np.max(np.abs(paddle[key])))
        else:
            np.testing.assert_array_equal(value, paddle[key], err_msg=key)


def test_a_float32_sum_to_bfloat16_is_the_exact_sum_rounded_where_paddle_adds_in_bfloat16():
    """reduce_sum of a float32 X with out_dtype bfloat16: Paddle 3.3.1 casts X and adds in bfloat16, rounding each
    partial sum; gradc sums in float32 and rounds once: the exact sum's nearest bfloat16 number, never farther from
    it than Paddle's. The grad is Paddle's."""
    with np.load(DATA / "ops" / "sum_to_bfloat16.npz") as archive:
        paddle = {key: archive[key] for key in archive.files}
    got = op_run("sum_to_bfloat16", gradc.load(DATA / "ops" / "sum_to_bfloat16.pb"), paddle["w"])
    with np.load(DATA / "ops" / "inputs.npz") as inputs:
        exact = round_to_bfloat16(inputs["x"]).astype("float64").sum(axis=1)
    np.testing.assert_array_equal(got[0], round_to_bfloat16(exact))
    assert np.all(np.abs(got[0] - exact) <= np.abs(paddle["out"] - exact)) and np.any(got[0] != paddle["out"])
    np.testing.assert_array_equal(got[1], paddle["x@GRAD"])


def test_dropout_in_training_divides_by_the_bfloat16_keep_probability_as_paddle():
    """Paddle's bfloat16 dropout (upscale_in_train, p 0.3) divides a kept unit, and its grad, by 1 - p cast to
    bfloat16 (0.69921875), not by 0.7: where both gradc's mask and Paddle's keep a unit, the values are Paddle's
    bits; where gradc's drops one, 0."""
    with np.load(DATA / "ops" / "dropout_train.npz") as archive:
        paddle = {key: archive[key] for key in archive.files}
    out, loss, grads = OPS["random_ops"]["dropout_train"]
    program = gradc.load(DATA / "ops" / "dropout_train.pb")
    gradc.append_backward(program, loss, ["x"])
    with np.load(DATA / "ops" / "inputs.npz") as inputs:
        feed = {"x": inputs["x"], "y": inputs["y"], "w": paddle["w"]}
    got = gradc.Executor().run(program, feed, [out, *grads], gradc.Scope())
    kept, paddle_kept = got[0] != 0, paddle["out"] != 0
    both = kept & paddle_kept
    assert 0.4 < both.mean() < 0.6
    for key, value in zip(["out", *grads], got):
        np.testing.assert_array_equal(value[both], paddle[key][both], err_msg=key)
        assert not np.any(value[~kept]), key


@pytest.mark.parametrize("name", sorted(OPS["paddle_fails"]))
def test_ops_paddle_cannot_run_in_bfloat16_run_within_its_rounding_of_float32(name):
    """Paddle 3.3.1 has no CPU bfloat16 kernel of these ops or their grads (meta.json says which); gradc runs them,
    within a few bfloat16 roundings of the same program in float32."""
    program = gradc.load(DATA / "ops" / f"{name}.pb")
    as_float32 = program.clone()
    for var in as_float32.global_block.vars.values():
        var.dtype = gradc.VarType.FP32 if var.dtype == gradc.VarType.BF16 else var.dtype
    for op in as_float32.global_block.ops:
        for attr in ("in_dtype", "out_dtype"):
            if op.attr(attr) == gradc.VarType.BF16:
                op.set_attr(attr, int(gradc.VarType.FP32))
    w = np.random.default_rng(0).standard_normal(program.global_block.var(OPS["ops"][name][0]).shape).astype("f4")
    for key, low, high in zip(["out", *OPS["ops"][name][2]], op_run(name, program, w), op_run(name, as_float32, w)):
        assert not np.any(low.view(np.uint32) & 0xFFFF), f"{key}: not bfloat16 numbers"
        np.testing.assert_allclose(low, high, rtol=2**-6, atol=2**-6 * np.max(np.abs(high)), err_msg=key)
        assert not np.array_equal(low, high), key


def test_rounding_is_to_nearest_ties_to_even_as_paddles_cast():
    """The bits Paddle 3.3.1's cast to bfloat16 gave for these float32 values (a tie rounds to the even number,
    NaN is 0x7FFF, a value past bfloat16's largest rounds to it or to inf)."""
    values = np.array([1 + 2**-8, 1 + 3 * 2**-9, 1 + 2**-9, 1 + 2**-7 + 2**-9, -1 - 2**-9 - 2**-12, 3.0e38, np.nan,
                       1.0, 3.4e38, -np.inf], "float32")
    paddle = [0x3F80, 0x3F81, 0x3F80, 0x3F81, 0xBF80, 0x7F62, 0x7FFF, 0x3F80, 0x7F80, 0xFF80]
    assert to_bits(values).tolist() == paddle
    rounded = round_to_bfloat16(values)
    np.testing.assert_array_equal(rounded[~np.isnan(values)], from_bits(paddle)[~np.isnan(values)])
    assert np.isnan(rounded[6])
    tiny_payload = np.array([0x7F800001], np.uint32).view(np.float32)   # a NaN whose payload the rounding drops
    assert np.isnan(round_to_bfloat16(tiny_payload)[0])


def test_a_bfloat16_feed_takes_paddles_bits_or_float32_values():
    from gradc.executor.feeding import feed_values

    program = gradc.load(DATA / "pure_sgd" / "train.pb")
    block = program.global_block
    x = np.random.default_rng(0).standard_normal((8, 64)).astype("float32")
    scope = gradc.Scope()
    feed_values(block, {"x": x}, scope)
    np.testing.assert_array_equal(scope["x"], round_to_bfloat16(x))
    feed_values(block, {"x": to_bits(x)}, scope)
    np.testing.assert_array_equal(scope["x"], round_to_bfloat16(x))
    with pytest.raises(gradc.ExecutionError, match="feed var 'x' is float64, but block 0 declares bfloat16"):
        feed_values(block, {"x": x.astype("float64")}, scope)
    feed_values(block, {"x": x.tolist()}, scope)   # Python lists are converted, as to float32
    np.testing.assert_array_equal(scope["x"], round_to_bfloat16(x))


def test_a_parameter_file_holds_bfloat16_as_paddle_writes_it(tmp_path):
    """Two bytes a value and data type BF16 in the tensor's description; read back, the same bfloat16 values."""
    program = gradc.load(DATA / "pure_sgd" / "train.pb")
    init = {name: value(array) for name, array in arrays("pure_sgd", "init").items()}
    path = tmp_path / "model.pdiparams"
    write_params(path, program, init)
    sizes = sum(array.size * (2 if array.dtype == np.uint16 else 4) for array in arrays("pure_sgd", "init").values())
    assert sizes < path.stat().st_size < sizes + 64 * len(init)
    back = read_params(path, program)
    for name, array in init.items():
        np.testing.assert_array_equal(back[name], array)
        assert back[name].dtype == np.float32


def test_a_pure_bfloat16_programs_startup_values_are_rounded_as_amp_init_rounds_them():
    """Paddle's startup program makes float32 parameters and amp_init casts them; gradc's Trainer (and gradc run)
    round them after the startup programs (gradc.bfloat16.round_parameters)."""
    program = gradc.load(DATA / "pure_sgd" / "train.pb")
    startup = gradc.load(DATA / "pure_sgd" / "startup.pb")
    scope = gradc.Scope()
    gradc.Executor().run(startup, scope=scope)
    drawn = {name: scope[name] for name in ("fc_0.w_0", "fc_1.w_0")}
    assert all(np.any(w.view(np.uint32) & 0xFFFF) for w in drawn.values())   # float32 draws, not bfloat16 numbers
    assert sorted(round_parameters(program, scope)) == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]
    for name, weight in drawn.items():
        np.testing.assert_array_equal(scope[name], round_to_bfloat16(weight))
    trainer = gradc.Trainer(program, startup, seed=0)
    assert all(not np.any(trainer.scope[name].view(np.uint32) & 0xFFFF) and np.any(trainer.scope[name])
               for name in drawn)


def test_a_bfloat16_program_run_past_the_straight_line_threshold_keeps_rounding():
    """After STRAIGHT_AFTER_RUNS runs a plan becomes generated code: its bfloat16 vars are still rounded, the same
    steps as a fresh plan each run."""
    from gradc.executor.executor import STRAIGHT_AFTER_RUNS

    program, feeds = gradc.load(DATA / "o1_sgd" / "train.pb"), arrays("o1_sgd", "feeds")
    scopes = [gradc.Scope(), gradc.Scope()]
    for scope in scopes:
        for name, array in arrays("o1_sgd", "init").items():
            scope[name] = value(array)
    kept = gradc.Executor()
    for step in range(STRAIGHT_AFTER_RUNS + 5):
        feed = {name: feeds[name][step % 3] for name in feeds}
        ours = kept.run(program, feed, ["mean_1.tmp_0", "fc_0.tmp_1"], scopes[0])
        fresh = gradc.Executor().run(program, feed, ["mean_1.tmp_0", "fc_0.tmp_1"], scopes[1])
        assert all(np.array_equal(a, b) for a, b in zip(ours, fresh)), step
        assert not np.any(ours[1].view(np.uint32) & 0xFFFF)
    plan = next(iter(kept.plans(program.global_block).values()))
    assert plan.straight is not None


def test_gradc_run_takes_paddles_bfloat16_bits_in_feeds_and_parameter_files(tmp_path):
    """`gradc run` of Paddle's pure bfloat16 program with its uint16 feed and parameters (as Paddle hands them to
    numpy) gives Paddle's first loss; float32 parameters of another dtype are refused in one line."""
    feeds, init = arrays("pure_sgd", "feeds"), arrays("pure_sgd", "init")
    np.savez(tmp_path / "feed.npz", **{name: feeds[name][0] for name in feeds})
    np.savez(tmp_path / "params.npz", **init)
    out = tmp_path / "out.npz"
    command = [sys.executable, "-m", "gradc", "run", str(DATA / "pure_sgd" / "train.pb"), "--feed",
               str(tmp_path / "feed.npz"), "--params", str(tmp_path / "params.npz"), "--fetch", "mean_1.tmp_0",
               "--out", str(out)]
    ran = subprocess.run(command, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    with np.load(out) as results:
        np.testing.assert_array_equal(results["mean_1.tmp_0"], value(np.load(DATA / "pure_sgd" / "losses.npy")[0]))
    np.savez(tmp_path / "params.npz", **{**init, "fc_0.w_0": value(init["fc_0.w_0"]).astype("float64")})
    refused = subprocess.run(command, capture_output=True, text=True)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert ("'fc_0.w_0', read first by block 0, op 0 (mul), is float64, but the program declares bfloat16"
            in refused.stderr)


def test_a_parameter_npz_of_paddles_bfloat16_bits_loads_as_their_values(tmp_path):
    """Paddle hands bfloat16 tensors to numpy (and paddle.save pickles them) as uint16 bits: load_params (and
    gradc run --params) takes them as bits, not as integers; float32 values are rounded; other dtypes refused."""
    program = gradc.load(DATA / "pure_sgd" / "train.pb")
    init = arrays("pure_sgd", "init")
    assert init["fc_0.w_0"].dtype == np.uint16
    np.savez(tmp_path / "bits.npz", **init)
    scope = gradc.Scope()
    gradc.load_params(scope, tmp_path / "bits.npz", program)
    for name, array in init.items():
        np.testing.assert_array_equal(scope[name], value(array))
    feeds = arrays("pure_sgd", "feeds")
    loss = gradc.Executor().run(program, {name: feeds[name][0] for name in feeds}, ["mean_1.tmp_0"], scope)[0]
    assert_like_paddle(loss, np.load(DATA / "pure_sgd" / "losses.npy")[0], "step 0 loss")
    weight = np.random.default_rng(0).standard_normal((64, 96)).astype("float32")
    np.savez(tmp_path / "floats.npz", **{**init, "fc_0.w_0": weight})
    gradc.load_params(scope, tmp_path / "floats.npz", program)
    np.testing.assert_array_equal(scope["fc_0.w_0"], round_to_bfloat16(weight))
    np.savez(tmp_path / "doubles.npz", **{**init, "fc_0.w_0": weight.astype("float64")})
    with pytest.raises(gradc.FormatError,
                       match=r"'fc_0.w_0', read first by block 0, op 0 \(mul\), is float64, but the program declares "
                             r"bfloat16"):
        gradc.load_params(scope, tmp_path / "doubles.npz", program)


def test_sgd_of_a_sparse_bfloat16_gradient_steps_each_row_in_turn_as_paddle():
    """A bfloat16 embedding table's SelectedRows gradient with repeated ids: Paddle's sgd subtracts each row's
    rounded step in turn, rounding each difference (not the repeats' sum once): its table after two steps, bit
    for bit."""
    program = gradc.load(DATA / "sparse" / "main.pb")
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(gradc.load(DATA / "sparse" / "startup.pb"), scope=scope)
    round_parameters(program, scope)
    with np.load(DATA / "sparse" / "values.npz") as archive:
        ids, tables = archive["ids"], archive["tables"]
    np.testing.assert_array_equal(scope["table"], from_bits(tables[0]))
    for step, feed in enumerate(ids):
        executor.run(program, {"ids": feed}, [], scope)
        np.testing.assert_array_equal(scope["table"], from_bits(tables[step + 1]), err_msg=f"step {step}")


def test_gradc_check_of_a_bfloat16_program_widens_its_bfloat16_vars():
    """gradc check (compare_program with float64) widens bfloat16 vars to float64 like float32 ones: kept in
    bfloat16, their rounding swallowed every central difference and each gradient was a "mismatch" against 0. The
    pure program's forward, fed Paddle's uint16 bits for its bfloat16 input and parameters."""
    from gradc.gradcheck import compare_program
    from gradc.training.programs import forward_part

    forward = forward_part(gradc.load(DATA / "pure_sgd" / "train.pb"))
    feeds = arrays("pure_sgd", "feeds")
    init = arrays("pure_sgd", "init")
    assert feeds["x"].dtype == init["fc_0.w_0"].dtype == np.uint16
    _, checks = compare_program(forward, {name: feeds[name][0] for name in feeds}, None, "mean_1.tmp_0", init,
                                max_elements=5, float64=True)
    assert sorted(check.var for check in checks) == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]
    assert all(check.mismatch is None for check in checks), checks

"""gradc's own mixed precision (gradc.passes.amp, `gradc compile --amp`) against paddle.static.amp.decorate
(tools/paddle_amp_compile.py): from the float32 forward Paddle saved before decorate, gradc writes the ops, casts, var
dtypes and loss scaling of the program a CUDA build of Paddle 3.3.1 writes, and that program trains to Paddle's
numbers: bit for bit as Paddle's own decorated program in gradc's executor, and within the format's rounding of
Paddle's CPU run of the same decorate (float32: its CPU build casts nothing) with the loss scale exactly."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import gradc
from amp_fixtures import (
    AS_PADDLE,
    CASES,
    CPU_RUNS,
    DATA,
    block_slots,
    case_arguments,
    case_meta,
    case_program,
    compile_case,
    forward_file,
    normalised,
    paddle_value,
    train_case,
)
from cli_inprocess import gradc_cli
from gradc.optimizers import make_optimizer
from gradc.passes import AmpOptions, AmpPass, BackwardPass, PassConditionError

# measured against Paddle's float32 run: losses to 1.7e-3 (float16) and 5.0e-3 (bfloat16) relative, the trained
# parameters to 3.2e-4 and 3.4e-3 of the model's norm
LOSS_RTOL = {"float16": 2e-3, "bfloat16": 6e-3}
MODEL_RTOL = {"float16": 5e-4, "bfloat16": 7e-3}
# the branches and the loop at O2 (every op float16, three tanh steps): losses to 8.3e-3, parameters to 3.7e-3 of the
# norm (Paddle's own program trains to gradc's numbers bit for bit: the rounding is float16's)
SUB_BLOCK_RTOL = (1.2e-2, 5e-3)


def test_the_cases():
    assert CASES == ["block_o2_bfloat16_adamw", "block_o2_float16_adam", "block_o2_float16_custom_momentum",
                     "block_o2_float16_master_adam", "cnn_o1_float16_momentum", "cnn_o2_float16_momentum",
                     "cond_o1_float16_adam", "cond_o2_float16_sgd", "loop_o1_float16_sgd", "loop_o2_float16_adam",
                     "mlp_o0_float16_adam", "mlp_o1_bfloat16_sgd", "mlp_o1_float16_adam", "mlp_o2_bfloat16_sgd",
                     "zoo_o1_float16_adam", "zoo_o1_float16_custom_adam", "zoo_o2_bfloat16_master_sgd",
                     "zoo_o2_bfloat16_momentum", "zoo_od_float16_sgd"]
    no_cpu_run = ["block_o2_float16_custom_momentum", "zoo_o2_bfloat16_momentum"]
    assert [case for case in CASES if case not in CPU_RUNS] == no_cpu_run
    assert all("no kernels" in case_meta(case)["cpu_error"] for case in no_cpu_run)


@pytest.mark.parametrize("case", AS_PADDLE)
def test_gradc_writes_the_program_decorate_writes(case, tmp_path):
    ours, paddles = compile_case(case, tmp_path), case_program(case, "train")
    assert [op.type for op in ours.global_block.ops] == case_meta(case)["ops_train"]
    assert normalised(ours) == normalised(paddles)
    declared = {name: (var.dtype, var.shape, bool(var.persistable)) for name, var in ours.global_block.vars.items()}
    assert declared == {name: (var.dtype, var.shape, bool(var.persistable))
                        for name, var in paddles.global_block.vars.items()}
    attrs = ("in_dtype", "out_dtype", "incr_every_n_steps", "decr_every_n_nan_or_inf", "incr_ratio", "decr_ratio",
             "stop_update", "multi_precision", "dst_place_type")
    assert [{a: op.attrs.get(a) for a in attrs} for op in ours.global_block.ops] == \
        [{a: op.attrs.get(a) for a in attrs} for op in paddles.global_block.ops]
    assert len(ours.blocks) == len(paddles.blocks)
    for block, theirs in zip(ours.blocks[1:], paddles.blocks[1:]):   # the branches, loop bodies and their grads
        assert block_slots(block) == block_slots(theirs), block.idx
        shared = set(block.vars) & set(theirs.vars)
        assert {name: block.vars[name].dtype for name in shared} == {name: theirs.vars[name].dtype for name in shared}


def test_the_ops_that_run_in_the_low_format(tmp_path):
    """O1: the matmuls (white) compute in float16, the loss (black) in float32, relu (gray) follows the matmul's add;
    O2: every parameter but layer norm's is float16, each with a float32 master weight."""
    block = compile_case("mlp_o1_float16_adam", tmp_path).global_block

    def dtype_of(op_type: str, slot: str, nth: int = 0):
        op = [op for op in block.ops if op.type == op_type][nth]
        return block.var((op.outputs.get(slot) or op.inputs[slot])[0]).dtype

    FP16, FP32 = gradc.VarType.FP16, gradc.VarType.FP32
    assert [dtype_of("matmul_v2", "Out", n) for n in (0, 1)] == [FP16, FP16]
    assert dtype_of("relu", "Out") == FP16 and dtype_of("softmax_with_cross_entropy", "Logits") == FP32
    assert block.var("linear_0.w_0").dtype == FP32   # O1 keeps the parameters float32
    o2 = compile_case("block_o2_float16_adam", tmp_path).global_block
    params = {name: var.dtype for name, var in o2.vars.items() if var.is_parameter}
    assert {name for name, dtype in params.items() if dtype == FP32} == {"layer_norm_0.w_0", "layer_norm_0.b_0"}
    assert {name + "_fp32_master_0" for name, dtype in params.items() if dtype == FP16} == \
        {name for name in o2.vars if name.endswith("_fp32_master_0")}


@pytest.mark.parametrize("case", AS_PADDLE)
def test_it_trains_bit_for_bit_as_paddles_decorated_program(case, tmp_path):
    ours, scales, state = train_case(compile_case(case, tmp_path), case)
    theirs, their_scales, their_state = train_case(case_program(case, "train"), case)
    np.testing.assert_array_equal(ours, theirs)
    assert scales == their_scales
    for name, value in their_state.items():
        np.testing.assert_array_equal(state[name], value, err_msg=name)


@pytest.mark.parametrize("case", CPU_RUNS)
def test_it_trains_to_paddles_numbers(case):
    """The Python API's pass; against Paddle's float32 run: the loss scale exactly, losses and parameters at the
    format's precision (a bad step's loss is Paddle's inf or NaN: not compared)."""
    meta = case_meta(case)
    program = case_program(case, "forward")
    optimizer = {"adam": make_optimizer("adam", learning_rate=0.01),
                 "momentum": make_optimizer("momentum", learning_rate=0.05, momentum=0.9),
                 "sgd": make_optimizer("sgd", learning_rate=0.1),
                 "adamw": make_optimizer("adamw", learning_rate=0.01, weight_decay=0.05)}[case.rsplit("_", 1)[1]]
    options = AmpOptions(meta["level"], meta["dtype"], use_dynamic_loss_scaling=meta["dtype"] == "float16",
                         master_grad=meta["master_grad"], **meta["options"],
                         **{name: tuple(op_types) for name, op_types in meta["lists"].items()})
    startup = AmpPass(options, BackwardPass(), optimizer)(program)
    assert {op.output("Out")[0] for op in startup.global_block.ops} >= {"loss_scaling_0", "learning_rate_0"}
    losses, scales, state = train_case(program, case)
    assert scales == meta["loss_scaling_0"]
    good = [step for step in range(meta["steps"]) if step not in meta["bad_steps"]]
    loss_rtol, model_rtol = (SUB_BLOCK_RTOL if len(program.blocks) > 1 and meta["level"] == "O2" else
                             (LOSS_RTOL[meta["dtype"]], MODEL_RTOL[meta["dtype"]]))
    np.testing.assert_allclose(np.array(losses)[good], np.array(meta["losses"])[good], rtol=loss_rtol)
    with np.load(DATA / case / "final.npz") as final:
        params = sorted(name for name, var in program.global_block.vars.items() if var.is_parameter)
        ours = np.concatenate([np.asarray(state[name], np.float64).ravel() for name in params])
        theirs = np.concatenate([np.asarray(final[name], np.float64).ravel() for name in params])
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))   # the cnn's running statistics at the inf
    finite = np.isfinite(theirs)
    share = np.linalg.norm(ours[finite] - theirs[finite]) / np.linalg.norm(theirs[finite])
    assert share < model_rtol, share


def test_an_overflow_step_is_skipped_and_the_scale_halves(tmp_path):
    """Adam: at the steps with an inf in the batch (2 and 3) no parameter, moment or beta power moves (SkipUpdate)
    and the scale halves; two finite steps before doubled it (incr_every_n_steps 2)."""
    program = compile_case("mlp_o1_float16_adam", tmp_path)
    _, _, good = train_case(program, "mlp_o1_float16_adam", steps=2)
    for steps in (3, 4):
        _, scales, state = train_case(program, "mlp_o1_float16_adam", steps=steps)
        assert scales == [1024.0, 2048.0, 1024.0, 512.0][:steps]
        for name, value in good.items():
            if name not in ("loss_scaling_0", "num_good_steps_0", "num_bad_steps_0"):
                np.testing.assert_array_equal(state[name], value, err_msg=name)
    moved = train_case(program, "mlp_o1_float16_adam", steps=5)[2]["linear_0.w_0"]
    assert not np.array_equal(moved, good["linear_0.w_0"])


def test_the_pass_requires_a_forward_program():
    program = case_program("mlp_o1_float16_adam", "forward")
    gradc.append_backward(program)
    with pytest.raises(PassConditionError, match="pass 'amp': the program already has backward ops"):
        AmpPass(AmpOptions(), BackwardPass(), make_optimizer("adam"))(program)


def test_its_postcondition_catches_a_white_op_left_in_float32(monkeypatch):
    """A rewrite that casts nothing leaves matmul_v2 reading float32: the pass's ensures() says where."""
    import gradc.passes.amp as amp

    monkeypatch.setattr(amp, "rewrite", lambda *arguments: 0)
    program = case_program("mlp_o1_float16_adam", "forward")
    with pytest.raises(PassConditionError, match=r"block 0, op 0 \(matmul_v2, on the white list\) reads x as float32"):
        AmpPass(AmpOptions(), BackwardPass(), make_optimizer("adam"))(program)


def test_bfloat16_scales_no_loss_when_asked_to_scale_dynamically():
    """As decorate: bfloat16 with use_dynamic_loss_scaling=True gets a scale of 1, so no loss-scaling op at all."""
    program = case_program("mlp_o1_bfloat16_sgd", "forward")
    options = AmpOptions("O1", "bfloat16", init_loss_scaling=1024.0, use_dynamic_loss_scaling=True)
    assert (options.dynamic, options.scaled) == (False, False)
    with pytest.warns(gradc.GradcWarning, match="bfloat16 has no dynamic loss scaling"):
        AmpPass(options, BackwardPass(), make_optimizer("sgd"))(program)
    types = {op.type for op in program.global_block.ops}
    assert "cast" in types and not types & {"elementwise_mul", "check_finite_and_unscale", "update_loss_scaling"}


@pytest.mark.parametrize("arguments, message", [
    (["--incr-ratio", "0.5"], "--incr-ratio must be a number > 1, not 0.5"),
    (["--decr-ratio", "1.5"], "--decr-ratio must be a number in (0, 1), not 1.5"),
    (["--incr-every-n-steps", "0"], "--incr-every-n-steps must be an integer >= 1, not 0"),
    (["--decr-every-n-nan-or-inf", "-2"], "--decr-every-n-nan-or-inf must be an integer >= 1, not -2"),
    (["--init-loss-scaling", "-1"], "--init-loss-scaling must be a number > 0, not -1.0"),
    (["--init-loss-scaling", "inf"], "--init-loss-scaling must be a number > 0, not inf"),
    (["--custom-white-list", "matmul_v3"],
     "--custom-white-list names 'matmul_v3', which is no op type (did you mean 'matmul_v2'?)"),
    (["--custom-white-list", "exp", "--custom-black-list", "exp"],
     "--custom-white-list and --custom-black-list both name 'exp'"),
])
def test_a_bad_loss_scaling_value_is_one_line(arguments, message, tmp_path):
    out = tmp_path / "train.pb"
    done = gradc_cli("compile", forward_file("mlp_o1_float16_adam", tmp_path), "-o", out, "--optimizer", "adam",
                     "--amp", "O1", *arguments)
    assert (done.returncode, done.stderr, done.stdout) == (1, f"gradc: error: {message}\n", "")
    assert not out.exists() and not (tmp_path / "train.startup.pb").exists()


@pytest.mark.parametrize("arguments, message", [
    (["--optimizer", "adam", "--incr-ratio", "3"], "--incr-ratio: only with --amp"),
    (["--optimizer", "adam", "--amp-dtype", "bfloat16"], "--amp-dtype: only with --amp"),
    (["--amp", "O1"], "--amp: needs --optimizer"),
    (["--optimizer", "adam", "--master-grad"], "--master-grad: only with --amp"),
    (["--optimizer", "adam", "--amp", "O1", "--loss", "a", "--loss", "b"], "--amp: one --loss"),
    (["--optimizer", "adam", "--amp", "O3"], "'O3' is not one of 'o0', 'o1', 'o2'"),
])
def test_a_misused_amp_option_is_a_usage_error(arguments, message, tmp_path):
    out = tmp_path / "train.pb"
    done = gradc_cli("compile", forward_file("mlp_o1_float16_adam", tmp_path), "-o", out, *arguments)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert not out.exists()


@pytest.mark.parametrize("model, level", [("cnn", "O1"), ("mlp", "O2")])
def test_the_mixed_precision_weeks_programs(model, level, tmp_path):
    """docs/tools.md's mixed-precision week: its float32 forwards compile to the CUDA build's decorated programs."""
    week = Path(__file__).parent / "data" / "paddle" / "user_week26"
    for name in ("forward", "amp"):
        (tmp_path / f"{name}.pb").write_bytes(gzip.decompress((week / f"{model}_{name}.pb.gz").read_bytes()))
    done = gradc_cli("compile", tmp_path / "forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "adam", "--lr",
                     "0.01", "--amp", level, "--init-loss-scaling", "1024", "--incr-every-n-steps", "2")
    assert done.returncode == 0, done.stderr
    assert normalised(gradc.load(tmp_path / "train.pb")) == normalised(gradc.load(tmp_path / "amp.pb"))


@pytest.mark.parametrize("case", ["block_o2_float16_adam", "block_o2_bfloat16_adamw"])
def test_the_o2_startup_rounds_the_parameters_as_amp_init(case, tmp_path):
    """From float32 parameters (a float32 startup or parameter file), gradc's startup program leaves each
    low-precision parameter and its master as Paddle's startup and amp_init leave them."""
    done = gradc_cli("compile", forward_file(case, tmp_path), "-o", tmp_path / "train.pb", *case_arguments(case))
    assert done.returncode == 0, done.stderr
    with np.load(DATA / case / "init.npz") as init:
        masters = {name[:-len("_fp32_master_0")]: init[name] for name in init.files if name.endswith("_fp32_master_0")}
        drawn = gradc.Program()   # a float32 startup: each parameter the float32 value Paddle's startup drew
        for param, master in masters.items():
            drawn.global_block.create_var(param, list(master.shape), gradc.VarType.FP32, persistable=True)
            drawn.global_block.append_op("assign_value", {}, {"Out": [param]},
                                         {"shape": list(master.shape), "dtype": int(gradc.VarType.FP32),
                                          "fp32_values": master.ravel().tolist()})
        scope, executor = gradc.Scope(), gradc.Executor()
        executor.run(drawn, scope=scope)
        executor.run(gradc.load(tmp_path / "train.startup.pb"), scope=scope)
        for param, master in masters.items():
            np.testing.assert_array_equal(scope[param], paddle_value(init[param]), err_msg=param)
            np.testing.assert_array_equal(scope[param + "_fp32_master_0"], master, err_msg=param)
    assert len(masters) == 6


def test_a_pir_training_program_reports_the_unscaled_loss(tmp_path):
    """Written as PIR (no op_role marks the loss), the program's loss for gradc train and gradc info is still the
    one before loss scaling, not the scaled product the backward starts from."""
    from gradc.training.history import default_fetch

    out, case = tmp_path / "train.json", "mlp_o1_float16_adam"
    done = gradc_cli("compile", forward_file(case, tmp_path), "-o", out, *case_arguments(case))
    assert done.returncode == 0, done.stderr
    program = gradc.load(out)
    (loss,) = default_fetch(program)
    mul = next(op for op in program.global_block.ops if op.input("Y") == ["loss_scaling_0"])
    assert mul.input("X") == [loss] and loss.startswith("reduce_mean")
    info = gradc_cli("info", out)
    assert f"loss: {loss} (paddle.static.amp's loss scaling multiplies it into {mul.output('Out')[0]}" in info.stdout


def test_a_gray_op_follows_its_inputs_in_paddles_slot_order():
    """elementwise_add(X from exp, black; Y from matmul_v2, white): Paddle reads the slots sorted, X then Y, and the
    last written input decides: float16, however the op's slots are ordered in the file."""
    program = gradc.Program()
    block = program.global_block
    for name, shape in (("x", [2, 3]), ("w", [3, 3]), ("a", [2, 3]), ("b", [2, 3]), ("c", [2, 3]), ("loss", [])):
        block.create_var(name, shape, gradc.VarType.FP32, is_parameter=name == "w", persistable=name == "w")
    block.append_op("matmul_v2", {"X": ["x"], "Y": ["w"]}, {"Out": ["a"]}, {"trans_x": False, "trans_y": False})
    block.append_op("exp", {"X": ["x"]}, {"Out": ["b"]})
    block.append_op("elementwise_add", {"Y": ["a"], "X": ["b"]}, {"Out": ["c"]}, {"axis": -1})
    block.append_op("reduce_mean", {"X": ["c"]}, {"Out": ["loss"]}, {"dim": [], "reduce_all": True, "keep_dim": False})
    AmpPass(AmpOptions(), BackwardPass("loss"), make_optimizer("sgd"))(program)
    add = next(op for op in block.ops if op.type == "elementwise_add")
    assert block.var("c").dtype == gradc.VarType.FP16 and add.inputs == {"Y": ["a"], "X": ["b.cast_fp16"]}


def test_level_od_ignores_the_custom_lists_as_decorate_does():
    """decorate(level="OD") builds its own lists: a custom list changes nothing, and gradc says so."""
    programs = [case_program("zoo_od_float16_sgd", "forward") for _ in range(2)]
    AmpPass(AmpOptions("OD"), BackwardPass(), make_optimizer("sgd"))(programs[0])
    with pytest.warns(gradc.GradcWarning, match="level OD uses no custom white or black list"):
        AmpPass(AmpOptions("OD", custom_white_list=("tanh",)), BackwardPass(), make_optimizer("sgd"))(programs[1])
    assert normalised(programs[0]) == normalised(programs[1])

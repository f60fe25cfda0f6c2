"""gradc's own mixed precision (gradc.passes.amp, `gradc compile --amp`) against paddle.static.amp.decorate
(tools/paddle_amp_compile.py): from the float32 forward Paddle saved before decorate, gradc writes the ops, casts, var
dtypes and loss scaling of the program a CUDA build of Paddle 3.3.1 writes, and that program trains to Paddle's
numbers: bit for bit as Paddle's own decorated program in gradc's executor, and within the format's rounding of
Paddle's CPU run of the same decorate (float32: its CPU build casts nothing) with the loss scale exactly."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from gradc.bfloat16 import from_bits
from gradc.io import parse_program
from gradc.optimizers import make_optimizer
from gradc.passes import AmpOptions, AmpPass, BackwardPass, PassConditionError

DATA = Path(__file__).parent / "data" / "paddle" / "amp_compile"
CASES = sorted(p.name for p in DATA.iterdir())
# Paddle's CPU build runs the CPU build's decorate of these (not the O2 programs with low-precision parameters left
# in its CPU program: the embedding's, the biases' of the custom lists; its check_finite_and_unscale has no kernel)
CPU_RUNS = [case for case in CASES if (DATA / case / "final.npz").exists()]
# gradc casts no input of a control-flow op below O2; Paddle's program does, and loses the gradient through it
LOSSY = ["cond_o1_float16_adam"]
AS_PADDLE = [case for case in CASES if case not in LOSSY]
OPTIMIZERS = {"adam": ["--lr", "0.01"], "momentum": ["--lr", "0.05", "--momentum", "0.9"], "sgd": ["--lr", "0.1"],
              "adamw": ["--lr", "0.01", "--weight-decay", "0.05"]}
# measured against Paddle's float32 run: losses to 1.1e-3 (float16) and 3.1e-3 (bfloat16) relative, the trained
# parameters to 3.2e-4 and 3.4e-3 of the model's norm
LOSS_RTOL = {"float16": 2e-3, "bfloat16": 6e-3}
MODEL_RTOL = {"float16": 5e-4, "bfloat16": 7e-3}
# the branches and the loop at O2 (every op float16, three tanh steps): losses to 8.3e-3, parameters to 3.7e-3 of the
# norm (Paddle's own program trains to gradc's numbers bit for bit: the rounding is float16's)
SUB_BLOCK_RTOL = (1.2e-2, 5e-3)
GRADIENT_LISTS = ("check_finite_and_unscale", "update_loss_scaling")
OPTIMIZE = 2   # op_role


def _program(case: str, name: str) -> gradc.Program:
    return parse_program(gzip.decompress((DATA / case / f"{name}.pb.gz").read_bytes()))


def _forward_file(case: str, tmp_path: Path) -> Path:
    """The case's float32 forward program as a file, for the command line."""
    path = tmp_path / f"{case}.forward.pb"
    path.write_bytes(gzip.decompress((DATA / case / "forward.pb.gz").read_bytes()))
    return path


def _meta(case: str) -> dict:
    return json.loads((DATA / case / "meta.json").read_text())


def _arguments(case: str) -> list[str]:
    meta = _meta(case)
    optimizer = case.rsplit("_", 1)[1]
    scaling = [f"--{name.replace('_', '-')}={value}" for name, value in meta["options"].items()]
    static = ["--static-loss-scaling"] if meta["dtype"] == "bfloat16" else []   # as the tool's decorate
    lists = [f"--{name.replace('_', '-')}={op_type}" for name, op_types in meta["lists"].items()
             for op_type in op_types]
    master = ["--master-grad"] if meta["master_grad"] else []
    return ["--optimizer", optimizer, *OPTIMIZERS[optimizer], "--amp", meta["level"], "--amp-dtype", meta["dtype"],
            *scaling, *static, *lists, *master]


def _compiled(case: str, tmp_path) -> gradc.Program:
    out = tmp_path / "train.pb"
    done = gradc_cli("compile", _forward_file(case, tmp_path), "-o", out, *_arguments(case))
    assert done.returncode == 0, done.stderr
    assert "amp: " + _meta(case)["level"] in done.stdout
    return gradc.load(out)


def _value(array: np.ndarray) -> np.ndarray:
    return from_bits(array) if array.dtype == np.uint16 else array   # Paddle's bfloat16: its bits


def _train(program: gradc.Program, case: str, steps: int | None = None) -> tuple[list[float], list[float], dict]:
    """Every step's loss and loss scale from the CUDA build's initial persistables, and the persistables after."""
    meta, scope, executor = _meta(case), gradc.Scope(), gradc.Executor()
    block = program.global_block
    with np.load(DATA / case / "init.npz") as init:
        names = list(init.files)
        for name in names:
            value = _value(init[name])
            if block.var(name).dtype == gradc.VarType.FP16 and value.dtype == np.float32:
                value = value.astype(np.float16)   # what Paddle's amp_init leaves float32: a custom black op's weight
            scope[name] = value
    with np.load(DATA / case / "feeds.npz") as archive:
        feeds = {key: archive[key] for key in archive.files}
    losses, scales = [], []
    with np.errstate(all="ignore"):   # the bad steps' inf
        for step in range(meta["steps"] if steps is None else steps):
            (loss,) = executor.run(program, {key: batches[step] for key, batches in feeds.items()}, [meta["loss"]],
                                   scope)
            losses.append(float(loss))
            scales.append(float(np.asarray(scope["loss_scaling_0"]).reshape(-1)[0]))
    return losses, scales, {name: np.asarray(scope[name]) for name in names}


def _normalised(program: gradc.Program) -> list[tuple]:
    """Each op's type, role and slots; the gradient lists of the loss-scaling ops and the trailing casts of the
    parameters' gradients (and, master_grad, into their float32 masters) in name order (decorate lists them in the
    order the parameters were created, which a saved program does not keep)."""
    ops = []
    for op in program.global_block.ops:
        inputs = {slot: sorted(args) if op.type in GRADIENT_LISTS else args for slot, args in op.inputs.items() if args}
        outputs = {slot: sorted(args) if op.type in GRADIENT_LISTS else args for slot, args in op.outputs.items()
                   if args}
        ops.append((op.type, op.attrs.get("op_role"), sorted(inputs.items()), sorted(outputs.items())))
    first = next(idx for idx, op in enumerate(ops) if op[0] == "check_finite_and_unscale")
    start = first
    while start > 0 and ops[start - 1][0] == "cast" and (
            ops[start - 1][1] == OPTIMIZE or ops[start - 1][3][0][1][0].endswith("@GRAD_fp32_master_0")):
        start -= 1
    return ops[:start] + sorted(ops[start:first], key=_moved_cast_order) + ops[first:]


def _moved_cast_order(op: tuple) -> tuple:
    """The moved casts by name, each parameter's master-gradient cast after the moved ones (as decorate)."""
    return op[3][0][1][0].endswith("_fp32_master_0"), op


def test_the_cases():
    assert CASES == ["block_o2_bfloat16_adamw", "block_o2_float16_adam", "block_o2_float16_custom_momentum",
                     "block_o2_float16_master_adam", "cnn_o1_float16_momentum", "cnn_o2_float16_momentum",
                     "cond_o1_float16_adam", "cond_o2_float16_sgd", "loop_o2_float16_adam", "mlp_o0_float16_adam",
                     "mlp_o1_bfloat16_sgd", "mlp_o1_float16_adam", "mlp_o2_bfloat16_sgd", "zoo_o1_float16_adam",
                     "zoo_o1_float16_custom_adam", "zoo_o2_bfloat16_master_sgd", "zoo_o2_bfloat16_momentum",
                     "zoo_od_float16_sgd"]
    no_cpu_run = ["block_o2_float16_custom_momentum", "zoo_o2_bfloat16_momentum"]
    assert [case for case in CASES if case not in CPU_RUNS] == no_cpu_run
    assert all("no kernels" in _meta(case)["cpu_error"] for case in no_cpu_run)


@pytest.mark.parametrize("case", AS_PADDLE)
def test_gradc_writes_the_program_decorate_writes(case, tmp_path):
    ours, paddles = _compiled(case, tmp_path), _program(case, "train")
    assert [op.type for op in ours.global_block.ops] == _meta(case)["ops_train"]
    assert _normalised(ours) == _normalised(paddles)
    declared = {name: (var.dtype, var.shape, bool(var.persistable)) for name, var in ours.global_block.vars.items()}
    assert declared == {name: (var.dtype, var.shape, bool(var.persistable))
                        for name, var in paddles.global_block.vars.items()}
    attrs = ("in_dtype", "out_dtype", "incr_every_n_steps", "decr_every_n_nan_or_inf", "incr_ratio", "decr_ratio",
             "stop_update", "multi_precision", "dst_place_type")
    assert [{a: op.attrs.get(a) for a in attrs} for op in ours.global_block.ops] == \
        [{a: op.attrs.get(a) for a in attrs} for op in paddles.global_block.ops]
    assert len(ours.blocks) == len(paddles.blocks)
    for block, theirs in zip(ours.blocks[1:], paddles.blocks[1:]):   # the branches, loop bodies and their grads
        assert _slots(block) == _slots(theirs), block.idx
        shared = set(block.vars) & set(theirs.vars)
        assert {name: block.vars[name].dtype for name in shared} == {name: theirs.vars[name].dtype for name in shared}


def test_the_ops_that_run_in_the_low_format(tmp_path):
    """O1: the matmuls (white) compute in float16, the loss (black) in float32, relu (gray) follows the matmul's add;
    O2: every parameter but layer norm's is float16, each with a float32 master weight."""
    block = _compiled("mlp_o1_float16_adam", tmp_path).global_block

    def dtype_of(op_type: str, slot: str, nth: int = 0):
        op = [op for op in block.ops if op.type == op_type][nth]
        return block.var((op.outputs.get(slot) or op.inputs[slot])[0]).dtype

    FP16, FP32 = gradc.VarType.FP16, gradc.VarType.FP32
    assert [dtype_of("matmul_v2", "Out", n) for n in (0, 1)] == [FP16, FP16]
    assert dtype_of("relu", "Out") == FP16 and dtype_of("softmax_with_cross_entropy", "Logits") == FP32
    assert block.var("linear_0.w_0").dtype == FP32   # O1 keeps the parameters float32
    o2 = _compiled("block_o2_float16_adam", tmp_path).global_block
    params = {name: var.dtype for name, var in o2.vars.items() if var.is_parameter}
    assert {name for name, dtype in params.items() if dtype == FP32} == {"layer_norm_0.w_0", "layer_norm_0.b_0"}
    assert {name + "_fp32_master_0" for name, dtype in params.items() if dtype == FP16} == \
        {name for name in o2.vars if name.endswith("_fp32_master_0")}


def _slots(block: gradc.Block) -> list[tuple]:
    return [(op.type, op.attrs.get("op_role"), {slot: args for slot, args in op.inputs.items() if args},
             {slot: args for slot, args in op.outputs.items() if args}) for op in block.ops]


@pytest.mark.parametrize("case", AS_PADDLE)
def test_it_trains_bit_for_bit_as_paddles_decorated_program(case, tmp_path):
    ours, scales, state = _train(_compiled(case, tmp_path), case)
    theirs, their_scales, their_state = _train(_program(case, "train"), case)
    np.testing.assert_array_equal(ours, theirs)
    assert scales == their_scales
    for name, value in their_state.items():
        np.testing.assert_array_equal(state[name], value, err_msg=name)


@pytest.mark.parametrize("case", CPU_RUNS)
def test_it_trains_to_paddles_numbers(case):
    """The Python API's pass; against Paddle's float32 run: the loss scale exactly, losses and parameters at the
    format's precision (a bad step's loss is Paddle's inf or NaN: not compared)."""
    meta = _meta(case)
    program = _program(case, "forward")
    optimizer = {"adam": make_optimizer("adam", learning_rate=0.01),
                 "momentum": make_optimizer("momentum", learning_rate=0.05, momentum=0.9),
                 "sgd": make_optimizer("sgd", learning_rate=0.1),
                 "adamw": make_optimizer("adamw", learning_rate=0.01, weight_decay=0.05)}[case.rsplit("_", 1)[1]]
    options = AmpOptions(meta["level"], meta["dtype"], use_dynamic_loss_scaling=meta["dtype"] == "float16",
                         master_grad=meta["master_grad"], **meta["options"],
                         **{name: tuple(op_types) for name, op_types in meta["lists"].items()})
    startup = AmpPass(options, BackwardPass(), optimizer)(program)
    assert {op.output("Out")[0] for op in startup.global_block.ops} >= {"loss_scaling_0", "learning_rate_0"}
    losses, scales, state = _train(program, case)
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
    program = _compiled("mlp_o1_float16_adam", tmp_path)
    _, _, good = _train(program, "mlp_o1_float16_adam", steps=2)
    for steps in (3, 4):
        _, scales, state = _train(program, "mlp_o1_float16_adam", steps=steps)
        assert scales == [1024.0, 2048.0, 1024.0, 512.0][:steps]
        for name, value in good.items():
            if name not in ("loss_scaling_0", "num_good_steps_0", "num_bad_steps_0"):
                np.testing.assert_array_equal(state[name], value, err_msg=name)
    assert not np.array_equal(_train(program, "mlp_o1_float16_adam", steps=5)[2]["linear_0.w_0"], good["linear_0.w_0"])


def test_the_pass_requires_a_forward_program():
    program = _program("mlp_o1_float16_adam", "forward")
    gradc.append_backward(program)
    with pytest.raises(PassConditionError, match="pass 'amp': the program already has backward ops"):
        AmpPass(AmpOptions(), BackwardPass(), make_optimizer("adam"))(program)


def test_its_postcondition_catches_a_white_op_left_in_float32(monkeypatch):
    """A rewrite that casts nothing leaves matmul_v2 reading float32: the pass's ensures() says where."""
    import gradc.passes.amp as amp

    monkeypatch.setattr(amp, "rewrite", lambda *arguments: 0)
    program = _program("mlp_o1_float16_adam", "forward")
    with pytest.raises(PassConditionError, match=r"block 0, op 0 \(matmul_v2, on the white list\) reads x as float32"):
        AmpPass(AmpOptions(), BackwardPass(), make_optimizer("adam"))(program)


def test_bfloat16_scales_no_loss_when_asked_to_scale_dynamically():
    """As decorate: bfloat16 with use_dynamic_loss_scaling=True gets a scale of 1, so no loss-scaling op at all."""
    program = _program("mlp_o1_bfloat16_sgd", "forward")
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
    done = gradc_cli("compile", _forward_file("mlp_o1_float16_adam", tmp_path), "-o", out, "--optimizer", "adam",
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
    done = gradc_cli("compile", _forward_file("mlp_o1_float16_adam", tmp_path), "-o", out, *arguments)
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
    assert _normalised(gradc.load(tmp_path / "train.pb")) == _normalised(gradc.load(tmp_path / "amp.pb"))


@pytest.mark.parametrize("case", ["block_o2_float16_adam", "block_o2_bfloat16_adamw"])
def test_the_o2_startup_rounds_the_parameters_as_amp_init(case, tmp_path):
    """From float32 parameters (a float32 startup or parameter file), gradc's startup program leaves each
    low-precision parameter and its master as Paddle's startup and amp_init leave them."""
    done = gradc_cli("compile", _forward_file(case, tmp_path), "-o", tmp_path / "train.pb", *_arguments(case))
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
            np.testing.assert_array_equal(scope[param], _value(init[param]), err_msg=param)
            np.testing.assert_array_equal(scope[param + "_fp32_master_0"], master, err_msg=param)
    assert len(masters) == 6


def test_a_pir_training_program_reports_the_unscaled_loss(tmp_path):
    """Written as PIR (no op_role marks the loss), the program's loss for gradc train and gradc info is still the
    one before loss scaling, not the scaled product the backward starts from."""
    from gradc.training.history import default_fetch

    out, case = tmp_path / "train.json", "mlp_o1_float16_adam"
    done = gradc_cli("compile", _forward_file(case, tmp_path), "-o", out, *_arguments(case))
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
    programs = [_program("zoo_od_float16_sgd", "forward") for _ in range(2)]
    AmpPass(AmpOptions("OD"), BackwardPass(), make_optimizer("sgd"))(programs[0])
    with pytest.warns(gradc.GradcWarning, match="level OD uses no custom white or black list"):
        AmpPass(AmpOptions("OD", custom_white_list=("tanh",)), BackwardPass(), make_optimizer("sgd"))(programs[1])
    assert _normalised(programs[0]) == _normalised(programs[1])


@pytest.mark.parametrize("case", ["cnn_o1_float16_momentum", "block_o2_float16_adam", "mlp_o0_float16_adam"])
def test_recomputation_and_eager_sums_keep_the_numbers(case, tmp_path):
    """--recompute auto and --accumulate eager rewrite the scaled loss's backward (recomputed casts and activations,
    running sums) before the unscaling reads the gradients: the training is Paddle's decorated program's, bit for
    bit."""
    out = tmp_path / "train.pb"
    done = gradc_cli("compile", _forward_file(case, tmp_path), "-o", out, *_arguments(case), "--recompute", "auto",
                     "--accumulate", "eager")
    assert done.returncode == 0, done.stderr
    assert "recompute: " in done.stdout and "eager-accumulation: " in done.stdout
    ours = gradc.load(out)
    recomputed = [op for op in ours.global_block.ops if any(n.endswith("@RECOMPUTE") for n in op.output_names())]
    assert recomputed and len(ours.global_block.ops) > len(_program(case, "train").global_block.ops)
    losses, scales, state = _train(ours, case)
    their_losses, their_scales, their_state = _train(_program(case, "train"), case)
    np.testing.assert_array_equal(losses, their_losses)
    assert scales == their_scales
    for name, value in their_state.items():
        np.testing.assert_array_equal(state[name], value, err_msg=name)


def test_master_gradients_feed_the_unscaling_and_the_optimizer(tmp_path):
    """master_grad: every low-precision gradient is cast to a float32 master, which check_finite_and_unscale (one,
    the float32 one) and the optimizer read; without it they read the float16 gradients."""
    case = "block_o2_float16_master_adam"
    block = _compiled(case, tmp_path).global_block
    (check,) = [op for op in block.ops if op.type == "check_finite_and_unscale"]
    assert check.output("FoundInfinite") == ["find_infinite_scale_fp32.tmp_0"]
    assert all(block.var(grad).dtype == gradc.VarType.FP32 for grad in check.input("X"))
    masters = {grad for grad in check.input("X") if grad.endswith("@GRAD_fp32_master_0")}
    assert len(masters) == 6 and {op.input("Grad")[0] for op in block.ops if op.type == "adam"} >= masters
    arguments = [argument for argument in _arguments(case) if argument != "--master-grad"]
    done = gradc_cli("compile", _forward_file(case, tmp_path), "-o", tmp_path / "plain.pb", *arguments)
    assert done.returncode == 0, done.stderr
    plain = gradc.load(tmp_path / "plain.pb").global_block
    assert not any(name.endswith("@GRAD_fp32_master_0") for name in plain.vars)
    assert len([op for op in plain.ops if op.type == "check_finite_and_unscale"]) == 2


def test_o0_lowers_the_parameters_and_casts_as_o1(tmp_path):
    """decorate(level="O0"): the parameters float16 with float32 masters (as O2), the loss kept float32 by the
    default black list (as O1), one check_finite_and_unscale."""
    block = _compiled("mlp_o0_float16_adam", tmp_path).global_block
    params = [var for var in block.vars.values() if var.is_parameter]
    assert len(params) == 4 and all(var.dtype == gradc.VarType.FP16 for var in params)
    assert all(param.name + "_fp32_master_0" in block.vars for param in params)
    loss = next(op for op in block.ops if op.type == "softmax_with_cross_entropy")
    assert block.var(loss.input("Logits")[0]).dtype == gradc.VarType.FP32
    assert [op.type for op in block.ops].count("check_finite_and_unscale") == 1


def test_a_cond_below_o2_keeps_its_gradient(tmp_path):
    """O1: Paddle casts the float16 input of each branch's conditional_block to float32, which the branches never
    read, so conditional_block_grad hands back no gradient for it: its program never moves the first Linear. gradc
    casts no input of a control-flow op (Paddle's program otherwise, the branches' casts too) and trains it."""
    case = "cond_o1_float16_adam"
    ours, paddles = _compiled(case, tmp_path), _program(case, "train")
    for block, theirs in zip(ours.blocks[1:], paddles.blocks[1:]):
        assert _slots(block) == _slots(theirs), block.idx
    conds = [(op, theirs) for op, theirs in zip(ours.global_block.ops, paddles.global_block.ops)
             if op.type == "conditional_block"]
    assert all("linear_0.tmp_1" in op.input("Input") for op, _ in conds)
    assert all("linear_0.tmp_1.cast_fp32" in theirs.input("Input") for _, theirs in conds)
    assert [[name for name in op.input("Input") if name != "linear_0.tmp_1"] for op, _ in conds] == \
        [[name for name in theirs.input("Input") if name != "linear_0.tmp_1.cast_fp32"] for _, theirs in conds]
    types, their_types = [op.type for op in ours.global_block.ops], _meta(case)["ops_train"]
    assert types.count("cast") == their_types.count("cast") - 1   # Paddle's cast of that input's gradient
    _, _, state = _train(ours, case)
    _, _, their_state = _train(paddles, case)
    with np.load(DATA / case / "init.npz") as init:
        for name in ("linear_0.w_0", "linear_0.b_0"):
            np.testing.assert_array_equal(their_state[name], init[name])
            assert np.abs(state[name] - init[name]).max() > 1e-3, name


@pytest.mark.parametrize("level", ["O1", "OD", "O0"])
def test_a_while_loop_below_o2_is_one_line(level, tmp_path):
    out = tmp_path / "train.pb"
    done = gradc_cli("compile", _forward_file("loop_o2_float16_adam", tmp_path), "-o", out, "--optimizer", "sgd",
                     "--amp", level)
    assert done.returncode == 1 and not out.exists()
    assert done.stderr == (f"gradc: error: pass 'amp': block 0, op 5 (while): a while loop compiles at level O2 only "
                           f"(at {level} Paddle's decorate writes a loop body that reads a cast made after the loop)\n")


def test_the_loss_of_a_master_grad_program(tmp_path):
    """master_grad's casts carry the forward's role after the backward, and the bias of shape [1] makes a float
    scalar of the loss's gradients: the loss is still the one gradc train and info report, not an inner objective."""
    from gradc.training.history import default_fetch

    case = "block_o2_float16_master_adam"
    for program in (_compiled(case, tmp_path), _program(case, "train")):
        assert default_fetch(program) == [_meta(case)["loss"]]


def test_master_grad_below_o2_changes_nothing_as_in_decorate():
    programs = [_program("mlp_o1_float16_adam", "forward") for _ in range(2)]
    AmpPass(AmpOptions("O1"), BackwardPass(), make_optimizer("adam"))(programs[0])
    with pytest.warns(gradc.GradcWarning, match="master_grad is for level O2 only: at O1 decorate ignores it"):
        AmpPass(AmpOptions("O1", master_grad=True), BackwardPass(), make_optimizer("adam"))(programs[1])
    assert _normalised(programs[0]) == _normalised(programs[1])

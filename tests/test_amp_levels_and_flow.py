"""gradc's mixed precision beyond O1 / O2 / OD on block 0 (docs/optimizers.md, section 12): level O0, master_grad,
--recompute and --accumulate eager with --amp, and programs with a cond or a while loop, against the programs and
numbers of tools/paddle_amp_compile.py's cases."""

from __future__ import annotations

import numpy as np
import pytest

import gradc
from amp_fixtures import (
    DATA,
    block_slots,
    case_arguments,
    case_meta,
    case_program,
    compile_case,
    forward_file,
    normalised,
    train_case,
)
from cli_inprocess import gradc_cli
from gradc.ir import dtype_name
from gradc.optimizers import make_optimizer
from gradc.passes import AmpOptions, AmpPass, BackwardPass


@pytest.mark.parametrize("case", ["cnn_o1_float16_momentum", "block_o2_float16_adam", "mlp_o0_float16_adam"])
def test_recomputation_and_eager_sums_keep_the_numbers(case, tmp_path):
    """--recompute auto and --accumulate eager rewrite the scaled loss's backward (recomputed casts and activations,
    running sums) before the unscaling reads the gradients: the training is Paddle's decorated program's, bit for
    bit."""
    out = tmp_path / "train.pb"
    done = gradc_cli("compile", forward_file(case, tmp_path), "-o", out, *case_arguments(case), "--recompute", "auto",
                     "--accumulate", "eager")
    assert done.returncode == 0, done.stderr
    assert "recompute: " in done.stdout and "eager-accumulation: " in done.stdout
    ours = gradc.load(out)
    recomputed = [op for op in ours.global_block.ops if any(n.endswith("@RECOMPUTE") for n in op.output_names())]
    assert recomputed and len(ours.global_block.ops) > len(case_program(case, "train").global_block.ops)
    losses, scales, state = train_case(ours, case)
    their_losses, their_scales, their_state = train_case(case_program(case, "train"), case)
    np.testing.assert_array_equal(losses, their_losses)
    assert scales == their_scales
    for name, value in their_state.items():
        np.testing.assert_array_equal(state[name], value, err_msg=name)


def test_master_gradients_feed_the_unscaling_and_the_optimizer(tmp_path):
    """master_grad: every low-precision gradient is cast to a float32 master, which check_finite_and_unscale (one,
    the float32 one) and the optimizer read; without it they read the float16 gradients."""
    case = "block_o2_float16_master_adam"
    block = compile_case(case, tmp_path).global_block
    (check,) = [op for op in block.ops if op.type == "check_finite_and_unscale"]
    assert check.output("FoundInfinite") == ["find_infinite_scale_fp32.tmp_0"]
    assert all(block.var(grad).dtype == gradc.VarType.FP32 for grad in check.input("X"))
    masters = {grad for grad in check.input("X") if grad.endswith("@GRAD_fp32_master_0")}
    assert len(masters) == 6 and {op.input("Grad")[0] for op in block.ops if op.type == "adam"} >= masters
    arguments = [argument for argument in case_arguments(case) if argument != "--master-grad"]
    done = gradc_cli("compile", forward_file(case, tmp_path), "-o", tmp_path / "plain.pb", *arguments)
    assert done.returncode == 0, done.stderr
    plain = gradc.load(tmp_path / "plain.pb").global_block
    assert not any(name.endswith("@GRAD_fp32_master_0") for name in plain.vars)
    assert len([op for op in plain.ops if op.type == "check_finite_and_unscale"]) == 2


def test_o0_lowers_the_parameters_and_casts_as_o1(tmp_path):
    """decorate(level="O0"): the parameters float16 with float32 masters (as O2), the loss kept float32 by the
    default black list (as O1), one check_finite_and_unscale."""
    block = compile_case("mlp_o0_float16_adam", tmp_path).global_block
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
    ours, paddles = compile_case(case, tmp_path), case_program(case, "train")
    for block, theirs in zip(ours.blocks[1:], paddles.blocks[1:]):
        assert block_slots(block) == block_slots(theirs), block.idx
    conds = [(op, theirs) for op, theirs in zip(ours.global_block.ops, paddles.global_block.ops)
             if op.type == "conditional_block"]
    assert all("linear_0.tmp_1" in op.input("Input") for op, _ in conds)
    assert all("linear_0.tmp_1.cast_fp32" in theirs.input("Input") for _, theirs in conds)
    assert [[name for name in op.input("Input") if name != "linear_0.tmp_1"] for op, _ in conds] == \
        [[name for name in theirs.input("Input") if name != "linear_0.tmp_1.cast_fp32"] for _, theirs in conds]
    types, their_types = [op.type for op in ours.global_block.ops], case_meta(case)["ops_train"]
    assert types.count("cast") == their_types.count("cast") - 1   # Paddle's cast of that input's gradient
    _, _, state = train_case(ours, case)
    _, _, their_state = train_case(paddles, case)
    with np.load(DATA / case / "init.npz") as init:
        for name in ("linear_0.w_0", "linear_0.b_0"):
            np.testing.assert_array_equal(their_state[name], init[name])
            assert np.abs(state[name] - init[name]).max() > 1e-3, name


def test_a_while_loop_below_o2_keeps_one_dtype_per_value(tmp_path):
    """O1: the loop carries linear_0.tmp_1, which the Linear before it writes in float16 and the body in float32.
    Paddle declares it float32, and its body reads linear_0.tmp_1.cast_fp16, the cast its parent block makes after
    the loop: its program cannot run (while_grad gives the carried value no gradient either). gradc computes the
    value's writers in float32 (the Linear's add casts its float16 product) and casts it in the body itself."""
    case = "loop_o1_float16_sgd"
    ours, paddles = compile_case(case, tmp_path), case_program(case, "train")
    add = next(op for op in ours.global_block.ops if op.output_names() == ["linear_0.tmp_1"])
    their_add = next(op for op in paddles.global_block.ops if op.output_names() == ["linear_0.tmp_1"])
    assert (add.inputs, their_add.inputs) == ({"X": ["linear_0.tmp_0.cast_fp32"], "Y": ["linear_0.b_0"]},
                                              {"X": ["linear_0.tmp_0"], "Y": ["linear_0.b_0.cast_fp16"]})
    body, their_body = ours.blocks[1], paddles.blocks[1]
    assert body.vars["linear_0.tmp_1.cast_fp16"].dtype == gradc.VarType.FP16
    assert "linear_0.tmp_1.cast_fp16" not in their_body.vars
    assert [op.type for op in body.ops] == [op.type for op in their_body.ops][:1] + ["cast"] + \
        [op.type for op in their_body.ops][1:]
    with pytest.raises(gradc.GradcError, match="reads var 'linear_0.tmp_1.cast_fp16' .* which has no value"):
        train_case(paddles, case, steps=1)
    (loop_grad,) = [op for op in ours.global_block.ops if op.type == "while_grad"]
    assert loop_grad.output("X@GRAD")[0] == "linear_0.tmp_1@GRAD"
    assert [op for op in paddles.global_block.ops if op.type == "while_grad"][0].output("X@GRAD")[0] == "@EMPTY@"


def test_the_loss_of_a_master_grad_program(tmp_path):
    """master_grad's casts carry the forward's role after the backward, and the bias of shape [1] makes a float
    scalar of the loss's gradients: the loss is still the one gradc train and info report, not an inner objective."""
    from gradc.training.history import default_fetch

    case = "block_o2_float16_master_adam"
    for program in (compile_case(case, tmp_path), case_program(case, "train")):
        assert default_fetch(program) == [case_meta(case)["loss"]]


def test_master_grad_below_o2_changes_nothing_as_in_decorate():
    programs = [case_program("mlp_o1_float16_adam", "forward") for _ in range(2)]
    AmpPass(AmpOptions("O1"), BackwardPass(), make_optimizer("adam"))(programs[0])
    with pytest.warns(gradc.GradcWarning, match="master_grad is for level O2 only: at O1 decorate ignores it"):
        AmpPass(AmpOptions("O1", master_grad=True), BackwardPass(), make_optimizer("adam"))(programs[1])
    assert normalised(programs[0]) == normalised(programs[1])


@pytest.mark.parametrize("case", ["cond_o1_float16_adam", "loop_o1_float16_sgd"])
@pytest.mark.parametrize("level", ["OD", "O0"])
def test_control_flow_trains_at_every_level(case, level, tmp_path):
    """The cond and the loop at OD and O0 (no Paddle program to compare with: its would cast the control-flow ops'
    inputs as at O1): from Paddle's initial parameters, through gradc's startup, the losses of Paddle's float32 run
    to 2e-3 (measured 1.7e-3) and its loss scale exactly."""
    meta, arguments = case_meta(case), case_arguments(case)
    arguments[arguments.index("--amp") + 1] = level
    done = gradc_cli("compile", forward_file(case, tmp_path), "-o", tmp_path / "train.pb", *arguments)
    assert done.returncode == 0, done.stderr
    program, startup = gradc.load(tmp_path / "train.pb"), gradc.load(tmp_path / "train.startup.pb")
    scope, executor = gradc.Scope(), gradc.Executor()
    with np.load(DATA / case / "init.npz") as init:
        for name in init.files:
            var = program.global_block.find_var(name)
            if var is not None and var.is_parameter:
                scope[name] = init[name].astype(dtype_name(var.dtype))
    executor.run(startup, scope=scope)
    losses, scales = [], []
    with np.load(DATA / case / "feeds.npz") as feeds, np.errstate(all="ignore"):
        for step in range(meta["steps"]):
            (loss,) = executor.run(program, {key: feeds[key][step] for key in feeds.files}, [meta["loss"]], scope)
            losses.append(float(loss))
            scales.append(float(np.asarray(scope["loss_scaling_0"]).reshape(-1)[0]))
    good = [step for step in range(meta["steps"]) if step not in meta["bad_steps"]]
    np.testing.assert_allclose(np.array(losses)[good], np.array(meta["losses"])[good], rtol=2e-3)
    assert scales == meta["loss_scaling_0"]

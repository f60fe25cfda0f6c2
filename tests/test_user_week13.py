"""A quantization engineer's week (docs/tools.md): a small CNN and an MLP quantized by Paddle 3.3.1's own static QAT
passes (QuantizationTransformPass with AddQuantDequantPass and OutScaleForTrainingPass; QuantizationTransformPassV2
at 4 and 6 bits), trained, frozen (QuantizationFreezePass, QuantWeightPass) and converted to int8 weights
(ConvertToInt8Pass), with Paddle's losses, scale states and outputs (tools/paddle_user_week13.py); each fault found,
as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.optimizers import minimize

WEEK = DATA / "user_week13"
OPTIMIZERS = {"cnn": ("momentum", {"lr": 0.02, "momentum": 0.9}), "mlp": ("sgd", {"lr": 0.2})}


def _case(case):
    directory = WEEK / case
    return directory, json.loads((directory / "meta.json").read_text()), dict(np.load(directory / "batches.npz"))


def _feed(meta, batches, step):
    return {**{name: batches[f"{name}{step}"] for name in meta["feeds"]}, "label": batches[f"label{step}"]}


def _scope(path):
    scope = gradc.Scope()
    for name, value in np.load(path).items():
        scope[name] = value
    return scope


@pytest.mark.parametrize("case", ["cnn", "mlp"])
def test_paddles_qat_training_program_gives_paddles_losses_and_scale_states(case):
    directory, meta, batches = _case(case)
    program, scope, executor = gradc.load(directory / "train.pb"), _scope(directory / "init.npz"), gradc.Executor()
    states = dict(np.load(directory / "states.npz"))
    for step, paddles in enumerate(meta["losses"]):
        (loss,) = executor.run(program, feed=_feed(meta, batches, step), fetch_list=[meta["loss"]], scope=scope)
        assert float(loss) == pytest.approx(paddles, abs=5e-7)
        for name, values in states.items():   # moving averages' accumulators and states, and the scales
            np.testing.assert_allclose(np.asarray(scope[name]), values[step], rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("case", ["cnn", "mlp"])
def test_gradc_compile_of_the_quantized_forward_trains_as_paddles_qat_program(case):
    directory, meta, batches = _case(case)
    program, scope, executor = gradc.load(directory / "forward.pb"), _scope(directory / "init.npz"), gradc.Executor()
    kind, arguments = OPTIMIZERS[case]
    executor.run(minimize(program, meta["loss"], kind, **arguments), scope=scope)
    losses = [float(executor.run(program, feed=_feed(meta, batches, step), fetch_list=[meta["loss"]],
                                 scope=scope)[0]) for step in range(len(meta["losses"]))]
    np.testing.assert_allclose(losses, meta["losses"], atol=5e-7)


@pytest.mark.parametrize("case", ["cnn", "mlp"])
def test_frozen_program_gives_paddles_outputs(case):
    """The MLP's is QuantWeightPass's: its weights are int8 values under a float32 declaration (the fault below)."""
    directory, meta, batches = _case(case)
    program, feed = gradc.load(directory / "frozen.pb"), _feed(meta, batches, len(meta["losses"]))
    (logits,) = gradc.Executor().run(program, feed=feed, fetch_list=[meta["logits"]],
                                     scope=_scope(directory / "frozen.npz"))
    np.testing.assert_array_equal(logits, np.load(directory / "outputs.npz")["frozen"])


def test_int8_weights_of_convert_to_int8_pass_run_to_the_frozen_programs_outputs():
    """Paddle's CPU executor refuses its own int8 program (a float input and an int8 filter); gradc computes with
    the int8 weights' values, which are the frozen program's quantized weights."""
    directory, meta, batches = _case("cnn")
    assert "int8_t" in meta["int8_error"]
    program = gradc.load(directory / "int8.pb")
    assert program.global_block.var("conv2d_0.w_0.int8").dtype == gradc.VarType.INT8
    (logits,) = gradc.Executor().run(program, feed=_feed(meta, batches, len(meta["losses"])),
                                     fetch_list=[meta["logits"]], scope=_scope(directory / "int8.npz"))
    np.testing.assert_array_equal(logits, np.load(directory / "outputs.npz")["frozen"])


def test_int8_weights_under_a_float32_declaration_load_from_a_params_file(tmp_path):
    """Fault: QuantWeightPass (PaddleSlim's convert of the V2 form) stores each weight as int8 in a var still
    declared float32, and Paddle's load_inference_model runs it; gradc refused the params file and the scope value
    ('is int8, but the program declares float32'). An int8 value now fits a var read only by dequantize_linear's X."""
    directory, meta, batches = _case("mlp")
    program = gradc.load(directory / "frozen.pb")
    values = dict(np.load(directory / "frozen.npz"))
    assert values["fc_0.w_0"].dtype == np.int8 and program.global_block.var("fc_0.w_0").dtype == gradc.VarType.FP32
    np.savez(tmp_path / "frozen.npz", **values)
    scope = gradc.Scope()
    gradc.load_params(scope, tmp_path / "frozen.npz", program)
    (logits,) = gradc.Executor().run(program, feed=_feed(meta, batches, len(meta["losses"])),
                                     fetch_list=[meta["logits"]], scope=scope)
    np.testing.assert_array_equal(logits, np.load(directory / "outputs.npz")["frozen"])


def test_an_int8_value_still_does_not_fit_a_float_var_another_op_reads():
    directory, meta, batches = _case("mlp")
    program = gradc.load(directory / "frozen.pb")
    scope = _scope(directory / "frozen.npz")
    scope["fc_0.b_0"] = np.zeros(16, np.int8)   # read by elementwise_add, whose kernel takes its declared float32
    with pytest.raises(gradc.GradcError, match="'fc_0.b_0'.* is int8, but the program declares float32"):
        gradc.Executor().run(program, feed=_feed(meta, batches, 0), fetch_list=[meta["logits"]], scope=scope)


def test_info_names_the_loss_alone_not_the_observer_on_it():
    """Fault: OutScaleForTrainingPass appends a moving_average_abs_max_scale on the loss with the loss op's op_role,
    and gradc info said 'op_role marks the losses mean_1.tmp_0, scale_accum@_7, mean_1.tmp_0@scale, scale_state@_7;
    the backward differentiates their sum'. The losses are those the backward seeds."""
    result = gradc_cli("info", WEEK / "cnn" / "train.pb")
    assert result.returncode == 0, result.stderr
    assert "loss: mean_1.tmp_0 (its op's op_role marks it the loss)" in result.stdout
    assert "scale_state" not in result.stdout


def test_show_dot_outlines_the_loss_op_alone(tmp_path):
    """The same fault in gradc show --dot and view: the observer on the loss was outlined as a loss op."""
    result = gradc_cli("show", WEEK / "cnn" / "train.pb", "--dot", tmp_path / "g.dot")
    assert result.returncode == 0, result.stderr
    outlined = [line for line in (tmp_path / "g.dot").read_text().splitlines() if "penwidth=2.5" in line]
    assert len(outlined) == 1 and "reduce_mean" in outlined[0]


def test_compile_picks_the_loss_under_the_observer_on_it(tmp_path):
    """Fault: the quantized forward ends with OutScaleForTrainingPass's observer on the loss, so `gradc compile`
    without --loss refused ('the last op writes several float scalars (scale_accum@_12, mean_1.tmp_0@scale,
    scale_state@_12)') and gradc info listed only the observers' scales as float scalars no op reads; in the frozen
    and int8 programs info named the loss mean_1.tmp_0@scale, a moving average, which compile would have minimised.
    An observer's statistics are no loss, and its read leaves the loss unread."""
    for program in ("forward", "frozen", "int8"):
        result = gradc_cli("info", WEEK / "cnn" / f"{program}.pb")
        assert "loss: mean_1.tmp_0 (gradc compile picks it by itself)" in result.stdout, (program, result.stdout)
    result = gradc_cli("compile", WEEK / "cnn" / "forward.pb", "--optimizer", "momentum", "--lr", "0.02",
                       "--momentum", "0.9", "-o", tmp_path / "train.pb")
    assert result.returncode == 0, result.stderr
    assert "6 parameter gradients" in result.stdout + result.stderr
    assert gradc.load(tmp_path / "train.pb").global_block.find_var("mean_1.tmp_0@GRAD") is not None


def _exported_outputs(tmp_path, case, program, params, suffix):
    directory, meta, batches = _case(case)
    feed = _feed(meta, batches, len(meta["losses"]))
    np.savez(tmp_path / "feed.npz", **{name: feed[name] for name in meta["feeds"]})
    prefix = tmp_path / f"{case}_{program}{suffix}"
    result = gradc_cli("export", directory / f"{program}.pb", "-o", prefix, *[a for f in meta["feeds"] for a in
                       ("--input", f)], "--fetch", meta["logits"], "--params", params)
    assert result.returncode == 0, result.stderr
    run = gradc_cli("run", prefix, "--params", prefix.with_suffix(".pdiparams"), "--feed", tmp_path / "feed.npz",
                    "--out", tmp_path / "out.npz")
    assert run.returncode == 0, run.stderr
    return np.load(tmp_path / "out.npz")[meta["logits"]]


def test_a_frozen_qat_program_exported_as_pir_loads_back(tmp_path):
    """Fault: in test mode the moving-average quantizers' state outputs are their own parameters (InScale, InAccum,
    InState); the PIR export named each result a second persistable value, which the .pdiparams it wrote does not
    hold, so gradc refused its own export ('holds 15 values, but the program has 21 persistable vars'). The export
    leaves those results unnamed; Paddle 3.3.1's PIR predictor gives the same outputs (0.0 apart, measured)."""
    logits = _exported_outputs(tmp_path, "cnn", "frozen", WEEK / "cnn" / "frozen.npz", ".json")
    np.testing.assert_array_equal(logits, np.load(WEEK / "cnn" / "outputs.npz")["frozen"])


def test_a_v2_qat_training_program_exports_as_pir_to_what_its_pdmodel_gives(tmp_path):
    """The same fault on quantize_linear in test mode ('holds 24 values, but the program has 36 persistable
    vars')."""
    as_pir = _exported_outputs(tmp_path, "mlp", "train", WEEK / "mlp" / "init.npz", ".json")
    as_legacy = _exported_outputs(tmp_path, "mlp", "train", WEEK / "mlp" / "init.npz", ".pdmodel")
    np.testing.assert_array_equal(as_pir, as_legacy)


def test_channel_wise_quantizer_in_test_mode_is_refused_as_pir_with_the_way_out(tmp_path):
    """In test mode fake_channel_wise_quantize_abs_max quantizes with the value its OutScale var holds, which a PIR
    result cannot carry: the export wrote a pair neither gradc nor Paddle loaded ('Not allowed to load partial data
    via load_combine_op'); it is one line now, naming .pdmodel and freezing."""
    result = gradc_cli("export", WEEK / "cnn" / "train.pb", "-o", tmp_path / "cnn.json", "--input", "image",
                       "--fetch", "fc_0.tmp_1", "--params", WEEK / "cnn" / "init.npz")
    assert result.returncode == 1
    assert "fake_channel_wise_quantize_abs_max in test mode" in result.stderr
    assert "export as .pdmodel, or freeze the program first" in result.stderr
    assert not (tmp_path / "cnn.json").exists()

"""The custom C++ ops of Paddle's model suites (tests/data/paddle/ext_ops, tools/paddle_ext_ops.py): programs
Paddle 3.3.1 saved with them, legacy and PIR, load, verify and save unchanged, and gradc computes Paddle's outputs
and gradients, its own backward and Paddle's alike."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.io import serialize
from gradc.pir import load_pir, parse_pir, serialize_pir

DATA = Path(__file__).parent / "data" / "paddle" / "ext_ops"
EXT_OPS = {"ms_deform_attn", "ms_deformable_attn", "gather_operation", "grouping_operation_batch",
           "grouping_operation_stack", "bev_pool_v2", "assign_score_withk"}
CASES = sorted(p.name for p in DATA.iterdir() if (p / "forward.pb").exists())


def _meta(case: str) -> dict:
    return json.loads((DATA / case / "meta.json").read_text())


def _arrays(case: str, name: str) -> dict:
    with np.load(DATA / case / f"{name}.npz") as archive:
        return {key: archive[key] for key in archive.files}


def _close(actual, expected, what: str) -> None:
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6, err_msg=what)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", ["forward.pb", "backward.pb"])
def test_paddles_file_loads_verifies_and_saves_byte_for_byte(case, name):
    data = (DATA / case / name).read_bytes()
    program = gradc.io.parse_program(data)
    assert gradc.verify(program) == []
    assert serialize(program) == data


@pytest.mark.parametrize("case", CASES)
def test_gradcs_backward_gives_paddles_loss_and_gradients(case):
    meta, expected = _meta(case), _arrays(case, "grads")
    program = gradc.load(DATA / case / "forward.pb")
    gradc.append_backward(program, meta["loss"])
    grads, extras = [f"{name}@GRAD" for name in meta["wrt"]], meta.get("extras", {})
    loss, *values = gradc.Executor().run(program, feed=_arrays(case, "feed"),
                                         fetch_list=[meta["loss"], *grads, *extras.values()])
    _close(loss, expected["loss"], "loss")
    for name, value in zip(grads, values):
        _close(value, expected[name], name)
    for key, value in zip(extras, values[len(grads):]):   # integer results (indices, voxels' places): Paddle's exactly
        if np.issubdtype(value.dtype, np.integer):
            np.testing.assert_array_equal(value, expected[key], err_msg=key)
        else:
            _close(value, expected[key], key)


@pytest.mark.parametrize("case", CASES)
def test_paddles_backward_runs_to_its_gradients(case):
    meta, expected = _meta(case), _arrays(case, "grads")
    grads = [f"{name}@GRAD" for name in meta["wrt"]]
    program = gradc.load(DATA / case / "backward.pb")
    assert _custom_grad_ops(program) == _paddles_custom_grad_ops(case)
    for name, value in zip(grads, gradc.Executor().run(program, feed=_arrays(case, "feed"), fetch_list=grads)):
        _close(value, expected[name], name)


def _custom_ops(pir_json: bytes) -> set[str]:
    """The custom_op dialect's ops (file id 3) of a PIR file."""
    return {op["#"] for op in json.loads(pir_json)["program"]["regions"][0]["blocks"][0]["ops"]
            if op["#"].startswith("3.")}


def _custom_grad_ops(program: gradc.Program) -> list[str]:
    """The program's grad ops of the suites' ops."""
    types = [op.type for op in program.global_block.ops]
    return [t for t in types if t.endswith("_grad") and t.removesuffix("_grad") in types
            and gradc.registry.get(t).grad_op_of in EXT_OPS]


def _paddles_custom_grad_ops(case: str) -> list[str]:
    """The grad ops of the suites' ops in Paddle's legacy backward (meta.json)."""
    return [t for t in _meta(case)["ops"] if t.removesuffix("_grad") in EXT_OPS and t.endswith("_grad")]


def _inference_feed(case: str, program: gradc.Program) -> dict:
    return {name: value for name, value in _arrays(case, "feed").items() if name in program.global_block.vars}


@pytest.mark.parametrize("case", CASES)
def test_pir_inference_model_gives_paddles_output_and_saves_its_custom_ops(case):
    program = load_pir(DATA / case / "model.json")
    fetch = [op.inputs["X"][0] for op in program.global_block.ops if op.type == "fetch"]
    scope = gradc.Scope()
    if (DATA / case / "model.pdiparams").exists():
        gradc.load_params(scope, DATA / case / "model.pdiparams", program)
    (out,) = gradc.Executor().run(program, feed=_inference_feed(case, program), fetch_list=fetch, scope=scope)
    _close(out, _arrays(case, "expected")["out"], "out")
    written = serialize_pir(program)
    assert _custom_ops(written) == _custom_ops((DATA / case / "model.json").read_bytes()) != set()
    again = parse_pir(written)
    assert [op.type for op in again.global_block.ops] == [op.type for op in program.global_block.ops]


def test_a_pir_file_whose_data_ops_come_in_operand_order_saves_byte_for_byte():
    data = (DATA / "msda_paddle3d" / "model.json").read_bytes()
    assert serialize_pir(parse_pir(data)) == data


@pytest.mark.parametrize("case", CASES)
def test_paddles_pir_training_program_runs_to_its_gradients(case):
    meta, expected = _meta(case), _arrays(case, "expected")
    program = load_pir(DATA / case / "backward.json")
    assert set(_custom_grad_ops(program)) == set(_paddles_custom_grad_ops(case))
    grads = [f"{name}@GRAD" for name in meta["wrt"]]
    for name, value in zip(grads, gradc.Executor().run(program, feed=_arrays(case, "feed"), fetch_list=grads)):
        _close(value, expected[f"pir:{name}"], name)


def test_gradcs_gradient_of_bev_pool_v2_is_the_suites_hand_written_backward():
    """Paddle has no grad op for bev_pool_v2: the suite trains with bev_pool_v2_bkwd on pixel-sorted intervals,
    which Paddle ran in the fixture; gradc's bev_pool_v2_grad (through its backward) gives the same gradients."""
    program = gradc.load(DATA / "bev_pool" / "forward.pb")
    block = program.global_block
    for name in ("depth", "feat", _meta("bev_pool")["out"], "tmp_0", _meta("bev_pool")["loss"]):
        block.var(name).stop_gradient = False   # Paddle marked the path: it cannot differentiate bev_pool_v2
    gradc.append_backward(program, _meta("bev_pool")["loss"])
    assert "bev_pool_v2_grad" in [op.type for op in block.ops]
    expected = _arrays("bev_pool", "grads")
    values = gradc.Executor().run(program, feed=_arrays("bev_pool", "feed"), fetch_list=["depth@GRAD", "feat@GRAD"])
    for name, value in zip(("depth_grad", "feat_grad"), values):
        _close(value, expected[name], name)


@pytest.mark.parametrize("case", CASES)
def test_gradcs_training_program_written_as_pir_runs_to_paddles_gradients(case):
    """gradc's backward of Paddle's legacy program, written as PIR (the suites' ops and grad ops as custom_op.*) and
    read back."""
    meta, expected = _meta(case), _arrays(case, "grads")
    program = gradc.load(DATA / case / "forward.pb")
    gradc.append_backward(program, meta["loss"])
    grads = [f"{name}@GRAD" for name in meta["wrt"]]
    data = serialize_pir(program, fetch=[meta["loss"], *grads])
    assert _custom_ops(data)
    loss, *values = gradc.Executor().run(parse_pir(data), feed=_arrays(case, "feed"), fetch_list=[meta["loss"], *grads])
    _close(loss, expected["loss"], "loss")
    for name, value in zip(grads, values):
        _close(value, expected[name], name)

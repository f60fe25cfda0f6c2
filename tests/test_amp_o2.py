"""Paddle's AMP O2 training program in PIR mode (tools/paddle_pir_amp_o2.py): bfloat16 parameters with float32
master weights, SGD with multi_precision. gradc updates each master in float32 and rounds it into its parameter.
Paddle 3.3.1's CPU sgd_ does not: it steps the bfloat16 parameter in bfloat16 and never writes the master, so its
numbers are those of the same program without master weights, which gradc reproduces."""

import gzip

import numpy as np
import pytest

import gradc
from gradc.bfloat16 import from_bits, round_to_bfloat16
from gradc.pir import load_pir, parse_pir, serialize_pir
from pir_fixtures import PIR_DATA, meta

CASE = "amp_o2_sgd_bf16"
DATA = PIR_DATA / CASE


def _paddles(archive, name: str) -> np.ndarray:
    return from_bits(archive[name]) if name in meta(CASE)["bfloat16"] else archive[name]


def _program() -> gradc.Program:
    return load_pir(gzip.decompress((DATA / "train.json.gz").read_bytes()))


def _train(program: gradc.Program, fetch_grads: bool = False):
    """Three steps from Paddle's state after its startup: the losses, the scope, and each step's sgd Grads."""
    scope, sgd = gradc.Scope(), [op for op in program.global_block.ops if op.type == "sgd"]
    with np.load(DATA / "init.npz") as init:
        for name in init.files:
            scope[name] = _paddles(init, name)
    grads = [op.input("Grad")[0] for op in sgd] if fetch_grads else []
    losses, steps = [], []
    with np.load(DATA / "feeds.npz") as feeds:
        for step in range(meta(CASE)["steps"]):
            got = gradc.Executor().run(program, {k: feeds[k][step] for k in feeds.files}, ["loss", *grads], scope)
            losses.append(float(got[0]))
            steps.append(dict(zip((op.input("Param")[0] for op in sgd), got[1:])))
    return losses, scope, steps


@pytest.mark.parametrize("written_back", [False, True])
def test_master_weights_take_every_step_in_float32(written_back):
    program = _program()
    if written_back:
        program = parse_pir(serialize_pir(program))
    losses, scope, steps = _train(program, fetch_grads=True)
    assert losses[0] == pytest.approx(float(np.load(DATA / "losses.npy")[0]), rel=1e-6)
    with np.load(DATA / "init.npz") as init:
        for param in meta(CASE)["bfloat16"]:
            master = init[f"{param}_fp32_master_0"].copy()
            for grads in steps:
                master = (master - np.float32(0.5) * grads[param]).astype(np.float32)
            np.testing.assert_array_equal(np.asarray(scope[f"{param}_fp32_master_0"]), master)
            np.testing.assert_array_equal(np.asarray(scope[param]), round_to_bfloat16(master))


def test_paddles_numbers_are_the_program_without_its_master_weights():
    program = _program()
    for op in program.global_block.ops:
        if op.type == "sgd":
            op.inputs["MasterParam"], op.outputs["MasterParamOut"] = [], []
            op.set_attr("multi_precision", False)
    losses, scope, _ = _train(program)
    np.testing.assert_allclose(losses, np.load(DATA / "losses.npy"), rtol=1e-6)
    with np.load(DATA / "final.npz") as final, np.load(DATA / "init.npz") as init:
        for param in meta(CASE)["bfloat16"]:
            np.testing.assert_array_equal(np.asarray(scope[param]), _paddles(final, param))
            master = f"{param}_fp32_master_0"
            np.testing.assert_array_equal(final[master], init[master])   # Paddle never wrote it


def test_paddles_startup_program_casts_the_parameters_and_copies_their_masters():
    program = load_pir(gzip.decompress((DATA / "startup.json.gz").read_bytes()))
    scope = gradc.Scope()
    gradc.Executor().run(program, scope=scope)
    for param in meta(CASE)["bfloat16"]:
        value, master = np.asarray(scope[param]), np.asarray(scope[f"{param}_fp32_master_0"])
        np.testing.assert_array_equal(value, round_to_bfloat16(value))
        np.testing.assert_array_equal(master, value)

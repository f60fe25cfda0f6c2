"""The PIR fixtures: Paddle 3.3.1 programs in its PIR JSON format, with the numbers Paddle computed for
them. A case is a directory under tests/data/paddle/pir (tools/paddle_pir_fixtures.py), or, named
"pir_layers/<row>", a coverage row built in PIR mode (tools/paddle_pir_coverage.py)."""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

import numpy as np

import gradc
from gradc.passes import VerifyPass
from gradc.pir import load_pir

PIR_DATA = Path(__file__).parent / "data" / "paddle" / "pir"
TRAINING = sorted(p.parent.name for p in PIR_DATA.glob("*/forward.json"))
INFERENCE = sorted(p.parent.name for p in PIR_DATA.glob("*/model.json"))
WITH_BACKWARD = sorted(p.parent.name for p in PIR_DATA.glob("*/backward.json.gz"))
OPTIM = sorted(p.parent.name for p in PIR_DATA.glob("optim_*/train.json.gz"))   # with update ops, 3 steps
LAYERS = sorted(f"pir_layers/{p.parent.name}" for p in PIR_DATA.parent.glob("pir_layers/*/forward.json"))
LAYERS_WITH_BACKWARD = [case for case in LAYERS if (PIR_DATA.parent / case / "backward.json.gz").exists()]


def case_dir(case: str) -> Path:
    return PIR_DATA.parent / case if "/" in case else PIR_DATA / case


def meta(case: str) -> dict:
    return json.loads((case_dir(case) / "meta.json").read_text())


def npz(case: str, name: str) -> dict[str, np.ndarray]:
    """An archive of the case, empty if the case has none (a row without parameters); fresh copies of the arrays,
    which a run may write into."""
    return {k: v.copy() for k, v in _archive(case, name).items()}


@functools.cache   # a case's archives are read by several tests, a dozen times in all
def _archive(case: str, name: str) -> dict[str, np.ndarray]:
    if not (case_dir(case) / f"{name}.npz").exists():
        return {}
    with np.load(case_dir(case) / f"{name}.npz") as archive:
        return {k: archive[k] for k in archive.files}


def feed(case: str) -> dict:
    """The case's inputs; a LoD input (meta.json "lods", a translated LoD row) as a LoDTensor."""
    lods = meta(case).get("lods", {})
    return {name: gradc.LoDTensor(value, lods[name]) if name in lods else value
            for name, value in npz(case, "feed").items()}


def program_file(case: str) -> Path:
    return case_dir(case) / ("forward.json" if (case_dir(case) / "forward.json").exists() else "model.json")


def detached_as_in_paddle(program: gradc.Program) -> list[str]:
    """kl_div's targets, which Paddle's kldiv_loss_grad gives no gradient (gradc does: tests/test_user_week27.py)."""
    return [op.input("Target")[0] for op in program.global_block.ops if op.type == "kldiv_loss"]


def train_and_run(program: gradc.Program, case: str) -> dict[str, np.ndarray]:
    """Verify the program as `gradc compile` does, compile the backward of the fetched loss and run it on
    the fixture's inputs and parameters."""
    loss = meta(case)["loss"]
    VerifyPass().apply(program)
    gradc.append_backward(program, loss, no_grad_set=detached_as_in_paddle(program))
    scope = gradc.Scope()
    for name, value in npz(case, "params").items():
        scope[name] = value
    names = [loss, *npz(case, "grads")]
    return dict(zip(names, gradc.Executor().run(program, feed=feed(case), fetch_list=names, scope=scope)))


def assert_matches_paddle(results: dict[str, np.ndarray], case: str, paddles_program: bool = False) -> None:
    """The fixture's loss and gradients; where Paddle's gradient is wrong, central differences of its float64
    forward stand in for it, except for Paddle's own training program where that program computes it wrongly as
    written (``paddle_program_wrong``): that runs to Paddle's numbers."""
    np.testing.assert_allclose(results[meta(case)["loss"]], np.load(case_dir(case) / "loss.npy"),
                               rtol=1e-5, atol=1e-6)
    as_written = paddles_program and meta(case).get("paddle_program_wrong", False)
    for name, expected in (npz(case, "grads") | ({} if as_written else npz(case, "grads_reference"))).items():
        np.testing.assert_allclose(results[name], expected, rtol=1e-5, atol=1e-6, err_msg=name)


def run_inference(program: gradc.Program, case: str) -> np.ndarray:
    scope = gradc.Scope()
    for name, value in gradc.read_params(PIR_DATA / case / "model.pdiparams", program).items():
        scope[name] = value
    (out,) = gradc.Executor().run(program, feed(case), scope=scope)
    return out


def load(case: str) -> gradc.Program:
    """A fresh copy of the case's program, read once: a clone serializes and compiles to the same bytes as a
    program read again (checked for every case of LAYERS and TRAINING)."""
    return _loaded(case).clone()


@functools.cache
def _loaded(case: str) -> gradc.Program:
    return load_pir(program_file(case))


def paddle_backward(case: str) -> bytes:
    """Paddle's own training program of the case: its grad ops, fetching the loss and every gradient."""
    return gzip.decompress((case_dir(case) / "backward.json.gz").read_bytes())


def run_fetches(program: gradc.Program, case: str) -> dict[str, np.ndarray]:
    """Verify and run a program that already holds its backward, fetching the loss and Paddle's gradients."""
    VerifyPass().apply(program)
    scope = gradc.Scope()
    for name, value in npz(case, "params").items():
        scope[name] = value
    names = [meta(case)["loss"], *npz(case, "grads")]
    return dict(zip(names, gradc.Executor().run(program, feed=feed(case), fetch_list=names, scope=scope)))

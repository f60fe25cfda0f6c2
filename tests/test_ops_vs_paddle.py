"""Paddle's own layers (resize, vision, pooling, normalisation, padding; cumprod, broadcast_tensors and
index_put, appended directly where 3.3.1's API builds only PIR ops), compiled and run by gradc, give
Paddle's loss, gradients and updated persistables (tests/data/paddle/ops/<family>, made by
tools/paddle_op_fixtures.py with PaddlePaddle 3.3.1). Most cases run in float64, so the comparison is sharp."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from fixtures import NpzGroup
from gradc.gradcheck import check_program

ROOT = Path(__file__).parent / "data" / "paddle" / "ops"
TOLERANCE = {"float64": {"rtol": 1e-9, "atol": 1e-11}, "float32": {"rtol": 1e-5, "atol": 1e-6}}
TRAINABLE_STATISTICS = ("in eval mode with trainable statistics the forward normalises with the batch's "
                        "statistics, but Paddle's batch_norm_grad takes is_test alone to mean the running ones")
MOMENTUM_TENSOR = ("Paddle 3.3.1 ignores MomentumTensor and updates with the momentum attribute "
                   "(test_batch_norm_modes checks gradc's update)")
# case -> value Paddle gets wrong, and why: there gradc differs from Paddle, and its gradients agree with float64
# central differences
INTERP_POSITIONS = ("Paddle's float64 linear and bicubic interp grad kernels compute the sampling positions in float32 "
                    "where the forward uses double, at a ratio float32 cannot hold; gradc's is the forward's adjoint")
PADDLE_WRONG = {
    "pool/max_unpool2d_overlapping": {
        "x@GRAD": "an input cell that is the maximum of two windows lands twice on the same unpooled cell, "
                  "which holds it once; Paddle's unpool_grad gives both copies that cell's gradient (2x)"},
    "norm/batch_norm2d_eval_trainable_statistics": {
        "x@GRAD": TRAINABLE_STATISTICS, "batch_norm2d_4.w_0@GRAD": TRAINABLE_STATISTICS},
    "norm/batch_norm_legacy_trainable_statistics": {
        "x@GRAD": TRAINABLE_STATISTICS, "batch_norm_0.w_0@GRAD": TRAINABLE_STATISTICS},
    "norm/batch_norm_momentum_tensor": {
        "after/batch_norm_0.w_1": MOMENTUM_TENSOR, "after/batch_norm_0.w_2": MOMENTUM_TENSOR},
    "norm/group_norm_no_affine": {"x@GRAD": "Paddle's group_norm_grad without Scale"},
    "norm/spectral_norm": {"x@GRAD": "Paddle's spectral_norm_grad is dOut * (1 - u v^T sum(W / sigma)) / sigma, "
                                     "not dOut / sigma - u v^T sum(dOut * W) / sigma^2"},
    "norm/spectral_norm_dim1": {"x@GRAD": "the same spectral_norm_grad"},
    **{f"interp/{case}": {"x@GRAD": INTERP_POSITIONS} for case in (
        "bilinear_mode0_fraction", "bicubic_nhwc_down", "linear_mode0", "scale_tensor", "scale_tensor_bicubic")},
}


# made by tools/paddle_op_fixtures.py
FAMILIES = ("broadcast_put", "dropout", "interp", "norm", "pad", "pool", "vision")


def _load(random: bool = False):
    """The fixture cases (random=True: the random layers, whose values only have a structure in common)."""
    cases = []
    for family in (ROOT / name for name in FAMILIES):
        for meta in json.loads((family / "cases.json").read_text())["cases"]:
            if ("random" in meta) != random:
                continue
            values = NpzGroup(family / "values.npz", meta["name"] + "/")
            cases.append(pytest.param(family, meta, values, id=f"{family.name}/{meta['name']}"))
    return cases


def _group(values: dict, kind: str) -> dict:
    return {k.split("/", 1)[1]: v for k, v in values.items() if k.startswith(kind + "/")}


def run_gradc(family: Path, meta: dict, values: dict, seed: int = 0) -> dict[str, np.ndarray]:
    """gradc's compile of Paddle's forward program, run on the fixture's feed and parameters; a seed
    fixes the draws of its random ops."""
    program = gradc.load(family / f"{meta['name']}.pb")
    for op in program.global_block.ops:
        if seed and "seed" in op.attrs:
            op.attrs["seed"] = seed
    pairs = gradc.append_backward(program, loss=meta["loss"])
    assert sorted(map(list, pairs)) == sorted(meta["params_grads"])
    scope = gradc.Scope()
    for name, value in _group(values, "param").items():
        scope[name] = value.copy()
    fetch = [meta["loss"], *_group(values, "grad")]
    results = dict(zip(fetch, gradc.Executor().run(program, _group(values, "feed"), fetch, scope)))
    results.update({f"after/{name}": scope[name] for name in _group(values, "after")})
    return results


@pytest.mark.parametrize("family, meta, values", _load())
def test_matches_paddle(family, meta, values):
    ours = run_gradc(family, meta, values)
    tolerance = TOLERANCE[meta["dtype"]]
    wrong = PADDLE_WRONG.get(f"{family.name}/{meta['name']}", {})
    expected = {meta["loss"]: values["loss"], **_group(values, "grad"),
                **{f"after/{k}": v for k, v in _group(values, "after").items()}}
    for name, theirs in expected.items():
        if name in wrong:
            assert not np.allclose(ours[name], theirs, **tolerance), f"{name}: Paddle's bug is gone ({wrong[name]})"
        else:
            np.testing.assert_allclose(ours[name], theirs, err_msg=name, **tolerance)
    wrong_grads = [name.removesuffix("@GRAD") for name in wrong if name.endswith("@GRAD")]
    if wrong_grads:
        check_program(gradc.load(family / f"{meta['name']}.pb"), _group(values, "feed"), wrong_grads,
                      loss=meta["loss"], params=_group(values, "param"))


@pytest.mark.parametrize("family, meta, values", _load(random=True))
def test_random_layers_keep_their_structure(family, meta, values):
    """Dropout in training: gradc's draws are not Paddle's, but in both runs dLoss/dx / w (w the loss weight) is
    the kept units' factor or 0, one draw for all cells along the shared axes."""
    ours = run_gradc(family, meta, values, seed=5)
    weight = _group(values, "feed")["w0"]
    axes = tuple(meta["random"]["shared_axes"])
    for grads in (ours, _group(values, "grad")):
        factor = grads["x@GRAD"] / weight
        kept = np.isclose(factor, meta["random"]["scale"], rtol=1e-6)
        assert np.all(kept | (factor == 0)), np.unique(factor)
        assert 0 < kept.mean() < 1
        if axes:
            assert np.all(kept.all(axis=axes) | ~kept.any(axis=axes))

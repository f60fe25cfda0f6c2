"""fusion_seqexpand_concat_fc (seq_concat_fc_fuse_pass's op, which Paddle 3.3.1 no longer registers) against Paddle's
float64 run of the layers it replaces: sequence_expand, concat, fc (tools/paddle_seqexpand_concat_fc.py)."""

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.layers import ProgramBuilder

ROOT = DATA / "seqexpand_concat_fc"
ACTIVATIONS = {"relu_bias": "relu", "tanh": "tanh", "identity_bias": "identity"}


def _run(saved, dtype, activation):
    net = ProgramBuilder()
    xs = [net.data("x0", [-1, 3], dtype, lod_level=1), net.data("x1", [-1, 2], dtype), net.data("x2", [-1, 4], dtype)]
    inputs = {"X": xs, "FCWeight": [net.data("w", [9, 5], dtype)]}
    feed = {"x0": gradc.LoDTensor(saved["x0"].astype(dtype), [saved["x0.lod"]]), "w": saved["w"].astype(dtype),
            **{name: saved[name].astype(dtype) for name in ("x1", "x2")}}
    if "b" in saved.files:
        inputs["FCBias"] = [net.data("b", [5], dtype)]
        feed["b"] = saved["b"].astype(dtype)
    out = net.op("fusion_seqexpand_concat_fc", inputs, {"fc_activation": activation})[0]
    assert gradc.verify(net.program) == []
    got = gradc.Executor().run(net.program, feed, [out], return_lod=True)[0]
    assert list(got.lod[0]) == list(saved["x0.lod"])   # Out keeps X[0]'s sequences
    return got.array


@pytest.mark.parametrize("case", sorted(ACTIVATIONS))
def test_matches_paddles_unfused_layers(case):
    with np.load(ROOT / f"{case}.npz") as saved:
        got = _run(saved, "float64", ACTIVATIONS[case])
        np.testing.assert_allclose(np.asarray(got), saved["out"], rtol=1e-12, atol=1e-12)
        single = _run(saved, "float32", ACTIVATIONS[case])
        assert np.asarray(single).dtype == np.float32
        np.testing.assert_allclose(np.asarray(single), saved["out"], rtol=1e-5, atol=1e-5)

"""U2's feature pipeline as PaddleSpeech exports it (tools/paddlespeech_export.py u2_feature_conformer: U2InferModel's
forward_feature, paddleaudio's Kaldi fbank of int16 samples and a global CMVN, saved by Paddle 3.3.1 as PIR): gradc
gives Paddle's eager features of a tone in noise. tests/data/paddle/speech/u2_feature/ holds the export and
feature.npz (the samples and Paddle's features)."""

from pathlib import Path

import numpy as np

import gradc

DATA = Path(__file__).parent / "data" / "paddle" / "speech" / "u2_feature"


def test_u2s_exported_kaldi_fbank_gives_paddles_features():
    program = gradc.load(DATA / "export.forward_feature.json")
    assert not gradc.verify(program)
    assert {"frame", "fft_r2c", "matmul_v2", "log"} <= {op.type for op in program.global_block.ops}
    scope = gradc.Scope()
    for name, value in gradc.read_params(DATA / "export.forward_feature.pdiparams", program).items():
        scope[name] = value
    fetched = [op.input("X")[0] for op in program.global_block.ops if op.type == "fetch"]
    expected = np.load(DATA / "feature.npz")
    feat, = gradc.Executor().run(program, {"x": expected["wave"]}, fetched, scope)
    assert feat.shape == (23, 16)
    np.testing.assert_allclose(feat, expected["feat"], rtol=1e-5, atol=1e-5 * np.abs(expected["feat"]).max())

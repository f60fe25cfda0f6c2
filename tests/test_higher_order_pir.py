"""Paddle 3's PIR programs (its default static mode) whose backward of a gradient holds the second- and
third-derivative ops gradc gained (tools/paddle_higher_order_ops.py's PIR half): pd_op.sqrt/rsqrt/leaky_relu/abs/clip/
pool2d/pad3d/batch_norm/instance_norm_double_grad and sin/cos/sigmoid/pow_triple_grad. gradc translates and runs each
to Paddle's float64 gradients (1e-12); before, 'PIR op type(s) gradc cannot translate'."""

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

PIR = DATA / "double_grad_ops" / "higher" / "pir"
PADDLE = np.load(PIR / "higher.npz")
CASES = sorted({key.split("@")[0].rsplit("_", 1)[0] for key in PADDLE.files if key.endswith("@GRAD")})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return unpacked(PIR, tmp_path_factory.mktemp("higher_order_pir"))


def test_every_op_type_has_its_program():
    assert len(CASES) == 16, CASES


@pytest.mark.parametrize("case", CASES)
def test_paddles_pir_programs_give_its_gradients(files, case):
    fed = {key[len(case) + 1:]: PADDLE[key] for key in PADDLE.files if key.startswith(case + "_") and "@" not in key
           and not key[len(case) + 1:].startswith(("nhwc", "global"))}
    np.savez(files / f"{case}_feed.npz", **fed)
    run = gradc_cli("run", files / f"{case}.json", "--feed", files / f"{case}_feed.npz", "-o", files / f"{case}.npz")
    assert run.returncode == 0, run.stderr
    ours = np.load(files / f"{case}.npz")
    grads = sorted(key for key in PADDLE.files if key.startswith(case + "_") and key.endswith("@GRAD")
                   and key[len(case) + 1:-5].isdigit())
    assert grads and len(ours.files) == len(grads)
    for index, key in enumerate(grads):
        np.testing.assert_allclose(ours[f"grad_{index}"], PADDLE[key], rtol=1e-12, atol=1e-12, err_msg=key)

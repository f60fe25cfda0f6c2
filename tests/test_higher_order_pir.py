"""Paddle 3's PIR programs (its default static mode) whose backward of a gradient holds the second- and
third-derivative ops gradc gained (tools/paddle_higher_order_ops.py's PIR half): pd_op.sqrt/rsqrt/leaky_relu/abs/clip/
pool2d/pad3d/batch_norm/instance_norm_double_grad and sin/cos/sigmoid/pow_triple_grad. gradc translates and runs each
to Paddle's float64 gradients (1e-12); before, 'PIR op type(s) gradc cannot translate'."""

import gzip
import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked
from gradc.pir.table import higher_order_rows

PIR = DATA / "double_grad_ops" / "higher" / "pir"
PADDLE = np.load(PIR / "higher.npz")
FED = ("x", "w", "u", "v", "scale", "bias", "mean", "variance")
CASES = sorted({key.split("@")[0].rsplit("_", 1)[0] for key in PADDLE.files if key.endswith("@GRAD")})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return unpacked(PIR, tmp_path_factory.mktemp("higher_order_pir"))


def test_every_row_is_in_a_program():
    """Each row of gradc.pir.table.higher_order_rows is an op of one of Paddle's programs here."""
    held = set()
    for path in PIR.glob("*.json.gz"):
        program = json.loads(gzip.decompress(path.read_bytes()))["program"]
        held |= {"pd_op." + op["#"].split(".", 1)[1] for op in program["regions"][0]["blocks"][0]["ops"]}
    assert {entry.pir for entry in higher_order_rows.ROWS} <= held
    assert len(CASES) == 16, CASES


@pytest.mark.parametrize("case", CASES)
def test_paddles_pir_programs_give_its_gradients(files, case):
    """Paddle's PIR program of the case, fed as Paddle was, run by gradc: each fetched gradient to 1e-12."""
    fed = {name: PADDLE[f"{case}_{name}"] for name in FED if f"{case}_{name}" in PADDLE}
    np.savez(files / f"{case}_feed.npz", **fed)
    run = gradc_cli("run", files / f"{case}.json", "--feed", files / f"{case}_feed.npz", "-o", files / f"{case}.npz")
    assert run.returncode == 0, run.stderr
    ours = np.load(files / f"{case}.npz")
    grads = sorted(key for key in PADDLE.files if key.startswith(case + "_") and key.endswith("@GRAD")
                   and key[len(case) + 1:-5].isdigit())
    assert grads and len(ours.files) == len(grads)
    for index, key in enumerate(grads):
        np.testing.assert_allclose(ours[f"grad_{index}"], PADDLE[key], rtol=1e-12, atol=1e-12, err_msg=key)

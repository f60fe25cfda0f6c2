"""A practitioner's week with Paddle 3 models and gradc's training workflow: each rough edge found, as the
behaviour it has now."""

import numpy as np

from cli_inprocess import gradc_cli
from fixtures import DATA

MLP = DATA / "mlp"


def test_a_params_value_that_does_not_fit_names_the_op_that_reads_it_first_and_how_to_convert_it(tmp_path):
    params = dict(np.load(MLP / "params.npz"))
    params["fc_1.w_0"] = params["fc_1.w_0"][:5]
    params["fc_0.b_0"] = params["fc_0.b_0"].astype("float64")
    for name in ("fc_1.w_0", "fc_0.b_0"):
        np.savez(tmp_path / f"{name}.npz", **{**dict(np.load(MLP / "params.npz")), name: params[name]})
    shape = gradc_cli("run", MLP / "forward.pb", "--params", tmp_path / "fc_1.w_0.npz", "--feed", MLP / "feed.npz")
    assert shape.returncode == 1
    assert shape.stderr == (f"gradc: error: params '{tmp_path / 'fc_1.w_0.npz'}': 'fc_1.w_0', read first by block 0, "
                            f"op 3 (mul), has shape [5, 10], but the program declares [32, 10]\n")
    dtype = gradc_cli("run", MLP / "forward.pb", "--params", tmp_path / "fc_0.b_0.npz", "--feed", MLP / "feed.npz")
    assert dtype.returncode == 1
    assert dtype.stderr == (f"gradc: error: params '{tmp_path / 'fc_0.b_0.npz'}': 'fc_0.b_0', read first by block 0, "
                            f"op 1 (elementwise_add), is float64, but the program declares float32 (convert it, e.g. "
                            f"with .astype('float32'))\n")

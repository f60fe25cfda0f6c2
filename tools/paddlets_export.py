"""Export PaddleTS's own networks as Paddle 3 saves them (inference.json + inference.pdiparams, PIR), with their
initial weights (seed 0), for tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1 and a
PaddleTS checkout (its paddlets/) with the packages its modules import (pandas, scikit-learn, matplotlib, ...):

    /path/to/paddle/python tools/paddlets_export.py PADDLETS_DIR OUT_DIR MLPRegressor USAD ...

Each model class (of paddlets.models.forecasting or paddlets.models.anomaly) is built with chunks 16 in and 4 out and
the keywords KEYWORDS gives it, its network made for a tiny random TSDataset (two targets, an observed and a known
covariate, or those COVARIATES gives; an anomaly model's three features) as its own fit makes it
(_update_fit_params, _init_network: no training step), and saved by its own save(path, network_model=True), which
traces it with paddle.jit.to_static and saves it with paddle.jit.save (MODEL@N: save's batch_size N, for a model
whose code needs a known batch), in a process of its own, into OUT_DIR/<class>/. One line per model: OK, or FAIL
and why.
"""

from __future__ import annotations

import sys
from pathlib import Path

from suite_export import export_each, in_child

SMALLEST = [
    "MLPRegressor", "RNNBlockRegressor", "LSTNetRegressor", "NBEATSModel", "NHiTSModel", "TCNRegressor", "TFTModel",
    "InformerModel", "TransformerModel", "DeepARModel", "SCINetModel", "NLinearModel", "DLinearModel", "PatchTSTModel",
    "RLinearModel", "Nonstationary_Transformer", "Crossformer@1", "TiDE", "TimesNetModel@1",
    "AutoEncoder", "VAE", "AnomalyTransformer@1", "USAD", "MTADGAT", "TimesNet_AD", "DLinear_AD", "RLinear_AD",
    "NLinear_AD", "PatchTST_AD", "NonStationary_AD"]

IN_CHUNK, OUT_CHUNK = 16, 4

# the later models take their channel count (c_in: the dataset's two targets, an anomaly model's three features) and
# most read no covariates: their datasets have none (Paddle's save refuses an input the outputs do not depend on)
KEYWORDS = {
    "PatchTSTModel": {"c_in": 2, "patch_len": 4, "stride": 4, "n_layers": 1},
    "RLinearModel": {"c_in": 2}, "TiDE": {"c_in": 2}, "TimesNetModel": {"c_in": 2, "c_out": 2, "e_layers": 1},
    "Crossformer": {"c_in": 2, "factor": 2, "seg_len": 4, "e_layers": 1, "d_model": 16},
    "Nonstationary_Transformer": {"c_in": 2, "p_hidden_dims": [8, 8]},
    "NonStationary_AD": {"c_in": 3, "p_hidden_dims": [8, 8], "label_len": 8, "d_model": 16}}
# (observed, known) covariates of a model with KEYWORDS that reads any: the known ones are the
# hourly time features (4)
COVARIATES = {"TimesNetModel": (0, 4), "TiDE": (0, 4), "Nonstationary_Transformer": (0, 4)}


def _dataset(anomaly: bool, observed: int, known: int):
    """A tiny TSDataset of random values (64 steps indexed 0 to 63): two targets and ``observed`` and ``known``
    covariates, or an anomaly model's three features."""
    import numpy as np
    import pandas as pd
    from paddlets.datasets import TSDataset
    groups = {"feature": 3} if anomaly else {"target": 2, "observed": observed, "known": known}
    names = {group: [f"{group}{i}" for i in range(count)] for group, count in groups.items()}
    columns = [name for group in names.values() for name in group]
    frame = pd.DataFrame(np.random.default_rng(0).standard_normal((64, len(columns))).astype("float32"),
                         columns=columns)
    if anomaly:
        return TSDataset.load_from_dataframe(frame, feature_cols=columns)
    return TSDataset.load_from_dataframe(frame, target_cols=names["target"],
                                         observed_cov_cols=names["observed"] or None,
                                         known_cov_cols=names["known"] or None)


def _paddlets_package() -> None:
    """The paddlets package registered without running its __init__, which imports the whole toolkit (pipelines,
    wavelet and statistics transforms) that building a network never uses."""
    import types
    package = types.ModuleType("paddlets")
    package.__path__ = [str(Path.cwd() / "paddlets")]
    sys.modules["paddlets"] = package
    analysis = types.ModuleType("paddlets.analysis")   # TSDataset only lists its analyzers, whose reports need
    analysis.TSDataset_Inner_Analyzer = {}             # python-docx
    sys.modules["paddlets.analysis"] = analysis
    from paddlets.datasets import TimeSeries, TSDataset
    package.TimeSeries, package.TSDataset = TimeSeries, TSDataset


def export_one(out: Path, name: str, batch_size: int | None) -> str:
    """PaddleTS's model class ``name`` with a tiny configuration, saved by its own save (its modules, from the checkout
    on sys.path)."""
    import numpy as np
    import paddle
    _paddlets_package()
    import paddlets.models.anomaly as anomaly_models
    import paddlets.models.forecasting as forecasting_models
    paddle.seed(0)
    anomaly = hasattr(anomaly_models, name)
    model_class = getattr(anomaly_models if anomaly else forecasting_models, name)
    sizes = {"in_chunk_len": IN_CHUNK} if anomaly else {"in_chunk_len": IN_CHUNK, "out_chunk_len": OUT_CHUNK}
    model = model_class(**sizes, **KEYWORDS.get(name, {}), max_epochs=1)
    dataset = _dataset(anomaly, *COVARIATES.get(name, (0, 0) if name in KEYWORDS else (1, 1)))
    model._fit_params = model._update_fit_params(dataset, None) if anomaly else \
        model._update_fit_params([dataset], None)
    model._network = model._init_network()
    out.mkdir(parents=True, exist_ok=True)
    np.unicode_ = np.str_   # save writes its meta file with the alias NumPy 2 removed
    model.save(str(out / "inference"), network_model=True, batch_size=batch_size)
    return "OK"


def main() -> None:
    source, out_dir, models = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3:] or SMALLEST
    if in_child(source):   # one model
        name, _, batch = models[0].partition("@")
        print(export_one(out_dir / name, name, int(batch) if batch else None), flush=True)
        return
    export_each(__file__, source, out_dir, models, timeout=600)


if __name__ == "__main__":
    main()

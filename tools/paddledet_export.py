"""Export PaddleDetection's own architectures as Paddle 3 saves them (model.json + model.pdiparams, PIR), with
their initial weights (seed 0), for tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1
and a PaddleDetection checkout (its ppdet/ and configs/) with the packages its modules import:

    /path/to/paddle/python tools/paddledet_export.py PADDLEDET_DIR OUT_DIR configs/yolox/yolox_nano_300e_coco.yml@320

Each config goes through PaddleDetection's own export (ppdet.engine.Trainer(cfg, mode='test').export, what
tools/export_model.py calls) in a process of its own, no pretrained weights loaded, into OUT_DIR/<config name>/,
NMS and post-processing where its exporter puts them. A config may end in @SIZE: an image size the model is exported
at (TestReader's inputs_def, and RT-DETR's eval_spatial_size) where the config fixes one, else the -1 dims stay and
the checker's DIM chooses. One line per config: OK, or FAIL and why. Only CLRNet's lane dataset imports imgaug
(which needs numpy < 2): a stub stands in. BlazeFace's config builds a WIDER FACE evaluation set that wants its
ground-truth .mat files to exist.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import suite_export


def _stub_imgaug() -> None:
    """imgaug's stand-in: ppdet's lane-detection modules import names from it at import time."""
    for name in ("imgaug", "imgaug.augmenters", "imgaug.augmentables", "imgaug.augmentables.lines",
                 "imgaug.augmentables.segmaps"):
        module = types.ModuleType(name)
        module.__getattr__ = lambda attr: type(attr, (), {})
        sys.modules[name] = module


def _resize(cfg, size: int) -> None:
    """The input size ``size`` x ``size`` where the config fixes one."""
    inputs = cfg["TestReader"].get("inputs_def") or {}
    if inputs.get("image_shape") and all(d > 0 for d in inputs["image_shape"][-2:]):
        inputs["image_shape"] = [*inputs["image_shape"][:-2], size, size]
    for value in cfg.values():
        if isinstance(value, dict) and "eval_spatial_size" in value:
            value["eval_spatial_size"] = [size, size]
    if isinstance(cfg.get("eval_size"), list):
        cfg["eval_size"] = [size, size]


def export_one(out: Path, config_path: str) -> str:
    """PaddleDetection's export of one config (its modules, from the checkout on sys.path)."""
    _stub_imgaug()
    import paddle
    from ppdet.core.workspace import load_config
    from ppdet.engine import Trainer
    config_path, _, size = config_path.partition("@")
    cfg = load_config(config_path)
    cfg.update(use_gpu=False, pretrain_weights=None, weights=None)
    for value in cfg.values():
        if isinstance(value, dict) and "pretrained" in value:
            value["pretrained"] = False
    if size:
        _resize(cfg, int(size))
    paddle.set_device("cpu")
    paddle.seed(0)
    trainer = Trainer(cfg, mode="test")
    trainer.export(str(out.parent))   # out.parent/<config name>/model.json, model.pdiparams
    return "OK"


def main() -> None:
    suite_export.main(__file__, lambda out_dir, entry: export_one(out_dir / Path(entry.partition("@")[0]).stem, entry))


if __name__ == "__main__":
    main()

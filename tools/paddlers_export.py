"""Export PaddleRS's own architectures as Paddle 3 saves them (PIR model.json + model.pdiparams), with their initial
weights (seed 0), for tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1 and a PaddleRS
checkout (its paddlers/) with the packages `import paddlers.tasks` needs (PyYAML, opencv, scipy, scikit-image,
scikit-learn, shapely, matplotlib, pycocotools, pandas, munch, paddleslim, pyzmq, easydict, ...):

    /path/to/paddle/python tools/paddlers_export.py PADDLERS_DIR OUT_DIR [MODULE.CLASS[@HxW][,KEY=VALUE...] ...]

Each entry is one of PaddleRS's task classes (paddlers.tasks.MODULE.CLASS, built with KEY=VALUE keyword arguments,
values as Python literals, EMPTY a parameter file holding nothing), saved by PaddleRS's own export
(BaseModel.export_inference_model, as its deploy/export/export_model.py calls it: the net in its inference wrapper,
to_static on [None, C, -1, -1] inputs, or [1, C, H, W] with @HxW) in a process of its own, on the CPU, every
pretrained-weights download an empty parameter file, into OUT_DIR/<CLASS>/. Without entries, SMALLEST is exported:
each architecture family PaddleRS implements itself (rs_models/), at its smallest. One line per entry: OK, or FAIL
and why.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import suite_export

# PaddleRS's own networks (rs_models/), the smallest variant of each; its other tasks wrap PaddleSeg, PaddleClas,
# PaddleDetection and PaddleGAN models, checked with those suites.
SMALLEST = [
    "change_detector.BIT",
    "change_detector.CDNet@64x64",   # its max_unpool2d freezes an output size from -1 dims (as SegNet in PaddleSeg)
    "change_detector.ChangeFormer",
    "change_detector.ChangeStar",
    "change_detector.DSAMNet",
    "change_detector.DSIFN",
    "change_detector.FCCDN",
    "change_detector.FCEarlyFusion@64x64",   # its decoder pads by shape differences, frozen from -1 dims
    "change_detector.FCSiamConc@64x64",   # its decoder pads by shape differences, frozen from -1 dims
    "change_detector.FCSiamDiff@64x64",   # its decoder pads by shape differences, frozen from -1 dims
    "change_detector.P2V",
    "change_detector.SNUNet",
    "change_detector.STANet",
    "segmenter.C2FNet,coarse_model='FCN',coarse_model_backbone='HRNet_W18',coarse_model_path=EMPTY",
    "segmenter.FactSeg",
    "segmenter.FarSeg",
    "classifier.CondenseNetV2@224x224",   # its last pooling is a fixed 7x7 window
    "restorer.RCAN",
]


def _no_downloads(empty: Path) -> None:
    """Every pretrained-weights download (BIT's, STANet's ResNet, DSIFN's VGG16, ...) gives ``empty``, a parameter
    file holding nothing: the nets keep their initial weights (and nothing is fetched from the network)."""
    import paddle
    import paddle.utils.download
    paddle.save({}, str(empty))
    paddle.utils.download.get_path_from_url = lambda *args, **kwargs: str(empty)


def export_one(out_dir: Path, entry: str) -> str:
    """PaddleRS's export of one task class, as its deploy/export/export_model.py runs it, but for the weights it
    loads (none: the task is built, not loaded from a trained model directory)."""
    os.environ["PADDLEX_EXPORT_STAGE"] = os.environ["PADDLESEG_EXPORT_STAGE"] = "True"   # as its export sets them
    import paddle
    import paddlers.tasks
    name_size, *options = entry.split(",")
    name, _, size = name_size.partition("@")
    module, cls = name.split(".")
    empty = out_dir / "empty.pdparams"
    kwargs = {key: str(empty) if value == "EMPTY" else ast.literal_eval(value)
              for key, value in (o.split("=", 1) for o in options)}
    paddle.set_device("cpu")
    paddle.seed(0)
    _no_downloads(empty)
    model = getattr(getattr(paddlers.tasks, module), cls)(**kwargs)
    model.export_inference_model(str(out_dir / cls), [int(d) for d in size.split("x")] if size else None)
    return "OK"


def main() -> None:
    suite_export.main(__file__, export_one, SMALLEST)


if __name__ == "__main__":
    main()

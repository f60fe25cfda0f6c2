"""Export PaddleOCR's own architectures as Paddle 3 saves them (inference.json + inference.pdiparams, PIR), with
their initial weights, for tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1 and a
PaddleOCR checkout (its ppocr/, configs/, tools/) with the packages its modules import:

    /path/to/paddle/python tools/paddleocr_export.py PADDLEOCR_DIR OUT_DIR configs/det/det_mv3_db.yml ...

Each config goes through PaddleOCR's own export (ppocr.utils.export_model.export) in a process of its own, no
pretrained weights loaded (a backbone's download switched off), into OUT_DIR/<config path with / as __>/. One line
per config: OK, or FAIL and why (a config that needs a teacher model or a compiled extension fails in PaddleOCR too).
"""

from __future__ import annotations

import sys
from pathlib import Path

from suite_export import export_each, in_child


def export_one(out: Path, config_path: str) -> str:
    """PaddleOCR's export of one config (its modules, from the checkout on sys.path)."""
    import paddle
    from ppocr.utils.export_model import export
    from tools.program import load_config
    config = load_config(config_path)
    config["Global"].update(pretrained_model=None, checkpoints=None, save_inference_dir=str(out))
    backbone = config["Architecture"].get("Backbone")
    if isinstance(backbone, dict) and "pretrained" in backbone:
        backbone["pretrained"] = False
    paddle.seed(0)
    export(config)
    return "OK"


def main() -> None:
    source, out_dir, configs = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3:]
    if in_child(source):   # one config
        out = out_dir / configs[0].removeprefix("configs/").rsplit(".", 1)[0].replace("/", "__")
        print(export_one(out, configs[0]), flush=True)
        return
    export_each(__file__, source, out_dir, configs, timeout=600)

if __name__ == "__main__":
    main()

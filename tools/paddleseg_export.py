"""Export PaddleSeg's own architectures as Paddle 3 saves them (inference.json + inference.pdiparams, PIR), with
their initial weights (seed 0), for tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1
and a PaddleSeg checkout (its paddleseg/ and configs/) with the packages its modules import:

    /path/to/paddle/python tools/paddleseg_export.py PADDLESEG_DIR OUT_DIR configs/unet/unet_drive_128x128_40k.yml ...

Each config is built by PaddleSeg's own Config and SegBuilder, every `pretrained` entry of its model an empty file,
and saved by PaddleSeg's own export (paddleseg.core.export.export: the model wrapped in its WrappedModel with a
softmax output, to_static with an input of [None, 3, None, None], or a config's fixed size given as
CONFIG@HxW), in a process of its own, into OUT_DIR/<config name>/. One line per config: OK, or FAIL and why.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from pathlib import Path

from suite_export import export_each, in_child


def _no_pretrained(node: object, empty: str) -> None:
    """Every `pretrained` entry of a model config pointed at ``empty``, a parameter file holding nothing: no download,
    random initial weights (PaddleSeg's ViT backbones read their `pretrained` file whatever it is)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pretrained":
                node[key] = empty
            else:
                _no_pretrained(value, empty)
    elif isinstance(node, list):
        for value in node:
            _no_pretrained(value, empty)


def export_one(out: Path, config_path: str, size: list[int] | None) -> str:
    """PaddleSeg's export of one config (its modules, from the checkout on sys.path)."""
    import paddle
    from paddleseg.core.export import export
    from paddleseg.cvlibs import Config, SegBuilder
    paddle.seed(0)
    cfg = Config(config_path)
    empty = out.parent / "empty.pdparams"
    paddle.save({}, str(empty))
    _no_pretrained(cfg.dic["model"], str(empty))
    model = SegBuilder(cfg).model
    args = Namespace(config=config_path, model_path=None, save_dir=str(out), output_op="softmax", for_fd=True,
                     input_shape=[1, 3, *size] if size else None)
    export(args, model=model, save_dir=str(out))
    return "OK"


def main() -> None:
    source, out_dir, configs = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3:]
    if in_child(source):   # one config
        config, _, size = configs[0].partition("@")
        out = out_dir / Path(config).stem
        print(export_one(out, config, [int(d) for d in size.split("x")] if size else None), flush=True)
        return
    export_each(__file__, source, out_dir, configs, timeout=600)

if __name__ == "__main__":
    main()

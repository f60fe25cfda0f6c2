"""Export PaddleRec's own models as Paddle 3 saves them (inference.json + inference.pdiparams, PIR), with their
initial weights (seed 12345, as PaddleRec's tools/to_static.py seeds), for tools/real_models.py to check gradc against
Paddle on. Needs paddlepaddle 3.3.1 and a PaddleRec checkout (its models/ and tools/, with its sample data) with the
packages its modules import (pyyaml):

    /path/to/paddle/python tools/paddlerec_export.py PADDLEREC_DIR OUT_DIR models/rank/deepfm ...

Each model is built by its own dygraph_model.py (DygraphModel.create_model of its config.yaml, its
sparse_feature_number capped at 10,001 ids), and the inputs of its forward are those its own infer_forward (word2vec:
train_forward) passes for one batch of its sample data (read by its own reader and create_feeds), given to
paddle.jit.to_static with the batch dim free (MODEL@fixed: as the batch was) and saved by paddle.jit.save, as
PaddleRec's tools/to_static.py does (only the inputs the forward reads kept), in a process of its own, into
OUT_DIR/<model name>/. One line per model: OK, or FAIL and why.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from suite_export import export_each, in_child

SMALLEST = [f"models/{name}" for name in (
    "rank/deepfm", "rank/wide_deep", "rank/dcn", "rank/dcn_v2", "rank/xdeepfm", "rank/din", "rank/dien",
    "rank/autoint", "rank/dlrm", "rank/naml", "rank/flen", "rank/fm", "rank/ffm", "rank/logistic_regression",
    "rank/dnn", "rank/deepfefm@fixed", "rank/difm", "rank/gatenet", "rank/bst", "rank/dsin", "rank/dmr", "rank/fgcnn",
    "rank/fat_deepffm", "rank/autofis", "rank/bert4rec", "rank/deeprec", "rank/dpin", "rank/iprec", "rank/fastformer",
    "rank/sign", "recall/ncf", "recall/mind", "recall/word2vec", "recall/tisas", "recall/ensfm", "recall/mhcn",
    "match/dssm", "match/match-pyramid", "match/multiview-simnet", "match/kim", "multitask/mmoe", "multitask/ple",
    "multitask/esmm", "multitask/share_bottom", "multitask/escm2", "multitask/aitm", "multitask/dselect_k",
    "multitask/maml", "multitask/metaheac", "contentunderstanding/textcnn", "contentunderstanding/tagspace")]


VOCABULARY = 10_001   # the most ids a sparse slot's table holds here


class _Captured(Exception):
    """Raised by the recording forward once it has the inputs (the dygraph forward itself need not run)."""


def _forward_inputs(dy_class, model, config: dict) -> tuple:
    """The arguments the model's own infer_forward passes to its forward for one batch of its sample data."""
    import paddle
    from utils.utils_single import create_data_loader
    captured = []

    def record(*args, **kwargs):
        captured.append((args, kwargs))
        raise _Captured

    batch = next(iter(create_data_loader(config=config, place=paddle.CPUPlace(), mode="test")))
    model.forward = record
    try:
        forward = getattr(dy_class, "infer_forward", None) or dy_class.train_forward   # word2vec has no infer
        forward(model, dy_class.create_metrics()[0], batch, config)
    except _Captured:
        pass
    del model.forward
    if not captured:
        raise RuntimeError("infer_forward did not call the model's forward")
    return captured[0]


def _spec(value, name: str, fixed: bool):
    """An InputSpec of a tensor argument (its batch dim free unless ``fixed``), a list of them for a list; other values
    as they are."""
    import paddle
    if isinstance(value, (list, tuple)):
        return [_spec(item, f"{name}_{i}", fixed) for i, item in enumerate(value)]
    if isinstance(value, paddle.Tensor):
        shape = [None if i == 0 and not fixed else d for i, d in enumerate(value.shape)]
        return paddle.static.InputSpec(shape=shape, dtype=value.dtype, name=name)
    return value


def export_one(out: Path, model_dir: str, fixed: bool) -> str:
    """PaddleRec's model of ``model_dir``, saved by paddle.jit.save (its modules, from the checkout on sys.path)."""
    import paddle
    source = Path.cwd()
    sys.path[:0] = [str(source / "tools"), str(source / model_dir)]
    os.chdir(source / model_dir)   # some models read files relative to their folder (MHCN's ratings)
    from utils.utils_single import load_dy_model_class, load_yaml
    paddle.seed(12345)
    config = load_yaml(str(source / model_dir / "config.yaml"))
    config["config_abs_dir"] = str(source / model_dir)
    for key, value in list(config.items()):   # a table of a million ids is 36 MB a copy, and the checker keeps six
        if key.startswith("hyper_parameters.sparse_feature") and type(value) is int and value > VOCABULARY:
            config[key] = VOCABULARY
    dy_class = load_dy_model_class(str(source / model_dir))
    model = dy_class.create_model(config)
    model.eval()
    args, kwargs = _forward_inputs(dy_class, model, config)
    if kwargs:
        raise RuntimeError(f"forward called with keywords {sorted(kwargs)}")
    specs = [_spec(arg, f"input{i}", fixed) for i, arg in enumerate(args)]
    static = paddle.jit.to_static(model, input_spec=specs, full_graph=True)
    paddle.jit.save(static, str(out / "inference"), input_spec=paddle.utils.flatten(specs),
                    input_names_after_prune=_used_inputs(static))
    return "OK"


def _used_inputs(static) -> list[str]:
    """The names of the traced forward's inputs it reads (some models are passed their label too, which Paddle's save
    refuses as an input the outputs do not depend on; PaddleRec's static path names its inputs for the same reason)."""
    program = static.forward.concrete_program.main_program
    return [op.attrs()["name"] for op in program.global_block().ops
            if op.name() == "pd_op.data" and not op.result(0).use_empty()]


def main() -> None:
    source, out_dir, models = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3:] or SMALLEST
    if in_child(source):   # one model
        model, _, batch = models[0].partition("@")
        print(export_one(out_dir / Path(model).name, model, batch == "fixed"), flush=True)
        return
    export_each(__file__, source, out_dir, models, timeout=600)


if __name__ == "__main__":
    main()

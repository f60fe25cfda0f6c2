"""PaddleVideo's video transformers, tiny, saved by Paddle 3.3.1 as legacy and PIR programs with Paddle's own outputs,
loss and gradients, for tests/test_video_transformers.py. Each case is built by PaddleVideo's build_model from its own
config (its initial weights: trunc_normal_ at std 1 in the ViTs' Linear layers), shrunk by its own config overrides
(16-wide embeddings, one or two blocks, 2 frames, 5 classes, no dropout or drop path), and saved by paddle.jit.save
twice: `infer`, the model as PaddleVideo's tools/export_model.py exports it (its input: 3 views of num_seg frames
for the ViTs, whose scores it averages), and `train`, its train_step's loss (the head's cross entropy, label-smoothed
where the config says) of a batch of clips and labels. Needs a PaddleVideo checkout and the packages its modules import
(PyYAML, tqdm, scipy, opencv, pandas) on PYTHONPATH, with tools/ (the legacy shim):

    PYTHONPATH=PADDLEVIDEO_DIR:DEPS:tools /work/paddle-venv/bin/python tools/paddlevideo_training.py OUT_DIR [CASE ...]

It runs in PADDLEVIDEO_DIR (its configs name files relative to it). A child process per format: with
FLAGS_enable_pir_api=1 it writes infer.json and train.json (and Paddle's eager reference, before the legacy shim
rebinds APIs), with 0 infer.pdmodel and train.pdmodel, each with its .pdiparams. OUT_DIR/<case>/ also gets feed.npz
(`infer` and `train` clips, `label`) and paddle.npz: Paddle's eager scores of the `infer` clip (`infer`), the loss of
the training batch (`loss`) and the gradient of every parameter by its saved name. At this size float32 rounding stays
below 1e-5 of the largest gradient (where PaddleVideo's std-1 weights saturate bigger models' softmaxes, it does not).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle.static import InputSpec

_R = "configs/recognition/"
_VIT = ["MODEL.backbone.embed_dim=16", "MODEL.backbone.depth=2", "MODEL.backbone.num_heads=2",
        "MODEL.backbone.img_size=16", "MODEL.backbone.patch_size=8", "MODEL.backbone.num_seg=2",
        "MODEL.head.in_channels=16"]
# case: (config, PaddleVideo's overrides, frame size); 2x2 patches per frame, VideoSwin 8x8 (4x4 in its second stage,
# whose 2x2x2 windows then shift)
CASES = {
    "timesformer": (_R + "timesformer/timesformer_k400_videos.yaml", _VIT, 16),
    "pptimesformer": (_R + "pptimesformer/pptimesformer_k400_videos.yaml", _VIT, 16),
    "tokenshift": (_R + "token_transformer/tokShift_transformer_ucf101_256_videos.yaml",
                   _VIT + ["MODEL.head.num_seg=2"], 16),
    "videoswin": (_R + "videoswin/videoswin_small_k400_videos.yaml",
                  ["MODEL.backbone.embed_dim=8", "MODEL.backbone.depths=[1,1]", "MODEL.backbone.num_heads=[1,2]",
                   "MODEL.backbone.window_size=[2,2,2]", "MODEL.head.in_channels=16", "MODEL.head.drop_ratio=0.0",
                   "INFERENCE.seg_len=2"], 32),
}
COMMON = ["MODEL.backbone.pretrained=None", "MODEL.backbone.drop_path_rate=0.0", "MODEL.head.num_classes=5",
          "INFERENCE.num_seg=2", "MODEL.runtime_cfg.test.num_seg=2"]


class TrainLoss(paddle.nn.Layer):
    """The loss PaddleVideo's train_step gives of a batch of clips and their labels."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, imgs, labels):
        return self.model.train_step([imgs, labels])["loss"]


def build(case: str):
    """The model PaddleVideo builds from the case's config (seeds 0), and its clip shapes: inference's, training's."""
    from paddlevideo.modeling.builder import build_model
    from paddlevideo.utils import get_config
    path, overrides, size = CASES[case]
    cfg = get_config(path, overrides=COMMON + overrides, show=False)
    paddle.seed(0)
    np.random.seed(0)   # PaddleVideo's trunc_normal_ draws from numpy
    frames = cfg.INFERENCE.num_seg * cfg.INFERENCE.get("seg_len", 1)
    views = 1 if case == "videoswin" else 3   # export_model's get_input_spec
    return build_model(cfg.MODEL), [1, 3, frames * views, size, size], [2, 3, frames, size, size]


def save(case: str, out: Path) -> None:
    pir = os.environ["FLAGS_enable_pir_api"] == "1"
    model, infer_shape, train_shape = build(case)
    loss_layer = TrainLoss(model)
    if pir:
        rng = np.random.default_rng(0)
        feed = {"infer": rng.standard_normal(infer_shape).astype(np.float32),
                "train": rng.standard_normal(train_shape).astype(np.float32), "label": np.array([[1], [3]], np.int64)}
        np.savez(out / "feed.npz", **feed)
        np.savez(out / "paddle.npz", **reference(model, loss_layer, feed))
        from paddlevideo.modeling.backbones.swin_transformer import compute_mask
        compute_mask.cache_clear()   # its lru_cache holds the eager masks, which jit.save finds no name for
    else:   # 3.3.1's logical_not, matmul, ... have no legacy static path of their own
        from paddle_legacy_shim import install
        install()
    model.eval()
    spec = [[InputSpec([None, *infer_shape[1:]], "float32", "clip")]]
    paddle.jit.save(paddle.jit.to_static(model, input_spec=spec, full_graph=True), str(out / "infer"))
    model.train()
    specs = [InputSpec([None, *train_shape[1:]], "float32", "imgs"), InputSpec([None, 1], "int64", "labels")]
    paddle.jit.save(paddle.jit.to_static(loss_layer, input_spec=specs, full_graph=True), str(out / "train"))


def reference(model, loss_layer, feed: dict) -> dict:
    """Paddle's eager scores of the inference clip; loss and gradients of the training batch."""
    model.eval()
    infer = model([paddle.to_tensor(feed["infer"])])
    model.train()
    loss = loss_layer(paddle.to_tensor(feed["train"]), paddle.to_tensor(feed["label"]))
    loss.backward()
    grads = {p.name: p.grad.numpy() for p in model.parameters() if p.grad is not None}
    return {"infer": infer.numpy(), "loss": loss.numpy(), **grads}


def main() -> None:
    out_dir, cases = Path(sys.argv[1]).resolve(), sys.argv[2:] or list(CASES)
    if os.environ.get("GRADC_VIDEO_CHILD"):
        save(cases[0], out_dir / cases[0])
        return
    for case in cases:
        (out_dir / case).mkdir(parents=True, exist_ok=True)
        for flag in ("1", "0"):   # PIR first: it writes the reference
            env = {**os.environ, "FLAGS_enable_pir_api": flag, "GRADC_VIDEO_CHILD": "1"}
            subprocess.run([sys.executable, __file__, str(out_dir), case], env=env, check=True,
                           cwd=os.environ.get("PADDLEVIDEO_DIR", "."))
        print(case, "OK", flush=True)


if __name__ == "__main__":
    main()

"""Export PaddleVideo's own architectures as Paddle 3 saves them (inference.json + inference.pdiparams, PIR), with
their initial weights (seed 0), for tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1
and a PaddleVideo checkout (its paddlevideo/, configs/ and tools/) with the packages its modules import (PyYAML, tqdm,
scipy, opencv, pandas):

    /path/to/paddle/python tools/paddlevideo_export.py PADDLEVIDEO_DIR OUT_DIR [CONFIG[,KEY=VALUE...] ...]

Each config goes through PaddleVideo's own export (tools/export_model.py: its trim_config, build_model, the model in
eval mode with its rep() layers re-parameterized, to_static on its get_input_spec, paddle.jit.save) in a process of
its own, on the CPU, no pretrained weights loaded, into OUT_DIR/<config name>/. KEY=VALUE pairs are PaddleVideo's own
overrides (INFERENCE.num_seg=2 with MODEL.backbone.num_seg=2 exports 2 frames, INFERENCE.target_size=64 a 64x64
input), which keep the models small enough for numpy. Without configs, SMALLEST is exported: the smallest variant of
each architecture family, at the fewest frames and smallest size it takes. One line per config: OK, or FAIL and why.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import suite_export


def _frames(n: int, size: int, backbone: bool = True) -> str:
    """Overrides for ``n`` frames of ``size`` x ``size`` (the backbone's num_seg too, where it shifts across frames)."""
    return f",INFERENCE.num_seg={n},INFERENCE.target_size={size}" + (f",MODEL.backbone.num_seg={n}" if backbone else "")


def _transformer(n: int, size: int) -> str:
    """Overrides for a transformer's ``n`` frames of ``size`` x ``size``: its test view of n frames, its patch grid."""
    return _frames(n, size) + f",MODEL.runtime_cfg.test.num_seg={n},MODEL.backbone.img_size={size}"


_R = "configs/recognition/"
# One config per architecture family (the smallest backbone where a family has several), 2 frames where a model
# mixes frames (3 where it shifts 1/num_seg of its channels: Paddle asserts a ratio below 0.5), 64x64 where it takes
# any size.
SMALLEST = [
    _R + "tsn/tsn_k400_frames.yaml" + _frames(1, 64, backbone=False),
    _R + "tsm/tsm_k400_frames.yaml" + _frames(3, 64),
    _R + "pptsm/pptsm_k400_frames_uniform.yaml" + _frames(3, 64),
    _R + "pptsm/pptsm_mv2_k400_videos_uniform.yaml" + _frames(3, 64),
    _R + "pptsm/pptsm_mv3_k400_frames_uniform.yaml" + _frames(3, 64),
    _R + "pptsm/v2/pptsm_lcnet_k400_8frames_uniform.yaml" + _frames(3, 64),
    _R + "pptsn/pptsn_k400_frames.yaml" + _frames(1, 64, backbone=False),
    _R + "slowfast/slowfast.yaml,INFERENCE.num_frames=8,INFERENCE.target_size=64,MODEL.head.num_frames=8,"
    "MODEL.head.crop_size=64",
    _R + "timesformer/timesformer_k400_videos.yaml" + _transformer(2, 64),
    _R + "pptimesformer/pptimesformer_k400_videos.yaml" + _transformer(2, 64),
    _R + "videoswin/videoswin_small_k400_videos.yaml,INFERENCE.seg_len=4,INFERENCE.target_size=64,"
    "MODEL.runtime_cfg.test.num_seg=4",
    _R + "token_transformer/tokShift_transformer_ucf101_256_videos.yaml" + _transformer(2, 64)
    + ",MODEL.head.num_seg=2",
    _R + "attention_lstm/attention_lstm_youtube8m.yaml,INFERENCE.embedding_size=16",
    _R + "movinet/movinet_k400_frame.yaml" + _frames(2, 64, backbone=False),
    _R + "stgcn/stgcn_fsd.yaml,INFERENCE.window_size=32",
    _R + "agcn/agcn_fsd.yaml,INFERENCE.window_size=32",
    _R + "agcn2s/agcn2s_ntucs_joint.yaml",
    _R + "ctrgcn/ctrgcn_ntucs_joint.yaml,model_name=CTRGCN",   # the name its export knows
    _R + "posec3d/posec3d.yaml",
    "configs/localization/bmn.yaml",
    "configs/localization/yowo.yaml,INFERENCE.num_seg=8,INFERENCE.target_size=64,MODEL.backbone.pretrained_2d=None,"
    "MODEL.backbone.pretrained_3d=None",
    "configs/estimation/adds/adds.yaml,INFERENCE.height=64,INFERENCE.width=128",
    "configs/segmentation/ms_tcn/ms_tcn_gtea.yaml",
    "configs/segmentation/asrf/asrf_gtea.yaml,MODEL.loss=None",   # its loss reads GTEA's label files when built
    "configs/partitioners/transnetv2/transnetv2.yaml",
    "configs/detection/ava/ava.yaml,INFERENCE.num_frames=8,INFERENCE.target_size=64",
    ]


def _suite_export_module(source: Path):
    """PaddleVideo's tools/export_model.py, as a module (its trim_config and get_input_spec)."""
    spec = importlib.util.spec_from_file_location("paddlevideo_export_model", source / "tools" / "export_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def export_one(source: Path, out: Path, entry: str) -> str:
    """PaddleVideo's export of one config, as its tools/export_model.py runs it, but for the parameters it loads."""
    import paddle
    from paddlevideo.modeling.builder import build_model
    from paddlevideo.utils import get_config
    suite = _suite_export_module(source)
    path, *overrides = entry.split(",")
    cfg, model_name = suite.trim_config(get_config(path, overrides=overrides, show=False))
    paddle.set_device("cpu")
    paddle.seed(0)
    model = build_model(cfg.MODEL)
    model.eval()
    for layer in model.sublayers():   # PP-TSMv2's re-parameterizable blocks, as the suite's export folds them
        if hasattr(layer, "rep") and not layer.is_repped:
            layer.rep()
    model = paddle.jit.to_static(model, input_spec=suite.get_input_spec(cfg.INFERENCE, model_name))
    paddle.jit.save(model, str(out / "inference"))
    return "OK"


def main() -> None:   # the child runs in the suite's checkout
    suite_export.main(__file__, lambda out_dir, entry: export_one(Path.cwd(), out_dir / Path(entry.split(",")[0]).stem,
                                                                  entry), SMALLEST)


if __name__ == "__main__":
    main()

"""Export PaddleClas's image-classification backbones as Paddle 3 saves them (inference.json + inference.pdiparams,
PIR), with their initial weights, for tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1
and a PaddleClas checkout (its ppcls/) with the packages its modules import:

    /path/to/paddle/python tools/paddleclas_export.py PADDLECLAS_DIR OUT_DIR [CONFIG[,KEY=VALUE...] ...]

Each config goes through PaddleClas's own export (tools/export_model.py: ppcls.engine.engine.Engine in "export" mode,
its ExportModel with the softmax, re-parameterization, paddle.jit.to_static on [None] + Global.image_shape, then
paddle.jit.save) in a process of its own, on the CPU, no pretrained weights loaded, into OUT_DIR/<family>__<arch>/.
KEY=VALUE pairs are PaddleClas's own -o overrides (Arch.name=MobileNeXt_x0_35 exports a variant that has no config
of its own), but for batch=N, which fixes the batch dim PaddleClas leaves free (Paddle 3.3.1's F.fold asserts that a
shape's product is not negative, which a free batch dim makes it: MobileViTV2's export fails without). Without
configs, SMALLEST is exported: the smallest variant of each backbone family. One line per config: OK, or FAIL and why.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from suite_export import export_each, in_child

_IMAGENET = "ppcls/configs/ImageNet/"

# The smallest variant of each family (one per module of ppcls/arch/backbone, and a second where a family's variants
# take another code path: distilled DeiT, MobileNetV4's attention, MobileViTV3's v2-style blocks, PVTv2's linear
# attention, the vd stems, Twins' two designs, Xception's DeepLab form, the DBB re-parameterized ResNet).
SMALLEST = [_IMAGENET + c for c in (
    "AlexNet/AlexNet.yaml", "CSPNet/CSPDarkNet53.yaml", "CSWinTransformer/CSWinTransformer_tiny_224.yaml",
    "ConvNeXt/ConvNeXt_tiny.yaml", "CvT/CvT_13_224.yaml", "DLA/DLA46_c.yaml", "DPN/DPN68.yaml",
    "DSNet/DSNet_tiny.yaml", "DarkNet/DarkNet53.yaml", "DeiT/DeiT_tiny_patch16_224.yaml",
    "DeiT/DeiT_tiny_distilled_patch16_224.yaml", "DenseNet/DenseNet121.yaml", "ESNet/ESNet_x0_25.yaml",
    "EfficientNet/EfficientNetB0.yaml", "EfficientNetV2/EfficientNetV2_S.yaml", "FasterNet/FasterNet_T0.yaml",
    "GhostNet/GhostNet_x0_5.yaml", "HRNet/HRNet_W18_C.yaml", "HarDNet/HarDNet39_ds.yaml", "Inception/GoogLeNet.yaml",
    "Inception/InceptionV3.yaml", "Inception/InceptionV4.yaml", "LeViT/LeViT_128S.yaml", "MicroNet/MicroNet_M0.yaml",
    "MixNet/MixNet_S.yaml", "MobileNeXt/MobileNeXt_x1_0.yaml,Arch.name=MobileNeXt_x0_35",
    "MobileNetV1/MobileNetV1_x0_25.yaml", "MobileNetV2/MobileNetV2_x0_25.yaml",
    "MobileNetV3/MobileNetV3_small_x0_35.yaml", "MobileNetV4/MobileNetV4_conv_small.yaml",
    "MobileNetV4/MobileNetV4_hybrid_medium.yaml", "MobileViT/MobileViT_XXS.yaml",
    "MobileViTV2/MobileViTV2_x0_5.yaml,batch=1", "MobileViTV3/MobileViTV3_XXS.yaml",
    "MobileViTV3/MobileViTV3_x0_5.yaml,batch=1", "NextViT/NextViT_small_224.yaml",
    "PPHGNet/PPHGNet_tiny.yaml", "PPHGNetV2/PPHGNetV2_B0.yaml", "PPLCNet/PPLCNet_x0_25.yaml",
    "PPLCNetV2/PPLCNetV2_small.yaml", "PVTV2/PVT_V2_B0.yaml", "PVTV2/PVT_V2_B2_Linear.yaml", "PeleeNet/PeleeNet.yaml",
    "ReXNet/ReXNet_1_0.yaml", "RedNet/RedNet26.yaml", "RegNet/RegNetX_200MF.yaml", "RepVGG/RepVGG_A0.yaml",
    "Res2Net/Res2Net50_26w_4s.yaml", "Res2Net/Res2Net50_vd_26w_4s.yaml", "ResNeSt/ResNeSt50_fast_1s1x64d.yaml",
    "ResNeXt/ResNeXt50_32x4d.yaml", "ResNeXt/ResNeXt50_vd_32x4d.yaml", "ResNeXt101_wsl/ResNeXt101_32x8d_wsl.yaml",
    "ResNet/ResNet18.yaml", "ResNet/ResNet18_vd.yaml", "ResNet/ResNet18_dbb.yaml",
    "ResNet/ResNet50.yaml,Arch.name=ResNet50_vc", "SENet/SE_ResNet18_vd.yaml", "SENet/SE_ResNeXt50_32x4d.yaml",
    "SENet/SE_ResNeXt50_vd_32x4d.yaml", "ShuffleNet/ShuffleNetV2_x0_25.yaml", "SqueezeNet/SqueezeNet1_1.yaml",
    "StarNet/StarNet_S1.yaml", "SwinTransformer/SwinTransformer_tiny_patch4_window7_224.yaml",
    "SwinTransformerV2/SwinTransformerV2_tiny_patch4_window8_256.yaml", "TNT/TNT_small.yaml", "TinyNet/TinyNet_E.yaml",
    "Twins/pcpvt_small.yaml", "Twins/alt_gvt_small.yaml", "UniFormer/UniFormer_small.yaml", "VAN/VAN_B0.yaml",
    "VGG/VGG11.yaml", "VisionTransformer/ViT_small_patch16_224.yaml", "Xception/Xception41.yaml",
    "Xception/Xception41_deeplab.yaml",
)] + [
    "ppcls/configs/ImageNet/VisionTransformer/ViT_small_patch16_224.yaml,Arch.name=MOCOV3_vit_small",
    "ppcls/configs/CAE/cae_base_patch16_224_finetune.yaml",
    "ppcls/configs/CLIP/CLIP_vit_base_patch16_224_finetune.yaml",
    "ppcls/configs/SVTR/svtr_tiny.yml",
]


def _name(entry: str, overrides: list[str]) -> str:
    """The output folder's name: the config's folder and the architecture exported (its own name, or the override's)."""
    config = Path(entry)
    arch = next((o.split("=", 1)[1] for o in overrides if o.startswith("Arch.name=")), config.stem)
    return f"{config.parent.name}__{arch}"


def export_one(out: Path, entry: str) -> str:
    """PaddleClas's export of one config (its modules, from the checkout on sys.path), as export_model.py runs it."""
    import paddle
    from ppcls.engine.engine import Engine
    from ppcls.utils import config as ppcls_config
    path, *overrides = entry.split(",")
    batch = [int(o.split("=", 1)[1]) for o in overrides if o.startswith("batch=")]
    if batch:   # the export's InputSpec, [None] + Global.image_shape, gets this batch instead of None
        class InputSpec(paddle.static.InputSpec):
            def __init__(self, shape, *args, **kwargs):
                super().__init__([batch[0], *shape[1:]], *args, **kwargs)
        paddle.static.InputSpec = InputSpec
    overrides = [o for o in overrides if not o.startswith("batch=")]
    config = ppcls_config.get_config(path, overrides=overrides, show=False)
    config["Global"].update(pretrained_model=None, checkpoints=None, save_inference_dir=str(out), device="cpu",
                            output_dir=tempfile.mkdtemp(prefix="paddleclas-export-"))
    for arch in (config["Arch"], config["Arch"].get("Backbone")):
        if isinstance(arch, dict) and "pretrained" in arch:
            arch["pretrained"] = False
    if config["Arch"].get("use_sync_bn", False):
        config["Arch"]["use_sync_bn"] = False
    paddle.seed(0)
    Engine(config, mode="export").export()
    return "OK"


def main() -> None:
    source, out_dir, entries = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3:] or SMALLEST
    if in_child(source):   # one config
        path, *overrides = entries[0].split(",")
        print(export_one(out_dir / _name(path, overrides), entries[0]), flush=True)
        return
    export_each(__file__, source, out_dir, entries, timeout=900)

if __name__ == "__main__":
    main()

"""Export PaddleGAN's own architectures as Paddle 3 saves them (PIR .json + .pdiparams), with their initial weights
(seed 0), for tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1 and a PaddleGAN checkout
(its ppgan/ and configs/) with the packages its modules import (PyYAML, opencv, scipy, scikit-image, scikit-learn,
imageio, munch, natsort, easydict, requests):

    /path/to/paddle/python tools/paddlegan_export.py PADDLEGAN_DIR OUT_DIR [CONFIG@SIZES[,nets=NET][,KEY=VALUE...] ...]

Each config goes through PaddleGAN's own export (tools/export_model.py: build_model, setup_train_mode(is_train=False),
the model's export_model, which runs to_static on each net of the config's export_model list and paddle.jit.save) in a
process of its own, on the CPU, no trained weights loaded, into OUT_DIR/<config name>/. SIZES are the export's
--inputs_size, one per input, dims joined by x and inputs by ; (1x3x64x64;1x1). Where a config has no export_model
list (most super-resolution ones), nets=NET names the net to export, as such a list would. KEY=VALUE pairs are
PaddleGAN's own -o overrides. Without configs, SMALLEST is exported: one config per architecture family, with small
inputs. One line per config: OK, or FAIL and why.
"""

from __future__ import annotations

from pathlib import Path

import suite_export

_IMAGE = "1x3x64x64"
_FRAMES = "1x2x3x32x32"   # two frames, for the video super-resolution nets


def _none(*keys: str) -> str:
    """Overrides that set these model config entries to None: losses and nets that download trained weights."""
    return "".join(f",model.{key}=None" for key in keys)


# One config per architecture family (the smallest where a family has several).
SMALLEST = [
    "configs/pix2pix_facades.yaml@1x3x256x256",   # its U-Net halves 8 times
    "configs/cyclegan_horse2zebra.yaml@" + _IMAGE + ";" + _IMAGE,
    "configs/stylegan_v2_256_ffhq.yaml@1x1x512;1x1,model.generator.size=64,model.discriminator.size=64",
    "configs/esrgan_psnr_x4_div2k.yaml@1x3x32x32",
    "configs/realsr_kernel_noise_x4_dped.yaml@1x3x32x32,nets=generator" + _none("perceptual_criterion"),
    "configs/lesrcnn_psnr_x4_div2k.yaml@1x3x32x32,nets=generator",
    "configs/pan_psnr_x4_div2k.yaml@1x3x32x32,nets=generator",
    "configs/drn_psnr_x4_div2k.yaml@1x3x32x32,nets=generator",
    "configs/rcan_rssr_x4.yaml@1x3x32x32,nets=generator",
    "configs/basicvsr_reds.yaml@" + _FRAMES,
    "configs/basicvsr++_reds.yaml@" + _FRAMES + ",nets=generator",
    "configs/iconvsr_reds.yaml@" + _FRAMES + ",nets=generator",
    "configs/edvr_m_wo_tsa.yaml@1x5x3x32x32",
    "configs/msvsr_reds.yaml@" + _FRAMES,
    "configs/firstorder_vox_256.yaml@1x3x64x64;1x3x64x64;1x10x2;1x10x2x2,"
    "model.train_params.loss_weights.perceptual=[0]*5",   # a perceptual weight builds a VGG19 it downloads
    "configs/animeganv2.yaml@" + _IMAGE + ",nets=netG",
    "configs/ugatit_selfie2anime_light.yaml@" + _IMAGE + ",nets=genA2B",
    "configs/wav2lip_hq.yaml@1x1x80x16;1x6x96x96",
    "configs/nafnet_denoising.yaml@" + _IMAGE,
    "configs/swinir_denoising.yaml@" + _IMAGE,
    "configs/prenet.yaml@" + _IMAGE,
    "configs/mprnet_deblurring.yaml@" + _IMAGE + ",nets=generator",
    "configs/invdn_denoising.yaml@" + _IMAGE,
    "configs/gfpgan_ffhq1024.yaml@1x3x64x64,model.network_g.out_size=64,model.network_d.out_size=64"
    + _none("network_g.decoder_load_path", "path.pretrain_network_d_left_eye", "path.pretrain_network_identity",
            "perceptual_opt"),
    "configs/gpen_256_ffhq.yaml@1x3x64x64,model.generator.size=64,model.discriminator.size=64",
    "configs/aotgan.yaml@1x4x64x64",
    "configs/dcgan_mnist.yaml@1x100x1x1,nets=netG",
    "configs/makeup.yaml@1x3x64x64;1x3x64x64,nets=netG",
    "configs/photopen.yaml@1x14x64x64,nets=net_gen,model.generator.crop_size=64",
    "configs/starganv2_afhq.yaml@1x3x64x64;1x64,nets=generator",
    "configs/lapstyle_draft.yaml@1x3x64x64;1x3x64x64,nets=net_dec",
]


def export_one(out: Path, entry: str) -> str:
    """PaddleGAN's export of one config, as its tools/export_model.py runs it, but for the weights it loads."""
    import paddle
    from ppgan.models.builder import build_model
    from ppgan.utils.config import get_config
    path_sizes, *options = entry.split(",")
    path, _, sizes = path_sizes.partition("@")
    nets = [o.split("=", 1)[1] for o in options if o.startswith("nets=")]
    inputs_size = [[int(d) for d in size.split("x")] for size in sizes.split(";")]
    cfg = get_config(path, [o for o in options if not o.startswith("nets=")], show=False)
    if nets:   # the config has no export_model list: the one its export would read
        cfg.export_model = [{"name": nets[0], "inputs_num": len(inputs_size)}]
    paddle.set_device("cpu")
    paddle.seed(0)
    model = build_model(cfg.model)
    model.setup_train_mode(is_train=False)
    model.export_model(cfg.export_model, str(out), inputs_size, False, None)
    return "OK"


def main() -> None:
    suite_export.main(__file__, lambda out_dir, entry: export_one(out_dir / Path(entry.split("@")[0]).stem, entry),
                      SMALLEST)


if __name__ == "__main__":
    main()

"""Export PaddleMIX's and ppdiffusers' own architectures as Paddle 3 saves them (inference.json + inference.pdiparams,
PIR), each built from its config at a tiny size with random initial weights (seed 0, no download), for
tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1, a PaddleMIX checkout and, beside
Paddle without touching its environment (`pip install --no-deps --target DEPS ...`), PaddleNLP 3.0.0b4 with the
packages tools/paddlenlp_export.py lists, and einops, ftfy, wcwidth, omegaconf, huggingface_hub==0.23.0:

    PYTHONPATH=DEPS /path/to/paddle/python tools/paddlemix_export.py PADDLEMIX_DIR OUT_DIR [ENTRY ...]

Without entries it exports SMALLEST: ppdiffusers' denoisers (UNet 1D/2D/3D, the conditional UNets of several
pipelines, spatio-temporal, motion and Kandinsky 3 UNets, ControlNet, DiT, U-ViT, SD3 and DiT-LLaMA transformers, the
prior), autoencoders (KL, VQ, tiny, temporal, asymmetric) and CLIP towers, each called as its pipelines call it
(timestep an int64 [1] input); `DDPMTraining`, DDPM's `add_noise` and UNet2DModel's noise
prediction MSE, the loss of ppdiffusers' training examples; and paddlemix's vision pieces (paddlemix_models.MIX).
Each is wrapped in a layer returning its output's tensors in order, turned static with `paddle.jit.to_static` at
fixed small shapes and saved with `paddle.jit.save`, in a process of its own, into OUT_DIR/<entry>/. Attention is
ppdiffusers' "math" path (FLAGS_sdpa_select_math, as on a CPU: its default is a GPU kernel). One line per entry: OK,
or FAIL and why.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from paddlemix_models import MIX, RETURN_DICT, mix_model
from suite_export import export_each, in_child, output_tensors

SMALLEST = [
    "UNet2DModel", "UNet2DConditionModel", "AutoencoderKL", "VQModel", "ControlNetModel", "DiT", "Transformer2DModel",
    "PriorTransformer", "UNet1DModel", "UNet3DConditionModel", "UNetSpatioTemporalConditionModel", "AutoencoderTiny",
    "SD3Transformer2DModel", "DiTLLaMA2DModel", "CLIPTextModel", "CLIPVisionModelWithProjection", "DDPMTraining",
    "AutoencoderKLTemporalDecoder", "AsymmetricAutoencoderKL", "UNetMotionModel", "Kandinsky3UNet", "UViTT2IModel",
    # the UNets of other pipelines: score SDE's (Fourier time, FIR skip blocks), UnCLIP's decoder (simple
    # cross-attention, scale-shift norms), the latent upscaler's (k-diffusion blocks), SDXL's (text-time embedding)
    "UNet2DModel@ncsnpp", "UNet2DConditionModel@unclip", "UNet2DConditionModel@kupscaler", "UNet2DConditionModel@sdxl",
    *MIX,
]

DOWN_UP = dict(block_out_channels=(32, 64), layers_per_block=1, norm_num_groups=8)
CONDITIONAL = dict(DOWN_UP, sample_size=16, in_channels=4, out_channels=4, cross_attention_dim=32,
                   attention_head_dim=8, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                   up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
AUTOENCODER = dict(DOWN_UP, in_channels=3, out_channels=3, latent_channels=4, sample_size=32,
                   down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2)


def _spec(shape, dtype="float32", name=None):
    import paddle
    return paddle.static.InputSpec(shape, dtype, name)


STEP = ("timestep", [1], "int64")
ADDED_CONDITIONS = ("text_embeds", "time_ids")   # SDXL's UNet takes them in a dict, added_cond_kwargs


def _diffusers(entry: str):
    """The model of a ppdiffusers entry and its inputs (name, shape, dtype), in its forward's order."""
    import ppdiffusers as d
    if entry == "UNet2DModel":
        model = d.UNet2DModel(sample_size=32, in_channels=3, out_channels=3, attention_head_dim=8,
                              down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                              up_block_types=("AttnUpBlock2D", "UpBlock2D"), **DOWN_UP)
        return model, [("sample", [1, 3, 32, 32], "float32"), STEP]
    if entry == "UNet2DConditionModel":
        return d.UNet2DConditionModel(**CONDITIONAL), [("sample", [1, 4, 16, 16], "float32"), STEP,
                                                       ("encoder_hidden_states", [1, 8, 32], "float32")]
    if entry == "UNet2DModel@ncsnpp":
        model = d.UNet2DModel(sample_size=16, in_channels=3, out_channels=3, attention_head_dim=8,
                              time_embedding_type="fourier",
                              down_block_types=("SkipDownBlock2D", "AttnSkipDownBlock2D"),
                              up_block_types=("AttnSkipUpBlock2D", "SkipUpBlock2D"), **DOWN_UP)
        return model, [("sample", [1, 3, 16, 16], "float32"), STEP]
    if entry == "UNet2DConditionModel@unclip":   # its class embedding the image embedding, as UnCLIP's decoder
        model = d.UNet2DConditionModel(
            sample_size=16, in_channels=3, out_channels=6, block_out_channels=(32, 64), layers_per_block=1,
            down_block_types=("ResnetDownsampleBlock2D", "SimpleCrossAttnDownBlock2D"),
            up_block_types=("SimpleCrossAttnUpBlock2D", "ResnetUpsampleBlock2D"),
            mid_block_type="UNetMidBlock2DSimpleCrossAttn", cross_attention_dim=32, attention_head_dim=4,
            resnet_time_scale_shift="scale_shift", class_embed_type="identity", norm_num_groups=8)
        return model, [("sample", [1, 3, 16, 16], "float32"), STEP, ("encoder_hidden_states", [1, 8, 32], "float32"),
                       ("class_labels", [1, 128], "float32")]
    if entry == "UNet2DConditionModel@kupscaler":   # the latent upscaler's tests' config
        model = d.UNet2DConditionModel(
            act_fn="gelu", attention_head_dim=8, norm_num_groups=None, block_out_channels=(32, 32, 64, 64),
            time_cond_proj_dim=160, conv_in_kernel=1, conv_out_kernel=1, cross_attention_dim=32,
            down_block_types=("KDownBlock2D",) + ("KCrossAttnDownBlock2D",) * 3, in_channels=8,
            mid_block_type=None, only_cross_attention=False, out_channels=5, resnet_time_scale_shift="scale_shift",
            time_embedding_type="fourier", timestep_post_act="gelu",
            up_block_types=("KCrossAttnUpBlock2D",) * 3 + ("KUpBlock2D",))
        return model, [("sample", [1, 8, 16, 16], "float32"), ("timestep", [1], "float32"),
                       ("encoder_hidden_states", [1, 8, 32], "float32"), ("timestep_cond", [1, 160], "float32")]
    if entry == "UNet2DConditionModel@sdxl":
        model = d.UNet2DConditionModel(
            block_out_channels=(32, 64), layers_per_block=1, sample_size=16, in_channels=4, out_channels=4,
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), attention_head_dim=(2, 4),
            use_linear_projection=True, addition_embed_type="text_time",
            addition_time_embed_dim=8, transformer_layers_per_block=(1, 2), projection_class_embeddings_input_dim=80,
            cross_attention_dim=32, norm_num_groups=8)
        return model, [("sample", [1, 4, 16, 16], "float32"), STEP, ("encoder_hidden_states", [1, 8, 32], "float32"),
                       ("text_embeds", [1, 32], "float32"), ("time_ids", [1, 6], "float32")]
    if entry == "AutoencoderKLTemporalDecoder":   # Stable Video Diffusion's VAE: its decoder mixes frames in time
        config = {k: v for k, v in AUTOENCODER.items() if k not in ("up_block_types", "norm_num_groups")}
        return d.AutoencoderKLTemporalDecoder(**config), [("sample", [1, 3, 32, 32], "float32")]
    if entry == "AsymmetricAutoencoderKL":   # its decoder conditioned on the masked image, as inpainting calls it
        model = d.AsymmetricAutoencoderKL(
            down_block_out_channels=(32, 64), up_block_out_channels=(32, 64), layers_per_down_block=1,
            layers_per_up_block=1, down_block_types=("DownEncoderBlock2D",) * 2,
            up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4, norm_num_groups=8, sample_size=32)
        return _inpainting(model), [("sample", [1, 3, 32, 32], "float32"), ("mask", [1, 1, 32, 32], "float32")]
    if entry == "UNetMotionModel":   # AnimateDiff's: motion modules attend across frames
        model = d.UNetMotionModel(
            block_out_channels=(32, 64), layers_per_block=1, sample_size=16, in_channels=4, out_channels=4,
            down_block_types=("CrossAttnDownBlockMotion", "DownBlockMotion"),
            up_block_types=("UpBlockMotion", "CrossAttnUpBlockMotion"), cross_attention_dim=32, num_attention_heads=2,
            norm_num_groups=8, motion_num_attention_heads=2, motion_max_seq_length=8)
        return model, [("sample", [1, 4, 2, 16, 16], "float32"), STEP,
                       ("encoder_hidden_states", [1, 8, 32], "float32")]
    if entry == "Kandinsky3UNet":   # its text attention masked by the prompt's mask
        model = d.Kandinsky3UNet(in_channels=4, time_embedding_dim=32, groups=8, attention_head_dim=8,
                                 layers_per_block=1, block_out_channels=(32, 64), cross_attention_dim=32,
                                 encoder_hid_dim=32)
        return model, [("sample", [1, 4, 16, 16], "float32"), ("timestep", [1], "float32"),   # int64 fails there
                       ("encoder_hidden_states", [1, 8, 32], "float32"), ("encoder_attention_mask", [1, 8], "int64")]
    if entry == "UViTT2IModel":   # UniDiffuser's U-ViT: long skips between transformer blocks, einops patches
        model = d.UViTT2IModel(sample_size=8, in_channels=4, out_channels=4, patch_size=2, num_layers=3,
                               num_attention_heads=2, attention_head_dim=16, clip_dim=32, num_text_tokens=8)
        return model, [("img", [1, 4, 8, 8], "float32"), ("timesteps", [1], "int64"),
                       ("context", [1, 8, 32], "float32")]
    if entry == "AutoencoderKL":
        return d.AutoencoderKL(**AUTOENCODER), [("sample", [1, 3, 32, 32], "float32")]
    if entry == "VQModel":
        return d.VQModel(num_vq_embeddings=16, vq_embed_dim=4, **AUTOENCODER), [("sample", [1, 3, 32, 32], "float32")]
    if entry == "ControlNetModel":
        config = {k: v for k, v in CONDITIONAL.items() if k not in ("out_channels", "up_block_types", "sample_size")}
        model = d.ControlNetModel(conditioning_embedding_out_channels=(16, 32), **config)
        return model, [("sample", [1, 4, 16, 16], "float32"), STEP, ("encoder_hidden_states", [1, 8, 32], "float32"),
                       ("controlnet_cond", [1, 3, 32, 32], "float32")]
    if entry == "DiT":   # DiT is Transformer2DModel with adaptive zero norms and class labels
        model = d.Transformer2DModel(num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=8,
                                     num_layers=1, sample_size=8, patch_size=2, norm_type="ada_norm_zero",
                                     num_embeds_ada_norm=10)
        return model, [("hidden_states", [1, 4, 8, 8], "float32"), STEP, ("class_labels", [1], "int64")]
    if entry == "Transformer2DModel":   # the continuous one of Stable Diffusion's UNets, with cross-attention
        model = d.Transformer2DModel(num_attention_heads=2, attention_head_dim=16, in_channels=32, num_layers=1,
                                     norm_num_groups=8, cross_attention_dim=16)
        return model, [("hidden_states", [1, 32, 8, 8], "float32"), ("encoder_hidden_states", [1, 6, 16], "float32")]
    if entry == "PriorTransformer":
        model = d.PriorTransformer(num_attention_heads=2, attention_head_dim=8, num_layers=1, embedding_dim=16,
                                   num_embeddings=4, additional_embeddings=4)
        return model, [("hidden_states", [1, 16], "float32"), STEP, ("proj_embedding", [1, 16], "float32"),
                       ("encoder_hidden_states", [1, 4, 16], "float32"), ("attention_mask", [1, 4], "int64")]
    if entry == "UNet1DModel":   # the UNet of ppdiffusers' RL planner (its tests' config, two levels)
        model = d.UNet1DModel(block_out_channels=(32, 64), in_channels=14, out_channels=14,
                              time_embedding_type="positional", use_timestep_embedding=True, flip_sin_to_cos=False,
                              freq_shift=1.0, out_block_type="OutConv1DBlock", mid_block_type="MidResTemporalBlock1D",
                              down_block_types=("DownResnetBlock1D",) * 2, up_block_types=("UpResnetBlock1D",),
                              act_fn="swish")
        return model, [("sample", [1, 14, 16], "float32"), STEP]
    if entry == "UNet3DConditionModel":
        config = dict(CONDITIONAL, down_block_types=("CrossAttnDownBlock3D", "DownBlock3D"),
                      up_block_types=("UpBlock3D", "CrossAttnUpBlock3D"))
        return d.UNet3DConditionModel(**config), [("sample", [1, 4, 2, 16, 16], "float32"), STEP,
                                                  ("encoder_hidden_states", [1, 8, 32], "float32")]
    if entry == "UNetSpatioTemporalConditionModel":
        model = d.UNetSpatioTemporalConditionModel(
            sample_size=16, in_channels=8, out_channels=4, block_out_channels=(32, 64), layers_per_block=1,
            down_block_types=("CrossAttnDownBlockSpatioTemporal", "DownBlockSpatioTemporal"),
            up_block_types=("UpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal"), cross_attention_dim=32,
            num_attention_heads=(2, 4), addition_time_embed_dim=8, projection_class_embeddings_input_dim=24,
            num_frames=2)
        return model, [("sample", [1, 2, 8, 16, 16], "float32"), STEP,
                       ("encoder_hidden_states", [1, 1, 32], "float32"), ("added_time_ids", [1, 3], "float32")]
    if entry == "AutoencoderTiny":
        model = d.AutoencoderTiny(encoder_block_out_channels=(8, 8), decoder_block_out_channels=(8, 8),
                                  num_encoder_blocks=(1, 1), num_decoder_blocks=(1, 1), latent_channels=4,
                                  upsampling_scaling_factor=2)
        return model, [("sample", [1, 3, 16, 16], "float32")]
    if entry == "SD3Transformer2DModel":
        model = d.SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=1, attention_head_dim=8,
                                        num_attention_heads=2, joint_attention_dim=16, caption_projection_dim=16,
                                        pooled_projection_dim=16, out_channels=4, pos_embed_max_size=16)
        return model, [("hidden_states", [1, 4, 8, 8], "float32"), ("encoder_hidden_states", [1, 4, 16], "float32"),
                       ("pooled_projections", [1, 16], "float32"), STEP]
    if entry == "DiTLLaMA2DModel":
        model = d.DiTLLaMA2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=1, num_attention_heads=2,
                                  attention_head_dim=16, multiple_of=16, num_classes=10)
        return model, [("hidden_states", [1, 4, 8, 8], "float32"), ("timestep", [1], "float32"),
                       ("class_labels", [1], "int64")]   # its int64 timestep times a float32 fails in Paddle 3
    if entry in ("CLIPTextModel", "CLIPVisionModelWithProjection"):
        from ppdiffusers.transformers import (
            CLIPTextConfig,
            CLIPTextModel,
            CLIPVisionConfig,
            CLIPVisionModelWithProjection,
        )
        sizes = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     projection_dim=16)
        if entry == "CLIPTextModel":
            model = CLIPTextModel(CLIPTextConfig(vocab_size=100, max_position_embeddings=16, **sizes))
            return model, [("input_ids", [1, 8], "int64")]
        model = CLIPVisionModelWithProjection(CLIPVisionConfig(image_size=32, patch_size=8, **sizes))
        return model, [("pixel_values", [1, 3, 32, 32], "float32")]
    if entry == "DDPMTraining":
        return _ddpm_training(d), [("clean", [1, 3, 32, 32], "float32"), ("noise", [1, 3, 32, 32], "float32"), STEP]
    raise KeyError(entry)


def _inpainting(model):
    """An asymmetric autoencoder as ppdiffusers' inpainting pipeline calls it: its own forward passes the image and
    the mask to decode's generator and image (a slip: the mask is unused), so the pipeline's calls are made here."""
    import paddle

    class Inpainting(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, sample, mask):
            latent = self.model.encode(sample).latent_dist.mode()
            return self.model.decode(latent, image=sample, mask=mask).sample

    return Inpainting()


def _ddpm_training(d):
    """UNet2DModel's noise prediction loss at a timestep, ppdiffusers' training examples' loss: the scheduler's
    add_noise (its alphas gathered by the timestep) and a mean squared error."""
    import paddle
    model, _ = _diffusers("UNet2DModel")
    scheduler = d.DDPMScheduler(num_train_timesteps=100)

    class Training(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.model = model
            self.register_buffer("alphas_cumprod", scheduler.alphas_cumprod)   # jit.save keeps no bare tensor
            scheduler.alphas_cumprod = self.alphas_cumprod

        def forward(self, clean, noise, timestep):
            noisy = scheduler.add_noise(clean, noise, timestep)
            predicted = self.model(noisy, timestep, return_dict=False)[0]
            return paddle.nn.functional.mse_loss(predicted, noise, reduction="none")

    return Training()


def export_one(out: Path, entry: str) -> str:
    """One tiny model, static, saved as PIR."""
    os.environ["FLAGS_sdpa_select_math"] = "1"
    import paddle
    sys.path.insert(0, str(Path.cwd() / "ppdiffusers"))
    from paddlenlp_export import _stub_unused_imports
    _stub_unused_imports()
    paddle.seed(0)
    model, inputs = mix_model(entry) if entry in MIX else _diffusers(entry)
    model.eval()
    names = [name for name, _, _ in inputs]
    fixed = {"return_dict": entry in RETURN_DICT} if "return_dict" in model.forward.__code__.co_varnames else {}

    class Exported(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, a, b=None, c=None, d=None, e=None):   # to_static takes no *args
            given = dict(zip(names, (a, b, c, d, e)))
            added = {name: given.pop(name) for name in ADDED_CONDITIONS if name in given}
            extra = {"added_cond_kwargs": added} if added else {}
            return tuple(output_tensors(self.model(**given, **fixed, **extra)))

    specs = [_spec(shape, dtype, name) for name, shape, dtype in inputs]
    # PaddleNLP (imported by the suites) replaces paddle.to_tensor with a wrapper of its own, which Paddle's AST
    # conversion of `paddle.to_tensor(x).astype(...)` (PatchEmbed's, SAM's) converts while it holds the lock of
    # converting the caller: it waits on itself forever, unless the wrapper is marked not to convert
    paddle.jit.not_to_static(paddle.to_tensor)
    static = paddle.jit.to_static(Exported(), input_spec=specs, full_graph=True)
    paddle.jit.save(static, str(out / "inference"))
    return "OK"


def main() -> None:
    source, out_dir, entries = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3:] or SMALLEST
    if in_child(source):
        print(export_one(out_dir / entries[0], entries[0]), flush=True)
        return
    export_each(__file__, source, out_dir, entries, timeout=1800)


if __name__ == "__main__":
    main()

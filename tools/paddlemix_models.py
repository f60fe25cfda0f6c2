"""paddlemix's own vision pieces at a tiny size, for tools/paddlemix_export.py: SAM, BLIP-2's Q-Former and EVA ViT,
EVA-CLIP's and InternVL2's vision towers, Qwen-VL's vision encoder with its resampler, Qwen2-VL's vision tower,
LLaVA's projector, a GroundingDINO encoder layer (multi-scale deformable attention, its Python path: its CUDA op is
not built). paddlemix's package __init__ imports every model it has (and their heavy dependencies), so the packages
`paddlemix` and `paddlemix.models` are made empty packages over the checkout's folders, and only the model's own
modules run. Each input is named as the forward's parameter it is passed to."""

from __future__ import annotations

import sys
import types
from pathlib import Path

RETURN_DICT = ("InternVisionModel",)   # its forward reads its encoder's output by name even with return_dict=False
MIX = ["SamModel", "SamModel@train", "Blip2QFormer", "EVAVisionTransformer", "QwenVLVision", "LLaVAProjector",
       "GroundingDINOEncoderLayer", "Qwen2VLVision", "Blip2VisionTransformer",
       "InternVisionModel"]


def _bare_packages() -> None:
    """`paddlemix`, `paddlemix.models` and the models whose __init__ imports more than the model (BLIP-2's its COCO
    evaluation, LLaVA's OpenCV) as packages whose __init__ does not run."""
    for name in ("paddlemix", "paddlemix.models", "paddlemix.models.blip2", "paddlemix.models.llava",
                 "paddlemix.models.qwen2_vl", "paddlemix.models.internvl2",
                 "paddlemix.models.internvl2.internvl_chat"):
        package = types.ModuleType(name)
        package.__path__ = [str(Path.cwd() / name.replace(".", "/"))]
        sys.modules[name] = package


def mix_model(entry: str):
    """The model of a paddlemix entry and its inputs (name, shape, dtype), in its forward's order."""
    _bare_packages()
    if entry in ("SamModel", "SamModel@train"):   # its point prompt path: image encoder, prompt encoder, mask decoder
        from paddlemix.models.sam.configuration import SamConfig
        from paddlemix.models.sam.modeling import SamModel
        config = SamConfig(prompt_embed_dim=32, image_size=64, vit_patch_size=16, encoder_embed_dim=32,
                           encoder_depth=2, encoder_num_heads=2, encoder_global_attn_indexes=[1], input_type="points")
        sam = SamModel(config)
        inputs = [("img", [1, 3, 64, 64], "float32"), ("prompt", [1, 1, 2], "float32")]
        return (sam if entry == "SamModel" else _sam_points(sam)), inputs
    if entry == "Blip2QFormer":
        return _qformer(), [("image_embeds", [1, 17, 32], "float32")]
    if entry == "EVAVisionTransformer":   # EVA02-CLIP's: rotary embeddings, SwiGLU, sub-layer norms
        from paddle.distributed.fleet.meta_parallel import get_rng_state_tracker
        from paddlemix.models.clip.vit_model import EVAVisionTransformer, EVAVisionTransformerConfig
        get_rng_state_tracker().add("global_seed", 0)   # its dropouts draw from it (paddlemix's trainer adds it)
        config = EVAVisionTransformerConfig(image_size=32, patch_size=8, embed_dim=16, width=32, layers=2,
                                            head_width=16, mlp_ratio=2.0, qkv_bias=True, rope=True, pt_hw_seq_len=4,
                                            intp_freq=True, naiveswiglu=True, subln=True, xattn=False)
        return EVAVisionTransformer(config), [("x", [1, 3, 32, 32], "float32")]
    if entry == "QwenVLVision":   # its positional embeddings of 16 x 16 interpolated bicubically to the grid's 4 x 4
        from paddlemix.models.qwen_vl.visual import Vision
        config = dict(image_size=56, patch_size=14, width=32, layers=1, heads=2, mlp_ratio=2.0, output_dim=128)
        return Vision(config, n_queries=4), [("x", [1, 3, 56, 56], "float32")]
    if entry == "LLaVAProjector":
        from paddlemix.models.llava.mm_projector import build_vision_projector
        config = types.SimpleNamespace(mm_projector_type="mlp2x_gelu", mm_hidden_size=32, hidden_size=64)
        return build_vision_projector(config), [("input", [1, 4, 32], "float32")]   # image features
    if entry == "GroundingDINOEncoderLayer":
        return _grounding_dino_layer(), [("src", [1, 20, 32], "float32"), ("pos", [1, 20, 32], "float32")]
    if entry == "Qwen2VLVision":   # a 16 x 16 image in 4 x 4 patches of two frames, flattened as its processor does
        return _qwen2_vl_vision(), [("hidden_states", [16, 96], "float32")]
    if entry == "Blip2VisionTransformer":   # BLIP-2's EVA ViT
        _stub_caption_evaluation()
        from paddlemix.models.blip2.configuration import Blip2VisionConfig
        from paddlemix.models.blip2.eva_vit import VisionTransformer
        config = Blip2VisionConfig(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4, mlp_ratio=2.0)
        return VisionTransformer(config), [("pixel_values", [1, 3, 32, 32], "float32")]
    if entry == "InternVisionModel":   # InternVL2's InternViT: RMS norms, normalized queries and keys, layer scales
        from paddlemix.models.internvl2.internvl_chat.configuration_intern_vit import InternVisionConfig
        from paddlemix.models.internvl2.internvl_chat.modeling_intern_vit import InternVisionModel
        config = InternVisionConfig(image_size=28, patch_size=14, hidden_size=32, num_attention_heads=2,
                                    intermediate_size=64, num_hidden_layers=2, use_flash_attn=False)
        return InternVisionModel(config), [("pixel_values", [1, 3, 28, 28], "float32")]
    raise KeyError(entry)


def _stub_caption_evaluation() -> None:
    """BLIP-2's modules import COCO's caption evaluation (pycocoevalcap, pycocotools), which no model calls."""
    for name, attribute in (("pycocoevalcap.eval", "COCOEvalCap"), ("pycocotools.coco", "COCO")):
        package, _, _ = name.partition(".")
        sys.modules.setdefault(package, types.ModuleType(package))
        sys.modules[name] = types.ModuleType(name)
        setattr(sys.modules[name], attribute, None)


def _sam_points(sam):
    """SamModel's point prompt path (prompt_forward_point) without its no_grad decorator, which leaves its own
    program nothing to train."""
    import paddle

    class PointPrompt(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.sam = sam

        def forward(self, img, prompt):
            features = self.sam.image_encoder(img)
            labels = paddle.ones([1, 1], dtype="int32")   # one foreground point, as SamModel gives it
            sparse, dense = self.sam.prompt_encoder(points=(prompt, labels), boxes=None, masks=None)
            return self.sam.mask_decoder(image_embeddings=features, image_pe=self.sam.prompt_encoder.get_dense_pe(),
                                         sparse_prompt_embeddings=sparse, dense_prompt_embeddings=dense,
                                         multimask_output=False)

    return PointPrompt()


def _grounding_dino_layer():
    """A deformable encoder layer of GroundingDINO's over two levels of 4 x 4 and 2 x 2, its reference points its
    encoder's (whole images: valid ratios 1)."""
    import paddle
    from paddlemix.models.groundingdino.transformer import DeformableTransformerEncoderLayer, TransformerEncoder
    layer = DeformableTransformerEncoderLayer(d_model=32, d_ffn=64, n_levels=2, n_heads=2, n_points=2)

    class EncoderLayer(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.layer = layer

        def forward(self, src, pos):
            shapes = paddle.to_tensor([[4, 4], [2, 2]], dtype="int64")
            ratios = paddle.ones([src.shape[0], 2, 2])
            points = TransformerEncoder.get_reference_points(shapes, ratios)
            return self.layer(src, pos, points, shapes, paddle.to_tensor([0, 16], dtype="int64"))

    return EncoderLayer()


def _qwen2_vl_vision():
    """Qwen2-VL's vision tower (2D rotary embeddings, attention masked to each image, patch merger) over one image
    of 4 x 4 patches: its grid a constant, as its processor gives it."""
    import paddle
    from paddlemix.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLVisionConfig
    from paddlemix.models.qwen2_vl.modeling_qwen2_vl import Qwen2VisionTransformerPretrainedModel
    config = Qwen2VLVisionConfig(depth=2, embed_dim=32, hidden_size=64, num_heads=2, patch_size=4,
                                 spatial_merge_size=2, temporal_patch_size=2)
    tower = Qwen2VisionTransformerPretrainedModel(config)

    class Vision(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.tower = tower

        def forward(self, hidden_states):
            return self.tower(hidden_states, paddle.to_tensor([[1, 4, 4]], dtype="int64"))

    return Vision()


def _qformer():
    """BLIP-2's Q-Former as BLIP-2 calls it: its query tokens attend to the image's embeddings (layer-normed) through
    a BERT whose every other layer has cross-attention."""
    import paddle
    from paddlemix.models.blip2.Qformer import BertLMHeadModel
    from paddlenlp.transformers.bert.configuration import BertConfig
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, add_cross_attention=True, cross_attention_freq=2)
    config.tokenizer_name, config.num_query_token = None, 4
    qformer = BertLMHeadModel(config, encoder_width=32)

    class QFormer(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.qformer = qformer

        def forward(self, image_embeds):
            image_embeds = self.qformer.ln_vision(image_embeds)
            image_atts = paddle.ones(image_embeds.shape[:-1], dtype="int64")
            query_tokens = self.qformer.query_tokens.expand([image_embeds.shape[0], -1, -1])
            return self.qformer.bert(query_embeds=query_tokens, encoder_hidden_states=image_embeds,
                                     encoder_attention_mask=image_atts, return_dict=True).last_hidden_state

    return QFormer()

"""tools/paddlenlp_export.py's models that take more than token ids: each extra input's name, shape and dtype (the
exported program's inputs after input_ids, passed to the model by keyword), their config changes, and how
tools/real_models.py feeds them (FEEDS values made by `python tools/paddlenlp_inputs.py CLASS`)."""

from __future__ import annotations

import json
import sys

_BOXES = ("bbox", [None, None, 4], "int64")
EXTRA = {   # class: its extra inputs (name, shape, dtype)
    # ChatGLM (v1) demands the 4-D mask its generation builds (True where a token may not attend) and 2-D positions
    "ChatGLMModel": [("position_ids", [None, 2, None], "int64"), ("attention_mask", [None, 1, None, None], "int64")],
    "LayoutLMModel": [_BOXES],
    "LayoutXLMModel": [_BOXES],   # its config's default has no visual backbone (use_visual_backbone False)
    # an image of 64 x 64 too, through their visual backbones made small (prepare): pooled to 7 x 7 tokens
    **{name: [_BOXES, ("image", [None, 3, 64, 64], "float32")] for name in ("LayoutLMv2Model", "ErnieLayoutModel")},
    # ERNIE-Doc: ids [B, T, 1], a memory [B, M, H] per layer, relative positions [B, 2T + M, 1], a mask [B, T, 1]
    "ErnieDocModel": [("token_type_ids", [None, None, 1], "int64"), ("position_ids", [None, None, 1], "int64"),
                      ("attn_mask", [None, None, 1], "float32"), *((f"memory{i}", [None, 8, 64], "float32")
                                                                   for i in range(2))],
}
IDS_SHAPE = {"ErnieDocModel": [None, None, 1]}
CONFIG = {"ErnieDocModel": dict(memory_len=8), "ErnieLayoutModel": dict(image_feature_pool_shape=[7, 7, 512]),
          # box embeddings whose 4 coordinates and 2 sizes (each coordinate_size wide) add up to the hidden size
          "LayoutLMv2Model": dict(hidden_size=48, coordinate_size=8, image_feature_pool_shape=[7, 7, 32]),
          "LayoutXLMModel": dict(hidden_size=48, coordinate_size=8)}


def prepare(class_name: str) -> None:
    """What to_static needs of a model's code: ERNIE-Doc's attention calls its private methods (self.__split_heads),
    whose names dy2static's transformed code, compiled outside the class, does not mangle: each also by that name."""
    if class_name == "LayoutLMv2Model":   # detectron2's ResNeXt-101 FPN, set by a yaml file
        import paddlenlp.transformers.layoutlmv2.modeling as v2
        v2.read_config = _small_resnet_config(v2.read_config)
    if class_name == "ErnieLayoutModel":   # ResNet(layers=101) in its code
        import paddlenlp.transformers.ernie_layout.modeling as layout
        resnet = layout.ResNet
        layout.ResNet = lambda layers, **kwargs: resnet(layers=18, **kwargs)
    if class_name == "ErnieDocModel":
        from paddlenlp.transformers.ernie_doc.modeling import MultiHeadAttention
        for name in [n for n in vars(MultiHeadAttention) if n.startswith("_MultiHeadAttention__")]:
            setattr(MultiHeadAttention, name.removeprefix("_MultiHeadAttention"), getattr(MultiHeadAttention, name))


def _small_resnet_config(read_config):
    def shrunk(*args):
        config = read_config(*args)
        config.defrost()
        resnets = config.MODEL.RESNETS   # its port has no basic block (ResNet-18): ResNet-50 of few channels
        resnets.DEPTH, resnets.RES2_OUT_CHANNELS, resnets.STEM_OUT_CHANNELS = 50, 32, 16
        resnets.NUM_GROUPS, resnets.WIDTH_PER_GROUP = 4, 4   # ResNeXt 4x4d for its 32x8d
        config.MODEL.FPN.OUT_CHANNELS = 32
        config.freeze()
        return config
    return shrunk


def call_kwargs(class_name: str, extra) -> dict:
    """The keyword arguments of the model's call for its extra inputs' values."""
    named = dict(zip((name for name, _, _ in EXTRA[class_name]), extra))
    if class_name == "ErnieDocModel":
        named["memories"] = [named.pop(f"memory{i}") for i in range(2)]
    return named


def feeds(class_name: str, tokens: int = 16) -> dict:
    """FEEDS for real_models.py: the extra inputs as the model's own code or docs build them, for ``tokens`` ids."""
    causal = [[int(j > i) for j in range(tokens)] for i in range(tokens)]   # ChatGLM's generation: masked above
    boxes = [[[10 * i, 5 * i, 10 * i + 8, 5 * i + 4] for i in range(tokens)]]   # x0 < x1, y0 < y1, below 1,000
    relative = [[[p] for p in [*range(2 * tokens + 8 - 1, tokens - 1, -1), *range(tokens)]]]   # its docs' positions
    return {
        "ChatGLMModel": {"attention_mask": {"value": [[causal]]},
                         "position_ids": {"value": [[list(range(tokens)), [0] * tokens]]}},
        **{name: {"bbox": {"value": boxes}}
           for name in ("LayoutLMModel", "LayoutLMv2Model", "LayoutXLMModel", "ErnieLayoutModel")},
        "ErnieDocModel": {"input_ids": {"shape": [1, tokens, 1], "bound": 100},
                          "token_type_ids": {"shape": [1, tokens, 1], "fill": 0},
                          "position_ids": {"value": relative}, "attn_mask": {"shape": [1, tokens, 1], "fill": 1}},
    }[class_name]


if __name__ == "__main__":
    print(json.dumps(feeds(sys.argv[1])))

"""Export PaddleNLP's own transformer models as Paddle 3 saves them (inference.json + inference.pdiparams, PIR), each
built from its config class at a tiny size with random initial weights (seed 0, no download), for
tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1 and PaddleNLP 3.0.0b4, installed
beside it without touching its environment (`pip install --no-deps --target DEPS paddlenlp==3.0.0b4` and the light
packages `import paddlenlp` needs: huggingface_hub==0.27.1, filelock, fsspec, packaging, pyyaml, requests, urllib3,
charset_normalizer, idna, tqdm, colorlog, colorama, regex, jinja2, markupsafe, ml_dtypes, six, tokenizers,
sentencepiece, jieba, scipy, pandas, python-dateutil, pytz, tzdata, omegaconf, antlr4-python3-runtime==4.9.3). The
heavy packages it imports but model code never calls (aistudio_sdk, datasets, multiprocess, seqeval, sklearn,
fastapi, pydantic, uvicorn) are stubbed in the process by STUBS:

    /path/to/paddle/python tools/paddlenlp_export.py DEPS OUT_DIR [MODEL_CLASS[@1x16] ...]

Without model classes it exports SMALLEST: a base model of each family, a few heads. Each is wrapped in a layer
returning its output's tensors in order, turned static with `paddle.jit.to_static` (input_ids int64 [None, None], as
PaddleNLP's export scripts give it, or [1, 16] as CLASS@1x16 for a model whose code tests a shape in Python;
decoder_input_ids too for encoder-decoders; pixel_values [None, 3, 32, 32] for vision towers) and saved with
`paddle.jit.save`, in a process of its own, into OUT_DIR/<model class>/. Fused kernels and flash attention are off,
as on a CPU. One line per model: OK, or FAIL and why. Check them with real_models.py's INT_BOUND=100 (token ids
below the vocabulary's 1,000).
"""

from __future__ import annotations

import sys
from pathlib import Path

from paddlenlp_inputs import CONFIG, EXTRA, IDS_SHAPE, call_kwargs, prepare
from suite_export import export_each, in_child, output_tensors

STUBS = {   # module: the names PaddleNLP imports from it
    "aistudio_sdk": ["hub"], "aistudio_sdk.hub": ["download", "create_repo", "upload"],
    "datasets": ["Dataset", "Value", "load_dataset"], "multiprocess": ["Pool", "RLock"],
    "seqeval": ["metrics"], "seqeval.metrics": ["sequence_labeling"],
    "seqeval.metrics.sequence_labeling": ["get_entities"], "sklearn": ["metrics"],
    "sklearn.metrics": ["pairwise_distances", "accuracy_score", "precision_recall_fscore_support"],
    "fastapi": ["FastAPI", "APIRouter", "Request"], "pydantic": ["BaseModel", "Extra", "create_model"], "uvicorn": [],
}

SMALLEST = [
    # the families asked for, a base model each (CLIP, ERNIE-ViL and BLIP: text and vision towers)
    "BertModel", "ErnieModel", "RobertaModel", "AlbertModel", "ElectraModel", "DistilBertModel", "TinyBertModel",
    "PPMiniLMModel", "NeZhaModel", "MPNetModel", "ConvBertModel@1x16", "DebertaModel@1x16", "DebertaV2Model",
    "FunnelModel", "XLNetModel", "RemBertModel", "MegatronBertModel", "FNetModel", "ErnieMModel", "SkepModel",
    "UNIMOModel", "LayoutLMModel", "LayoutXLMModel", "GPTModel", "LlamaModel@1x16", "QWenModel@1x16",
    "Qwen2Model@1x16", "MistralModel@1x16", "MixtralModel@1x16", "GemmaModel@1x16", "BloomModel@1x16", "OPTModel",
    "ChatGLMModel", "ChatGLMv2Model", "CodeGenModel@1x16", "T5Model", "BartModel", "MBartModel", "PegasusModel",
    "BlenderbotModel", "CLIPTextModel", "CLIPVisionModel", "ErnieViLTextModel", "ErnieViLVisionModel",
    "BlipTextModel", "BlipVisionModel",
    # heads
    "BertForSequenceClassification", "BartForSequenceClassification", "GPTForCausalLM", "LlamaForCausalLM",
    "Qwen2ForCausalLM@1x16", "T5ForConditionalGeneration", "ErnieForMaskedLM", "AlbertForMaskedLM",
    "ErnieForQuestionAnswering", "ErnieForTokenClassification", "UIE",
    # PaddleNLP's other families
    "BigBirdModel@1x16", "BlenderbotSmallModel", "CTRLModel", "DeepseekV2Model@1x16", "ErnieCtmModel",
    "ErnieDocModel", "ErnieGramModel", "GAUAlphaModel", "GLMModel@1x16", "GPTJModel@1x16", "JambaModel@1x16",
    "MambaModel@1x16", "MobileBertModel", "MT5Model", "NystromformerModel", "ProphetNetModel@1x16",
    "Qwen2MoeModel@1x16", "ReformerModel", "RoFormerModel", "RoFormerv2Model", "RWModel@1x16", "SqueezeBertModel",
    "XLMRobertaModel@1x16", "YuanModel@1x16", "ChineseCLIPTextModel",
]

# Every size name the families' configs use, all tiny (a config ignores the ones it does not have).
TINY = dict(
    vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
    max_position_embeddings=64, num_key_value_heads=2, embedding_size=64, type_vocab_size=2, d_model=64, d_kv=16,
    d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=4, encoder_layers=2, decoder_layers=2,
    encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, n_layer=2,
    n_head=4, d_inner=128, ffn_hidden_size=128, word_embed_proj_dim=64, num_local_experts=4, num_experts_per_tok=2,
    multi_query_group_num=2, input_embedding_size=64, output_embedding_size=64, kv_channels=16,
    padded_vocab_size=1000, seq_length=64, block_sizes=[1, 1], head_dim=16, rotary_dim=8, n_positions=64, n_ctx=64,
    n_embd=64, projection_dim=32, image_size=32, patch_size=8, num_channels=3, axial_pos_shape=[4, 16],
    axial_pos_embds_dim=[32, 32],
    kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16, n_routed_experts=4,
    n_shared_experts=1, moe_intermediate_size=32, first_k_dense_replace=1, n_group=1, topk_group=1,
    # what a CPU user turns off
    use_flash_attention=False, use_fused_rms_norm=False, use_fused_rope=False, fuse_attention_qkv=False,
    fuse_attention_ffn=False, use_fused_linear=False, use_fused_dropout_add=False, fuse_linear=False,
    tensor_parallel_degree=1, sequence_parallel=False, recompute=False, use_cache=False,
    tie_word_embeddings=False, num_labels=2, classifier_dropout=None, dtype="float32",
    use_relative_position=True,   # NeZha's model reads it, its config (3.0.0b4) never sets it
)

ENCODER_DECODERS = ("T5Model", "T5ForConditionalGeneration", "MT5Model", "BartModel", "MBartModel", "PegasusModel",
                    "BlenderbotModel", "BlenderbotSmallModel", "ProphetNetModel")
VISION = ("CLIPVisionModel", "ErnieViLVisionModel", "BlipVisionModel")   # pixel_values float32 [None, 3, 32, 32]
CALL_KWARGS = {"FunnelModel": {"return_dict": True}}   # Funnel's code reads its encoder's output as a ModelOutput


class _Unused:
    """What a stub module holds: a class PaddleNLP may subclass or call at import (its server's pydantic models)."""

    forbid = None   # pydantic's Extra.forbid

    def __init__(self, *args, **kwargs):
        pass

    def __init_subclass__(cls, **kwargs):
        pass


def _stub_unused_imports() -> None:
    """STUBS as modules of _Unused names, a submodule its package's attribute too, for each package not installed."""
    import importlib.machinery
    import importlib.util
    import types
    missing = {name.split(".")[0] for name in STUBS if importlib.util.find_spec(name.split(".")[0]) is None}
    stubs = {name: types.ModuleType(name) for name in STUBS if name.split(".")[0] in missing}
    for name, module in stubs.items():
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)   # for PaddleNLP's find_spec probes
        for attribute in STUBS[name]:
            setattr(module, attribute, stubs.get(f"{name}.{attribute}", _Unused))
    sys.modules.update(stubs)


def export_one(out: Path, class_name: str, shape: list[int]) -> str:
    """One tiny model of PaddleNLP's, static, saved as PIR."""
    import paddle
    _stub_unused_imports()
    import paddlenlp.transformers as transformers
    model_class = getattr(transformers, class_name)
    prepare(class_name)
    paddle.seed(0)
    config_class = model_class.config_class   # a size that is a property there (Funnel's layers) is derived
    sizes = {key: value for key, value in TINY.items() if not isinstance(getattr(config_class, key, None), property)}
    model = model_class(config_class(**{**sizes, **CONFIG.get(class_name, {})}))
    model.eval()
    two_inputs = class_name in ENCODER_DECODERS

    class Exported(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, inputs, in1=None, in2=None, in3=None, in4=None, in5=None):   # to_static takes no *args
            more = [value for value in (in1, in2, in3, in4, in5) if value is not None]
            extra = ({"decoder_input_ids": more[0]} if two_inputs else
                     call_kwargs(class_name, more) if class_name in EXTRA else {})
            return tuple(output_tensors(self.model(inputs, **extra, **CALL_KWARGS.get(class_name, {}))))

    if class_name in VISION:
        specs = [paddle.static.InputSpec([None, 3, 32, 32], "float32", "pixel_values")]
    else:
        names = ["input_ids", "decoder_input_ids"] if two_inputs else ["input_ids"]
        specs = [paddle.static.InputSpec(IDS_SHAPE.get(class_name, shape), "int64", name) for name in names]
        specs += [paddle.static.InputSpec(*spec[1:], spec[0]) for spec in EXTRA.get(class_name, [])]
    static = paddle.jit.to_static(Exported(), input_spec=specs, full_graph=True)
    paddle.jit.save(static, str(out / "inference"))
    return "OK"


def main() -> None:
    source, out_dir, classes = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3:] or SMALLEST
    if in_child(source):   # one model
        class_name, _, size = classes[0].partition("@")
        shape = [int(d) for d in size.split("x")] if size else [None, None]
        print(export_one(out_dir / class_name, class_name, shape), flush=True)
        return
    export_each(__file__, source, out_dir, classes, timeout=300)

if __name__ == "__main__":
    main()

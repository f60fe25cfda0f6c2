"""tools/paddlespeech_export.py's later entries: PaddleSpeech's end-to-end TTS models (JETS, VITS), TransformerTTS,
DiffSinger, ERNIE-SAT, the s2t encoders (HuBERT, wav2vec2, Whisper) and the ERNIE-linear punctuation model, each with
the config of its example shrunk and saved as its synthesis scripts save it (syn_utils.am_to_static) or, where a
model has no export, wrapped in to_static as its inference calls it."""

from __future__ import annotations

import math
from pathlib import Path

_E2E = {   # generator_params of the end-to-end models, shrunk (upsampling by 8)
    "jets": ("csmsc/jets", dict(adim=16, aheads=2, elayers=1, eunits=32, dlayers=1, dunits=32,
                                duration_predictor_layers=1, duration_predictor_chans=16, pitch_predictor_layers=1,
                                pitch_predictor_chans=16, energy_predictor_layers=1, energy_predictor_chans=16,
                                generator_channels=16, generator_upsample_scales=[4, 2],
                                generator_upsample_kernel_sizes=[8, 4], generator_resblock_kernel_sizes=[3],
                                generator_resblock_dilations=[[1, 3]])),
    "vits": ("csmsc/vits", dict(hidden_channels=16, text_encoder_blocks=1, decoder_channels=16,
                                decoder_upsample_scales=[4, 2], decoder_upsample_kernel_sizes=[8, 4],
                                decoder_resblock_kernel_sizes=[3], decoder_resblock_dilations=[[1, 3]],
                                posterior_encoder_layers=2, flow_flows=1, flow_layers=1,
                                stochastic_duration_predictor_flows=1,
                                stochastic_duration_predictor_dds_conv_layers=1)),
}
PADDLE2_CODE = {   # as paddlespeech_export._PADDLE2_CODE, for these models
    # a 0-d length (paddle.shape(x)[1] in Paddle 3), which make_pad_mask's reshape refuses
    ("paddlespeech.t2s.models.diffsinger.fastspeech2midi", "FastSpeech2MIDI", "inference"): [
        ("ilens = paddle.shape(xs)[1]\n", "ilens = paddle.shape(xs)[1:2]\n")],
    # a 0-d length (JETS's, DiffSinger's) as a batch of one: its shape is the batch's size
    ("paddlespeech.t2s.modules.nets_utils", None, "make_pad_mask"): [
        ("    bs = paddle.shape(lengths)\n", "    lengths = lengths.reshape([-1])\n    bs = paddle.shape(lengths)\n")],
    # zeros of a parameter's shape as a tensor, which Paddle 3.3.1 types [-1] and refuses even in dygraph
    ("paddlespeech.t2s.models.vits.residual_coupling", "ResidualAffineCouplingLayer", "__init__"): [
        ("paddle.zeros(paddle.shape(self.proj.weight))", "paddle.zeros(self.proj.weight.shape)"),
        ("paddle.zeros(paddle.shape(self.proj.bias))", "paddle.zeros(self.proj.bias.shape)")],
    ("paddlespeech.t2s.models.vits.flow", "ConvFlow", "__init__"): [
        ("paddle.zeros(paddle.shape(self.proj.weight))", "paddle.zeros(self.proj.weight.shape)"),
        ("paddle.zeros(paddle.shape(self.proj.bias))", "paddle.zeros(self.proj.bias.shape)")],
    # VITS's, DiffSinger's and ERNIE-SAT's positions: the table made at init (5,000 positions) covers the input;
    # extending it in forward assigns a layer attribute in a cond (DiffSinger: a second time), which to_static refuses
    ("paddlespeech.t2s.modules.transformer.embedding", "RelPositionalEncoding", "forward"): [
        ("        self.extend_pe(x)\n", "")],
    ("paddlespeech.t2s.modules.transformer.embedding", "PositionalEncoding", "forward"): [],
    ("paddlespeech.t2s.modules.transformer.embedding", "ScaledPositionalEncoding", "forward"): [],
    ("paddlespeech.t2s.modules.transformer.embedding", "LegacyRelPositionalEncoding", "forward"): [],
    # DiffSinger's timestep, an element of a 1-D tensor (0-d in Paddle 3), which its embedding indexes as [1]
    ("paddlespeech.t2s.modules.diffusion", "GaussianDiffusion", "inference"): [
        ("self.denoiser(denoised_output, t, cond)", "self.denoiser(denoised_output, t.reshape([1]), cond)")],
    # a bool mask multiplied with floats, which Paddle 3 no longer promotes: cast once the attention has used it
    ("paddlespeech.t2s.models.vits.text_encoder", "TextEncoder", "forward"): [
        ("        stats = self.proj(x) * x_mask",
         "        x_mask = x_mask.cast(x.dtype)\n        stats = self.proj(x) * x_mask")],
    ("paddlespeech.t2s.models.vits.generator", "VITSGenerator", "inference"): [
        ("            attn_mask = tmp_a * tmp_b\n",
         "            attn_mask = tmp_a * tmp_b\n            y_mask = y_mask.cast(x_mask.dtype)\n")],
    ("paddlespeech.t2s.models.vits.generator", "VITSGenerator", "_generate_path"): [
        ("transpose([0, 1, 3, 2]) * mask", "transpose([0, 1, 3, 2]) * mask.cast(path.dtype)")],
    # ppdiffusers' DDPM step adds int 0 or noise in a cond on the timestep: to_static wants one type of both
    ("ppdiffusers.schedulers.scheduling_ddpm", "DDPMScheduler", "step"): [
        ("        variance = 0\n", "        variance = paddle.zeros_like(pred_prev_sample)\n")],
    # Tensor.view, which Paddle 3.3.1 takes in dygraph only (Whisper's attention heads)
    ("paddlespeech.s2t.models.whisper.whipser", "MultiHeadAttention", "qkv_attention"): [
        (f"{t}.view(*{t}.shape[:2], self.n_head, -1)", f"{t}.reshape([0, 0, self.n_head, -1])") for t in "qkv"],
    # HuBERT's feature extractor swaps its last two dims with a permutation made as a tensor, which transpose refuses
    ("paddlespeech.s2t.models.wav2vec2.modules.wav2vec2_model", "TransposeLast", "forward"): [
        ("trans_dim = paddle.arange(x.dim())", "trans_dim = list(range(x.dim()))")],
    # 6 denoising steps, not its 60: unrolled, Paddle's run of the 60-step training program (12,750 ops) did not finish
    ("paddlespeech.t2s.models.diffsinger.diffsinger", "DiffSinger", "inference"): [
        ("num_inference_steps=60)", "num_inference_steps=6)")],
    # the end-of-sequence id appended with numpy, which to_static cannot trace
    ("paddlespeech.t2s.models.transformer_tts.transformer_tts", "TransformerTTS", "inference"): [
        ("text = numpy.pad(\n            text.numpy(), (0, 1), 'constant', constant_values=self.eos)\n"
         "        x = paddle.to_tensor(text, dtype='int64')",
         "x = paddle.concat([text.cast('int64'), paddle.full([1], self.eos, 'int64')])")],
}
REAL = {"diffsinger": ("ppdiffusers", "paddlenlp"), "ernie_linear": ("paddlenlp",),   # stubbed packages entries run
        "u2_feature": ("paddleaudio.compliance", "paddleaudio.functional")}
ENTRIES = ["jets_csmsc", "vits_csmsc", "transformer_tts_ljspeech", "diffsinger_opencpop", "wav2vec2_asr",
           "hubert_asr", "whisper_tiny", "ernie_linear_punc", "erniesat_aishell3", "u2_feature_conformer"]


def _yaml(path: str) -> dict:
    import yaml
    with open(path) as f:
        return yaml.safe_load(f)


def _e2e(out: Path, entry: str, zscore) -> None:
    """JETS and VITS: text to waveform, saved by am_to_static (their synthesize_e2e.py's export)."""
    from paddlespeech.t2s.exps.syn_utils import am_to_static
    name = entry.rsplit("_", 1)[0]
    folder, shrunk = _E2E[name]
    model_conf = _yaml(f"examples/{folder}/conf/default.yaml")["model"]
    model_conf["generator_params"].update(shrunk)
    if name == "jets":
        from paddlespeech.t2s.models.jets import JETS as Model
        from paddlespeech.t2s.models.jets import JETSInference as Inference
    else:
        from paddlespeech.t2s.models.vits import VITS as Model
        from paddlespeech.t2s.models.vits import VITSInference as Inference
    model = Model(idim=10, odim=80 if name == "jets" else 33, **model_conf)
    model.eval()
    inference = Inference(model)
    inference.eval()
    am_to_static(inference, am=entry, inference_dir=str(out))


def _transformer_tts(out: Path, entry: str, zscore) -> None:
    """TransformerTTS (its synthesize.py has no static export): its Inference wrapper as Tacotron2's is saved."""
    import paddle
    from paddlespeech.t2s.models.transformer_tts import TransformerTTS, TransformerTTSInference
    conf = {**_yaml("examples/ljspeech/tts1/conf/default.yaml")["model"],
            **dict(dprenet_units=16, adim=16, aheads=2, elayers=1, eunits=32, dlayers=1, dunits=32, postnet_layers=2,
                   postnet_chans=16)}
    model = TransformerTTS(idim=10, odim=80, **conf)
    model.eval()
    inference = TransformerTTSInference(zscore(80), model)
    inference.eval()
    static = paddle.jit.to_static(inference, input_spec=[paddle.static.InputSpec([8], "int64")])
    paddle.jit.save(static, str(out / entry))


def _diffsinger(out: Path, entry: str, zscore) -> None:
    """DiffSinger: FastSpeech2 then 6 denoising steps (PADDLE2_CODE), each drawing Gaussian noise; saved by
    am_to_static."""
    import paddle
    from paddlespeech.t2s.exps.syn_utils import am_to_static
    from paddlespeech.t2s.models.diffsinger import DiffSinger, DiffSingerInference
    conf = _yaml("examples/opencpop/svs1/conf/default.yaml")["model"]
    conf["fastspeech2_params"].update(adim=16, aheads=2, elayers=1, eunits=32, dlayers=1, dunits=32,
                                      duration_predictor_layers=1, duration_predictor_chans=16,
                                      pitch_predictor_layers=1, pitch_predictor_chans=16, energy_predictor_layers=1,
                                      energy_predictor_chans=16, postnet_layers=1, postnet_chans=16, spk_num=None)
    conf["denoiser_params"].update(layers=2, stacks=1, residual_channels=16, gate_channels=32, skip_channels=16,
                                   aux_channels=16)
    model = DiffSinger(spec_min=paddle.full([80], -4.0), spec_max=paddle.full([80], 4.0), idim=10, odim=80, **conf)
    bias = model.fs2.duration_predictor.linear.bias   # as FastSpeech2's: initial weights give every phone 0 frames
    bias.set_value(bias * 0 + math.log(4.0))
    model.eval()
    inference = DiffSingerInference(zscore(80), model)
    inference.eval()
    am_to_static(inference, am=entry, inference_dir=str(out))


_SSL = {   # the self-supervised encoders' sizes, shrunk (two conv layers: one frame per 10 samples)
    "wav2vec2": ("librispeech/asr3/conf/wav2vec2ASR.yaml", dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, conv_dim=[16, 16],
        conv_stride=[5, 2], conv_kernel=[10, 3], num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2)),
    "hubert": ("librispeech/asr4/conf/hubertASR.yaml", dict(model_cfg=dict(
        encoder_layers=2, encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_attention_heads=2, final_dim=16,
        conv_feature_layers="[(16,10,5)] + [(16,3,2)]", conv_pos=16, conv_pos_groups=2))),
}


def _ssl_asr(out: Path, entry: str, zscore) -> None:
    """wav2vec2 and HuBERT CTC recognizers: their ctc_greedy_search up to its log-probabilities (then a top-1 and
    Python lists), over a [1, samples, 1] waveform."""
    import paddle
    import paddle.nn.functional as F
    from yacs.config import CfgNode
    name = entry.split("_")[0]
    path, sizes = _SSL[name]
    conf = _yaml(f"examples/{path}")
    for key, value in sizes.items():
        conf[key] = {**conf[key], **value} if isinstance(value, dict) else value
    conf.update(output_dim=10, layer_norm_eps=1e-5, ctc={**conf["ctc"], "enc_n_units": 32},   # yaml reads 1e-5 as text
                enc={**conf["enc"], "input_shape": 32, "dnn_blocks": 1, "dnn_neurons": 32})
    if name == "wav2vec2":
        from paddlespeech.s2t.models.wav2vec2.wav2vec2_ASR import Wav2vec2ASR as Model
    else:
        from paddlespeech.s2t.models.hubert.hubert_ASR import HubertASR as Model

    class Recognizer(Model):
        def forward(self, wav):   # ctc_greedy_search's steps before its top-1
            wav = wav[:, :, 0]
            if self.normalize_wav:
                wav = F.layer_norm(wav, wav.shape[1:])
            out = (self.wav2vec2(wav) if name == "wav2vec2" else self.hubert.extract_features(wav))[0]
            if self.output_norm:
                out = F.layer_norm(out, out.shape[1:])
            return self.ctc.log_softmax(self.enc(out))

    model = Recognizer(CfgNode(conf))
    model.eval()
    # 400 samples (39 frames): their attention compares shapes in Python, which a dynamic length makes a tensor
    static = paddle.jit.to_static(model, input_spec=[paddle.static.InputSpec([1, 400, 1], "float32")],
                                  full_graph=True)
    paddle.jit.save(static, str(out / "inference"))


def _whisper(out: Path, entry: str, zscore) -> None:
    """Whisper as its decoding calls it: the decoder's logits of tokens over the encoder's audio features."""
    import paddle
    from paddlespeech.s2t.models.whisper.whipser import ModelDimensions, Whisper
    model = Whisper(ModelDimensions(n_mels=16, n_audio_ctx=32, n_audio_state=32, n_audio_head=2, n_audio_layer=2,
                                    n_vocab=100, n_text_ctx=16, n_text_state=32, n_text_head=2, n_text_layer=2))
    model.eval()
    spec = paddle.static.InputSpec
    static = paddle.jit.to_static(model, input_spec=[spec([1, 16, 64], "float32"), spec([1, 8], "int64")],
                                  full_graph=True)
    paddle.jit.save(static, str(out / "inference"))


def _punctuation(out: Path, entry: str, zscore) -> None:
    """The ERNIE-linear punctuation model (text/exps/ernie_linear/punc_restore.py: its default config, called with
    ids and segment ids); its ERNIE token classifier, which it loads with from_pretrained, built from a tiny config."""
    import paddle
    from paddlenlp.transformers import ErnieConfig, ErnieForTokenClassification
    from paddlespeech.text.models.ernie_linear import ErnieLinear
    tiny = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                max_position_embeddings=64)
    ErnieForTokenClassification.from_pretrained = classmethod(
        lambda cls, name, num_labels, **kwargs: cls(ErnieConfig(**tiny, num_labels=num_labels)))
    model = ErnieLinear(**_yaml("examples/iwslt2012/punc0/conf/default.yaml")["model"])
    model.eval()
    spec = paddle.static.InputSpec
    static = paddle.jit.to_static(model, input_spec=[spec([1, None], "int64"), spec([1, None], "int64")],
                                  full_graph=True)
    paddle.jit.save(static, str(out / "inference"))


def _ernie_sat(out: Path, entry: str, zscore) -> None:
    """ERNIE-SAT's speech editing (its synthesize_e2e runs it in dygraph, no export): its Inference wrapper with
    teacher forcing over 32 frames of speech and 8 phones, frames 8 to 16 masked (span_bdy, Python ints)."""
    import paddle
    from paddlespeech.t2s.models.ernie_sat import ErnieSAT, ErnieSATInference
    conf = {**_yaml("examples/aishell3/ernie_sat/conf/default.yaml")["model"],
            **dict(postnet_layers=2, postnet_chans=16, enc_attention_dim=16, enc_linear_units=32, enc_num_blocks=1,
                   dec_attention_dim=16, dec_linear_units=32, dec_num_blocks=1, enc_cnn_module_kernel=3,
                   dec_cnn_module_kernel=3)}
    model = ErnieSAT(idim=10, odim=80, **conf)
    model.eval()

    class Editing(ErnieSATInference):
        def forward(self, speech, text, masked_pos, speech_mask, text_mask, speech_seg_pos, text_seg_pos):
            before, edited, after = super().forward(speech, text, masked_pos, speech_mask, text_mask,
                                                    speech_seg_pos, text_seg_pos, span_bdy=[8, 16])
            return edited, before, after   # the model's frames first: real_models.py's loss weighs the first

    inference = Editing(zscore(80), model)
    inference.eval()
    spec = paddle.static.InputSpec
    static = paddle.jit.to_static(inference, full_graph=True, input_spec=[
        spec([1, 32, 80], "float32", "speech"), spec([1, 8], "int64", "text"), spec([1, 32], "int64", "masked_pos"),
        spec([1, 1, 32], "int64", "speech_mask"), spec([1, 1, 8], "int64", "text_mask"),
        spec([1, 32], "int64", "speech_seg_pos"), spec([1, 8], "int64", "text_seg_pos")])
    paddle.jit.save(static, str(out / "inference"))


def u2_config(out: Path, name: str):
    """U2's config of examples/aishell/asr1/conf/<name>.yaml shrunk, its features 16 Kaldi fbank mels with a CMVN of
    mean 0 and std 1 (OUT/preprocess.yaml)."""
    from yacs.config import CfgNode
    conf = CfgNode(_yaml(f"examples/aishell/asr1/conf/{name}.yaml"))
    conf.encoder_conf.update(output_size=16, attention_heads=2, linear_units=32, num_blocks=2)
    conf.decoder_conf.update(attention_heads=2, linear_units=32, num_blocks=1)
    if "cnn_module_kernel" in conf.encoder_conf:
        conf.encoder_conf.cnn_module_kernel = 3
    process = {"process": [{"type": "fbank_kaldi", "fs": 16000, "n_mels": 16, "n_shift": 160, "win_length": 400},
                           {"type": "cmvn_json", "cmvn_path": {"frame_num": 1, "mean_stat": [0.0] * 16,
                                                               "var_stat": [1.0] * 16}}]}
    (out / "preprocess.yaml").write_text(__import__("yaml").safe_dump(process))
    conf.update(input_dim=16, output_dim=10, preprocess_config=str(out / "preprocess.yaml"), cmvn_file=None)
    return conf


def _u2_feature(out: Path, entry: str, _zscore) -> None:
    """U2's feature pipeline as U2Tester.export traces it, forward_feature (int16 samples to the CMVN of Kaldi fbank
    features), with paddleaudio's own Python fbank (its package's compiled extension stays stubbed)."""
    import numpy as np
    import paddle
    from paddlespeech.s2t.models.u2 import U2InferModel
    model = U2InferModel.from_config(u2_config(out, entry.rsplit("_", 1)[1]))
    model.eval()
    # a 440 Hz tone in noise, and Paddle's eager features of it
    wave = (3000 * np.sin(np.arange(4000) * 2 * np.pi * 440 / 16000)
            + np.random.default_rng(0).normal(0, 300, 4000)).astype(np.int16)
    np.savez(out / "feature.npz", wave=wave, feat=model.forward_feature(paddle.to_tensor(wave)).numpy())
    # 4,000 samples (23 frames), not U2Tester.export's [None]: a length unknown to to_static makes paddleaudio's
    # `if num_samples < window_size` a cond whose branches return a tensor and nothing, which Paddle 3.3.1 refuses
    model.forward_feature = paddle.jit.to_static(model.forward_feature,
                                                 input_spec=[paddle.static.InputSpec([4000], "int16")])
    paddle.jit.save(model, str(out / "export"), combine_params=True, skip_forward=True)


BUILDERS = {"jets": _e2e, "vits": _e2e, "transformer_tts": _transformer_tts, "diffsinger": _diffsinger,
            "wav2vec2": _ssl_asr, "hubert": _ssl_asr, "whisper": _whisper, "ernie_linear": _punctuation,
            "erniesat": _ernie_sat, "u2_feature": _u2_feature}

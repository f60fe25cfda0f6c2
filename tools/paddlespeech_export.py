"""Export PaddleSpeech's own architectures as Paddle 3 saves them (inference.json + inference.pdiparams, PIR), with
their initial weights (seed 0) and the configs of examples/*/conf shrunk (few layers, small dims), for
tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1 and a PaddleSpeech checkout (its
paddlespeech/ and examples/) with the light packages its modules import (loguru, inflect 5, typeguard 2, yacs,
pyyaml, textgrid, six) on PYTHONPATH; of the later entries (tools/paddlespeech_more.py) DiffSinger and the punctuation
model also need PaddleNLP 3.0.0b4 as tools/paddlenlp_export.py installs it, DiffSinger ppdiffusers 0.29.0 (with its
huggingface_hub 0.23.0 ahead of PaddleNLP's), each installed with `pip install --no-deps --target`:

    /path/to/paddle/python tools/paddlespeech_export.py PADDLESPEECH_DIR OUT_DIR [ENTRY ...]

The heavy or compiled packages PaddleSpeech's modules import at load time but no exported model runs (audio I/O,
text front ends, onnxruntime, paddlenlp, ...; STUBBED) are stubbed: empty modules whose every attribute is a dummy,
but scipy.signal's kaiser, numpy's (scipy 1.13 on has none, and Multi-band MelGAN's PQMF builds its filters with it).
Each entry goes through the suite's own export where it has one: DeepSpeech2's `DeepSpeech2InferModel.export()`,
U2's `U2Tester.export` to_static specs (forward_encoder_chunk and ctc_activation; forward_feature, paddleaudio's
Python Kaldi fbank, as the entry u2_feature_conformer; not forward_attention_decoder, whose Tensor.repeat and int64 *
bool Paddle 3.3.1 no longer takes: its jit.save writes ctc_activation, then refuses forward_encoder_chunk), t2s's
`syn_utils.am_to_static` and `voc_to_static` around the model's own Inference wrapper (a ZScore of mean 0, std 1),
PANNs' `cls/exps/panns/export_model.py` specs; ECAPA-TDNN, GE2E and MDTC, which have none, are wrapped in to_static
as their inference calls them. The changes Paddle 3 needs of the suite's code (arguments by position, 0-d lengths,
dy2static's Python max of dims) are made in copies of the methods (_PADDLE2_CODE). Initial weights that make an
output degenerate are nudged where said (FastSpeech2's durations, Tacotron2's stop token, GE2E's embedding). Each
entry runs in a process of its own into OUT_DIR/<entry>/. Without entries, SMALLEST is exported. One line per
entry: OK, or FAIL and why.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import math
import sys
import types
from pathlib import Path

import suite_export
from paddlespeech_more import BUILDERS, ENTRIES, PADDLE2_CODE, REAL, u2_config

STUBBED = ("soundfile", "paddleaudio", "jieba", "pypinyin", "g2pM", "g2p_en", "onnxruntime", "opencc", "librosa",
           "paddlenlp", "zhon", "h5py", "sentencepiece", "ToJyutping", "editdistance", "pyworld", "praatio",
           "resampy", "webrtcvad", "nara_wpe", "hyperpyyaml", "braceexpand", "matplotlib", "timer", "kaldiio",
           "python_speech_features", "pandas", "sacrebleu", "pattern_singleton", "prettytable", "visualdl", "nltk",
           "paddleslim", "ppdiffusers", "pypinyin_dict", "dtaidistance", "scipy", "jsonlines",
           "paddlespeech_ctcdecoders", "requests", "tqdm", "sklearn", "colorlog", "numba")

_SHRUNK_AM = {  # the model section of each acoustic model's config, shrunk
    "fastspeech2": dict(adim=32, aheads=2, elayers=1, eunits=64, dlayers=1, dunits=64, duration_predictor_chans=32,
                        postnet_layers=2, postnet_chans=32, pitch_predictor_layers=2, pitch_predictor_chans=32,
                        energy_predictor_layers=1, energy_predictor_chans=32),
    "speedyspeech": dict(encoder_hidden_size=32, encoder_dilations=[1, 3], duration_predictor_hidden_size=32,
                         decoder_hidden_size=32, decoder_dilations=[1, 3]),
    "tacotron2": dict(embed_dim=32, eunits=32, econv_chans=32, adim=32, aconv_chans=8, dlayers=1, dunits=32,
                      prenet_units=32, postnet_layers=2, postnet_chans=32),
}
_SHRUNK_VOC = {  # the generator section of each vocoder's config, shrunk (hops of 4 to 30 samples)
    "pwgan": ("voc1", dict(layers=4, stacks=2, residual_channels=16, gate_channels=32, skip_channels=16,
                           upsample_scales=[2, 3, 5])),
    "mb_melgan": ("voc3", dict(channels=32, stacks=2, upsample_scales=[5, 5])),
    # even noise upsampling scales, as its config's [10, 2, 2, 2]: Paddle 3.3.1 types the length of a Conv1DTranspose
    # with output_padding (an odd scale's) of an unknown input 0, and its interpolation then refuses it
    "style_melgan": ("voc4", dict(in_channels=16, channels=16, noise_upsample_scales=[2, 2, 4],
                                  upsample_scales=[5, 1, 2, 1, 2, 1])),
    "hifigan": ("voc5", dict(channels=32, upsample_scales=[5, 2, 2], upsample_kernel_sizes=[10, 4, 4],
                             resblock_kernel_sizes=[3], resblock_dilations=[[1, 3]])),
    "wavernn": ("voc6", dict(rnn_dims=32, fc_dims=32, bits=9, upsample_scales=[2, 2], hop_length=4,
                             compute_dims=16, res_out_dims=16, res_blocks=1)),
}
_AM_CONF = {"fastspeech2": "tts3", "speedyspeech": "tts2", "tacotron2": "tts0"}
SMALLEST = ["ds2_offline", "ds2_online", "ds2_online_gru", "u2_conformer", "u2_transformer",
            *(f"{am}_csmsc" for am in _AM_CONF), "tacotron2_csmsc@p0", *(f"{voc}_csmsc" for voc in _SHRUNK_VOC),
            "panns_cnn6", "ecapa_tdnn", "ge2e_lstm", "mdtc", *ENTRIES]
# Tacotron2's prenet drops out at inference too (F.dropout at its default p=0.5), so its outputs and decoding length
# differ from run to run; @p0 exports it with that dropout's p 0 (Paddle then writes none), which gradc and Paddle
# can compare
_PRENET_P0 = {("paddlespeech.t2s.modules.tacotron2.decoder", "Prenet", "forward"): [
    ("x = F.dropout(self.prenet[i](x))", "x = F.dropout(self.prenet[i](x), p=0.0)")]}


class _Stubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds each STUBBED module (and its submodules) as an empty package whose attributes are dummies."""

    def __init__(self, real=()):
        self.real = real

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in STUBBED and not any(name == r or name.startswith(r + ".") for r in self.real):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = [str(Path("audio/paddleaudio").resolve())] if spec.name == "paddleaudio" else []   # where
        # an entry's real paddleaudio modules (its Python Kaldi fbank, REAL) are: the checkout's, not compiled
        if spec.name == "scipy.signal":   # Multi-band MelGAN's PQMF filters: numpy's Kaiser window is scipy's
            import numpy
            module.kaiser = numpy.kaiser
        module.__getattr__ = lambda attr: type(attr, (), {"__init__": lambda self, *a, **k: None,
                                                          "__call__": lambda self, *a, **k: None})
        return module

    def exec_module(self, module):
        pass


def _paddle2_arguments() -> None:
    """Paddle 3.3.1's Conv1D, Conv2D, LayerNorm and Embedding take some arguments by keyword only (or others in their
    place); PaddleSpeech's own subclasses (s2t/modules/align.py) pass them by position, as Paddle 2 took them."""
    import paddle
    nn = paddle.nn
    keyword = {nn.Conv1D: (7, ("padding_mode", "weight_attr", "bias_attr", "data_format")),
               nn.Conv2D: (7, ("padding_mode", "weight_attr", "bias_attr", "data_format")),
               nn.LayerNorm: (2, ("weight_attr", "bias_attr", "name")),
               nn.Embedding: (3, ("sparse", "weight_attr", "name"))}
    for layer, (positional, names) in keyword.items():
        def init(self, *args, _init=layer.__init__, _positional=positional, _names=names, **kwargs):
            kwargs.update(zip(_names, args[_positional:]))
            _init(self, *args[:_positional], **kwargs)
        layer.__init__ = init


_PADDLE2_CODE = {   # (module, class or None for a function, name): changes of its source that Paddle 3 needs
    # Tacotron2's lengths: `paddle.shape(x)[0]` is [1] in Paddle 2 and 0-d in Paddle 3, whose rnn and zeros refuse it,
    # and the first step's attention weights [T] where the later ones are [1, T] (PIR's cond wants one shape)
    ("paddlespeech.t2s.modules.tacotron2.encoder", "Encoder", "inference"): [
        ("paddle.shape(x)[0]\n", "paddle.shape(x)[0:1]\n")],
    ("paddlespeech.t2s.modules.tacotron2.decoder", "Decoder", "inference"): [
        ("ilens = paddle.shape(h)[0]", "ilens = paddle.shape(h)[0:1]"),
        ("prev_att_w = paddle.zeros([ilens])", "prev_att_w = paddle.zeros([1, ilens])")],
    # Paddle 3 no longer divides float32 by int64
    ("paddlespeech.t2s.modules.tacotron2.attentions", "AttLoc", "forward"): [
        ("att_prev / enc_hs_len.unsqueeze(-1)", "att_prev / enc_hs_len.unsqueeze(-1).cast(att_prev.dtype)")],
    # the max of two dims in Python, where Paddle 3's dy2static gives an unknown dim as a tensor: where broadcasts
    ("paddlespeech.t2s.modules.masked_fill", None, "masked_fill"): [
        ("    bshape = broadcast_shape(xs.shape, mask.shape)\n", ""), ("    mask = mask.broadcast_to(bshape)\n", "")],
}


def _paddle3_code(scratch: Path, code: dict) -> None:
    """Each method or function of ``code`` (_PADDLE2_CODE) taken from a changed copy of its module's source, one
    copy per module (dy2static reads a function's source from its file); a function wherever it was imported."""
    import importlib.util
    for name in dict.fromkeys(module for module, _, _ in code):
        module = importlib.import_module(name)
        source = Path(module.__file__).read_text()
        for old, new in (change for (m, _, _), changes in code.items() if m == name for change in changes):
            assert old in source, (name, old)
            source = source.replace(old, new)
        copy = scratch / (name.rsplit(".", 1)[1] + ".py")
        copy.write_text(source)
        spec = importlib.util.spec_from_file_location(name + "_paddle3", copy)
        changed = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(changed)
        for cls, attr in ((c, a) for m, c, a in code if m == name):
            if cls is not None:
                original = getattr(module, cls)
                setattr(original, attr, _rebound(getattr(getattr(changed, cls), attr), original))
                continue
            original = getattr(module, attr)
            for user in [m for m in sys.modules.values() if getattr(m, attr, None) is original]:
                setattr(user, attr, getattr(changed, attr))


def _rebound(method, cls):
    """A changed copy's ``method`` whose zero-argument super() is the original ``cls``'s (VITS's __init__)."""
    names = method.__code__.co_freevars
    if "__class__" not in names:
        return method
    cells = tuple(types.CellType(cls) if n == "__class__" else c for n, c in zip(names, method.__closure__))
    return types.FunctionType(method.__code__, method.__globals__, method.__name__, method.__defaults__, cells)


def _yaml(path: str) -> dict:
    import yaml
    with open(path) as f:
        return yaml.safe_load(f)


def _ds2(out: Path, entry: str) -> None:
    import paddle
    from paddlespeech.s2t.models.ds2 import DeepSpeech2InferModel
    model = DeepSpeech2InferModel(feat_size=16, dict_size=10, num_conv_layers=2, num_rnn_layers=2, rnn_size=16,
                                  rnn_direction="bidirect" if entry == "ds2_offline" else "forward",
                                  num_fc_layers=1, fc_layers_size_list=[16], use_gru=entry.endswith("gru"))
    model.eval()
    paddle.jit.save(model.export(), str(out / "inference"))


def _u2(out: Path, entry: str) -> None:
    import paddle
    from paddlespeech.s2t.models.u2 import U2InferModel
    conf = u2_config(out, entry.split('_')[1])
    paddle.softmax = paddle.nn.functional.softmax   # the suite's own registration, where Paddle had none: Paddle
    # 3.3.1's paddle.softmax is a torch-style one (`dim`), and the suite's attention passes `axis`
    model = U2InferModel.from_config(conf)
    model.eval()
    spec = paddle.static.InputSpec
    model.forward_encoder_chunk = paddle.jit.to_static(model.forward_encoder_chunk, input_spec=[
        spec([1, None, 16], "float32"), spec([1], "int32"), -1, spec([None] * 4, "float32"),
        spec([None] * 4, "float32")])
    model.ctc_activation = paddle.jit.to_static(model.ctc_activation, input_spec=[spec([1, None, 16], "float32")])
    paddle.jit.save(model, str(out / "export"), combine_params=True, skip_forward=True)


def _zscore(size: int):
    import paddle
    from paddlespeech.t2s.modules.normalizer import ZScore
    return ZScore(paddle.zeros([size]), paddle.ones([size]))


def _am(out: Path, entry: str) -> None:
    from paddlespeech.t2s.exps.syn_utils import am_to_static, model_alias
    from paddlespeech.utils.dynamic_import import dynamic_import
    entry, _, variant = entry.partition("@")
    name = entry.rsplit("_", 1)[0]
    _paddle3_code(out, {**_PADDLE2_CODE, **(_PRENET_P0 if variant == "p0" else {})})
    model_conf = {**_yaml(f"examples/csmsc/{_AM_CONF[name]}/conf/default.yaml")["model"], **_SHRUNK_AM[name]}
    sizes = {"speedyspeech": dict(vocab_size=10, tone_size=6)}.get(name, dict(idim=10, odim=80))
    model = dynamic_import(name, model_alias)(**sizes, **model_conf)
    if name == "fastspeech2":   # initial weights predict every phone 0 frames (an empty spectrogram): 3 frames each
        model.duration_predictor.linear.bias.set_value(model.duration_predictor.linear.bias * 0 + math.log(4.0))
    if name == "tacotron2":   # initial weights stop decoding after its first frame: it runs to its maximum length
        model.dec.prob_out.bias.set_value(model.dec.prob_out.bias - 8.0)
    model.eval()
    inference = dynamic_import(name + "_inference", model_alias)(_zscore(80), model)
    inference.eval()
    am_to_static(inference, am=entry, inference_dir=str(out))


def _voc(out: Path, entry: str) -> None:
    from paddlespeech.t2s.exps.syn_utils import model_alias, voc_to_static
    from paddlespeech.utils.dynamic_import import dynamic_import
    name = entry.rsplit("_", 1)[0]
    folder, shrunk = _SHRUNK_VOC[name]
    conf = _yaml(f"examples/csmsc/{folder}/conf/default.yaml")
    model = dynamic_import(name, model_alias)(**{**conf["model" if name == "wavernn" else "generator_params"],
                                                 **shrunk})
    if name != "wavernn":
        model.remove_weight_norm()
    model.eval()
    inference = dynamic_import(name + "_inference", model_alias)(_zscore(80), model)
    inference.eval()
    voc_to_static(inference, voc=entry, inference_dir=str(out))


def _layer(out: Path, entry: str) -> None:
    """The models without an export of their own, wrapped as their inference calls them."""
    import paddle
    spec = paddle.static.InputSpec
    if entry == "panns_cnn6":   # cls/exps/panns/export_model.py, with CNN6 for CNN14
        from paddlespeech.cls.models import SoundClassifier, cnn6
        model, specs = SoundClassifier(cnn6(pretrained=False, extract_embedding=True), num_class=5), \
            [spec([None, None, 64], "float32")]
    elif entry == "ecapa_tdnn":   # vector/exps/ecapa_tdnn: the backbone over [B, n_mels, T] features and lengths
        from paddlespeech.vector.models.ecapa_tdnn import EcapaTdnn
        model, specs = EcapaTdnn(input_size=16, channels=[16, 16, 16, 16, 48], attention_channels=8, lin_neurons=8), \
            [spec([None, 16, None], "float32")]
    elif entry == "ge2e_lstm":   # vector/exps/ge2e/inference.py: embed_utterance over [B, T, n_mels] partials
        from paddlespeech.vector.models.lstm_speaker_encoder import LSTMSpeakerEncoder

        class Utterance(LSTMSpeakerEncoder):
            def forward(self, utterances):
                return self.embed_utterance(utterances)
        model, specs = Utterance(16, 2, 16, 8), [spec([None, None, 16], "float32")]
        # its initial linear layer maps every last LSTM state below 0, and the ReLU then gives 0: biased up
        model.linear.bias.set_value(model.linear.bias + 0.25)
    else:   # kws: KWSModel's MDTC, linear and sigmoid (its forward gives the linear MDTC's (outputs, None) pair)
        from paddlespeech.kws.models.mdtc import MDTC, KWSModel

        class Keywords(KWSModel):
            def forward(self, x):
                return self.activation(self.linear(self.backbone(x)[0]))
        model, specs = Keywords(MDTC(stack_num=2, stack_size=2, in_channels=16, res_channels=16, kernel_size=3,
                                     causal=True), num_keywords=2), [spec([None, None, 16], "float32")]
    model.eval()
    paddle.jit.save(paddle.jit.to_static(model, input_spec=specs), str(out / "inference"))


def export_one(out: Path, entry: str) -> str:
    import paddle
    family = entry.split("@")[0].rsplit("_", 1)[0]
    sys.meta_path.insert(0, _Stubs(REAL.get(family, ())))
    if "paddlenlp" in REAL.get(family, ()):
        from paddlenlp_export import _stub_unused_imports
        _stub_unused_imports()
    _paddle2_arguments()
    paddle.seed(0)
    out.mkdir(parents=True, exist_ok=True)
    if family in BUILDERS:
        _paddle3_code(out, {place: changes for place, changes in {**_PADDLE2_CODE, **PADDLE2_CODE}.items()
                            if place[0].split(".")[0] not in STUBBED or place[0].split(".")[0] in REAL.get(family, ())})
        BUILDERS[family](out, entry, _zscore)
        return "OK"
    build = (_ds2 if entry.startswith("ds2") else _u2 if entry.startswith("u2") else
             _am if family in _AM_CONF else _voc if family in _SHRUNK_VOC else _layer)
    build(out, entry)
    return "OK"


def main() -> None:
    suite_export.main(__file__, lambda out_dir, entry: export_one(out_dir / entry, entry), SMALLEST)


if __name__ == "__main__":
    main()

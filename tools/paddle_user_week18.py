"""The speech and audio engineer's programs of docs/tools.md's 'A speech and audio engineer's week', by Paddle 3.3.1.
In legacy static mode Paddle's feature layers (paddle.audio.features: "attribute 'fft_window' already exists") and
paddle.signal.stft / istft / paddle.fft.rfft (UnboundLocalError 'ret') fail, so the legacy programs append what those
APIs append (reflect pad3d, frame, the window, fft_r2c; fft_c2r and overlap_add for the inverse) as a user does:

- kws: MFCC features in the program (power spectrum, a mel filterbank matmul, 10 log10, a DCT matmul), SpecAugment
  masks (fed), a conformer-ish block (multi-head self-attention, GLU, depthwise Conv1D, BatchNorm1D, swish, LayerNorm)
  and a keyword classifier (cross-entropy), trained 4 steps by Paddle's Adam with a StepDecay schedule.
- vocoder: an autoencoder whose decoder predicts each frame's magnitude and phase, turned back into a waveform by
  fft_c2r and overlap_add (an iSTFT head), trained 4 steps by Adam on |STFT| L1 against the target waveform.
- spectral64: the vocoder's spectral loss alone in float64 and Paddle's gradient of it for the input waveform.
- kws_random: the keyword model with SpecAugment drawn in the program and dropout, 4 steps after paddle.seed(18).
- the PIR programs (tools/paddle_user_week18_pir.py): the MFCC keyword model saved by paddle.jit.save and fine-tuned in
  dygraph, stft -> istft, the vocoder trained by PIR minimize with OneCycleLR, float64 FFT cases, cyclic schedules.

Written (gzipped): the four programs with their startups and data (.npz), kws_train.pb (Paddle's Adam minimize), the
PIR files, and meta.json (Paddle's losses, the names gradc needs).

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week18.py tests/data/paddle/user_week18
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle import nn
from paddle.base.layer_helper import LayerHelper
from paddle_programs import gzip_file, without_callstacks

RNG = np.random.default_rng(18)
SR, N_FFT, HOP, SAMPLES = 8000, 64, 32, 512          # 17 frames of 33 bins (centred, reflect padding)
N_MELS, N_MFCC, KEYWORDS, BATCH, STEPS = 16, 10, 4, 4, 4
FRAMES = 1 + SAMPLES // HOP


def hann() -> np.ndarray:
    """Paddle's periodic Hann window (get_window('hann', N_FFT, fftbins=True))."""
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32)


def audio_matrix(make, *args) -> np.ndarray:
    """A paddle.audio.functional matrix, made in dygraph: compute_fbank_matrix(SR, N_FFT, N_MELS) (slaney, norm
    'slaney'), [N_MELS, bins]; create_dct(N_MFCC, N_MELS)."""
    with paddle.base.dygraph.guard():
        return make(*args).numpy().astype(np.float32)


def legacy_op(op_type: str, inputs: dict, outputs: dict, attrs: dict) -> list:
    """Append a legacy op; ``outputs`` maps each slot to the dtype of its one var; returns the vars in order."""
    helper = LayerHelper(op_type)
    made = {slot: [helper.create_variable_for_type_inference(dtype)] for slot, dtype in outputs.items()}
    helper.append_op(type=op_type, inputs=inputs, outputs=made, attrs=attrs)
    return [made[slot][0] for slot in outputs]


def constant(name: str, value: np.ndarray):
    """A non-trainable constant the program holds (the window, the filterbank): assign_value, as paddle.to_tensor."""
    out = paddle.static.create_global_var(list(value.shape), 0.0, str(value.dtype), name=name)
    paddle.assign(value, out)
    return out


def stft(wav, window):
    """paddle.signal.stft(wav, N_FFT, HOP, window=window, center=True) as its legacy ops: [B, bins, frames] complex."""
    complex_dtype = "complex128" if wav.dtype == paddle.float64 else "complex64"
    padded = paddle.squeeze(F.pad(paddle.unsqueeze(wav, [1]), [N_FFT // 2, N_FFT // 2], mode="reflect",
                                  data_format="NCL"), [1])
    (frames,) = legacy_op("frame", {"X": [padded]}, {"Out": wav.dtype}, {"frame_length": N_FFT, "hop_length": HOP,
                                                                          "axis": -1})
    frames = paddle.transpose(frames, [0, 2, 1]) * window                     # [B, frames, N_FFT]
    (spec,) = legacy_op("fft_r2c", {"X": [frames]}, {"Out": complex_dtype},
                        {"axes": [2], "normalization": "backward", "forward": True, "onesided": True})
    return paddle.transpose(spec, [0, 2, 1])


def istft_head(magnitude, phase, window):
    """An iSTFT head: the frames' complex spectra [B, frames, bins] from magnitude and phase, fft_c2r, the window,
    overlap_add, the padding cut off and the window's square sum divided out: a waveform [B, SAMPLES]."""
    (spec,) = legacy_op("complex", {"X": [magnitude * paddle.cos(phase)], "Y": [magnitude * paddle.sin(phase)]},
                        {"Out": "complex64"}, {})
    (frames,) = legacy_op("fft_c2r", {"X": [spec]}, {"Out": "float32"},
                          {"axes": [2], "normalization": "backward", "forward": False, "last_dim_size": N_FFT})
    frames = paddle.transpose(frames * window, [0, 2, 1])                    # [B, N_FFT, frames]
    (wav,) = legacy_op("overlap_add", {"X": [frames]}, {"Out": "float32"}, {"hop_length": HOP, "axis": -1})
    squares = np.zeros(SAMPLES + N_FFT, np.float32)
    for i in range(FRAMES):
        squares[i * HOP:i * HOP + N_FFT] += hann() ** 2
    envelope = constant("window_envelope", squares[N_FFT // 2:N_FFT // 2 + SAMPLES])
    return paddle.slice(wav, [1], [N_FFT // 2], [N_FFT // 2 + SAMPLES]) / envelope


def mfcc(wav, masks=None, augment=None):
    """Paddle's MFCC (power 2, slaney mel, 10 log10 with amin 1e-10, ref 1, no top_db, an ortho DCT) of [B, SAMPLES]:
    [B, N_MFCC, FRAMES]; SpecAugment masks multiply the log-mel spectrogram ([B, N_MELS, 1] and [B, 1, FRAMES]), or
    ``augment`` draws them."""
    power = paddle.pow(paddle.abs(stft(wav, constant("hann_window", hann()))), 2.0)
    audio = paddle.audio.functional
    mel = paddle.matmul(constant("mel_filterbank", audio_matrix(audio.compute_fbank_matrix, SR, N_FFT, N_MELS)), power)
    log_mel = 10.0 * paddle.log10(paddle.maximum(mel, paddle.full_like(mel, 1e-10)))
    if masks is not None:
        log_mel = log_mel * masks[0] * masks[1]
    if augment is not None:
        log_mel = augment(log_mel)
    dct = constant("dct_matrix", audio_matrix(audio.create_dct, N_MFCC, N_MELS))
    return paddle.matmul(dct, log_mel, transpose_x=True)


class ConvModule(nn.Layer):
    """The conformer convolution module: LayerNorm, pointwise Conv1D to 2C, GLU, depthwise Conv1D, BatchNorm1D,
    swish, pointwise Conv1D; residual."""

    def __init__(self, channels):
        super().__init__()
        self.norm = nn.LayerNorm(channels)
        self.pointwise_in = nn.Conv1D(channels, 2 * channels, 1)
        self.depthwise = nn.Conv1D(channels, channels, 5, padding=2, groups=channels)
        self.batch_norm = nn.BatchNorm1D(channels)
        self.pointwise_out = nn.Conv1D(channels, channels, 1)

    def forward(self, x):                                                    # [B, T, C]
        y = paddle.transpose(self.norm(x), [0, 2, 1])
        y = F.glu(self.pointwise_in(y), axis=1)
        y = F.silu(self.batch_norm(self.depthwise(y)))
        return x + paddle.transpose(self.pointwise_out(y), [0, 2, 1])


class KeywordNet(nn.Layer):
    """MFCC frames [B, N_MFCC, T] -> a linear projection, half-step feed-forward (swish), multi-head self-attention,
    the convolution module, LayerNorm, mean over time, the keyword logits."""

    def __init__(self, channels=16, dropout=0.0):
        super().__init__()
        self.project = nn.Linear(N_MFCC, channels)
        self.ffn = nn.Sequential(nn.LayerNorm(channels), nn.Linear(channels, 2 * channels), nn.Swish(),
                                 nn.Dropout(dropout), nn.Linear(2 * channels, channels))
        self.attention_norm = nn.LayerNorm(channels)
        self.attention = nn.MultiHeadAttention(channels, 2, dropout=dropout)
        self.conv = ConvModule(channels)
        self.out_norm = nn.LayerNorm(channels)
        self.classify = nn.Linear(channels, KEYWORDS)

    def forward(self, features):
        x = self.project(paddle.transpose(features, [0, 2, 1]))
        x = x + 0.5 * self.ffn(x)
        y = self.attention_norm(x)
        x = x + self.attention(y, y, y)
        x = self.out_norm(self.conv(x))
        return self.classify(paddle.mean(x, axis=1))


def kws_batch() -> dict:
    """Waveforms (a keyword's tone plus noise), labels, and SpecAugment masks: one band of 1-4 mel bins and one run of
    1-5 frames zeroed per example."""
    labels = RNG.integers(0, KEYWORDS, (BATCH, 1)).astype(np.int64)
    t = np.arange(SAMPLES) / SR
    wav = np.stack([np.sin(2 * np.pi * (300 + 400 * k) * t) * RNG.uniform(0.3, 1.0) for k in labels[:, 0]])
    wav = (wav + 0.1 * RNG.standard_normal((BATCH, SAMPLES))).astype(np.float32)
    freq_mask = np.ones((BATCH, N_MELS, 1), np.float32)
    time_mask = np.ones((BATCH, 1, FRAMES), np.float32)
    for b in range(BATCH):
        start, width = RNG.integers(0, N_MELS - 4), RNG.integers(1, 5)
        freq_mask[b, start:start + width] = 0
        start, width = RNG.integers(0, FRAMES - 5), RNG.integers(1, 6)
        time_mask[b, :, start:start + width] = 0
    return {"wav": wav, "label": labels, "freq_mask": freq_mask, "time_mask": time_mask}


def kws(out: Path) -> dict:
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 18
    with paddle.static.program_guard(main, startup):
        wav = paddle.static.data("wav", [-1, SAMPLES], "float32")
        label = paddle.static.data("label", [-1, 1], "int64")
        masks = [paddle.static.data("freq_mask", [-1, N_MELS, 1], "float32"),
                 paddle.static.data("time_mask", [-1, 1, FRAMES], "float32")]
        logits = KeywordNet()(mfcc(wav, masks))
        loss = paddle.mean(F.cross_entropy(logits, label))
    (out / "kws.pb").write_bytes(without_callstacks(main))
    schedule = paddle.optimizer.lr.StepDecay(learning_rate=0.01, step_size=2, gamma=0.5)
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.Adam(learning_rate=schedule).minimize(loss)
    (out / "kws_startup.pb").write_bytes(without_callstacks(startup))
    (out / "kws_train.pb").write_bytes(without_callstacks(main))
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    batches = [kws_batch() for _ in range(STEPS)]
    losses = []
    for feed in batches:
        losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0]))
        schedule.step()
    np.savez_compressed(out / "kws_data.npz", **{key: np.concatenate([feed[key] for feed in batches])
                                                for key in batches[0]})
    return {"kws_loss": loss.name, "kws_logits": logits.name, "kws_losses": losses}


def spec_augment(log_mel):
    """SpecAugment drawn in the program: per example one band of 1-4 mel bins and one run of 1-5 frames zeroed, their
    starts and widths from uniform draws of Paddle's global generator (BATCH examples a step)."""
    masked = log_mel
    for axis, size, widest in ((1, N_MELS, 4), (2, FRAMES, 5)):
        shape = [BATCH, 1, 1]
        start = paddle.floor(paddle.uniform(shape, min=0.0, max=float(size - widest)))
        end = start + paddle.floor(paddle.uniform(shape, min=1.0, max=float(widest + 1)))
        position = paddle.reshape(paddle.arange(size, dtype="float32"), [1, size, 1] if axis == 1 else [1, 1, size])
        inside = paddle.logical_and(position >= start, position < end)
        masked = masked * (1.0 - paddle.cast(inside, "float32"))
    return masked


def kws_random(out: Path) -> dict:
    """The keyword model with SpecAugment drawn in the program and dropout 0.1 in its attention and feed-forward,
    trained 4 steps by Adam(0.005) after paddle.seed(18) (the startup's weights, the masks and the dropout all from
    Paddle's global generator): kws_random.pb (the forward), kws_random_startup.pb, Paddle's losses."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        wav = paddle.static.data("wav", [BATCH, SAMPLES], "float32")
        label = paddle.static.data("label", [BATCH, 1], "int64")
        net = KeywordNet(dropout=0.1)
        logits = net(mfcc(wav, augment=spec_augment))
        loss = paddle.mean(F.cross_entropy(logits, label))
    (out / "kws_random.pb").write_bytes(without_callstacks(main))
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.Adam(learning_rate=0.005).minimize(loss)
    (out / "kws_random_startup.pb").write_bytes(without_callstacks(startup))
    paddle.seed(18)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    data = np.load(out / "kws_data.npz")
    losses = [float(exe.run(main, feed={"wav": data["wav"][rows], "label": data["label"][rows]},
                            fetch_list=[loss])[0]) for rows in np.split(np.arange(BATCH * STEPS), STEPS)]
    return {"kws_random_loss": loss.name, "kws_random_losses": losses}


def vocoder_batch() -> dict:
    """Target waveforms: two decaying partials and a little noise each."""
    t = np.arange(SAMPLES) / SR
    rows = [sum(RNG.uniform(0.2, 0.8) * np.sin(2 * np.pi * RNG.uniform(200, 3000) * t + RNG.uniform(0, 6))
                for _ in range(2)) * np.exp(-t * RNG.uniform(5, 30)) for _ in range(BATCH)]
    return {"target": (np.stack(rows) + 0.02 * RNG.standard_normal((BATCH, SAMPLES))).astype(np.float32)}


def spectral_l1(wav, target, window):
    """mean | |STFT(wav)| - |STFT(target)| |: the spectral loss a vocoder trains on."""
    return paddle.mean(paddle.abs(paddle.abs(stft(wav, window)) - paddle.abs(stft(target, window))))


def vocoder(out: Path) -> dict:
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 18
    with paddle.static.program_guard(main, startup):
        target = paddle.static.data("target", [-1, SAMPLES], "float32")
        window = constant("hann_window", hann())
        log_mag = paddle.log(paddle.abs(stft(target, window)) + 1e-3)               # [B, bins, T]
        hidden = F.silu(nn.Conv1D(N_FFT // 2 + 1, 24, 3, padding=1)(log_mag))
        hidden = F.silu(nn.Conv1D(24, 24, 3, padding=1)(hidden))
        magnitude = paddle.exp(nn.Conv1D(24, N_FFT // 2 + 1, 1)(hidden))
        phase = nn.Conv1D(24, N_FFT // 2 + 1, 1)(hidden)
        wav = istft_head(paddle.transpose(magnitude, [0, 2, 1]), paddle.transpose(phase, [0, 2, 1]), window)
        loss = spectral_l1(wav, target, window)
    (out / "vocoder.pb").write_bytes(without_callstacks(main))
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.Adam(learning_rate=0.003).minimize(loss)
    (out / "vocoder_startup.pb").write_bytes(without_callstacks(startup))
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    batches = [vocoder_batch() for _ in range(STEPS)]
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss])[0]) for feed in batches]
    np.savez_compressed(out / "vocoder_data.npz", target=np.concatenate([feed["target"] for feed in batches]))
    return {"vocoder_loss": loss.name, "vocoder_wav": wav.name, "vocoder_losses": losses}


def spectral64(out: Path) -> dict:
    """The spectral loss in float64 of a waveform against a target, and Paddle's gradient of it for the waveform."""
    program = paddle.static.Program()
    with paddle.static.program_guard(program, paddle.static.Program()):
        wav = paddle.static.data("wav", [2, SAMPLES], "float64")
        wav.stop_gradient = False
        target = paddle.static.data("target", [2, SAMPLES], "float64")
        loss = spectral_l1(wav, target, constant("hann_window", hann().astype(np.float64)))
        (grad,) = paddle.static.gradients([loss], [wav])
    feed = {"wav": RNG.standard_normal((2, SAMPLES)), "target": RNG.standard_normal((2, SAMPLES))}
    value, wav_grad = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=feed, fetch_list=[loss, grad])
    (out / "spectral64.pb").write_bytes(without_callstacks(program))
    np.savez_compressed(out / "spectral64.npz", **feed, loss=value, wav_grad=wav_grad)
    return {"spectral64_loss": loss.name, "spectral64_grad": grad.name}


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    paddle_legacy_shim.install()
    paddle.enable_static()
    meta = {**kws(out), **kws_random(out), **vocoder(out), **spectral64(out)}
    pir = subprocess.run([sys.executable, str(Path(__file__).with_name("paddle_user_week18_pir.py")), str(out)],
                         env={**os.environ, "FLAGS_enable_pir_api": "1"}, capture_output=True, text=True, check=True)
    meta.update(json.loads(pir.stdout.splitlines()[-1]))
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    for program in [*out.glob("*.pb"), *(path for path in out.glob("*.json") if path.name != "meta.json")]:
        gzip_file(program)   # the programs gzipped: 47 KB of attributes become 6 KB


if __name__ == "__main__":
    main(Path(sys.argv[1]))

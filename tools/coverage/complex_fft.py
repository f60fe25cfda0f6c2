"""Rows: paddle.fft, paddle.signal.stft/istft, paddle.audio's feature layers and complex tensor functions.

Paddle 3.3.1's paddle.fft fails in legacy static mode (UnboundLocalError 'ret'): there the rows append the fft op
the API writes in PIR mode, with its attributes (legacy_shim.append); in PIR mode they call the API itself. Each row
ends in real values (as_real, abs, real, angle) so that its loss weighs every part of a complex result."""

import paddle

from .legacy_shim import append
from .spec import const, f, table, weights

COMPLEX = {paddle.float32: paddle.complex64, paddle.float64: paddle.complex128}
REAL = {complex_: real for real, complex_ in COMPLEX.items()}


def _fft(api, op: str, x, axes, normalization="backward", forward=True, **more):
    """``api()`` (the paddle.fft call) in PIR mode; in legacy mode the op it writes, appended with these attributes."""
    if paddle.framework.in_pir_mode():
        return api()
    dtype = REAL[x.dtype] if op == "fft_c2r" else COMPLEX.get(x.dtype, x.dtype)
    attrs = {"axes": list(axes), "normalization": normalization, "forward": forward, **more}
    return append(op, {"X": x}, attrs, dtype)


def _z(x, y):
    return paddle.complex(x, y)


def _stft_magnitude(x, window, n_fft: int, hop: int):
    """|stft(x)| without centring: paddle.signal.stft in PIR mode; in legacy mode the ops it writes (frame, the
    window's product, fft_r2c over the frame axis), the magnitude taken before the last transpose."""
    if paddle.framework.in_pir_mode():
        return paddle.abs(paddle.signal.stft(x, n_fft, hop, window=window, center=False))
    frames = paddle.transpose(paddle.signal.frame(x, n_fft, hop), [0, 2, 1])
    spectrum = _fft(None, "fft_r2c", paddle.multiply(frames, window), [2], onesided=True)
    return paddle.transpose(paddle.abs(spectrum), [0, 2, 1])


def _audio(layer, x):
    return layer(x)


def _power(x):
    """paddle.audio.features.Spectrogram's value (power 2, centred reflect-padded frames), with the rectangular
    window: Paddle's Spectrogram cannot be built in static mode, nor stft take a window tensor in PIR mode."""
    return paddle.abs(paddle.signal.stft(x, 16, 4)) ** 2


def _log_mel(x, fbank):
    """MelSpectrogram then LogMelSpectrogram's power_to_db, from a filter bank given as an input."""
    return paddle.audio.functional.power_to_db(paddle.matmul(fbank, _power(x)))


ROWS = table(
    "complex_fft",
    ("complex_real", lambda x, y: paddle.real(_z(x, y)), f(2, 3), f(2, 3)),
    ("complex_imag_broadcast", lambda x, y: paddle.imag(_z(x, y)), f(2, 3), f(3)),
    ("complex_angle", lambda x, y: paddle.angle(_z(x, y)), f(2, 3), f(2, 3)),
    ("complex_abs", lambda x, y: paddle.abs(_z(x, y)), f(3, 4), f(3, 4)),
    ("complex_as_complex", lambda x: paddle.abs(paddle.as_complex(x)), f(2, 3, 2)),
    ("complex_as_real", lambda x, y: paddle.as_real(_z(x, y)), f(2, 3), f(2, 3)),
    ("complex_conj", lambda x, y: paddle.as_real(paddle.conj(_z(x, y))), f(2, 3), f(2, 3)),
    # a quantum circuit's simulation (Paddle Quantum): gates cast to complex, kron'ed, applied by matmul, traced
    ("complex_matmul", lambda x, y, a, b: paddle.as_real(paddle.matmul(_z(x, y), _z(a, b))),
     f(2, 3), f(2, 3), f(3, 2), f(3, 2)),
    ("complex_kron", lambda x, y, a, b: paddle.as_real(paddle.kron(_z(x, y), _z(a, b))), f(2, 2), f(2, 2), f(2, 3),
     f(2, 3)),
    ("complex_cast_gate", lambda x, y: paddle.as_real(paddle.cos(x).cast(COMPLEX[x.dtype]) * _z(x, y)), f(2, 3),
     f(2, 3)),
    ("complex_trace", lambda x, y: paddle.as_real(paddle.trace(_z(x, y)).reshape([1])), f(3, 3), f(3, 3)),
    ("fft_rfft", lambda x: paddle.as_real(_fft(lambda: paddle.fft.rfft(x), "fft_r2c", x, [1], onesided=True)),
     f(2, 8)),
    ("fft_rfft_ortho_odd", lambda x: paddle.as_real(_fft(lambda: paddle.fft.rfft(x, norm="ortho"), "fft_r2c", x, [1],
                                                        "ortho", onesided=True)), f(3, 7)),
    ("fft_rfft_forward_axis0", lambda x: paddle.as_real(_fft(lambda: paddle.fft.rfft(x, axis=0, norm="forward"),
                                                            "fft_r2c", x, [0], "forward", onesided=True)), f(6, 3)),
    ("fft_fft_of_real", lambda x: paddle.as_real(_fft(lambda: paddle.fft.fft(x), "fft_r2c", x, [1], onesided=False)),
     f(2, 5)),
    ("fft_fft", lambda x, y: paddle.as_real(_fft(lambda: paddle.fft.fft(_z(x, y)), "fft_c2c", _z(x, y), [1])),
     f(2, 6), f(2, 6)),
    ("fft_ifft_ortho", lambda x, y: paddle.as_real(_fft(lambda: paddle.fft.ifft(_z(x, y), norm="ortho"), "fft_c2c",
                                                       _z(x, y), [1], "ortho", False)), f(3, 5), f(3, 5)),
    ("fft_fft2", lambda x, y: paddle.as_real(_fft(lambda: paddle.fft.fft2(_z(x, y)), "fft_c2c", _z(x, y), [1, 2])),
     f(2, 3, 4), f(2, 3, 4)),
    ("fft_ifftn_forward", lambda x, y: paddle.as_real(_fft(lambda: paddle.fft.ifftn(_z(x, y), norm="forward"),
                                                          "fft_c2c", _z(x, y), [0, 1], "forward", False)),
     f(3, 4), f(3, 4)),
    ("fft_rfftn", lambda x: paddle.as_real(_fft(lambda: paddle.fft.rfftn(x, axes=(1, 2)), "fft_r2c", x, [1, 2],
                                                onesided=True)), f(2, 3, 6)),
    ("fft_rfft2_ortho", lambda x: paddle.as_real(_fft(lambda: paddle.fft.rfft2(x, norm="ortho"), "fft_r2c", x,
                                                      [0, 1], "ortho", onesided=True)), f(4, 5)),
    ("fft_irfft", lambda x, y: _fft(lambda: paddle.fft.irfft(_z(x, y)), "fft_c2r", _z(x, y), [1], forward=False,
                                    last_dim_size=0), f(2, 5), f(2, 5)),
    ("fft_irfft_n_odd", lambda x, y: _fft(lambda: paddle.fft.irfft(_z(x, y), n=7, norm="ortho"), "fft_c2r",
                                          _z(x, y), [1], "ortho", False, last_dim_size=7), f(2, 4), f(2, 4)),
    ("fft_irfftn", lambda x, y: _fft(lambda: paddle.fft.irfftn(_z(x, y), axes=(0, 1)), "fft_c2r", _z(x, y), [0, 1],
                                     forward=False, last_dim_size=0), f(3, 4), f(3, 4)),
    ("fft_hfft", lambda x, y: _fft(lambda: paddle.fft.hfft(_z(x, y)), "fft_c2r", _z(x, y), [1], forward=True,
                                   last_dim_size=0), f(2, 5), f(2, 5)),
    ("fft_hfft_forward_n", lambda x, y: _fft(lambda: paddle.fft.hfft(_z(x, y), n=5, norm="forward"), "fft_c2r",
                                             _z(x, y), [1], "forward", True, last_dim_size=5), f(2, 3), f(2, 3)),
    ("fft_ihfft", lambda x: paddle.as_real(_fft(lambda: paddle.fft.ihfft(x), "fft_r2c", x, [1], "backward", False,
                                                onesided=True)), f(2, 6)),
    ("stft_magnitude", lambda x, w: _stft_magnitude(x, w, 8, 2), f(2, 20), const(8)),
    ("stft_magnitude_centered", lambda x: paddle.abs(paddle.signal.stft(x, 8, 2)), f(2, 20)),
    ("istft_round_trip", lambda x: paddle.signal.istft(paddle.signal.stft(x, 8, 2), 8, 2, length=20), f(2, 20)),
    ("audio_power_spectrogram", lambda x: _power(x), f(2, 64)),
    ("audio_log_mel", lambda x, fbank: _log_mel(x, fbank), f(2, 64), weights(6, 9)),
    ("audio_mfcc_functional", lambda x, fbank, dct: paddle.matmul(_log_mel(x, fbank).transpose((0, 2, 1)), dct)
     .transpose((0, 2, 1)), f(2, 64), weights(6, 9), const(6, 4)),
    ("audio_spectrogram", lambda x: _audio(paddle.audio.features.Spectrogram(n_fft=16, hop_length=4), x), f(2, 64)),
    ("audio_mel_spectrogram", lambda x: _audio(paddle.audio.features.MelSpectrogram(
        sr=800, n_fft=16, hop_length=4, n_mels=6, f_min=0.0), x), f(2, 64)),
    ("audio_mfcc", lambda x: _audio(paddle.audio.features.MFCC(
        sr=800, n_mfcc=4, n_fft=16, hop_length=4, n_mels=6, f_min=0.0), x), f(2, 64)),
)

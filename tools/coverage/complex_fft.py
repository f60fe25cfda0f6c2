"""Rows: paddle.fft, paddle.signal.stft/istft, paddle.audio's feature layers and complex tensor functions."""

ROWS = []

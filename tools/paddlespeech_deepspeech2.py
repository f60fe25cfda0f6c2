"""PaddleSpeech's offline DeepSpeech2 as it trains (DeepSpeech2Model.forward: CRNNEncoder and CTCDecoder's loss):
ConvStack (two ConvBn layers, kernels 41x11 and 21x11 over [features, time], batch norm, brelu, the padding frames
zeroed after each), RNNStack of BiGRUWithBN layers (a Linear without bias and a BatchNorm1D on the input projection,
PaddleSpeech's own GRUCell, which takes the projected gates and holds only the hidden weights, run by nn.RNN with the
sequence lengths, the padding zeroed after each layer), and CTCLoss (warpctc, reduction sum, divided by the batch,
its config's ctc_grad_norm_type 'instance': norm_by_times, which divides each sequence's gradient by its length).
Rebuilt with Paddle's layers from PaddleSpeech's paddlespeech/s2t/models/ds2 (conv.py, rnn.py, deepspeech2.py) and
modules (ctc.py, loss.py, activation.py); sizes shrunk (41 features, 8 channels where ConvStack has 32, GRU width 16,
two stacks). As in its source, both directions of a BiGRUWithBN run its forward cell
(`nn.RNN(self.fw_cell, is_reverse=True)`), so the backward cell's parameters get no gradient. For
tools/zoo_train_static.py."""

from __future__ import annotations

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn

FEATS, FRAMES, CHANNELS, HIDDEN, STACKS, VOCAB = 41, 30, 8, 16, 2, 10


def brelu(x, t_min: float = 0.0, t_max: float = 24.0):
    return x.maximum(paddle.full([1], t_min, x.dtype)).minimum(paddle.full([1], t_max, x.dtype))


def non_pad_mask(lengths, frames: int):
    return paddle.arange(frames, dtype="int64").unsqueeze(0) < lengths.unsqueeze(-1)


class ConvBn(nn.Layer):
    def __init__(self, channels_in: int, kernel: tuple, stride: tuple, padding: tuple):
        super().__init__()
        self.kernel, self.stride, self.padding = kernel, stride, padding
        self.conv = nn.Conv2D(channels_in, CHANNELS, kernel, stride, padding, bias_attr=False)
        self.bn = nn.BatchNorm2D(CHANNELS)

    def forward(self, x, lengths):
        x = brelu(self.bn(self.conv(x)))
        lengths = (lengths - self.kernel[1] + 2 * self.padding[1]) // self.stride[1] + 1
        mask = non_pad_mask(lengths, x.shape[3]).unsqueeze(1).unsqueeze(1).astype(x.dtype)
        return x.multiply(mask), lengths


class GRUCell(nn.RNNCellBase):
    def __init__(self):
        super().__init__()
        bound = 1.0 / np.sqrt(HIDDEN)
        uniform = nn.initializer.Uniform(-bound, bound)
        self.weight_hh = self.create_parameter((3 * HIDDEN, HIDDEN), default_initializer=uniform)
        self.bias_hh = self.create_parameter((3 * HIDDEN,), is_bias=True, default_initializer=uniform)

    def forward(self, inputs, states=None):
        if states is None:
            states = self.get_initial_states(inputs, self.state_shape)
        h_gates = paddle.matmul(states, self.weight_hh, transpose_y=True) + self.bias_hh
        x_r, x_z, x_c = paddle.split(inputs, 3, axis=1)
        h_r, h_z, h_c = paddle.split(h_gates, 3, axis=1)
        r, z = F.sigmoid(x_r + h_r), F.sigmoid(x_z + h_z)
        c = paddle.tanh(x_c + r * h_c)
        h = (states - c) * z + c
        return h, h

    @property
    def state_shape(self):
        return (HIDDEN,)


class BiGRUWithBN(nn.Layer):
    def __init__(self, i_size: int):
        super().__init__()
        self.fw_fc = nn.Linear(i_size, 3 * HIDDEN, bias_attr=False)
        self.fw_bn = nn.BatchNorm1D(3 * HIDDEN, data_format="NLC")
        self.bw_fc = nn.Linear(i_size, 3 * HIDDEN, bias_attr=False)
        self.bw_bn = nn.BatchNorm1D(3 * HIDDEN, data_format="NLC")
        self.fw_cell, self.bw_cell = GRUCell(), GRUCell()
        self.fw_rnn = nn.RNN(self.fw_cell, is_reverse=False, time_major=False)
        self.bw_rnn = nn.RNN(self.fw_cell, is_reverse=True, time_major=False)   # the source's fw_cell, both ways

    def forward(self, x, lengths):
        fw_x, _ = self.fw_rnn(self.fw_bn(self.fw_fc(x)), sequence_length=lengths)
        bw_x, _ = self.bw_rnn(self.bw_bn(self.bw_fc(x)), sequence_length=lengths)
        return paddle.concat([fw_x, bw_x], axis=-1)


class DeepSpeech2(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv_in = ConvBn(1, (41, 11), (2, 3), (20, 5))
        self.conv_stack = nn.LayerList([ConvBn(CHANNELS, (21, 11), (2, 1), (10, 5))])
        height = ((FEATS - 1) // 2 + 1 - 1) // 2 + 1
        self.rnn_stacks = nn.LayerList([BiGRUWithBN(CHANNELS * height if i == 0 else 2 * HIDDEN)
                                        for i in range(STACKS)])
        self.ctc_lo = nn.Linear(2 * HIDDEN, VOCAB)

    def forward(self, audio, audio_len, text, text_len):
        x, lengths = self.conv_in(audio.transpose([0, 2, 1]).unsqueeze(1), audio_len)
        for conv in self.conv_stack:
            x, lengths = conv(x, lengths)
        x = x.transpose([0, 3, 1, 2]).reshape([0, 0, -1])   # [B, T, C * D]
        for rnn in self.rnn_stacks:
            x = rnn(x, lengths)
            # the static RNN's output has no known length: the conv's, as the source's make_non_pad_mask takes it
            x = x.multiply(non_pad_mask(lengths, (FRAMES - 1) // 3 + 1).unsqueeze(-1).astype(x.dtype))
        logits = self.ctc_lo(x).transpose([1, 0, 2])
        loss = nn.CTCLoss(blank=0, reduction="sum")(logits, text.astype("int32"), lengths, text_len,
                                                      norm_by_times=True)
        return loss / audio.shape[0]


def feed(rng, batch: int = 2) -> dict:
    """Spectrogram-like features, the second utterance 21 of 30 frames (10 and 7 after the stride-3 conv), labels of
    4 and 3 ids (0 is blank)."""
    text = rng.integers(1, VOCAB, (batch, 4)).astype("int64")
    text[1, 3] = 0
    return {"audio": rng.standard_normal((batch, FRAMES, FEATS)).astype("float32"),
            "audio_len": np.array([FRAMES, 21][:batch], "int64"), "text": text,
            "text_len": np.array([4, 3][:batch], "int64")}


def build(values: dict):
    data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in values.items()}
    return DeepSpeech2()(**data)

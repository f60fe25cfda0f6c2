"""Rows: attention and transformer layers at tiny sizes, and one small row per recurrent layer
(RNNs are covered in depth elsewhere)."""

from paddle import nn

from .spec import f, table

D, HEADS, FF = 8, 2, 16   # model width, attention heads, feed-forward width


def causal_mask(length: int):
    return nn.Transformer.generate_square_subsequent_mask(None, length)


def encoder_layer(**options):
    return nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, **options)


def decoder_layer(**options):
    return nn.TransformerDecoderLayer(D, HEADS, FF, dropout=0.0, **options)


TRANSFORMER = table(
    "transformer",
    ("multi_head_attention_self", lambda x: nn.MultiHeadAttention(D, HEADS)(x), f(2, 3, D)),
    ("multi_head_attention_kv_dims", lambda q, k, v: nn.MultiHeadAttention(D, HEADS, kdim=4, vdim=6)(q, k, v),
     f(2, 3, D), f(2, 4, 4), f(2, 4, 6)),
    ("multi_head_attention_weights_mask",
     lambda x: nn.MultiHeadAttention(D, HEADS, need_weights=True)(x, attn_mask=causal_mask(3)), f(2, 3, D)),
    ("transformer_encoder_layer", lambda x: encoder_layer()(x), f(2, 3, D)),
    ("transformer_encoder_layer_pre_norm_gelu",
     lambda x: encoder_layer(normalize_before=True, activation="gelu")(x), f(2, 3, D)),
    ("transformer_encoder_layer_dropout_eval", lambda x: nn.TransformerEncoderLayer(D, HEADS, FF).eval()(x),
     f(2, 3, D)),
    ("transformer_encoder", lambda x: nn.TransformerEncoder(encoder_layer(), 2, norm=nn.LayerNorm(D))(x),
     f(2, 3, D)),
    ("transformer_decoder_layer", lambda tgt, memory: decoder_layer()(tgt, memory, tgt_mask=causal_mask(3)),
     f(2, 3, D), f(2, 4, D)),
    ("transformer_decoder_layer_pre_norm",
     lambda tgt, memory: decoder_layer(normalize_before=True)(tgt, memory), f(2, 3, D), f(2, 4, D)),
    ("transformer_decoder", lambda tgt, memory: nn.TransformerDecoder(decoder_layer(), 2)(tgt, memory),
     f(2, 3, D), f(2, 4, D)),
    ("transformer", lambda src, tgt: nn.Transformer(D, HEADS, 1, 1, FF, dropout=0.0)(src, tgt, tgt_mask=causal_mask(3)),
     f(2, 4, D), f(2, 3, D)),
)

RNN = table(
    "rnn",
    ("lstm", lambda x: nn.LSTM(4, 5)(x), f(2, 3, 4)),
    ("gru_bidirect", lambda x: nn.GRU(4, 5, direction="bidirect")(x), f(2, 3, 4)),
    ("simple_rnn_2layers", lambda x: nn.SimpleRNN(4, 5, num_layers=2)(x), f(2, 3, 4)),
    ("rnn_lstm_cell", lambda x: nn.RNN(nn.LSTMCell(4, 5))(x), f(2, 3, 4)),
    ("birnn_gru_cells", lambda x: nn.BiRNN(nn.GRUCell(4, 5), nn.GRUCell(4, 5))(x), f(2, 3, 4)),
    ("simple_rnn_cell", lambda x, h: nn.SimpleRNNCell(4, 5)(x, h), f(2, 4), f(2, 5)),
    ("lstm_cell", lambda x, h, c: nn.LSTMCell(4, 5)(x, (h, c)), f(2, 4), f(2, 5), f(2, 5)),
    ("gru_cell", lambda x, h: nn.GRUCell(4, 5)(x, h), f(2, 4), f(2, 5)),
)

ROWS = TRANSFORMER + RNN

"""Rows: the layers of paddle.static.nn that paddle.nn also has, called as legacy programs call them (the embedding
sparse or with a padding index, fc over several inputs, batch norm in test mode or on global statistics, NHWC layouts,
norms without their affine parameters, 3-D convolutions). Paddle 3.3.1 builds most of them in legacy mode only."""

from paddle.static import nn as snn

from .spec import f, ints, seq, table

ROWS = table(
    "static_layers",
    ("snn_embedding", lambda ids: snn.embedding(ids, (10, 4)), ints(10, 3, 1)),
    ("snn_embedding_sparse", lambda ids: snn.embedding(ids, (10, 4), is_sparse=True), ints(10, 3, 1)),
    ("snn_embedding_padding", lambda ids: snn.embedding(ids, (10, 4), padding_idx=2), ints(4, 5, 1)),
    ("snn_fc_two_inputs", lambda x, y: snn.fc([x, y], 3, activation="tanh"), f(2, 4), f(2, 5)),
    ("snn_fc_num_flatten_dims", lambda x: snn.fc(x, 3, num_flatten_dims=2), f(2, 3, 4)),
    ("snn_batch_norm", lambda x: snn.batch_norm(x, act="relu"), f(4, 3, 2, 2)),
    ("snn_batch_norm_nhwc", lambda x: snn.batch_norm(x, data_layout="NHWC"), f(4, 2, 2, 3)),
    ("snn_batch_norm_global_stats", lambda x: snn.batch_norm(x, use_global_stats=True), f(4, 3, 2, 2)),
    ("snn_batch_norm_is_test", lambda x: snn.batch_norm(x, is_test=True), f(4, 3, 2, 2)),
    ("snn_conv2d", lambda x: snn.conv2d(x, 4, 3, padding=1, groups=2, act="relu"), f(2, 2, 5, 5)),
    ("snn_conv2d_nhwc", lambda x: snn.conv2d(x, 3, 2, stride=2, data_format="NHWC"), f(2, 5, 5, 2)),
    ("snn_conv2d_transpose", lambda x: snn.conv2d_transpose(x, 3, output_size=7, stride=2), f(2, 2, 3, 3)),
    ("snn_conv3d", lambda x: snn.conv3d(x, 3, 2, padding=1), f(2, 2, 3, 3, 3)),
    ("snn_conv3d_transpose", lambda x: snn.conv3d_transpose(x, 2, filter_size=2, stride=2), f(1, 2, 2, 2, 2)),
    ("snn_group_norm", lambda x: snn.group_norm(x, 2, act="sigmoid"), f(2, 4, 3, 3)),
    ("snn_group_norm_nhwc", lambda x: snn.group_norm(x, 3, data_layout="NHWC"), f(2, 3, 3, 6)),
    ("snn_instance_norm", lambda x: snn.instance_norm(x), f(2, 3, 4, 4)),
    ("snn_layer_norm", lambda x: snn.layer_norm(x, begin_norm_axis=2), f(2, 3, 4)),
    ("snn_layer_norm_no_affine", lambda x: snn.layer_norm(x, scale=False, shift=False), f(2, 3, 4)),
    ("snn_bilinear_tensor_product", lambda x, y: snn.bilinear_tensor_product(x, y, 3, act="tanh"), f(2, 4), f(2, 5)),
    ("snn_prelu_element", lambda x: snn.prelu(x, "element"), f(2, 3, 4)),
    ("snn_spectral_norm", lambda w: snn.spectral_norm(w, dim=1, power_iters=3), f(3, 4, 2)),
    ("snn_deform_conv2d", lambda x, off: snn.deform_conv2d(x, off, None, 2, 2), f(1, 2, 4, 4),
     f(1, 8, 3, 3)),
    ("snn_sequence_conv", lambda x: snn.sequence_conv(x, 3, 3), seq(4)),
)

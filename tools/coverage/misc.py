"""Rows: linear maps, embeddings, dropout variants and distances."""

from paddle import nn

from .spec import evaluated, f, ints, table

LINEAR = table(
    "linear",
    ("linear", lambda x: nn.Linear(4, 3)(x), f(2, 4)),
    ("linear_3d_input_no_bias", lambda x: nn.Linear(4, 3, bias_attr=False)(x), f(2, 3, 4)),
    ("bilinear", lambda x1, x2: nn.Bilinear(3, 4, 2)(x1, x2), f(2, 3), f(2, 4)),
    ("embedding", lambda ids: nn.Embedding(10, 4)(ids), ints(10, 2, 5)),
    ("embedding_padding_idx", lambda ids: nn.Embedding(10, 4, padding_idx=0)(ids), ints(3, 2, 5)),
    ("embedding_sparse", lambda ids: nn.Embedding(10, 4, sparse=True)(ids), ints(10, 2, 5)),
    ("pairwise_distance", lambda x, y: nn.PairwiseDistance()(x, y), f(3, 4), f(3, 4)),
    ("pairwise_distance_p1_keepdim", lambda x, y: nn.PairwiseDistance(p=1.0, keepdim=True)(x, y), f(3, 4), f(3, 4)),
    ("pairwise_distance_inf", lambda x, y: nn.PairwiseDistance(p=float("inf"))(x, y), f(3, 4), f(3, 4)),
    ("cosine_similarity", lambda x1, x2: nn.CosineSimilarity()(x1, x2), f(3, 4), f(3, 4)),
    ("cosine_similarity_axis0", lambda x1, x2: nn.CosineSimilarity(axis=0)(x1, x2), f(3, 4), f(3, 4)),
)

DROPOUT = table(
    "dropout",
    ("dropout_eval", lambda x: evaluated(nn.Dropout(0.5))(x), f(2, 5)),
    ("dropout_p0", lambda x: nn.Dropout(0.0)(x), f(2, 5)),
    ("dropout_train", lambda x: nn.Dropout(0.5)(x), f(4, 5)),
    ("dropout_downscale_eval", lambda x: evaluated(nn.Dropout(0.3, mode="downscale_in_infer"))(x), f(2, 5)),
    ("dropout_downscale_train", lambda x: nn.Dropout(0.3, mode="downscale_in_infer")(x), f(4, 5)),
    ("dropout_axis_train", lambda x: nn.Dropout(0.5, axis=1)(x), f(3, 4, 2)),
    ("dropout2d_eval", lambda x: evaluated(nn.Dropout2D(0.5))(x), f(2, 3, 2, 2)),
    ("dropout2d_train", lambda x: nn.Dropout2D(0.5)(x), f(2, 3, 2, 2)),
    ("dropout3d_eval", lambda x: evaluated(nn.Dropout3D(0.5))(x), f(1, 2, 2, 2, 2)),
    ("dropout3d_train", lambda x: nn.Dropout3D(0.5)(x), f(1, 3, 2, 2, 2)),
    ("alpha_dropout_eval", lambda x: evaluated(nn.AlphaDropout(0.5))(x), f(2, 5)),
    ("alpha_dropout_train", lambda x: nn.AlphaDropout(0.5)(x), f(4, 5)),
    ("feature_alpha_dropout_eval", lambda x: evaluated(nn.FeatureAlphaDropout(0.5))(x), f(2, 3, 2)),
    ("feature_alpha_dropout_train", lambda x: nn.FeatureAlphaDropout(0.5)(x), f(2, 3, 2)),
)

ROWS = LINEAR + DROPOUT

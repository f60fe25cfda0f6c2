"""Bad input for the ops the family tests leave without a case (tests/test_bad_input_audit.py runs them and
checks that every forward op of the registry has a case somewhere, or a reason in EXEMPT).

COMPILE_TIME: what the declared shapes and attributes already show; RUN_TIME: what only the values show.
Each case is (op type, {slot: array or [arrays]}, attributes, a phrase of the message)."""

import numpy as np

f32 = np.float32


def zeros(*shape, dtype=f32):
    return np.zeros(shape, dtype)


def i64(*values):
    return np.array(values, np.int64)


X23, X4 = zeros(2, 3), zeros(2, 4, 3, 3)
ONE = zeros(1)
ADAM_STATE = {"Param": X23, "Grad": X23, "LearningRate": ONE, "Moment1": X23, "Moment2": X23, "Beta1Pow": ONE,
              "Beta2Pow": ONE}
MISMATCHED = {"X": X23, "Y": zeros(2, 4)}
YOLO = {"anchors": [10, 13, 16, 30], "anchor_mask": [0, 1], "class_num": 2, "downsample_ratio": 8}
YOLO_GT = {"GTBox": np.full((1, 3, 4), 0.3, f32), "GTLabel": zeros(1, 3, dtype=np.int32)}

COMPILE_TIME = {
    # activations and elementwise ops
    "brelu range": ("brelu", {"X": X23}, {"t_min": 2.0, "t_max": 1.0}, "t_min=2.0, t_max=1.0 are out of range"),
    "hard_shrink threshold": ("hard_shrink", {"X": X23}, {"threshold": -1.0}, "threshold=-1.0 is out of range"),
    "softplus beta": ("softplus", {"X": X23}, {"beta": 0.0}, "beta=0.0 is out of range: it must be nonzero"),
    "clip bounds": ("clip", {"X": X23}, {"min": 2.0, "max": 1.0}, "min 2.0 is above max 1.0"),
    "lookup_table ids": ("lookup_table", {"W": zeros(4, 3), "Ids": i64([1, 2])}, {}, "the last dim of Ids must be 1"),
    **{f"{op} shapes": (op, MISMATCHED, {}, "cannot broadcast shapes [2, 3] and [2, 4]")
       for op in ("elementwise_sub", "elementwise_mul", "elementwise_div", "elementwise_floordiv", "elementwise_max",
                  "elementwise_min", "elementwise_mod", "elementwise_pow", "equal", "not_equal", "less_than",
                  "less_equal", "greater_than", "greater_equal")},
    **{f"{op} shapes": (op, {"X": zeros(2, 3, dtype=bool), "Y": zeros(2, 4, dtype=bool)}, {},
                        "cannot broadcast shapes [2, 3] and [2, 4]") for op in ("logical_and", "logical_or",
                                                                                 "logical_xor")},
    "where shapes": ("where", {"Condition": zeros(2, 3, dtype=bool), **MISMATCHED}, {}, "cannot broadcast"),
    "sum shapes": ("sum", {"X": [X23, zeros(3, 2)]}, {}, "the addends must have one shape"),
    "accuracy rows": ("accuracy", {"Out": X23, "Indices": zeros(2, 3, dtype=np.int64),
                                   "Label": zeros(3, 1, dtype=np.int64)},
                      {}, "one Label per row of Indices"),
    # products, reductions, shapes and indices
    "matmul contraction": ("matmul", {"X": X23, "Y": zeros(4, 5)}, {}, "contraction dims differ: 3 vs 4"),
    "matmul_v2 contraction": ("matmul_v2", {"X": X23, "Y": zeros(4, 5)}, {}, "contraction dims differ: 3 vs 4"),
    "mul flattening": ("mul", {"X": X23, "Y": zeros(4, 5)}, {}, "X flattens to [*, 3] but Y to [4, *]"),
    "bmm batch": ("bmm", {"X": zeros(2, 3, 4), "Y": zeros(3, 4, 5)}, {}, "bmm needs X [B, M, K] and Y [B, K, N]"),
    **{f"{op} axis": (op, {"X": X23}, {"dim": [5]}, "axis 5 is out of range for rank 2")
       for op in ("reduce_mean", "reduce_min", "reduce_prod", "reduce_amax", "reduce_amin")},
    "reduce_any axis": ("reduce_any", {"X": zeros(2, 3, dtype=bool)}, {"dim": [2]}, "axis 2 is out of range"),
    "logsumexp axis": ("logsumexp", {"X": X23}, {"axis": [-3]}, "axis -3 is out of range for rank 2"),
    "arg_max axis": ("arg_max", {"X": X23}, {"axis": 3}, "axis 3 is out of range for rank 2"),
    "arg_min axis": ("arg_min", {"X": X23}, {"axis": -3}, "axis -3 is out of range for rank 2"),
    "unstack axis": ("unstack", {"X": X23}, {"axis": 3, "num": 2}, "axis 3 is out of range for rank 2"),
    "strided_slice stride": ("strided_slice", {"Input": X23},
                             {"axes": [1], "starts": [0], "ends": [1], "strides": [0]}, "the stride along axis 1 is 0"),
    "tile repeats": ("tile", {"X": X23}, {"repeat_times": [-1, 2]}, "repeat_times [-1, 2] must not be negative"),
    "expand_as_v2 target": ("expand_as_v2", {"X": X23, "Y": zeros(4, 5)}, {"target_shape": [4, 5]},
                            "cannot expand dim 2 of [2, 3] to 4"),
    "gather_nd depth": ("gather_nd", {"X": X23, "Index": i64([[0, 1, 2]])}, {}, "addresses 3 dims of the rank 2 X"),
    "scatter updates": ("scatter", {"X": zeros(4, 3), "Ids": i64(1, 2), "Updates": zeros(2, 4)}, {},
                        "scatter needs Updates shaped [len(Ids)] + X.shape[1:]"),
    "cast dtype": ("cast", {"X": X23}, {"in_dtype": 5, "out_dtype": 99}, "out_dtype 99 is not a tensor data type"),
    "fill_any_like dtype": ("fill_any_like", {"X": X23}, {"dtype": 99, "value": 1.0},
                            "dtype 99 is neither -1 (X's) nor a tensor data type"),
    "empty shape": ("empty", {}, {"shape": [2, -3], "dtype": 5}, "empty shape [2, -3] has a negative dim"),
    # nn layers
    "conv3d channels": ("conv3d", {"Input": zeros(1, 2, 3, 3, 3), "Filter": zeros(2, 3, 1, 1, 1)}, {},
                        "Input has 2 channels but Filter expects 3 per group x 1 groups"),
    "conv3d_transpose channels": ("conv3d_transpose", {"Input": zeros(1, 2, 3, 3, 3), "Filter": zeros(3, 2, 1, 1, 1)},
                                  {}, "Input has 2 channels but Filter [C_in, C_out/groups, *kernel] has C_in 3"),
    "depthwise_conv2d zero groups": ("depthwise_conv2d", {"Input": zeros(1, 4, 3, 3), "Filter": zeros(4, 1, 3, 3)},
                                     {"groups": 0}, "groups must be >= 1, got 0"),
    "depthwise_conv2d_transpose channels": ("depthwise_conv2d_transpose", {"Input": zeros(1, 4, 3, 3),
                                                                           "Filter": zeros(3, 1, 3, 3)},
                                            {"groups": 4}, "Input has 4 channels but Filter"),
    "pool3d type": ("pool3d", {"X": zeros(1, 1, 2, 2, 2)}, {"pooling_type": "min"}, "pooling_type 'min' is not"),
    "max_pool3d_with_index window": ("max_pool3d_with_index", {"X": zeros(1, 1, 2, 2, 2)}, {"ksize": [3, 3, 3]},
                                     "a [3, 3, 3] window does not fit the padded input [2, 2, 2]"),
    "fractional_max_pool3d size": ("fractional_max_pool3d", {"x": zeros(1, 1, 4, 4, 4)},
                                   {"output_size": [6, 2, 2], "random_u": 0.5}, "cannot give output_size [6, 2, 2]"),
    "unpool3d output size": ("unpool3d", {"X": zeros(1, 1, 2, 2, 2), "Indices": zeros(1, 1, 2, 2, 2, dtype=np.int32)},
                             {"output_size": [4, 0, 4]}, "output_size must be 3 sizes >= 1, got [4, 0, 4]"),
    "bicubic_interp_v2 size": ("bicubic_interp_v2", {"X": X4}, {"interp_method": "bicubic", "out_h": -2, "out_w": 3},
                               "the output size [-2, 3] must be > 0"),
    "linear_interp_v2 scale": ("linear_interp_v2", {"X": zeros(1, 2, 3)}, {"interp_method": "linear", "scale": [-1.0]},
                               "attribute scale [-1.0] must be > 0"),
    "group_norm zero groups": ("group_norm", {"X": X4}, {"groups": 0}, "groups=0 must be >= 1 and divide the 4"),
    "layer_norm axis": ("layer_norm", {"X": X23}, {"begin_norm_axis": 2}, "begin_norm_axis 2 is out of range"),
    "dropout rate": ("dropout", {"X": X23}, {"dropout_prob": 1.5}, "dropout_prob 1.5 is not in [0, 1]"),
    "dropout mode": ("dropout", {"X": X23}, {"dropout_implementation": "upscale"}, "dropout_implementation 'upscale'"),
    # losses
    "huber_loss shapes": ("huber_loss", {"X": zeros(2, 1), "Y": zeros(3, 1)}, {"delta": 1.0},
                          "Y [3, 1] must have the shape of X [2, 1]"),
    "bce_loss shapes": ("bce_loss", {"X": X23, "Label": zeros(2, 4)}, {}, "Label [2, 4] must have the shape of X"),
    "sigmoid_cross_entropy_with_logits shapes": ("sigmoid_cross_entropy_with_logits", {"X": X23, "Label": zeros(2, 4)},
                                                 {}, "Label [2, 4] must have the shape of X [2, 3]"),
    # optimizers
    "clip_by_norm max_norm": ("clip_by_norm", {"X": X23}, {"max_norm": -1.0}, "attribute max_norm is -1.0"),
    "adamw beta1": ("adamw", ADAM_STATE, {"beta1": 1.0}, "attribute beta1 is 1, but it must be in [0, 1)"),
    "adamax beta2": ("adamax", {"Param": X23, "Grad": X23, "LearningRate": ONE, "Moment": X23, "InfNorm": X23,
                                "Beta1Pow": ONE}, {"beta2": -0.5}, "attribute beta2 is -0.5"),
    "adadelta accumulator": ("adadelta", {"Param": X23, "Grad": X23, "AvgSquaredGrad": zeros(3, 2),
                                          "AvgSquaredUpdate": X23, "LearningRate": ONE}, {},
                             "AvgSquaredGrad 'avgsquaredgrad0' has shape [3, 2], but parameter 'param0'"),
    "rmsprop centered": ("rmsprop", {"Param": X23, "MeanSquare": X23, "Grad": X23, "Moment": X23, "LearningRate": ONE},
                         {"centered": True}, "attribute centered is set, but input MeanGrad is empty"),
    "rprop accumulator": ("rprop", {"param": X23, "grad": X23, "prev": zeros(2, 2), "learning_rate": X23,
                                    "learning_rate_range": zeros(2), "etas": zeros(2)}, {},
                          "prev 'prev0' has shape [2, 2], but parameter 'param0' has shape [2, 3]"),
    "nadam decay": ("nadam", {"param": X23, "grad": X23, "learning_rate": ONE, "momentum_decay_pow": X23,
                              "beta2_pow": X23, "mu_product": X23, "moment1": X23, "moment2": X23},
                    {"momentum_decay": -0.1}, "attribute momentum_decay is -0.1, but it must be >= 0"),
    "radam beta2": ("radam", {"param": X23, "grad": X23, "learning_rate": ONE, "beta1_pow": X23, "beta2_pow": X23,
                              "rho": X23, "moment1": X23, "moment2": X23}, {"beta2": 1.5}, "attribute beta2 is 1.5"),
    "merged_adam moment": ("merged_adam", {**{k: [v, v] for k, v in ADAM_STATE.items()}, "Moment1": [X23, ONE]}, {},
                           "Moment1 'moment11' has shape [1], but parameter 'param1' has shape [2, 3]"),
    "merged_momentum velocity": ("merged_momentum", {"Param": [X23], "Grad": [X23], "Velocity": [zeros(3)],
                                                     "LearningRate": [ONE]}, {},
                                 "Velocity 'velocity0' has shape [3], but parameter 'param0' has shape [2, 3]"),
    "cumprod dim": ("cumprod", {"X": X23}, {"dim": 2}, "axis 2 is out of range"),
    "broadcast_tensors shapes": ("broadcast_tensors", {"X": [X23, zeros(4)]}, {}, "cannot broadcast shapes"),
    "index_put count": ("index_put", {"x": X23, "indices": [i64(0)] * 3, "value": ONE}, {},
                        "needs 1 to 2 index tensors for x of rank 2, got 3"),
    "index_put index dtype": ("index_put", {"x": X23, "indices": [zeros(2)], "value": ONE}, {},
                              "indices must be int32/int64 tensors, or one bool mask"),
    "index_put mask": ("index_put", {"x": X23, "indices": [zeros(3, dtype=bool)], "value": ONE}, {},
                       "bool mask [3] must match the leading dims of x [2, 3]"),
    "index_put value": ("index_put", {"x": X23, "indices": [i64(0, 1)], "value": zeros(2, 2, 3)}, {},
                        "value [2, 2, 3] does not broadcast to the picked entries [2, 3]"),
    # unary_math: Paddle registers float kernels only, except for the rounding ops
    **{f"{op} ints": (op, {"X": zeros(2, 3, dtype=np.int64)}, {}, f"{op} needs a float X, got int64")
       for op in ("reciprocal", "expm1", "log2", "log10", "log1p", "tan", "asin", "acos", "atan", "sinh", "cosh",
                  "asinh", "acosh", "atanh", "erf", "logit", "stanh")},
    # special_math
    **{f"{op} ints": (op, {"X": zeros(2, 3, dtype=np.int32)}, {}, f"{op} needs a float X, got int32")
       for op in ("erfinv", "lgamma", "digamma")},
    **{f"{op} ints": (op, {"x": zeros(2, 3, dtype=np.int64)}, {}, f"{op} needs a float x, got int64")
       for op in ("polygamma", "i0", "i0e", "i1", "i1e")},
    "polygamma order": ("polygamma", {"x": X23}, {"n": -1}, "attribute n=-1 is out of range"),
    # binary_math
    **{f"{op} shapes": (op, slots, {}, "cannot broadcast shapes [2, 3] and [2, 4]")
       for op, slots in (("atan2", {"X1": X23, "X2": zeros(2, 4)}), ("elementwise_fmax", MISMATCHED),
                         ("elementwise_fmin", MISMATCHED), ("elementwise_heaviside", MISMATCHED),
                         ("copysign", {"x": X23, "y": zeros(2, 4)}),
                         ("lerp", {"X": X23, "Y": X23, "Weight": zeros(2, 4)}))},
    **{f"{op} dtypes": (op, slots, {}, f"{op} needs {names} of one dtype, got float32 and float64")
       for op, slots, names in (("atan2", {"X1": X23, "X2": zeros(2, 3, dtype=np.float64)}, "X1 and X2"),
                                *((op, {"X": X23, "Y": zeros(2, 3, dtype=np.float64)}, "X and Y")
                                  for op in ("elementwise_fmax", "elementwise_fmin", "elementwise_heaviside")),
                                ("copysign", {"x": X23, "y": zeros(2, 3, dtype=np.float64)}, "x and y"))},
    "lerp dtypes": ("lerp", {"X": X23, "Y": X23, "Weight": zeros(1, dtype=np.float64)}, {},
                    "lerp needs X, Y and Weight of one dtype, got float32, float32 and float64"),
    "masked_fill mask": ("masked_fill", {"x": X23, "mask": X23, "value": zeros()}, {},
                         "mask must be a bool tensor, got float32"),
    "masked_fill value": ("masked_fill", {"x": X23, "mask": zeros(3, dtype=bool), "value": zeros(3, 2, 3)}, {},
                          "value [3, 2, 3] does not broadcast to the output [2, 3]"),
    "isclose shapes": ("isclose", {"Input": X23, "Other": zeros(1, 3)}, {}, "Input [2, 3] and Other [1, 3] must have "
                                                                             "one shape"),
    "allclose rtol": ("allclose", {"Input": X23, "Other": X23}, {"rtol": "tight"}, "attribute rtol='tight' is not a "
                                                                                  "number"),
    "fill_diagonal_tensor dims": ("fill_diagonal_tensor", {"X": X23, "Y": zeros(2)}, {"dim1": 1, "dim2": -1},
                                  "dim1 1 and dim2 -1 are one dim of X [2, 3]"),
    "fill_diagonal_tensor y": ("fill_diagonal_tensor", {"X": X23, "Y": zeros(3)}, {"offset": 1},
                               "Y must be shaped like the diagonal it replaces, [2], got [3]"),
    # products
    "dot shapes": ("dot", MISMATCHED, {}, "dot takes X and Y of one shape"),
    "cross size 3": ("cross", {"X": zeros(2, 4), "Y": zeros(2, 4)}, {}, "no dim of [2, 4] has size 3"),
    "cross dim": ("cross", {"X": X23, "Y": X23}, {"dim": 0}, "dim 0 has size 2, not 3"),
    "mv vector": ("mv", {"X": X23, "Vec": zeros(4)}, {}, "mv takes a matrix X [M, N] and a vector Vec [N]"),
    "addmm contraction": ("addmm", {"Input": X23, "X": zeros(2, 4), "Y": zeros(3, 3)}, {},
                          "addmm needs X [M, K] and Y [K, N], got [2, 4] and [3, 3]"),
    "addmm input": ("addmm", {"Input": zeros(3, 3), "X": zeros(2, 4), "Y": zeros(4, 3)}, {},
                    "Input [3, 3] does not broadcast to the product's shape [2, 3]"),
    "baddbmm batch": ("baddbmm", {"Input": zeros(2, 2, 3), "X": zeros(2, 2, 4), "Y": zeros(3, 4, 3)}, {},
                      "baddbmm needs X [B, M, K] and Y [B, K, N]"),
    "multi_dot chain": ("multi_dot", {"X": [X23, zeros(4, 2)]}, {}, "X[0] [2, 3] and X[1] [4, 2] do not chain"),
    "dist shapes": ("dist", MISMATCHED, {}, "cannot broadcast shapes [2, 3] and [2, 4]"),
    "trace axes": ("trace", {"Input": X23}, {"axis1": 1, "axis2": -1}, "axis1 1 and axis2 -1 are the same axis"),
    "diagonal rank": ("diagonal", {"Input": zeros(3)}, {}, "Input must have rank 2 or more"),
    "diag_embed dims": ("diag_embed", {"Input": X23}, {"dim1": 0, "dim2": -3}, "dim1 0 and dim2 -3 are the same dim"),
    "frobenius_norm axis": ("frobenius_norm", {"X": X23}, {"dim": [5]}, "axis 5 is out of range for rank 2"),
    "einsum label sizes": ("einsum", {"Operands": [X23, zeros(4, 4)]}, {"equation": "ij,jk->ik"},
                           "label 'j' has sizes 3 and 4"),
    "einsum output label": ("einsum", {"Operands": [X23]}, {"equation": "ij->k"},
                            "each output label must be an input label"),
    # scans
    **{f"{op} axis": (op, {"x": X23}, {"axis": 2}, "axis 2 is out of range for rank 2") for op in ("cummax", "cummin")},
    "cummax dtype": ("cummax", {"x": X23}, {"dtype": 5}, "dtype 5 must be int32 (2) or int64 (3)"),
    "logcumsumexp axis": ("logcumsumexp", {"X": X23}, {"axis": -3}, "axis -3 is out of range for rank 2"),
    "logcumsumexp dtype": ("logcumsumexp", {"X": zeros(2, 3, dtype=np.int64)}, {}, "needs a float X, got int64"),
    "mode axis": ("mode", {"X": X23}, {"axis": 2}, "axis 2 is out of range for rank 2"),
    "mode empty axis": ("mode", {"X": zeros(2, 0)}, {"axis": 1}, "mode needs a nonempty axis 1 of X [2, 0]"),
    "median mode": ("median", {"x": X23}, {"axis": [1], "mode": "max"}, "mode 'max' must be 'avg' or 'min'"),
    "median axis": ("median", {"x": X23}, {"axis": [0, 2]}, "axis 2 is out of range for rank 2"),
    "median axis twice": ("median", {"x": X23}, {"axis": [1, -1]}, "axis [1, -1] names a dim twice"),
    "nanmedian axis": ("nanmedian", {"X": X23}, {"axis": [-3]}, "axis -3 is out of range for rank 2"),
    "nanmedian empty": ("nanmedian", {"X": zeros(2, 0)}, {"axis": [1]}, "nanmedian needs elements to fold"),
    # linalg
    "lu_unpack pivots": ("lu_unpack", {"X": zeros(3, 3), "Pivots": np.ones(2, np.int32)}, {},
                         "Pivots must hold the 3 row swaps of each of X's 3 x 3 matrices, got shape [2]"),
    "inverse rectangular": ("inverse", {"Input": X23}, {}, "Input must hold square matrices, not 2 x 3"),
    "determinant vector": ("determinant", {"Input": zeros(3)}, {}, "Input must be a matrix or a batch of matrices"),
    "slogdeterminant rectangular": ("slogdeterminant", {"Input": X23}, {}, "Input must hold square matrices"),
    "cholesky rectangular": ("cholesky", {"X": X23}, {}, "X must hold square matrices, not 2 x 3"),
    "cholesky_solve rows": ("cholesky_solve", {"X": zeros(2, 4), "Y": zeros(3, 3)}, {}, "Y is 3 x 3 but X has 2 rows"),
    "triangular_solve batch": ("triangular_solve", {"X": zeros(2, 3, 3), "Y": zeros(3, 3, 1)}, {},
                               "cannot broadcast shapes [2] and [3]"),
    "solve rows": ("solve", {"X": zeros(3, 3), "Y": zeros(4, 2)}, {}, "X is 3 x 3 but Y has 4 rows"),
    "matrix_power rectangular": ("matrix_power", {"X": X23}, {"n": 2}, "X must hold square matrices"),
    "qr mode": ("qr", {"X": X23}, {"mode": "full"}, "attribute mode='full' must be one of"),
    "svd vector": ("svd", {"X": zeros(3)}, {}, "X must be a matrix or a batch of matrices [..., M, N], not rank 1"),
    "eigh UPLO": ("eigh", {"X": zeros(3, 3)}, {"UPLO": "X"}, "attribute UPLO='X' must be one of 'L', 'U'"),
    "lu vector": ("lu", {"X": zeros(4)}, {}, "X must be a matrix or a batch of matrices"),
    "lstsq rows": ("lstsq", {"X": zeros(4, 3), "Y": zeros(5, 2)}, {}, "X has 4 rows but Y has 5"),
    "lstsq driver": ("lstsq", {"X": zeros(4, 3), "Y": zeros(4, 2)}, {"driver": "gesv"},
                     "attribute driver='gesv' must be one of"),
    # sampling
    "affine_grid theta": ("affine_grid", {"Theta": zeros(2, 3, 3)}, {"output_shape": [2, 1, 4, 4]},
                          "Theta must be [N, 2, 3] or [N, 3, 4], got shape [2, 3, 3]"),
    "affine_grid output_shape": ("affine_grid", {"Theta": zeros(2, 2, 3)}, {"output_shape": [2, 1, 3, 4, 5]},
                                 "a 3-D grid needs Theta [N, 3, 4], got shape [2, 2, 3]"),
    "grid_sampler grid": ("grid_sampler", {"X": X4, "Grid": zeros(2, 3, 3, 3)}, {},
                          "Grid must be [N, H_out, W_out, 2] for a 4-D X, got shape [2, 3, 3, 3]"),
    "grid_sampler batch": ("grid_sampler", {"X": X4, "Grid": zeros(3, 2, 2, 2)}, {}, "X has 2 samples but Grid 3"),
    "grid_sampler mode": ("grid_sampler", {"X": X4, "Grid": zeros(2, 2, 2, 2)}, {"mode": "bicubic"},
                          "mode 'bicubic' is not one of ['bilinear', 'nearest']"),
    "grid_sampler padding_mode": ("grid_sampler", {"X": X4, "Grid": zeros(2, 2, 2, 2)}, {"padding_mode": "wrap"},
                                  "padding_mode 'wrap' is not one of ['zeros', 'border', 'reflection']"),
    "temporal_shift seg_num": ("temporal_shift", {"X": zeros(3, 4, 2, 2)}, {"seg_num": 2},
                               "the batch of 3 does not divide into segments of seg_num 2"),
    "temporal_shift shift_ratio": ("temporal_shift", {"X": X4}, {"seg_num": 2, "shift_ratio": 0.5},
                                   "shift_ratio must be in (0, 0.5), got 0.5"),
    # extras
    "bitwise_and dtypes": ("bitwise_and", {"X": zeros(2, 3, dtype=np.int32), "Y": zeros(2, 3, dtype=np.int64)}, {},
                           "needs X and Y of one dtype, got int32 and int64"),
    "bitwise_or float": ("bitwise_or", {"X": X23, "Y": X23}, {}, "X is float32"),
    "bitwise_not float": ("bitwise_not", {"X": X23}, {}, "X is float32"),
    "bitwise_xor shapes": ("bitwise_xor", {"X": zeros(2, 3, dtype=np.int32), "Y": zeros(2, 4, dtype=np.int32)}, {},
                           "cannot broadcast shapes [2, 3] and [2, 4]"),
    "bitwise_left_shift bool": ("bitwise_left_shift", {"x": zeros(2, dtype=bool), "y": zeros(2, dtype=bool)}, {},
                                "x is bool"),
    "bitwise_right_shift shapes": ("bitwise_right_shift", {"x": zeros(3, dtype=np.int64),
                                                           "y": zeros(2, dtype=np.int64)},
                                   {"is_arithmetic": False}, "cannot broadcast shapes [3] and [2]"),
    "bernoulli ints": ("bernoulli", {"X": zeros(2, 3, dtype=np.int64)}, {}, "needs a float X, got int64"),
    "poisson ints": ("poisson", {"X": zeros(2, 3, dtype=np.int32)}, {}, "needs a float X, got int32"),
    "multinomial rank": ("multinomial", {"X": zeros(2, 3, 4)}, {}, "needs X of rank 1 or 2"),
    "multinomial samples": ("multinomial", {"X": zeros(2, 3)}, {"num_samples": 4, "replacement": False},
                            "cannot draw 4 samples from 3 categories"),
    "renorm power": ("renorm", {"X": X23}, {"p": 0.0, "axis": 0, "max_norm": 1.0}, "p must be a finite power > 0"),
    "renorm axis": ("renorm", {"X": X23}, {"p": 2.0, "axis": 2, "max_norm": 1.0}, "axis 2 is out of range for rank 2"),
    "logspace num": ("logspace", {"Start": ONE, "Stop": ONE, "Num": zeros(2, dtype=np.int32), "Base": ONE}, {},
                     "needs a one-element Num, got shape [2]"),
    "unique_consecutive axis": ("unique_consecutive", {"X": X23}, {"axis": [2], "dtype": 3},
                                "axis 2 is out of range for rank 2"),
    "histogram bins": ("histogram", {"X": X23}, {"bins": 0}, "bins must be >= 1, got 0"),
    "histogram weight": ("histogram", {"X": X23, "Weight": zeros(2, 3, dtype=np.float64)}, {"bins": 4},
                         "Weight must have X's shape [2, 3] and dtype float32, got [2, 3] float64"),
    # legacy_nn
    "bilinear_interp rank": ("bilinear_interp", {"X": zeros(2, 3, 4)}, {"out_h": 2, "out_w": 2},
                             "interp_method 'bilinear' needs a 4-D input, got rank 3"),
    "nearest_interp size": ("nearest_interp", {"X": X4}, {"interp_method": "nearest", "out_h": -2, "out_w": 3},
                            "the output size [-2, 3] must be > 0"),
    "fc weights": ("fc", {"Input": X23, "W": zeros(4, 5)}, {}, "Input flattens to [*, 3] at in_num_col_dims 1"),
    "fc padded weights": ("fc", {"Input": X23, "W": zeros(7, 4)}, {"padding_weights": True},
                          "W [7, 4] is too small for padding_weights"),
    "fc activation": ("fc", {"Input": X23, "W": zeros(3, 5)}, {"activation_type": "gelu"},
                      "activation_type 'gelu' is not one of"),
    "hinge_loss labels": ("hinge_loss", {"Logits": zeros(3, 1), "Labels": zeros(4, 1)}, {},
                          "Labels [4, 1] must have Logits' shape [3, 1]"),
    "l1_norm dtype": ("l1_norm", {"X": zeros(2, 3, dtype=np.int64)}, {}, "l1_norm needs a float X"),
    # legacy_shape
    "expand times": ("expand", {"X": X23}, {"expand_times": [2]}, "expand_times [2] must give a count >= 0 for each"),
    "flatten2 axis": ("flatten2", {"X": X23}, {"axis": 3}, "flatten2 axis 3 must be in [0, 2]"),
    "top_k k": ("top_k", {"X": X23}, {"k": 4}, "top_k k 4 must be in [1, 3]"),
    "reshape shape": ("reshape", {"X": X23}, {"shape": [4, -1]}, "cannot reshape [2, 3] (6 elements) to [4, -1]"),
    "transpose axis": ("transpose", {"X": X23}, {"axis": [0, 0]}, "transpose axis [0, 0] is not a permutation"),
    "crop window": ("crop", {"X": X23}, {"shape": [2, 2], "offsets": [0, 2]}, "crop of X [2, 3] with shape [2, 2] at "
                                                                               "offsets [0, 2] leaves X"),
    "fill_constant_batch_size_like index": ("fill_constant_batch_size_like", {"Input": X23},
                                            {"shape": [-1, 4], "input_dim_idx": 2},
                                            "input_dim_idx 2 must index Input [2, 3]"),
    "fill_constant_batch_size_like dtype": ("fill_constant_batch_size_like", {"Input": X23},
                                            {"shape": [-1], "dtype": 99}, "dtype 99 is not a tensor data type"),
    # roi
    "roi_align rank": ("roi_align", {"X": zeros(2, 3, 4), "ROIs": zeros(1, 4), "RoisNum": np.array([1, 0], np.int32)},
                       {}, "X must be 4-D [N, C, H, W], got shape [2, 3, 4]"),
    "roi_align sizes": ("roi_align", {"X": X4, "ROIs": zeros(1, 4), "RoisNum": np.array([1, 0], np.int32)},
                        {"pooled_height": 0}, "pooled_height must be >= 1, got 0"),
    "roi_align images": ("roi_align", {"X": X4, "ROIs": zeros(1, 4)}, {}, "without RoisNum X must hold one image"),
    "roi_pool boxes": ("roi_pool", {"X": X4, "ROIs": zeros(3, 5), "RoisNum": np.array([1, 2], np.int32)}, {},
                       "ROIs must be [R, 4] boxes (x1, y1, x2, y2), got shape [3, 5]"),
    "roi_pool counts": ("roi_pool", {"X": X4, "ROIs": zeros(3, 4), "RoisNum": np.array([1, 1, 1], np.int32)}, {},
                        "RoisNum must be [N] = [2] box counts, one per image of X, got shape [3]"),
    "psroi_pool channels": ("psroi_pool", {"X": X4, "ROIs": zeros(1, 4), "RoisNum": np.array([1, 0], np.int32)},
                            {"output_channels": 2, "pooled_height": 2, "pooled_width": 2},
                            "X's 4 channels must be output_channels x pooled_height x pooled_width = 2 x 2 x 2"),
    # deform_conv
    "deformable_conv offset": ("deformable_conv", {"Input": X4, "Offset": zeros(2, 9, 3, 3),
                                                   "Filter": zeros(2, 4, 3, 3), "Mask": zeros(2, 9, 3, 3)},
                               {"paddings": [1, 1]},
                               "Offset must be [N, 2 * deformable_groups * kh * kw, out_h, out_w] = [2, 18, 3, 3]"),
    "deformable_conv mask": ("deformable_conv", {"Input": X4, "Offset": zeros(2, 8, 2, 2), "Filter": zeros(2, 4, 2, 2),
                                                 "Mask": zeros(2, 4, 3, 3)}, {},
                             "Mask must be [N, deformable_groups * kh * kw, out_h, out_w] = [2, 4, 2, 2]"),
    "deformable_conv_v1 groups": ("deformable_conv_v1", {"Input": X4, "Offset": zeros(2, 18, 1, 1),
                                                         "Filter": zeros(2, 4, 3, 3)}, {"groups": 2},
                                  "Input has 4 channels but Filter expects 4 per group x 2 groups"),
    "deformable_conv_v1 deformable_groups": ("deformable_conv_v1", {"Input": zeros(1, 3, 3, 3),
                                                                    "Offset": zeros(1, 36, 1, 1),
                                                                    "Filter": zeros(4, 3, 3, 3)},
                                             {"deformable_groups": 2},
                                             "Input's 3 channels do not split into 2 deformable_groups"),
    "deformable_conv_v1 dtypes": ("deformable_conv_v1", {"Input": X4, "Offset": zeros(2, 18, 1, 1, dtype=np.int32),
                                                         "Filter": zeros(2, 4, 3, 3)}, {},
                                  "needs Input, Filter and Offset of one dtype"),
    "deformable_conv_v1 strides": ("deformable_conv_v1", {"Input": X4, "Offset": zeros(2, 18, 1, 1),
                                                          "Filter": zeros(2, 4, 3, 3)}, {"strides": [0, 1]},
                                   "strides must be >= 1, got [0, 1]"),
    "deformable_conv_v1 kernel": ("deformable_conv_v1", {"Input": X4, "Offset": zeros(2, 32, 1, 1),
                                                         "Filter": zeros(2, 4, 4, 4)}, {},
                                  "the output H would be 0: input 3, padding 0, kernel 4"),
    # detection
    "yolo_box channels": ("yolo_box", {"X": zeros(1, 13, 2, 2), "ImgSize": np.array([[8, 8]], np.int32)},
                          {"anchors": [8, 12, 4, 4], "class_num": 2}, "2 anchors of 2 classes need 14"),
    "prior_box max_sizes": ("prior_box", {"Input": X4, "Image": zeros(2, 3, 8, 8)},
                            {"min_sizes": [4.0], "max_sizes": [2.0], "variances": [0.1, 0.1, 0.2, 0.2]},
                            "max_sizes must give one size above each of min_sizes"),
    "prior_box NaN size": ("prior_box", {"Input": X4, "Image": zeros(2, 3, 8, 8)},
                           {"min_sizes": [float("nan")], "variances": [0.1, 0.1, 0.2, 0.2]},
                           "min_sizes must be sizes > 0, got [nan]"),
    "box_coder priors": ("box_coder", {"PriorBox": zeros(3, 4), "TargetBox": zeros(2, 5, 4)},
                         {"code_type": "decode_center_size"}, "must match PriorBox's 3 boxes"),
    "nms box": ("nms", {"Boxes": zeros(3, 5)}, {}, "Boxes's last dim must be 4"),
    "matrix_nms boxes": ("matrix_nms", {"BBoxes": zeros(1, 3, 4), "Scores": zeros(1, 2, 4)}, {},
                         "disagree on the box count"),
    "multiclass_nms3 boxes": ("multiclass_nms3", {"BBoxes": zeros(2, 3, 4), "Scores": zeros(1, 2, 3)}, {},
                              "disagree on the batch size"),
    "generate_proposals_v2 deltas": ("generate_proposals_v2", {
        "Scores": zeros(1, 2, 3, 3), "BboxDeltas": zeros(1, 4, 3, 3), "ImShape": zeros(1, 2),
        "Anchors": zeros(3, 3, 2, 4), "Variances": zeros(3, 3, 2, 4)}, {}, "must be [N, 4A, H, W]"),
    "distribute_fpn_proposals levels": ("distribute_fpn_proposals", {"FpnRois": zeros(3, 4)},
                                        {"min_level": 0, "max_level": 2 ** 30}, "gradc takes at most 2048"),
    "distribute_fpn_proposals scale": ("distribute_fpn_proposals", {"FpnRois": zeros(3, 4)},
                                       {"min_level": 2, "max_level": 2, "refer_scale": 0}, "refer_scale must be > 0"),
    # yolo_loss
    "yolov3_loss channels": ("yolov3_loss", {"X": zeros(1, 13, 4, 4), **YOLO_GT}, YOLO,
                             "X has 13 channels; 2 anchors in anchor_mask with class_num 2 need 14"),
    "yolov3_loss grid": ("yolov3_loss", {"X": zeros(1, 14, 4, 5), **YOLO_GT}, YOLO, "X's grid must be square"),
    "yolov3_loss anchor_mask": ("yolov3_loss", {"X": zeros(1, 14, 4, 4), **YOLO_GT}, {**YOLO, "anchor_mask": [0, 2]},
                                "anchor_mask [0, 2] must index the 2 anchors"),
    "yolov3_loss anchors": ("yolov3_loss", {"X": zeros(1, 7, 4, 4), **YOLO_GT}, {**YOLO, "anchors": [0, 13],
                                                                                "anchor_mask": [0]},
                            "anchors [0, 13] must be one or more (width, height) pairs of positive sizes"),
    "yolov3_loss GTLabel": ("yolov3_loss", {"X": zeros(1, 14, 4, 4), "GTBox": YOLO_GT["GTBox"],
                                            "GTLabel": zeros(1, 2, dtype=np.int32)}, YOLO,
                            "GTLabel must be [N, B] = [1, 3] like GTBox"),
    # signal
    "frame axis": ("frame", {"X": X23}, {"frame_length": 2, "hop_length": 1, "axis": 1}, "axis 1 must be 0 or -1"),
    "frame length": ("frame", {"X": X23}, {"frame_length": 4, "hop_length": 1},
                     "frame_length 4 is longer than the sequence (3 samples along axis -1)"),
    "frame hop": ("frame", {"X": X23}, {"frame_length": 2, "hop_length": 0}, "hop_length 0 must be > 0"),
    "frame 0-d": ("frame", {"X": zeros()}, {"frame_length": 1, "hop_length": 1}, "X must have at least 1 dim"),
    "overlap_add hop": ("overlap_add", {"X": zeros(3, 4)}, {"hop_length": 4},
                        "hop_length 4 is longer than the frames (frame_length 3)"),
    "overlap_add rank": ("overlap_add", {"X": zeros(4)}, {"hop_length": 1}, "X must have at least 2 dims"),
    # graph
    "graph_send_recv reduce_op": ("graph_send_recv", {"X": X23, "Src_index": i64(0, 1), "Dst_index": i64(1, 0)},
                                  {"reduce_op": "PROD"}, "reduce_op must be one of SUM, MEAN, MAX, MIN, got 'PROD'"),
    "graph_send_ue_recv edge rows": ("graph_send_ue_recv", {"X": X23, "Y": zeros(3, 3), "Src_index": i64(0, 1),
                                                            "Dst_index": i64(1, 0)}, {},
                                     "needs a row of Y per edge: Y has 3 rows for 2 edges"),
    "graph_send_uv features": ("graph_send_uv", {"x": X23, "y": zeros(2, 4), "src_index": i64(0, 1),
                                                 "dst_index": i64(1, 0)}, {}, "cannot broadcast shapes [3] and [4]"),
    "segment_pool ids": ("segment_pool", {"X": X23, "SegmentIds": i64(0, 0, 1)}, {},
                         "a segment id per row of X: 3 ids for 2 rows"),
    # static_nn
    "cvm width": ("cvm", {"X": zeros(3, 1), "CVM": zeros(3, 2)}, {}, "first two columns are show and click"),
    "cvm counts": ("cvm", {"X": zeros(3, 4), "CVM": zeros(3, 3)}, {}, "needs CVM [batch, 2]"),
    "nce labels": ("nce", {"Input": zeros(3, 4), "Label": i64([0], [1]), "Weight": zeros(6, 4)},
                   {"num_total_classes": 6}, "one row per row of Input"),
    "nce weight": ("nce", {"Input": zeros(3, 4), "Label": zeros(3, 1, dtype=np.int64), "Weight": zeros(5, 4)},
                   {"num_total_classes": 6}, "Weight [num_total_classes=6, dim]"),
    "nce custom_neg_classes": ("nce", {"Input": zeros(3, 4), "Label": zeros(3, 1, dtype=np.int64),
                                       "Weight": zeros(6, 4)},
                               {"num_total_classes": 6, "num_neg_samples": 3, "custom_neg_classes": [1, 2]},
                               "as many custom_neg_classes as num_neg_samples=3"),
    "row_conv lod form": ("row_conv", {"X": zeros(5, 3), "Filter": zeros(2, 3)}, {}, "LoD form"),
    "row_conv filter": ("row_conv", {"X": zeros(2, 5, 3), "Filter": zeros(2, 4)}, {},
                        "Filter [future_context + 1, dim]"),
    "auc predict": ("auc", {"Predict": zeros(6, 3), "Label": zeros(6, 1, dtype=np.int64),
                            "StatPos": zeros(1, 16, dtype=np.int64), "StatNeg": zeros(1, 16, dtype=np.int64)},
                    {"num_thresholds": 15, "slide_steps": 0}, "Predict [batch, 1 or 2]"),
    "auc stats": ("auc", {"Predict": zeros(6, 2), "Label": zeros(6, 1, dtype=np.int64),
                          "StatPos": zeros(16, dtype=np.int64), "StatNeg": zeros(16, dtype=np.int64)},
                  {"num_thresholds": 15, "slide_steps": 1}, "needs StatPos of 33 counts"),
    "viterbi_decode transition": ("viterbi_decode", {"Input": zeros(2, 3, 4), "Transition": zeros(4, 5),
                                                     "Length": i64(3, 2)}, {}, "Transition [tags, tags]"),
    "class_center_sample samples": ("class_center_sample", {"Label": i64(1, 3)}, {"num_classes": 4, "num_samples": 5},
                                    "0 < num_samples <= num_classes"),
    # pylayer
    "pylayer without blocks": ("pylayer", {"Input": [X23]}, {}, "attribute 'blocks' must name the forward block"),
    # sequence_lod
    # quant
    # complex_fft
    # lod_rnn
    # lod_text
    "sequence_pool pooltype": ("sequence_pool", {"X": X23}, {"pooltype": "MEDIAN"}, "pooltype 'MEDIAN' is not one of"),
    "sequence_softmax width": ("sequence_softmax", {"X": X23}, {}, "X must have shape [rows] or [rows, 1]"),
    "sequence_conv filter": ("sequence_conv", {"X": X23, "Filter": zeros(6, 2)}, {"contextLength": 3},
                             "Filter has 6 rows, not contextLength 3 times X's width 3"),
    "sequence_conv stride": ("sequence_conv", {"X": X23, "Filter": zeros(9, 2)}, {"contextLength": 3,
                                                                                  "contextStride": 2},
                             "contextStride must be 1"),
    "sequence_conv padding": ("sequence_conv", {"X": X23, "Filter": zeros(9, 2), "PaddingData": zeros(3, 3)},
                              {"contextLength": 3, "contextStart": -1, "paddingTrainable": True},
                              "PaddingData must have shape [2, 3]"),
    "lod_reset no lod": ("lod_reset", {"X": X23}, {}, "lod_reset needs Y or a target_lod"),
    "im2sequence rank": ("im2sequence", {"X": X23}, {"kernels": [2, 2]}, "X must be 4-D [N, C, H, W]"),
}

RUN_TIME = {
    "gather_nd index": ("gather_nd", {"X": X23, "Index": i64([0, 5])}, {}, "Index[..., 1] holds 5, outside [-3, 3)"),
    "scatter ids": ("scatter", {"X": zeros(4, 3), "Ids": i64(1, 9), "Updates": zeros(2, 3)}, {},
                    "Ids holds 9, outside [-4, 4)"),
    "clip tensor bounds": ("clip", {"X": X23, "Min": np.array([2.0], f32), "Max": np.array([1.0], f32)}, {},
                           "min 2 is above max 1"),
    "tile tensor": ("tile", {"X": X23, "RepeatTimes": np.array([2, -1], np.int32)}, {},
                    "the repeat times [2, -1] must not be negative"),
    "lookup_table_v2 id": ("lookup_table_v2", {"W": zeros(4, 3), "Ids": i64(1, 7)}, {},
                           "id 7 is out of range for a table of 4 rows"),
    "lookup_table id": ("lookup_table", {"W": zeros(4, 3), "Ids": i64([1], [7])}, {},
                        "id 7 is out of range for a table of 4 rows"),
    "one_hot_v2 depth": ("one_hot_v2", {"X": i64(1, 7)}, {"depth": 4}, "index 7 is out of range for depth 4"),
    "select_input mask": ("select_input", {"X": [zeros(2), zeros(2)], "Mask": np.array([5], np.int32)}, {},
                          "Mask 5 selects none of the 2 branches"),
    **{f"{op} tensor": (op, {"X": X23}, {}, "X holds a dense tensor, not a SelectedRows")
       for op in ("merge_selected_rows", "get_tensor_from_selected_rows")},
    "select_output mask": ("select_output", {"X": zeros(2), "Mask": np.array([5], np.int32)}, {},
                           "Mask 5 selects none of the 1 branches"),
    "index_put index": ("index_put", {"x": X23, "indices": [i64(0, 2)], "value": ONE}, {},
                        "index 0..2 is out of range for dim 0 of x [2, 3]"),
    # unary_math
    # special_math
    # binary_math
    # products
    # scans
    "median axis tensor": ("median", {"x": X23, "AxisTensor": i64(3)}, {}, "axis 3 is out of range for rank 2"),
    # linalg
    "lu_unpack pivot row": ("lu_unpack", {"X": zeros(3, 3), "Pivots": np.array([1, 7, 3], np.int32)}, {},
                            "Pivots holds 7, outside the rows [1, 3]"),
    "inverse singular": ("inverse", {"Input": zeros(2, 3, 3)}, {}, "Input holds a singular matrix"),
    "cholesky indefinite": ("cholesky", {"X": -np.eye(3, dtype=f32)}, {}, "X is not positive definite"),
    "solve singular": ("solve", {"X": zeros(3, 3), "Y": zeros(3, 2)}, {}, "X holds a singular matrix"),
    "triangular_solve zero diagonal": ("triangular_solve", {"X": zeros(3, 3), "Y": zeros(3, 1)}, {},
                                       "X holds a singular matrix"),
    "cholesky_solve zero diagonal": ("cholesky_solve", {"X": zeros(3, 1), "Y": zeros(3, 3)}, {},
                                     "Y holds a singular matrix"),
    "matrix_power singular inverse": ("matrix_power", {"X": zeros(3, 3)}, {"n": -2}, "X holds a singular matrix"),
    # sampling
    "affine_grid OutputShape": ("affine_grid", {"Theta": zeros(2, 2, 3),
                                                "OutputShape": np.array([2, 1, 0, 3], np.int32)},
                                {}, "output shape [2, 1, 0, 3] has a spatial size < 1"),
    # extras
    "bernoulli probability": ("bernoulli", {"X": np.array([0.5, 1.5], f32)}, {}, "must lie in [0, 1]"),
    "multinomial weight": ("multinomial", {"X": np.array([0.5, -0.1, 0.6], f32)}, {}, "weights in X must be >= 0"),
    "poisson rate": ("poisson", {"X": np.array([1.0, -2.0], f32)}, {}, "rates in X must be >= 0"),
    "logspace count": ("logspace", {"Start": ONE, "Stop": ONE, "Num": np.array([0], np.int32), "Base": ONE}, {},
                       "Num must be >= 1, got 0"),
    "histogram range": ("histogram", {"X": np.array([1.0, np.inf], f32)}, {"bins": 4},
                        "histogram range [1.0, inf] is not finite"),
    # legacy_nn
    "bilinear_interp OutSize": ("bilinear_interp", {"X": X4, "OutSize": np.array([0, 3], np.int32)},
                                {"out_h": 2, "out_w": 2}, "the output size [0, 3] must be > 0"),
    # legacy_shape
    "expand times tensor": ("expand", {"X": X23, "ExpandTimes": np.array([2], np.int32)}, {},
                            "expand times [2] must give a count for each of the 2 dims of X"),
    "crop offsets tensor": ("crop", {"X": X23, "Offsets": np.array([1, 1], np.int32)}, {"shape": [2, 2]},
                            "with shape [2, 2] at offsets [1, 1] leaves X"),
    "top_k k tensor": ("top_k", {"X": X23, "K": np.array([4], np.int32)}, {}, "top_k k 4 must be in [1, 3]"),
    # roi
    "roi_align counts": ("roi_align", {"X": X4, "ROIs": zeros(3, 4), "RoisNum": np.array([1, 1], np.int32)}, {},
                         "RoisNum [1, 1] must give 2 box counts >= 0 (one per image of X) summing to the 3 boxes"),
    "psroi_pool counts": ("psroi_pool", {"X": X4, "ROIs": zeros(1, 4), "RoisNum": np.array([2, -1], np.int32)},
                          {"output_channels": 4}, "RoisNum [2, -1] must give 2 box counts >= 0"),
    "roi_align scaled corner": ("roi_align", {"X": X4, "ROIs": np.array([[0, 0, 1e30, 1]], f32),
                                              "RoisNum": np.array([1, 0], np.int32)}, {"spatial_scale": 1e30},
                                "not finite times spatial_scale"),
    "roi_pool empty planes": ("roi_pool", {"X": zeros(1, 2, 0, 3), "ROIs": zeros(1, 4)}, {},
                              "X's planes [0, 3] hold no pixel"),
    "roi_pool corner": ("roi_pool", {"X": X4, "ROIs": np.array([[0, 0, np.inf, 1]], f32),
                                     "RoisNum": np.array([1, 0], np.int32)}, {}, "ROIs holds a box corner that is not"),
    # deform_conv
    # detection
    "box_coder encoded": ("box_coder", {"PriorBox": zeros(200000, 4), "TargetBox": zeros(200000, 4)}, {},
                          "OutputBox of shape [200000, 200000, 4] would need"),
    "prior_box priors": ("prior_box", {"Input": zeros(1, 1, 1000, 1000), "Image": zeros(1, 1, 8, 8)},
                         {"min_sizes": [1.0] * 4000, "aspect_ratios": [2.0], "variances": [0.1, 0.1, 0.2, 0.2]},
                         "Boxes of shape [1000, 1000, 12000, 4] would need"),
    "yolo_box image sizes": ("yolo_box", {"X": zeros(1, 6, 2, 2), "ImgSize": np.array([[8, 8], [8, 8]], np.int32)},
                             {"anchors": [8, 12], "class_num": 1}, "ImgSize must be [N, 2] = [1, 2]"),
    "multiclass_nms3 RoisNum": ("multiclass_nms3", {"BBoxes": zeros(3, 2, 4), "Scores": zeros(3, 2),
                                                    "RoisNum": np.array([2, 2], np.int32)}, {},
                                "RoisNum [2, 2] does not count BBoxes' 3 boxes"),
    "distribute_fpn_proposals RoisNum": ("distribute_fpn_proposals", {"FpnRois": zeros(3, 4),
                                                                      "RoisNum": np.array([1, 1], np.int32)},
                                         {"min_level": 2, "max_level": 2}, "RoisNum [1, 1] does not count"),
    # yolo_loss
    "yolov3_loss centre": ("yolov3_loss", {"X": zeros(1, 14, 4, 4), "GTBox": np.array([[[1.0, 0.5, 0.3, 0.3]]], f32),
                                           "GTLabel": zeros(1, 1, dtype=np.int32)}, YOLO,
                           "GTBox [0, 0] has its centre (1, 0.5) outside the image"),
    # signal
    # graph
    "graph_send_recv dst": ("graph_send_recv", {"X": X23, "Src_index": i64(0, 1), "Dst_index": i64(1, 3)},
                            {"out_size": [2]}, "Dst_index holds 3, outside [0, 2)"),
    "graph_send_ue_recv Out_size": ("graph_send_ue_recv", {"X": X23, "Y": zeros(2, 1), "Src_index": i64(0, 1),
                                                           "Dst_index": i64(1, 0), "Out_size": i64(1)}, {},
                                    "Dst_index holds 1, outside [0, 1)"),
    "graph_send_uv src": ("graph_send_uv", {"x": X23, "y": X23, "src_index": i64(0, -1), "dst_index": i64(1, 0)}, {},
                          "src_index holds -1, outside [0, 2)"),
    "segment_pool order": ("segment_pool", {"X": zeros(3, 2), "SegmentIds": i64(1, 0, 2)}, {},
                           "SegmentIds must be sorted, got 1 before 0"),
    # static_nn
    "nce label range": ("nce", {"Input": zeros(2, 4), "Label": i64([0], [9]), "Weight": zeros(6, 4)},
                        {"num_total_classes": 6, "seed": 1}, "labels in [0, 6)"),
    "auc probability": ("auc", {"Predict": np.full((2, 1), 1.5, f32), "Label": i64(0, 1),
                                "StatPos": zeros(1, 16, dtype=np.int64), "StatNeg": zeros(1, 16, dtype=np.int64)},
                        {"num_thresholds": 15, "slide_steps": 0}, "to lie in [0, 1]"),
    "viterbi_decode length": ("viterbi_decode", {"Input": zeros(2, 3, 4), "Transition": zeros(4, 4),
                                                 "Length": i64(4, 2)}, {}, "lengths must lie in [0, 3]"),
    "class_center_sample label": ("class_center_sample", {"Label": i64(1, 7)}, {"num_classes": 4, "num_samples": 2},
                                  "classes in [0, 4)"),
    # pylayer
    # sequence_lod
    # quant
    # complex_fft
    # lod_rnn
    # lod_text
    "sequence_pool no LoD": ("sequence_pool", {"X": X23}, {}, "X has no LoD: sequence_pool works on sequences"),
    "sequence_softmax no LoD": ("sequence_softmax", {"X": zeros(3, 1)}, {}, "X has no LoD"),
    "sequence_conv no LoD": ("sequence_conv", {"X": X23, "Filter": zeros(9, 2)}, {"contextLength": 3},
                             "X has no LoD"),
    "sequence_expand no LoD": ("sequence_expand", {"X": X23, "Y": X23}, {}, "Y has no LoD"),
    "lod_reset target offsets": ("lod_reset", {"X": X23}, {"target_lod": [0, 1, 3]}, "ends at 3, not at dim 0 (2)"),
    "im2sequence real sizes": ("im2sequence", {"X": zeros(2, 1, 3, 3), "Y": np.array([[5, 5], [3, 3]], f32)},
                               {"kernels": [2, 2]}, "outside the image's [2, 2]"),
}

# forward ops with nothing a program can get wrong, and why
ANY_TENSOR = "any shape, no attribute: every float tensor is valid input"
FREE_ATTRIBUTES = "elementwise, and every real value of its attributes is a valid Paddle formula"
EXEMPT = {
    "lod_array_length": "no attribute: every tensor array has a length",
    **{op: ANY_TENSOR for op in ("abs", "exp", "log", "sqrt", "rsqrt", "square", "sign", "sigmoid", "tanh", "relu",
                                 "silu", "softsign", "logsigmoid", "tanh_shrink", "gelu", "mean", "assign",
                                 "fill_zeros_like", "squared_l2_norm", "cos", "sin")},
    **{op: FREE_ATTRIBUTES for op in ("elu", "leaky_relu", "relu6", "swish", "hard_sigmoid", "hard_swish", "mish",
                                      "thresholded_relu", "pow")},
    "logical_not": "elementwise on any bool tensor",
    "shape": "any tensor: its dims", "size": "any tensor: its element count",
    "feed": "the executor's own input op", "fetch": "the executor's own output op",
    "conditional_block": "control flow: a block without its sub-block attribute or vars is refused by the "
                         "definition checks (tests/test_fuzz.py, tests/test_hostile_inputs.py)",
    "while": "control flow: an endless loop stops at the iteration limit (tests/test_hostile_inputs.py)",
    # unary_math
    **{op: "any shape, no attribute: every float or integer tensor is valid input" for op in ("floor", "ceil",
                                                                                            "trunc")},
    "round": FREE_ATTRIBUTES,
    # binary_math
    **{op: "any tensor: a bool per element" for op in ("isnan_v2", "isinf_v2", "isfinite_v2")},
    "conj": ANY_TENSOR,
    # products
    "kron": "any two tensors: each dim of Out is the product of X's and Y's",
    # scans
    # linalg
    # sampling
    # legacy_nn
    # legacy_shape
    # roi
    # deform_conv
    # detection
    # yolo_loss
    # signal
    # graph
    # static_nn
    # pylayer
    # sequence_lod
    # quant
    # complex_fft
    # lod_rnn
    # lod_text
}

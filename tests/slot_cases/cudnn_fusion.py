"""The cuDNN fusions' optional vectors: fused_scale_bias_add_relu's scale2 / bias2 turn x2 [1, 1, 1, 2] = [1, -3]
into [2, -3] + [0, 4] = [2, 1] before relu(x1 + ...); fused_scale_bias_relu_conv_bn's scale / bias (its prologue)
turn x [1, 1, 1, 2] = [1, -1] into relu([2, -2] + [0, 1]) = [2, 0], which a 1x1 filter [1, 1] sums to out 2."""

import numpy as np

from . import SlotCase

ADD_RELU = {"x1": np.zeros((1, 1, 1, 2)), "scale1": np.ones(2), "bias1": np.zeros(2), "x2": np.array([[[[1.0, -3.0]]]]),
            "scale2": np.array([2.0, 1.0]), "bias2": np.array([0.0, 4.0])}
CONV_BN = {"x": np.array([[[[1.0, -1.0]]]]), "w": np.ones((1, 2, 1, 1)), "scale": np.array([2.0, 2.0]),
           "bias": np.array([0.0, 1.0]), "bn_scale": np.ones(1), "bn_bias": np.zeros(1),
           "input_running_mean": np.zeros(1), "input_running_var": np.ones(1)}
PROLOGUE = {"fuse_prologue": True, "paddings": [0, 0]}

CASES = [
    SlotCase("fused_scale_bias_add_relu", "scale2", ADD_RELU, {"out": np.array([[[[2.0, 1.0]]]])},
             {"fuse_dual": True}, overrides=False),
    SlotCase("fused_scale_bias_add_relu", "bias2", ADD_RELU, {"out": np.array([[[[2.0, 1.0]]]])},
             {"fuse_dual": True}, overrides=False),
    SlotCase("fused_scale_bias_relu_conv_bn", "scale", CONV_BN, {"out": np.array([[[[2.0]]]])}, PROLOGUE,
             overrides=False),
    SlotCase("fused_scale_bias_relu_conv_bn", "bias", CONV_BN, {"out": np.array([[[[2.0]]]])}, PROLOGUE,
             overrides=False),
]

# fused_dconv_drelu_dbn on one channel, a batch of two 1x1 pixels, a 1x1 filter of 1 and dY = [1, 1]: bn1_input
# [1, -1] at mean 0, inverse std 1 is h1 = [1, -1]. Dual: bn2_input [2, 0] at mean 1 gives [1, -1] again, beta 0.5
# makes h = [2.5, -1.5]; grad_output_add [2, 5] makes dr = [3, 6], so g = [3, 0]: both gammas' and betas' grads 3;
# conv_input [4, 7] gives grad_weight 11. Plain: the eq scale 2 and bias 1 give the filter's input relu([3, -1]),
# grad_weight 3. Shortcut: residual_input [-2, 3] flips the mask to [0, 1]: grad_bn2_input = g = [0, 1].


def _pixels(*values):
    return np.array(values, dtype=np.float64).reshape(-1, 1, 1, 1)


BN1 = {"grad_output": _pixels(1, 1), "weight": np.ones((1, 1, 1, 1)), "bn1_input": _pixels(1, -1),
       "bn1_mean": np.zeros(1), "bn1_inv_std": np.ones(1), "bn1_gamma": np.ones(1), "bn1_beta": np.zeros(1)}
DUAL = {**BN1, "grad_output_add": _pixels(2, 5), "conv_input": _pixels(4, 7), "bn2_input": _pixels(2, 0),
        "bn2_mean": np.ones(1), "bn2_inv_std": np.ones(1), "bn2_gamma": np.ones(1), "bn2_beta": np.array([0.5])}
THREE = np.array([3.0])
DUAL_EXPECTED = {"grad_weight": np.full((1, 1, 1, 1), 11.0), "grad_bn1_gamma": THREE, "grad_bn1_beta": THREE,
                 "grad_bn2_gamma": THREE, "grad_bn2_beta": THREE, "grad_bn1_input": _pixels(0, 0)}
SHORTCUT = {**BN1, "residual_input": _pixels(-2, 3), "conv_input": _pixels(4, 7)}
PLAIN = {**BN1, "bn1_eqscale": np.array([2.0]), "bn1_eqbias": np.array([1.0])}
DCONV = "fused_dconv_drelu_dbn"
CASES += [SlotCase(DCONV, slot, DUAL, DUAL_EXPECTED, {"fuse_dual": True, "fuse_add": True}, overrides=False)
          for slot in ("grad_output_add", "conv_input", "bn2_input", "bn2_mean", "bn2_inv_std", "bn2_gamma",
                       "bn2_beta")]
CASES += [SlotCase(DCONV, "residual_input", SHORTCUT,
                   {"grad_bn2_input": _pixels(0, 1), "grad_bn1_gamma": np.array([-1.0]), "grad_weight":
                    np.full((1, 1, 1, 1), 11.0)}, {"fuse_shortcut": True}, overrides=False)]
CASES += [SlotCase(DCONV, slot, PLAIN, {"grad_weight": np.full((1, 1, 1, 1), 3.0), "grad_bn1_beta": np.ones(1)},
                   overrides=False) for slot in ("bn1_eqscale", "bn1_eqbias")]

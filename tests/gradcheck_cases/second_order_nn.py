"""Second-derivative cases (as in second_order.py) for the activations, losses and norms whose grad ops
got makers later: each attribute that changes the formula has a case of its own."""

from __future__ import annotations

import numpy as np

import gradc
from gradc.ir import VarType

from . import Case, rng
from .lod_rnn import third_order
from .second_order import away, distinct, positive, randn, second_order

r = rng(43)


def probs(*shape):
    return r.uniform(0.1, 0.9, shape)


def ids(values):
    return np.array(values, dtype=np.int64)



def noise_free(grad_type: str, forward: str, attrs: dict) -> Case:
    """The case of a grad op whose forward op draws noise (gumbel_softmax): the grad op on its own, reading
    ``forward`` (the noiseless function of X), a random dOut W1 and loss2 = sum(W2 * the grad), differentiated
    with respect to X and W1."""
    shape = (2, 3)

    def build() -> dict:
        program = gradc.Program()
        block = program.global_block
        feed = {"x": randn(*shape), "w1": randn(*shape), "w2": randn(*shape)}
        for name in ("x", "w1", "w2", "out", "x@GRAD", "product"):
            block.create_var(name, list(shape), VarType.FP64).stop_gradient = name == "w2"
        block.create_var("loss2", [], VarType.FP64)
        axis = attrs.get("axis", -1)
        block.append_op(forward, {"X": ["x"]}, {"Out": ["out"]}, {"axis": axis})
        block.append_op(grad_type, {"Out": ["out"], "Out@GRAD": ["w1"]}, {"X@GRAD": ["x@GRAD"]}, attrs)
        block.append_op("elementwise_mul", {"X": ["x@GRAD"], "Y": ["w2"]}, {"Out": ["product"]})
        block.append_op("reduce_sum", {"X": ["product"]}, {"Out": ["loss2"]}, {"reduce_all": True})
        return {"program": program, "feed": feed, "wrt": ["x", "w1"], "loss": "loss2"}

    return Case(grad_type, {}, attrs, program=build)


CASES = [
    # activations
    second_order("sin", {"X": randn(2, 3, scale=2)}),
    second_order("cos", {"X": randn(2, 3, scale=2)}),
    second_order("selu", {"X": away(2, 3)}),
    second_order("selu", {"X": away(2, 3)}, {"alpha": 0.5, "scale": 2.0}),
    second_order("celu", {"X": away(2, 3)}),
    second_order("celu", {"X": away(2, 3)}, {"alpha": -0.7}),
    second_order("mish", {"X": randn(2, 3, scale=2)}),
    second_order("mish", {"X": np.array([[-2.0, 0.5, 1.5], [2.5, 3.5, -0.3]])}, {"threshold": 2.0}),
    second_order("hard_swish", {"X": np.array([[-4.0, -2.0, 0.5], [1.7, 2.9, 4.0]])}),
    second_order("hard_swish", {"X": np.array([[-2.0, -0.5, 0.5], [1.5, 2.5, 4.0]])},
                 {"threshold": 3.0, "scale": 4.0, "offset": 1.0}),
    second_order("prelu", {"X": away(2, 3, 2), "Alpha": np.array([0.3])}),
    second_order("prelu", {"X": away(2, 3, 2, 2), "Alpha": r.uniform(0, 1, 3)}, {"mode": "channel"}),
    second_order("prelu", {"X": away(2, 2, 3), "Alpha": r.uniform(0, 1, 3)},
                 {"mode": "channel", "data_format": "NHWC"}),
    second_order("prelu", {"X": away(2, 3, 2), "Alpha": r.uniform(0, 1, (1, 3, 2))}, {"mode": "element"}),
    second_order("rrelu", {"X": away(2, 3)}, {"is_test": True, "lower": 0.1, "upper": 0.3}),
    noise_free("gumbel_softmax_grad", "softmax", {"temperature": 0.7, "hard": False, "axis": -1}),
    noise_free("gumbel_softmax_grad", "softmax", {"temperature": 2.0, "hard": False, "axis": 0}),
    second_order("fused_softmax_mask", {"X": randn(2, 3, 2, 4), "Mask": randn(2, 1, 2, 4)},
                 grad_type="fused_softmax_mask_grad"),
    second_order("fused_softmax_mask_upper_triangle", {"X": randn(1, 2, 3, 3)},
                 grad_type="fused_softmax_mask_upper_triangle_grad"),
    # arithmetic
    second_order("elementwise_mod", {"X": np.array([[2.5, -1.3], [0.7, 4.1]]),
                                     "Y": np.array([[1.1, 0.6], [-0.9, 1.7]])}),   # quotients away from integers
    second_order("elementwise_mod", {"X": np.array([[[2.5], [-1.3]], [[0.7], [4.1]]]), "Y": np.array([1.1, -0.7])},
                 {"axis": 1}),
    second_order("bilinear_tensor_product", {"X": randn(2, 3), "Y": randn(2, 2), "Weight": randn(2, 3, 2),
                                             "Bias": randn(1, 2)}),
    second_order("bilinear_tensor_product", {"X": randn(3, 2), "Y": randn(3, 1), "Weight": randn(1, 2, 1)}),
    second_order("reduce_prod", {"X": randn(2, 5, 2)}, {"dim": [1]}),
    second_order("reduce_prod", {"X": randn(3, 2, 2)}, {"dim": [0, 2], "keep_dim": True}),
    second_order("reduce_prod", {"X": np.array([[0.0, 2.0, -1.5], [0.0, 0.0, 3.0], [1.2, 0.7, -0.4]])},
                 {"reduce_all": True}),
    second_order("reduce_prod", {"X": np.array([[0.0, 2.0, -1.5], [0.0, 0.0, 3.0], [1.2, 0.7, -0.4]])}, {"dim": [1]}),
    # losses
    second_order("bce_loss", {"X": probs(2, 3), "Label": probs(2, 3)}),
    second_order("sigmoid_cross_entropy_with_logits", {"X": randn(2, 3), "Label": probs(2, 3)}),
    second_order("sigmoid_cross_entropy_with_logits", {"X": randn(2, 3),
                                                       "Label": np.array([[1., 0., -1.], [-1., 1., 0.]])},
                 {"normalize": True, "ignore_index": -1}),
    second_order("sigmoid_cross_entropy_with_logits", {"X": randn(2, 3), "Label": probs(2, 3),
                                                       "pos_weight": positive(2, 3)}),
    second_order("huber_loss", {"X": np.array([[0.0, 1.0, -1.0], [2.0, 0.5, 0.3]]),
                                "Y": np.array([[0.3, -0.6, 1.5], [0.2, 0.6, 0.4]])}, {"delta": 1.0}),
    second_order("huber_loss", {"X": randn(2, 3), "Y": randn(2, 3)}, {"delta": 10.0}),
    # Target's gradient is composite (Paddle's kldiv_loss_grad writes X's alone): differentiated through it too
    second_order("kldiv_loss", {"X": np.log(probs(2, 3)), "Target": probs(2, 3)}, grad_type="kldiv_loss_grad"),
    second_order("kldiv_loss", {"X": np.log(probs(2, 3)), "Target": probs(2, 3)}, {"reduction": "batchmean"},
                 grad_type="kldiv_loss_grad"),
    second_order("kldiv_loss", {"X": np.log(probs(2, 3)), "Target": np.log(probs(2, 3))},
                 {"reduction": "none", "log_target": True}, grad_type="kldiv_loss_grad"),
    second_order("log_loss", {"Predicted": probs(3, 1), "Labels": np.array([[1.0], [0.0], [1.0]])}),
    second_order("log_loss", {"Predicted": probs(2, 2), "Labels": probs(2, 2)}, {"epsilon": 0.05}),
    second_order("nll_loss", {"X": randn(3, 4), "Label": ids([1, 0, 3])}),
    second_order("nll_loss", {"X": randn(3, 4), "Label": ids([1, -100, 3]), "Weight": positive(4)},
                 {"reduction": "sum"}),
    second_order("nll_loss", {"X": randn(2, 3, 1, 2), "Label": ids([[[0, 2]], [[1, 1]]]), "Weight": positive(3)},
                 {"reduction": "none"}),
    second_order("cross_entropy", {"X": r.dirichlet(np.ones(4), 3), "Label": ids([[1], [3], [2]])}),
    second_order("cross_entropy", {"X": r.dirichlet(np.ones(3), (2, 2)), "Label": ids([[2, 5], [5, 0]])},
                 {"ignore_index": 5}),
    second_order("cross_entropy", {"X": r.dirichlet(np.ones(4), 3), "Label": r.dirichlet(np.ones(4), 3)},
                 {"soft_label": True}),
    second_order("cross_entropy2", {"X": r.dirichlet(np.ones(4), 3), "Label": ids([[1], [-100], [2]])}),
    second_order("cross_entropy2", {"X": r.dirichlet(np.ones(3), (2, 2)), "Label": ids([[2, 1], [0, 0]])}),
    second_order("label_smooth", {"X": probs(2, 3)}, {"epsilon": 0.1}),
    *(second_order("identity_loss", {"X": randn(2, 3)}, {"reduction": reduction}) for reduction in (0, 1, 2)),
    second_order("hierarchical_sigmoid", {"X": randn(4, 3), "W": randn(5, 3), "Label": ids([[0], [5], [3], [2]]),
                                           "Bias": randn(5, 1)}, {"num_classes": 6}, counts={"W_Out": 0}),
    second_order("hierarchical_sigmoid", {"X": randn(3, 2), "W": randn(6, 2), "Label": ids([6, 1, 4])},
                 {"num_classes": 7}, counts={"W_Out": 0}),
    second_order("hierarchical_sigmoid", {"X": randn(3, 2), "W": randn(5, 2), "Label": ids([[0], [1], [2]]),
                                           "PathTable": ids([[0, 1, -1], [0, 2, 4], [0, 1, 3]]),
                                           "PathCode": ids([[1, 0, -1], [0, 1, 1], [1, 1, 0]]), "Bias": randn(5)},
                 {"num_classes": 5}, counts={"W_Out": 0}),
    # norms
    second_order("group_norm", {"X": randn(2, 4, 3), "Scale": randn(4), "Bias": randn(4)}, {"groups": 2}),
    second_order("group_norm", {"X": randn(2, 2, 2, 4), "Scale": randn(4), "Bias": randn(4)},
                 {"groups": 2, "data_layout": "NHWC", "epsilon": 1e-3}),
    second_order("group_norm", {"X": randn(2, 3, 2, 2)}, {"groups": 3}),
    second_order("instance_norm", {"X": randn(2, 3, 4), "Scale": randn(3), "Bias": randn(3)}),
    second_order("instance_norm", {"X": randn(2, 2, 2, 2)}, {"epsilon": 1e-3}),
    second_order("p_norm", {"X": randn(3, 4)}),
    second_order("p_norm", {"X": away(3, 4)}, {"porder": 1.0, "axis": 0, "keepdim": True}),
    second_order("p_norm", {"X": away(2, 3, 2)}, {"porder": 3.0, "axis": 1}),
    second_order("p_norm", {"X": away(2, 3)}, {"porder": 1.5, "asvector": True}),
    second_order("p_norm", {"X": distinct(3, 4) + 0.03}, {"porder": float("inf")}),   # no ties of |x|
    second_order("p_norm", {"X": distinct(3, 4) + 0.03}, {"porder": float("-inf"), "axis": 0, "keepdim": True}),
    second_order("squared_l2_norm", {"X": randn(2, 3)}),
    second_order("spectral_norm", {"Weight": randn(3, 4), "U": randn(3), "V": randn(4)}),
    second_order("spectral_norm", {"Weight": randn(2, 3, 2), "U": randn(3), "V": randn(4)},
                 {"dim": 1, "power_iters": 2}),
    second_order("spectral_norm", {"Weight": randn(2, 3), "U": randn(2), "V": randn(3)}, {"power_iters": 0}),
    second_order("lrn", {"X": randn(1, 4, 2, 2)}, {"n": 3, "k": 1.0, "alpha": 0.3, "beta": 0.75}),
    second_order("lrn", {"X": randn(1, 2, 2, 3)}, {"n": 3, "k": 2.0, "alpha": 0.5, "beta": 0.6, "data_format": "NHWC"}),
]

# a third derivative of batch_norm with frozen statistics: its grad's maker reads them as constants (stop_gradient
# copies), so the next backward does not reach batch_norm's MeanOut / VarianceOut
FROZEN = {"X": randn(2, 3), "Scale": randn(3), "Bias": randn(3), "Mean": randn(3), "Variance": positive(3)}
CASES.append(third_order(second_order("batch_norm", FROZEN, {"is_test": True}), "batch_norm_grad"))

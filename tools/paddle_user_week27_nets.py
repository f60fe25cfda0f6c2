"""The nets of tools/paddle_user_week27.py (a model-compression engineer's week), built with Paddle 3.3.1's layers
in legacy static mode: the teacher and student convolution nets of the distillation, the dense MLP, its masked
(pruned) copy and its low-rank copy. Every parameter is named, so the programs' weights can be saved and fed."""

import numpy as np
import paddle
import paddle.nn.functional as F

CLASSES, SIDE, HIDDEN, RANK = 4, 8, 32, 8


def attr(name: str, trainable: bool = True, initial: np.ndarray | None = None):
    init = None if initial is None else paddle.nn.initializer.Assign(initial)
    return paddle.ParamAttr(name=name, trainable=trainable, initializer=init)


class ConvNet(paddle.nn.Layer):
    """A 3x3 convolution of `channels`, relu (the features), a 2x2 average pool and a Linear to the classes."""

    def __init__(self, prefix: str, channels: int, trainable: bool = True):
        super().__init__()
        self.conv = paddle.nn.Conv2D(1, channels, 3, padding=1, weight_attr=attr(f"{prefix}.conv.w", trainable),
                                     bias_attr=attr(f"{prefix}.conv.b", trainable))
        self.fc = paddle.nn.Linear(channels * (SIDE // 2) ** 2, CLASSES, weight_attr=attr(f"{prefix}.fc.w", trainable),
                                   bias_attr=attr(f"{prefix}.fc.b", trainable))

    def forward(self, x):
        features = F.relu(self.conv(x))
        return features, self.fc(paddle.flatten(F.avg_pool2d(features, 2), 1))


def distillation_loss(student_logits, teacher_logits, label, alpha: float, temperature: float):
    """alpha CE(student, label) + (1 - alpha) T^2 KL(softmax(t/T) || softmax(s/T)), batchmean; and the KL alone."""
    ce = F.cross_entropy(student_logits, label)
    kl = F.kl_div(F.log_softmax(student_logits / temperature, axis=1), F.softmax(teacher_logits / temperature, axis=1),
                  reduction="batchmean")
    return alpha * ce + (1 - alpha) * temperature ** 2 * kl, kl


def distill_net(image, label, alpha: float, temperature: float, beta: float):
    """The frozen teacher (8 channels, trainable=False, its outputs stop_gradient), the student (4 channels) and a
    1x1 Conv2D projecting the student's features onto the teacher's for a feature-matching MSE (weight beta)."""
    teacher_features, teacher_logits = ConvNet("teacher", 8, trainable=False)(image)
    teacher_features.stop_gradient = teacher_logits.stop_gradient = True
    student_features, student_logits = ConvNet("student", 4)(image)
    projection = paddle.nn.Conv2D(4, 8, 1, weight_attr=attr("project.w"), bias_attr=attr("project.b"))
    soft, kl = distillation_loss(student_logits, teacher_logits, label, alpha, temperature)
    feature_mse = F.mse_loss(projection(student_features), teacher_features)
    return {"loss": soft + beta * feature_mse, "kl": kl, "feature_mse": feature_mse, "logits": student_logits}


def dense_layers(x, masks: dict | None = None, named: bool = True):
    """Linear(64, 32), relu, Linear(32, 4) on the flattened image; with masks, each weight times its fixed 0/1 mask
    (a persistable parameter, trainable=False) before it is used. Unnamed, the parameters get Paddle's own names
    (linear_0.w_0, ...): paddle.incubate.asp prunes only the parameters its names say are of a supported layer."""
    flat = paddle.flatten(x, 1)
    fc1 = paddle.nn.Linear(SIDE * SIDE, HIDDEN, **({"weight_attr": attr("fc1.w"), "bias_attr": attr("fc1.b")}
                                                   if named else {}))
    fc2 = paddle.nn.Linear(HIDDEN, CLASSES, **({"weight_attr": attr("fc2.w"), "bias_attr": attr("fc2.b")}
                                               if named else {}))
    if masks is None:
        return fc2(F.relu(fc1(flat)))
    mask1, mask2 = (paddle.static.create_parameter(masks[name].shape, "float32", attr=attr(f"{name}_mask", False,
                                                                                            masks[name]))
                    for name in ("fc1.w", "fc2.w"))
    hidden = F.relu(F.linear(flat, fc1.weight * mask1, fc1.bias))
    return F.linear(hidden, fc2.weight * mask2, fc2.bias)


def low_rank_layers(x):
    """fc1 factored: Linear(64, 8, no bias), Linear(8, 32), then relu and fc2 as the dense net."""
    flat = paddle.flatten(x, 1)
    down = paddle.nn.Linear(SIDE * SIDE, RANK, weight_attr=attr("fc1_u.w"), bias_attr=False)
    up = paddle.nn.Linear(RANK, HIDDEN, weight_attr=attr("fc1_v.w"), bias_attr=attr("fc1.b"))
    fc2 = paddle.nn.Linear(HIDDEN, CLASSES, weight_attr=attr("fc2.w"), bias_attr=attr("fc2.b"))
    return fc2(F.relu(up(down(flat))))


def factor(dense: dict) -> dict:
    """The rank-8 truncated SVD of fc1.w [64, 32] = U S V^T, split sqrt(S) each side: fc1_u.w [64, 8] and fc1_v.w
    [8, 32]; the other weights as they are."""
    u, s, vt = np.linalg.svd(dense["fc1.w"].astype(np.float64), full_matrices=False)
    root = np.sqrt(s[:RANK])
    factors = {"fc1_u.w": u[:, :RANK] * root, "fc1_v.w": root[:, None] * vt[:RANK]}
    return {**{name: value.astype(np.float32) for name, value in factors.items()},
            **{name: dense[name] for name in ("fc1.b", "fc2.w", "fc2.b")}}


def magnitude_masks(dense: dict, sparsity: float) -> dict:
    """1 where |w| is above the weight's `sparsity` quantile, else 0: each Linear's smallest half zeroed."""
    return {name: (np.abs(dense[name]) > np.quantile(np.abs(dense[name]), sparsity)).astype(np.float32)
            for name in ("fc1.w", "fc2.w")}

"""Paddle's legacy second-derivative ops of the norms: `batch_norm_grad_grad` (a WGAN-GP gradient penalty through a
BatchNorm critic; training, NHWC and global-statistics modes) and `instance_norm_double_grad`. Each gives the grads of
its first grad op's inputs X, Scale and dY at the grads of that op's outputs (DDX, DDScale, DDBias, any absent): batch
norm's slots DX, DScale, DDY, instance norm's lower-case x@GRAD, scale@GRAD, grad_y@GRAD. Each is the backward of
gradc's own formula of the first grad op (nn_double's, norm_double's; gradc.ops.backward_of), so a third derivative
follows. Paddle's maker passes batch norm's running Mean and Variance where use_global_stats is set.
Kernels: gradc.executor.kernels.norm_second.
"""

from __future__ import annotations

from ..registry import defgrad, get
from .backward_of import AsDifferentiated, backward_of
from .double_grad import _like, _zeros_where_unreached
from .nn_double import batch_norm_grad_formula
from .norm_double import _grouped_norm_grad


def _second(formula, inputs: dict[str, str], outputs: dict[str, str], wrt: dict[str, str]):
    """The maker of the double grad op of a first grad op with ``formula``: its slots ``inputs`` (first grad's slot
    -> the double grad's), its outputs' grads ``outputs`` (first grad's output -> the double grad's input), and
    ``wrt`` (the double grad's input -> its output, the grad of it)."""
    def viewed(f, g):
        return formula(f, AsDifferentiated(g, inputs, outputs))

    return _zeros_where_unreached(backward_of(viewed, outputs, wrt))


_BN_ATTRS = {name: value for name, value in get("batch_norm_grad").attrs.items() if name != "fuse_with_relu"}
defgrad("batch_norm_grad_grad",
        inputs=["X", "Scale?", "SavedMean", "SavedVariance", "DY", "DDX?", "DDScale?", "DDBias?", "Mean?",
                "Variance?"],
        outputs=["DX", "DScale", "DDY"], attrs=_BN_ATTRS, infer=_like(("X", "DX"), ("Scale", "DScale"), ("DY", "DDY")),
        grad=_second(batch_norm_grad_formula,
                     {"X": "X", "Scale": "Scale", "Y@GRAD": "DY", "SavedMean": "SavedMean",
                      "SavedVariance": "SavedVariance", "MeanOut": "Mean", "VarianceOut": "Variance"},
                     {"X@GRAD": "DDX", "Scale@GRAD": "DDScale", "Bias@GRAD": "DDBias"},
                     {"X": "DX", "Scale": "DScale", "DY": "DDY"}),
        no_grad_inputs=["SavedMean", "SavedVariance", "Mean", "Variance"], of="batch_norm_grad")

defgrad("instance_norm_double_grad",
        inputs=["x", "scale?", "saved_mean", "saved_variance", "grad_y", "grad_x@GRAD?", "grad_scale@GRAD?",
                "grad_bias@GRAD?"],
        outputs=["x@GRAD", "scale@GRAD", "grad_y@GRAD"], attrs={"epsilon": 1e-5},
        infer=_like(("x", "x@GRAD"), ("scale", "scale@GRAD"), ("grad_y", "grad_y@GRAD")),
        grad=_second(lambda f, g: _grouped_norm_grad(f, g, 0),   # a row per (sample, channel), as instance_norm_grad's
                     {"X": "x", "Scale": "scale", "Y@GRAD": "grad_y"},
                     {"X@GRAD": "grad_x@GRAD", "Scale@GRAD": "grad_scale@GRAD", "Bias@GRAD": "grad_bias@GRAD"},
                     {"x": "x@GRAD", "scale": "scale@GRAD", "grad_y": "grad_y@GRAD"}),
        no_grad_inputs=["saved_mean", "saved_variance"], of="instance_norm_grad")

"""Optimizer ops on a SelectedRows gradient, as Paddle 3.3.1's CPU kernels for them update
(docs/optimizers.md, SelectedRows gradients). Most are the dense rule on the tensor the sparse kernel in effect
reads; Adam and AdamW have a rule of their own. Ops Paddle has no sparse kernel for refuse such a gradient."""

from __future__ import annotations

import numpy as np

from ...errors import ExecutionError
from ..selected_rows import SelectedRows, searched_dense
from . import KERNELS, kernel, optimizer, optimizer_adam  # noqa: F401 - the dense kernels, registered first
from . import optimizer_math as M
from .optimizer import check
from .optimizer_adam import ADAM_OUT, _adam_args
from .selected_rows import Reading


def _whole(grad: SelectedRows) -> np.ndarray:
    return grad.to_dense()


def _searched(grad: SelectedRows) -> np.ndarray:
    return searched_dense(grad.merged())


# op -> the tensor its sparse kernel in effect applies the dense rule to: lamb merges the rows; momentum and
# rmsprop merge without sorting and then find each parameter row by binary search, which misses rows when the
# merged rows are unsorted (ids without repeats)
DENSE_VIEW = {"lamb": _whole, "momentum": _searched, "rmsprop": _searched}
# op -> the slots of its rows: sgd (each row subtracted, repeats in turn) and adagrad (rows merged) leave a row
# without gradient as it was, so their dense rule runs on the selected rows alone
ROW_LOCAL = {"sgd": ("Param", "MasterParam"), "adagrad": ("Param", "Moment", "MasterParam")}
NO_SPARSE_KERNEL = ("adamax", "adadelta", "nadam", "radam", "rprop", "lars_momentum", "merged_momentum",
                    "merged_adam")


def _unchanged(k) -> dict:
    """Paddle's sparse kernels return early on a gradient without rows: every output keeps its input."""
    return {out: k.x(out[:-3]) for out in k.op.outputs if out.endswith("Out") and k.op.inputs.get(out[:-3])}


def _grad_slot(k) -> str:
    return "grad" if "grad" in k.op.inputs else "Grad"


def _sparse_grad(k):
    grads = k.op.input(_grad_slot(k))
    return next((g for g in map(k.read, grads) if isinstance(g, SelectedRows)), None)


def _with_sparse_grads(op_type: str, sparse_kernel) -> None:
    dense = KERNELS[op_type]

    def run(k):
        grad = _sparse_grad(k)
        return dense(k) if grad is None else sparse_kernel(k, grad)
    run.__doc__ = sparse_kernel.__doc__
    kernel(op_type, replace=True)(run)


def _dense_view_kernel(op_type: str):
    dense = KERNELS[op_type]

    def run(k, grad: SelectedRows):
        if not grad.rows.size:
            return _unchanged(k)
        return dense(Reading(k, {"Grad": DENSE_VIEW[op_type](grad)}))
    return run


def _row_local_kernel(op_type: str):
    dense = KERNELS[op_type]

    def run(k, grad: SelectedRows):
        """The dense rule on the merged rows only, written back into copies of the table and its accumulators:
        a step costs the rows it selects, not the table (which to_dense of the gradient would)."""
        if not grad.rows.size:
            return _unchanged(k)
        merged = grad.merged()
        sliced = {slot: k.x(slot)[merged.rows] for slot in ROW_LOCAL[op_type] if k.op.input(slot)}
        outputs = dense(Reading(k, {**sliced, "Grad": merged.values}))
        for slot, rows in outputs.items():
            if slot[:-len("Out")] in sliced:
                whole = k.x(slot[:-len("Out")]).copy()   # kernels never write their inputs: fetched values stay
                whole[merged.rows] = rows
                outputs[slot] = whole
        return outputs
    return run


def _sparse_sgd(dense_view):
    def run(k, grad: SelectedRows):
        """A bfloat16 parameter's rows step in turn (M.bfloat16_sparse_sgd); others take the dense view's rule."""
        if not optimizer.bfloat16_sgd(k) or not grad.rows.size:
            return dense_view(k, grad)
        check(k)
        return {"ParamOut": M.bfloat16_sparse_sgd(k.x("Param"), grad.rows, grad.values, k.x("LearningRate"))}
    return run


def _refuse(op_type: str):
    def run(k, grad: SelectedRows):
        raise ExecutionError(f"{k.where}: the gradient is a SelectedRows (a sparse embedding's), which Paddle's "
                             f"{op_type} has no kernel for; use a dense embedding (is_sparse false)")
    return run


def sparse_adam(param, grad: SelectedRows, lr, moment1, moment2, beta1_pow, beta2_pow, beta1, beta2, epsilon,
                lazy_mode=False, moment2_max=None, amsgrad=False, pows_in_place=True):
    """-> ParamOut, Moment1Out, Moment2Out, Moment2MaxOut. Paddle's CPU adam for a SelectedRows gradient:
    rows merged (sorted); the selected rows get the dense step; with lazy_mode the others are left alone, without
    it their moments decay (m1 b1, m2 b2) and they step by lr_t m1 / (sqrt(m2) + eps), eps not scaled by
    sqrt(1 - b2^t). The kernel advances the beta pows before it steps, so when they are updated in place (as
    Python always writes the op) the step reads b^(t+1) where the dense kernel reads b^t."""
    dtype = param.dtype.type
    b1, b2, eps, one = dtype(beta1), dtype(beta2), dtype(epsilon), dtype(1)
    b1_pow = dtype(np.asarray(beta1_pow).reshape(-1)[0]) * (b1 if pows_in_place else one)
    b2_pow = dtype(np.asarray(beta2_pow).reshape(-1)[0]) * (b2 if pows_in_place else one)
    lr_t = dtype(np.asarray(lr).reshape(-1)[0]) * (np.sqrt(one - b2_pow) / (one - b1_pow))
    merged = grad if np.all(grad.rows[1:] > grad.rows[:-1]) else grad.merged(sort=True)
    eps_selected = (eps * np.sqrt(one - b2_pow)).astype(param.dtype)
    if lazy_mode:   # only the selected rows are read and computed: the table is copied, not computed over
        rows, g, eps_rows = merged.rows, merged.values, eps_selected
    else:
        rows, g = slice(None), np.zeros_like(param)
        g[merged.rows] = merged.values
        eps_rows = np.full(param.shape[0], eps, param.dtype)
        eps_rows[merged.rows] = eps_selected
        eps_rows = eps_rows.reshape(-1, *[1] * (param.ndim - 1))
    moment1, moment2, param = moment1.copy(), moment2.copy(), param.copy()
    moment1[rows] = b1 * moment1[rows] + (one - b1) * g
    moment2[rows] = b2 * moment2[rows] + (one - b2) * g * g
    denominator = moment2
    if amsgrad:
        moment2_max = moment2_max.copy()
        moment2_max[rows] = np.maximum(moment2[rows], moment2_max[rows])
        denominator = moment2_max
    param[rows] = param[rows] - lr_t * (moment1[rows] / (np.sqrt(denominator[rows]) + eps_rows))
    return param, moment1, moment2, moment2_max


def _adam_kernel(with_decay: bool):
    def run(k, grad: SelectedRows):
        check(k)
        (lr, m1, m2, b1_pow, b2_pow, beta1, beta2, eps), options = _adam_args(k)
        if options["skip_update"]:
            return _unchanged(k)
        param = k.x("Param")
        if with_decay:   # adamw: lr_ratio scales the whole step, with_decay or not (only a GPU takes lr_ratio)
            dtype = param.dtype.type
            lr = dtype(np.asarray(lr).reshape(-1)[0]) * dtype(k.attr("lr_ratio"))
        if with_decay and k.attr("with_decay"):   # on the whole parameter, also when no row is selected
            param = param - lr * dtype(k.attr("coeff")) * param
        if not grad.rows.size:
            return {**_unchanged(k), "ParamOut": param}
        use_global = options["use_global_beta_pow"]
        in_place = k.op.input("Beta1Pow") == k.op.output("Beta1PowOut") and not use_global
        values = sparse_adam(param, grad, lr, m1, m2, b1_pow, b2_pow, beta1, beta2, eps, k.attr("lazy_mode"),
                             options["moment2_max"], options["amsgrad"], in_place)
        if not use_global:
            values = (*values, b1_pow * param.dtype.type(beta1), b2_pow * param.dtype.type(beta2))
        return {slot: v for slot, v in zip(ADAM_OUT, values) if v is not None}
    return run


for _op in DENSE_VIEW:
    _with_sparse_grads(_op, _dense_view_kernel(_op))
_with_sparse_grads("sgd", _sparse_sgd(_row_local_kernel("sgd")))
_with_sparse_grads("adagrad", _row_local_kernel("adagrad"))
for _op in NO_SPARSE_KERNEL:
    _with_sparse_grads(_op, _refuse(_op))
_with_sparse_grads("adam", _adam_kernel(with_decay=False))
_with_sparse_grads("adamw", _adam_kernel(with_decay=True))

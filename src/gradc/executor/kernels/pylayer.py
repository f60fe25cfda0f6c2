"""Kernels of gradc.ops.pylayer. pylayer runs its forward block in a child scope, which it keeps (Scope) for
pylayer_grad; that runs the user's backward block in a GradScope under it, so the block reads the forward
values by name and its writes stay there. The output grads go in under the names the block reads
(``out@GRAD``); the inputs' grads come out of ``x@GRAD``, checked against the inputs they belong to."""

from __future__ import annotations

import numpy as np

from ...errors import ExecutionError
from ...ir import EMPTY_VAR, GRAD_SUFFIX
from ...ops.pylayer import FORWARD, inner_grad
from ..lod import lift_lods
from . import kernel
from .control_flow import GradScope


@kernel("pylayer")
def pylayer(k):
    scope, forward = k.scope.child(), k.attr("blocks")[FORWARD]
    k.run_block(forward, scope)
    declared = k.block.program.blocks[forward].vars
    for name in [name for name in scope.vars if name not in declared]:   # an outer var the block made: Paddle
        k.scope.assign(name, scope.vars.pop(name))                       # keeps it in the outer scope
    lift_lods(k, scope, k.out_names("Out"))
    return {"Out": [k.scope.find(name) for name in k.out_names("Out")], "Scope": [[scope]]}


def _input_grad(k, name: str, grad):
    """The grad of input ``name`` the backward block left (None: zeros), checked against the input."""
    value = k.read(name, "Input")
    if grad is None:
        return np.zeros_like(value)
    grad = np.asarray(grad)
    if grad.shape != np.shape(value) or grad.dtype != np.asarray(value).dtype:
        raise ExecutionError(f"{k.where}: the backward block gives '{name}{GRAD_SUFFIX}' as {grad.dtype}"
                             f"{list(grad.shape)}, but input '{name}' is {np.asarray(value).dtype}"
                             f"{list(np.shape(value))}: a grad has its input's shape and dtype")
    return grad


@kernel("pylayer_grad")
def pylayer_grad(k):
    scopes = k.x("Scope")
    if not scopes:
        raise ExecutionError(f"{k.where}: its Scope holds no forward scope: the pylayer op did not run")
    scope = GradScope(scopes[0])
    for name in k.op.input("Out@GRAD"):
        value = k.scope.find(name)
        if value is not None:
            scope.vars[inner_grad(name)] = value
    k.run_block(k.attr("backward_block"), scope)
    grads = [None if out == EMPTY_VAR else _input_grad(k, name, scope.vars.get(name + GRAD_SUFFIX))
             for name, out in zip(k.op.input("Input"), k.out_names("Input@GRAD"))]
    return {"Input@GRAD": grads}


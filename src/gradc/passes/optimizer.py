"""The optimizer pass: after the backward pass, append what Paddle's ``optimizer.minimize`` appends (gradient
clipping, regularization, one update op per parameter; gradc.optimizers). Its result is the startup program
that initialises the learning rate and the accumulators."""

from __future__ import annotations

from collections.abc import Mapping

from ..ir import Program
from ..optimizers import Optimizer, ParamAttr, make_optimizer, trained_parameters
from .backward import BackwardPass
from .base import Pass, register_pass


@register_pass
class OptimizerPass(Pass):
    name = "optimizer"

    def __init__(self, optimizer: str | Optimizer = "sgd", learning_rate=None,
                 param_attrs: Mapping[str, ParamAttr] | None = None, backward: BackwardPass | None = None,
                 **arguments):
        """An Optimizer, or a name of gradc.optimizers.OPTIMIZERS with Paddle's Python arguments. ``backward``: the
        pass whose gradients it applies (else each parameter's of the program's last backward): in a program
        differentiated before (a PDE residual), a parameter that pass does not reach keeps its earlier grad var."""
        if isinstance(optimizer, str):
            if learning_rate is not None:
                arguments["learning_rate"] = learning_rate
            optimizer = make_optimizer(optimizer, **arguments)
        self.optimizer = optimizer
        self.param_attrs = param_attrs
        self.backward = backward

    def requires(self, program: Program) -> None:
        if not trained_parameters(program.global_block):
            # after a backward pass that ran, "run it first" would mislead: it found nothing to differentiate
            raise self.fail("no parameter has a gradient: run the backward pass first" if self.backward is None else
                            "no parameter got a gradient of the loss: each is stop_gradient (Paddle's "
                            "trainable=False), left out by --param or --no-grad, or on no path to the loss")

    def apply(self, program: Program) -> Program:
        return self.optimizer.apply(program, self.param_attrs, self.backward.pairs if self.backward else None)

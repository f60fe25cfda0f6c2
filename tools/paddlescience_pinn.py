"""Physics-informed losses as PaddleScience builds them, saved by Paddle 3.3.1 for gradc to read: its MLP, its
equations turned into functions by ppsci.lambdify (derivatives by ppsci.autodiff, paddle.grad with create_graph),
the mean squared residual under paddle.jit.to_static, saved by paddle.jit.save (PIR). The saved loss holds Paddle's
own second-derivative ops (pd_op.tanh_double_grad, matmul_double_grad, ...); a training step differentiates it once
more. Per case, OUT_DIR/<case>/ gets inference.json, inference.pdiparams, feed.npz (collocation points in [0, 1)),
and paddle.npz: Paddle's loss and the gradient of each parameter the loss reaches, computed in eager mode.

    PYTHONPATH=PADDLESCIENCE_DIR:DEPS /path/to/paddle/python tools/paddlescience_pinn.py OUT_DIR [CASE ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle
import ppsci
from paddle.static import InputSpec

# case: (the equation, its inputs, the network's outputs, activation, the residuals summed)
CASES = {
    "laplace2d": (lambda: ppsci.equation.Laplace(2), ("x", "y"), ("u",), "tanh", ["laplace"]),
    "poisson3d_silu": (lambda: ppsci.equation.Poisson(3), ("x", "y", "z"), ("p",), "silu", ["poisson"]),
}


class ResidualLoss(paddle.nn.Layer):
    """mean(residual^2) summed over the equations, of the network's outputs at the points given."""

    def __init__(self, model, residuals):
        super().__init__()
        self.model, self.residuals = model, residuals

    def forward(self, inputs):
        out = self.model(inputs)
        return paddle.add_n([paddle.mean(residual({**inputs, **out}) ** 2) for residual in self.residuals])


def save(case: str, out: Path) -> None:
    make, inputs, outputs, activation, equations = CASES[case]
    paddle.seed(0)
    model = ppsci.arch.MLP(inputs, outputs, 3, 16, activation)
    pde = make()
    net = ResidualLoss(model, ppsci.lambdify([pde.equations[name] for name in equations], model))
    feed = {name: np.random.default_rng(i).random([16, 1]).astype(np.float32) for i, name in enumerate(inputs)}
    np.savez(out / "feed.npz", **feed)
    np.savez(out / "paddle.npz", **reference(net, feed))
    specs = [{name: InputSpec([None, 1], "float32", name, stop_gradient=False) for name in inputs}]
    paddle.jit.save(paddle.jit.to_static(net, input_spec=specs, full_graph=True), str(out / "inference"))


def reference(net: ResidualLoss, feed: dict) -> dict:
    """Paddle's loss and parameter gradients, in eager mode (its static backward of the loaded program, a third
    derivative, crashes in 3.3.1). A parameter the loss does not reach (the output bias, under a second
    derivative) has no grad."""
    loss = net({name: paddle.to_tensor(value, stop_gradient=False) for name, value in feed.items()})
    loss.backward()
    return {"loss": loss.numpy(), **{p.name: p.grad.numpy() for p in net.parameters() if p.grad is not None}}


def main() -> None:
    out_dir = Path(sys.argv[1])
    for case in sys.argv[2:] or CASES:
        (out_dir / case).mkdir(parents=True, exist_ok=True)
        save(case, out_dir / case)
        print(case, "OK", flush=True)


if __name__ == "__main__":
    main()

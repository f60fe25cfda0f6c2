"""Second derivatives of gradc.ops.collective's grad ops, composite so third derivatives follow. The collectives'
grads are collectives (each with its own maker); the two grad ops of their own:

- c_embedding_grad scatters dOut into W's rows: linear in dOut, d/d(dOut) is c_embedding of ddW (``linear``);
- c_softmax_with_cross_entropy_grad G = (Softmax - one_hot(Label)) dLoss is linear in dLoss and affine in Softmax:
  d/d(dLoss) = the sum over every rank's classes of ddLogits G(dLoss = 1) (an all_reduce of each rank's sum),
  d/d(Softmax) = G(Softmax = ddLogits) - G(Softmax = 0).

- c_softmax_with_multi_label_cross_entropy_grad G = Softmax sum_j(s_j) - sum_j s_j one_hot(Label_j), s_j = w_j dLoss_j
  (0 for an ignored label), is linear in dLoss and affine in Softmax the same way: d/d(dLoss_j) = the sum over every
  rank's classes of ddLogits G(dLoss = e_j), one column a label (one in all with sum_multi_label_loss), and
  d/d(Softmax) = G(Softmax = ddLogits) - G(Softmax = 0). Paddle has no second derivative of it.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from . import collective  # noqa: F401  (registers the grad ops given makers here)
from .composite import Formula, first, linear
from .creation import scalars
from .nn_double import softmax_cross_entropy_again

defgrad("c_embedding_grad", grad=linear("c_embedding", x="W", passed=("Ids",)), no_grad_inputs=["W", "Ids"])


def _softmax_cross_entropy(g):
    """As softmax_with_cross_entropy's, each rank's classes summed locally and then over the ranks."""
    def over_ranks(f, wanted, product):
        f.into(wanted, "all_reduce", {"x": f.sum_along(product, -1)}, {"ring_id": g.attr("ring_id"), "reduce_type": 0},
               slot="out")

    return softmax_cross_entropy_again(g, over_ranks)


defgrad("c_softmax_with_cross_entropy_grad", grad=_softmax_cross_entropy, no_grad_inputs=["Label"])


def _multi_label(g):
    f = Formula(g)
    softmax, dloss = first(g.I("Softmax")), first(g.I("Loss@GRAD"))
    dd = first(g.OG("Logits@GRAD"))

    def grad(probabilities: str, loss_grad: str) -> str:
        inputs = {"Softmax": probabilities, "Label": first(g.I("Label")), "SmoothWeight": first(g.I("SmoothWeight")),
                  "Loss@GRAD": loss_grad}
        return f.op(g.fwd.type, inputs, softmax, slot="Logits@GRAD", same=True)

    wanted = first(g.IG("Loss@GRAD"))
    if wanted != EMPTY_VAR:
        labels = g.shape(dloss)[-1]
        dtype = g.block.find_var(dloss).dtype
        columns = []
        for j in range(labels):
            unit = f.op("assign_value", {}, dloss, {"shape": [labels], "dtype": int(dtype),
                                                    "values": scalars([float(i == j) for i in range(labels)])},
                        dims=lambda s: [labels])
            picked = f.mul(dd, grad(softmax, f.mul(f.fill_like(dloss, 1.0), unit, dloss)), softmax)
            columns.append(f.op("all_reduce", {"x": f.sum_along(picked, -1)}, softmax,
                                {"ring_id": g.attr("ring_id"), "reduce_type": 0}, slot="out",
                                dims=lambda shape: [*shape[:-1], 1]))
        f.into(wanted, "concat", {"X": columns}, {"axis": -1})
    wanted = first(g.IG("Softmax"))
    if wanted != EMPTY_VAR:
        f.into(wanted, "elementwise_sub", {"X": grad(dd, dloss), "Y": grad(f.fill_like(softmax, 0.0), dloss)})
    return f.ops


defgrad("c_softmax_with_multi_label_cross_entropy_grad", grad=_multi_label,
        no_grad_inputs=["Label", "SmoothWeight"])

"""Second derivatives of gradc.ops.collective's grad ops, composite so third derivatives follow. The collectives'
grads are collectives (each with its own maker); the two grad ops of their own:

- c_embedding_grad scatters dOut into W's rows: linear in dOut, d/d(dOut) is c_embedding of ddW (``linear``);
- c_softmax_with_cross_entropy_grad G = (Softmax - one_hot(Label)) dLoss is linear in dLoss and affine in Softmax:
  d/d(dLoss) = the sum over every rank's classes of ddLogits G(dLoss = 1) (an all_reduce of each rank's sum),
  d/d(Softmax) = G(Softmax = ddLogits) - G(Softmax = 0).

c_softmax_with_multi_label_cross_entropy_grad refuses (nor has Paddle a second derivative of it): d/d(dLoss) needs
each label's pick of ddLogits on the rank that holds its class, which no op gradc has gives yet.
"""

from __future__ import annotations

from ..errors import GradError
from ..registry import defgrad
from . import collective  # noqa: F401  (registers the grad ops given makers here)
from .composite import linear
from .nn_double import softmax_cross_entropy_again

defgrad("c_embedding_grad", grad=linear("c_embedding", x="W", passed=("Ids",)), no_grad_inputs=["W", "Ids"])


def _softmax_cross_entropy(g):
    """As softmax_with_cross_entropy's, each rank's classes summed locally and then over the ranks."""
    def over_ranks(f, wanted, product):
        f.into(wanted, "all_reduce", {"x": f.sum_along(product, -1)}, {"ring_id": g.attr("ring_id"), "reduce_type": 0},
               slot="out")

    return softmax_cross_entropy_again(g, over_ranks)


defgrad("c_softmax_with_cross_entropy_grad", grad=_softmax_cross_entropy, no_grad_inputs=["Label"])


def _multi_label_refused(g):
    raise GradError(f"{g.fwd.type}: gradc does not differentiate it (a second derivative of "
                    f"c_softmax_with_multi_label_cross_entropy, which Paddle has none of either)")


defgrad("c_softmax_with_multi_label_cross_entropy_grad", grad=_multi_label_refused)

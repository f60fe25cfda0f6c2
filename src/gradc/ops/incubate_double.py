"""Second derivatives of gradc.ops.incubate's grad ops, composite so third derivatives follow. Each grad op is
linear in dOut:

- partial_sum_grad, partial_concat_grad and rank_attention_grad are their forwards' adjoints (in X, in RankParam):
  d/d(dOut) is the forward op on ddX (``linear``);
- shuffle_batch_grad gathers dOut's rows at ShuffleIdx, written again with gather and differentiated;
- batch_fc_grad (dInput = dOut W^T, dW = Input^T dOut, dBias = dOut summed over rows) is written again with matmul_v2
  and reduce_sum and differentiated;
- fused_seqpool_cvm_grad spreads dOut's embedding columns over each sequence's rows: d/d(dOut) pools ddX's embedding
  columns again (pad value 0), with zeros in the count columns where use_cvm keeps them.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from . import incubate  # noqa: F401  (registers the grad ops given makers here)
from .composite import Formula, expansion, first, linear

defgrad("partial_sum_grad", grad=linear("partial_sum"), no_grad_inputs=["X"])
defgrad("partial_concat_grad", grad=linear("partial_concat"), no_grad_inputs=["X"])
defgrad("rank_attention_grad", grad=linear("rank_attention", x="RankParam", passed=("X", "RankOffset"),
                                           extra=("InputHelp", "InsRank")),
        no_grad_inputs=["X", "RankOffset", "RankParam", "InputHelp", "InsRank"])


@expansion
def _shuffle_batch_grad(f, g):
    """X@GRAD = dOut's rows (every dim but the last flattened) at ShuffleIdx."""
    dout, index = first(g.I("Out@GRAD")), first(g.I("ShuffleIdx"))
    shape = g.shape(dout)
    rows = dout if len(shape) == 2 else f.op("reshape2", {"X": dout}, dout, {"shape": [-1, shape[-1]]},
                                             more={"XShape": f.xshape(dout)}, dims=lambda s: [-1, s[-1]])
    picked = f.op("gather", {"X": rows, "Index": index}, rows)
    return {"X@GRAD": picked if len(shape) == 2 else f.shaped_like(picked, dout)}


defgrad("shuffle_batch_grad", grad=_shuffle_batch_grad, no_grad_inputs=["ShuffleIdx"])


@expansion
def _batch_fc_grad(f, g):
    x, w, bias, dout = (first(g.I(slot)) for slot in ("Input", "W", "Bias", "Out@GRAD"))
    return {"Input@GRAD": f.op("matmul_v2", {"X": dout, "Y": w}, x, {"trans_x": False, "trans_y": True}),
            "W@GRAD": f.op("matmul_v2", {"X": x, "Y": dout}, w, {"trans_x": True, "trans_y": False}),
            "Bias@GRAD": f.reduce("reduce_sum", dout, [1], bias)}


defgrad("batch_fc_grad", grad=_batch_fc_grad, no_grad_inputs=["Bias"])


def _seqpool_cvm_double_grad(g):
    f, offset = Formula(g), g.attr("cvm_offset")
    for x, ddx, wanted in zip(g.I("X"), g.OG("X@GRAD"), g.IG("Out@GRAD")):
        if wanted == EMPTY_VAR or ddx is None or ddx == EMPTY_VAR:
            continue
        pooled = f.op("fused_seqpool_cvm", {"X": [ddx], "CVM": first(g.I("CVM"))}, x,
                      {"pooltype": "SUM", "pad_value": 0.0, "use_cvm": False, "cvm_offset": offset},
                      dims=lambda s: [-1, s[1] - offset])
        if g.attr("use_cvm"):   # the count columns of Out@GRAD reach no X@GRAD: zeros
            f.into(wanted, "pad", {"X": pooled}, {"paddings": [0, 0, offset, 0], "pad_value": 0.0})
        else:
            f.into(wanted, "assign", {"X": pooled})
    return f.ops


defgrad("fused_seqpool_cvm_grad", grad=_seqpool_cvm_double_grad, no_grad_inputs=["X", "CVM"])

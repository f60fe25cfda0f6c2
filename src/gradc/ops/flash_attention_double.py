"""Second derivatives of gradc.ops.flash_attention. flash_attn_grad (and flash_attn_qkvpacked_grad, qkv sliced first) is
written again as the attention in plain differentiable ops (transpose2, reshape2, matmul_v2 over [b, hk, h / hk, s,
d] so grouped heads broadcast, scale, elementwise_add of attn_mask or of the causal -inf above the diagonal, softmax)
and their grad ops (gradc.ops.composite.differentiate), so its own grad and the third derivatives follow;
softmax_lse, seed_offset and out get no gradient (the expansion recomputes them). flash_attn_unpadded_grad,
flashmask_attention_grad and flash_attn_varlen_qkvpacked_grad, which mask by run-time values, have their makers in
gradc.ops.flash_attention_masked_double.
memory_efficient_attention_grad is flash_attn_grad's expansion with its scale attribute and its bias (whose grad it
differentiates too)."""

from __future__ import annotations

import math

from ..errors import GradError
from ..registry import defgrad
from . import flash_attention  # noqa: F401  (registers the grad ops given makers here)
from .composite import differentiate, expansion, first
from .interp import float32


def reshaped(f, x: str, shape: list[int]) -> str:
    return f.op("reshape2", {"X": x}, x, {"shape": shape}, more={"XShape": f.xshape(x)},
                dims=lambda s: [s[i] if d == 0 else d for i, d in enumerate(shape)])


def _transposed(f, x: str, perm: list[int]) -> str:
    return f.op("transpose2", {"X": x}, x, {"axis": perm}, more={"XShape": f.xshape(x)},
                dims=lambda s: [s[i] for i in perm])


def _heads_first(f, x: str, groups: int) -> str:
    """[b, s, heads, d] -> [b, heads / groups, groups, s, d] (b and s as they are at run time)."""
    _, _, heads, d = f.g.shape(x)
    return reshaped(f, _transposed(f, x, [0, 2, 1, 3]), [0, heads // groups, groups, -1, d])


def _mask_by_groups(f, g, mask: str, kv_heads: int, groups: int, sq: int, sk: int) -> str:
    """attn_mask as the scores' [b, hk, groups, sq, sk] (or [.., 1, 1, ..] of one head), to add to them: a 4-D mask
    [b, h, sq, sk] with its heads split last (its sizes as they are at run time), another by a reshape that needs
    sq and sk."""
    shape = g.shape(mask)
    if len(shape) == 4 and shape[1] == 1:
        return f.op("unsqueeze2", {"X": mask}, mask, {"axes": [1]}, more={"XShape": f.xshape(mask)},
                    dims=lambda s: [s[0], 1, *s[1:]])
    if len(shape) == 4:
        split = reshaped(f, _transposed(f, mask, [0, 2, 3, 1]), [0, 0, 0, kv_heads, groups])
        return _transposed(f, split, [0, 3, 4, 1, 2])
    if sq < 0 or sk < 0:
        raise GradError(f"{g.fwd.type}: a second derivative needs the sequence lengths known with a {len(shape)}-D "
                        f"attn_mask, got {shape}")
    return reshaped(f, mask, [-1, *([kv_heads, groups] if shape[-3] > 1 else [1, 1]), sq, sk])


def attention_ops(f, g, q: str, k: str, v: str, scale: float | None = None, mask_slot: str = "attn_mask",
                  masked=None) -> str:
    """flash_attn's out of q, k, v (and the grad op's mask_slot) in plain ops, scale 1 / sqrt(d) as a float unless
    given; ``masked(f, scores, sq, sk)``, when given, replaces the causal mask; returns out's var."""
    shapes = [g.shape(x) for x in (q, k, v)]
    if any(shape is None or len(shape) != 4 or any(d < 0 for d in shape[2:]) for shape in shapes):
        raise GradError(f"{g.fwd.type}: q, k and v need known head counts and head dims for a second derivative, "
                        f"got {shapes}")
    (_, sq, heads, d), (_, sk, kv_heads, _), (*_, dv) = shapes
    groups = heads // kv_heads
    qt, kt, vt = _heads_first(f, q, groups), _heads_first(f, k, 1), _heads_first(f, v, 1)
    scores = f.op("matmul_v2", {"X": qt, "Y": kt}, qt, {"trans_x": False, "trans_y": True},
                  dims=lambda s: [*s[:3], sq, sk])
    scores = f.scale(scores, float32(1.0 / math.sqrt(d)) if scale is None else scale)
    mask = first(g.I(mask_slot)) if mask_slot else None
    if mask is not None:
        scores = f.add(scores, _mask_by_groups(f, g, mask, kv_heads, groups, sq, sk), scores)
    if masked is not None:
        scores = masked(f, scores, sq, sk)
    elif g.attr("causal"):
        above = f.op("tril_triu", {"X": f.fill_like(scores, -math.inf)}, scores, {"diagonal": 1, "lower": False})
        scores = f.add(scores, above, scores)
    weights = f.op("softmax", {"X": scores}, scores, {"axis": -1})
    context = f.op("matmul_v2", {"X": weights, "Y": vt}, weights, {"trans_x": False, "trans_y": False},
                   dims=lambda s: [*s[:4], dv])
    return _transposed(f, reshaped(f, context, [0, heads, -1, dv]), [0, 2, 1, 3])


def grads_again(f, g, out: str, inputs: dict[str, str], out_slot: str = "out") -> dict[str, str]:
    """The grad op's outputs: out's backward at out_slot@GRAD to the grad op's differentiated inputs."""
    targets = {var: g.tmp(var) for var in inputs.values()}
    f.ops += differentiate(g, f.ops, {out: first(g.I(f"{out_slot}@GRAD"))}, targets)
    return {f"{slot}@GRAD": targets[var] for slot, var in inputs.items()}


@expansion
def _flash_attn_again(f, g):
    inputs = {slot: first(g.I(slot)) for slot in ("q", "k", "v")}
    return grads_again(f, g, attention_ops(f, g, *inputs.values()), inputs)


@expansion
def _packed_again(f, g):
    """qkv [b, s, h / hk + 2, hk, d] sliced into q [b, s, h, d], k and v [b, s, hk, d], then as flash_attn."""
    qkv = first(g.I("qkv"))
    shape = g.shape(qkv)
    if shape is None or len(shape) != 5 or any(d < 0 for d in shape[2:]):
        raise GradError(f"{g.fwd.type}: qkv needs known head counts and head dims for a second derivative, got "
                        f"{shape}")
    _, _, groups, kv_heads, d = shape
    q = reshaped(f, f.slice(qkv, 2, 0, groups - 2), [0, 0, (groups - 2) * kv_heads, d])
    k, v = (reshaped(f, f.slice(qkv, 2, i, i + 1), [0, 0, kv_heads, d]) for i in (groups - 2, groups - 1))
    return grads_again(f, g, attention_ops(f, g, q, k, v), {"qkv": qkv})


@expansion
def _mea_again(f, g):
    """memory_efficient_attention_grad as flash_attn's expansion: its scale attribute (< 0: 1 / sqrt(d) as a float),
    bias added as attn_mask is (and differentiated: bias@GRAD too), one head count."""
    inputs = {slot: first(g.I(slot)) for slot in ("query", "key", "value", "bias") if first(g.I(slot)) is not None}
    scale = g.attr("scale")
    scale = float32(1.0 / math.sqrt(g.shape(inputs["query"])[-1])) if scale < 0 else float32(scale)
    out = attention_ops(f, g, inputs["query"], inputs["key"], inputs["value"], scale, "bias")
    return grads_again(f, g, out, inputs, "output")


defgrad("flash_attn_grad", grad=_flash_attn_again,
        no_grad_inputs=["out", "softmax_lse", "seed_offset", "attn_mask"])
defgrad("flash_attn_qkvpacked_grad", grad=_packed_again,
        no_grad_inputs=["out", "softmax_lse", "seed_offset", "attn_mask"])
defgrad("memory_efficient_attention_grad", grad=_mea_again,
        no_grad_inputs=["output", "logsumexp", "seed_and_offset", "cu_seqlens_q", "cu_seqlens_k"])

"""Every first-order case of one op over fed inputs again as a second-order case (second_order.second_order: the op,
its backward, the grad op's maker checked by central differences), where no second-order case checks its grad op
with the same attributes yet: so a grad op's maker is checked in each attribute variant its op is.

Left out, each with why (LEFT_OUT, _left_out): grad ops that refuse in that variant, as their makers say
(docs/higher-order.md), ops whose own second-order cases build programs of their own, and the slowest.
"""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np

from gradc import registry

from . import Case
from .second_order import second_order

LEFT_OUT = {
    "lstm": "LoD steps known at run time only: lstm_grad refuses",
    "gru": "LoD steps known at run time only: gru_grad refuses",
    "yolov3_loss": "its second-order cases (yolo_loss.py) pick the grads they read",
    "select_input": "control flow: second_order.py cannot build it; control_flow.py checks it",
    "rnn": "slow (its unrolled second backward is ~1000 ops); second_order_rnn.py checks 10 variants",
    "correlation": "slow (2 s a case); incubate.py checks its second order",
    "psroi_pool": "slow (1 s a case); roi.py checks its second order",
    "roi_align": "slow (0.5 s a case); roi.py checks its second order",
    "moe_gate_dispatch": "moe_gate_dispatch_grad refuses (moe.py lists it as refused)",
    "moe_gate_dispatch_permute": "moe_gate_dispatch_permute_grad refuses (moe.py lists it as refused)",
    "moe_gate_dispatch_auto": "moe_gate_dispatch_auto_grad refuses (moe.py lists it as refused)",
    "flash_attn_unpadded": "flash_attn_unpadded_grad refuses (flash_attention.py lists it as refused)",
    "flashmask_attention": "flashmask_attention_grad refuses (flash_attention.py lists it as refused)",
    "flash_attn_varlen_qkvpacked": "its grad refuses (flash_attention.py lists it as refused)",
    "flash_attn_v3_varlen": "its grad refuses (flash_attention_v3.py lists it as refused)",
    "flashmask_attention_v2": "its grad refuses (flash_attention_v3.py lists it as refused)",
    "sparse_attention": "sparse_attention_grad refuses (sparse_attention.py lists it as refused)",
    "resnet_unit": "resnet_unit_grad refuses (resnet_fusion.py lists it as refused)",
    "resnet_basic_block": "resnet_basic_block_grad refuses (resnet_fusion.py lists it as refused)",
    "c_softmax_with_multi_label_cross_entropy": "its grad op refuses (collective.py lists it as refused)",
}


def _left_out(case: Case) -> str | None:
    """Why a variant's second derivative is not checked here, or None."""
    attrs, arrays = case.attrs, [a for v in case.inputs.values() for a in (v if isinstance(v, list) else [v])]
    if case.op in LEFT_OUT:
        return LEFT_OUT[case.op]
    if case.op == "elementwise_div" and any(np.iscomplexobj(a) for a in arrays):
        return "elementwise_div_grad refuses complex values"
    if attrs.get("is_test") and case.op in ("fake_quantize_dequantize_moving_average_abs_max",
                                            "moving_average_abs_max_scale"):
        return "is_test writes no OutScale, which second_order.py weights"
    if case.op == "determinant" and any(np.linalg.cond(a) > 1e12 for a in arrays):
        return "a singular matrix: determinant_grad's maker needs an inverse"
    if case.op == "polygamma" and attrs.get("n", 0) >= 5:
        return "values of 1e5 at x ~ -70 swamp loss2's central differences in rounding"
    return None


def _first_order_cases() -> list[Case]:
    package = __name__.rsplit(".", 1)[0]
    here = __name__.rsplit(".", 1)[1]
    modules = [importlib.import_module(f"{package}.{m.name}") for m in pkgutil.iter_modules(
        importlib.import_module(package).__path__) if m.name != here]
    return [case for module in modules for case in module.CASES]


def _grad_type(op: str) -> str | None:
    maker = registry.get(op).grad
    return maker.type_for(registry.get(op)) if hasattr(maker, "type_for") else None


def _variants() -> list[Case]:
    cases = _first_order_cases()
    checked = {(case.op, repr(sorted(case.attrs.items()))) for case in cases if case.op.endswith("_grad")}
    variants = []
    for case in cases:
        if case.program is not None or case.op.endswith("_grad") or not registry.get(case.op).differentiable:
            continue
        grad_type = _grad_type(case.op) or f"{case.op} (its maker)"
        key = (grad_type, repr(sorted(case.attrs.items())))
        if key in checked or _left_out(case):
            continue
        checked.add(key)
        wrt = sorted({name.rstrip("0123456789") for name in case.wrt}) if case.wrt else None
        variants.append(second_order(case.op, case.inputs, case.attrs, counts=case.outputs, wrt=wrt,
                                     grad_type=grad_type, eps=case.eps, rtol=max(case.rtol, 1e-5), atol=case.atol))
    return variants


CASES = _variants()

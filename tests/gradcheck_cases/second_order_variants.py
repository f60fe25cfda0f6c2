"""Every first-order case of one op over fed inputs again as a second-order case (second_order.second_order: the op,
its backward, the grad op's maker checked by central differences), where no second-order case checks its grad op
with the same attributes yet: so a grad op's maker is checked in each attribute variant its op is.

Left out, each with why (_left_out): variants second_order.py cannot build or check, with where else they
are checked, and the slowest (tests/test_higher_order_refusals.py keeps the reasons true).
"""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np

from gradc import registry

from . import Case
from .second_order import second_order


def _left_out(case: Case) -> str | None:
    """Why a variant's second derivative is not checked here, or None."""
    attrs, arrays = case.attrs, [a for v in case.inputs.values() for a in (v if isinstance(v, list) else [v])]
    if case.op in ("resnet_unit", "resnet_basic_block") and not attrs.get("has_shortcut"):
        return ("second_order.py fetches every output, and without a shortcut the op writes no ConvZ (Conv3); "
                "resnet_fusion.py's second-order cases check these variants")
    if case.op == "rnn" and (attrs.get("mode") in ("LSTM", "GRU") or attrs.get("num_layers", 1) > 1):
        return ("slow (0.3 to 1.4 s a case: the unrolled second backward grows with the layers, directions and gates); "
                "second_order_rnn.py checks 10 variants")
    if attrs.get("is_test") and case.op in ("fake_quantize_dequantize_moving_average_abs_max",
                                            "moving_average_abs_max_scale"):
        return "is_test writes no OutScale, which second_order.py weights"
    if case.op == "determinant" and any(np.max(np.linalg.cond(a)) > 1e12 for a in arrays):
        return "a singular matrix: determinant_grad's maker needs an inverse"
    if case.op == "polygamma" and attrs.get("n", 0) >= 5:
        return "values of 1e5 at x ~ -70 swamp loss2's central differences in rounding"
    if case.op == "py_func":
        return ("its grad op calls the backward function, which has none of its own (backward_callable_id -1, as "
                "Paddle writes it): its maker refuses")
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

"""What gradc does not differentiate again stays written down truly: second_order_variants.py's left-out variants
still fail where their reason says they cannot be checked, and docs/higher-order.md's "What still refuses" names
every grad op whose maker refuses (the registry's REFUSED cases) and no op that does not exist."""

import re
from pathlib import Path

import pytest

from gradc import registry
from gradc.errors import GradcError
from gradc.gradcheck import check_program
from gradcheck_cases import refused
from gradcheck_cases.second_order import second_order
from gradcheck_cases.second_order_variants import _first_order_cases, _grad_type, _left_out

DOC = Path(__file__).parent.parent / "docs" / "higher-order.md"


def _left_out_unchecked():
    """The left-out first-order cases whose reason is not their cost ("slow" ones are checked elsewhere)."""
    return [(case, why) for case in _first_order_cases() if case.program is None and not case.op.endswith("_grad")
            and (why := _left_out(case)) and not why.startswith("slow")]


LEFT_OUT = _left_out_unchecked()


@pytest.mark.parametrize("case, why", LEFT_OUT, ids=[f"{c.id}: {w[:30]}" for c, w in LEFT_OUT])
def test_a_left_out_variant_still_cannot_be_checked(case, why):
    """Were one to pass at every element, its reason would be stale and the variant belongs in the check."""
    wrt = sorted({name.rstrip("0123456789") for name in case.wrt}) if case.wrt else None
    with pytest.raises(GradcError):
        built = second_order(case.op, case.inputs, case.attrs, counts=case.outputs, wrt=wrt,
                             grad_type=_grad_type(case.op) or f"{case.op} (its maker)", eps=case.eps,
                             rtol=max(case.rtol, 1e-5), atol=case.atol)
        check_program(**built.program(), eps=built.eps, rtol=built.rtol, atol=built.atol)


def _still_refuses() -> str:
    text = DOC.read_text()
    start = text.index("What still refuses:")
    return text[start:text.index("\n\n**", start)]


def test_the_docs_name_every_grad_op_that_refuses_a_higher_derivative():
    named = set(re.findall(r"`([a-z0-9_]+)`", _still_refuses()))
    refusing = {case.op for case in refused() if "_grad" in case.op}   # none refuses in every configuration now
    assert not refusing - named, f"refusing grad ops the docs' list leaves out: {sorted(refusing - named)}"
    unknown = sorted(named - set(registry.OPS))
    assert not unknown, f"the docs' list names ops gradc does not have: {unknown}"

"""Every op gradc registers has Paddle 3.3.1's slots (names, duplicable, dispensable, extra outputs) and non-extra
attributes (name, wire type, default), and declares nothing Paddle lacks (tests/conformance.py).
Differences not fixed yet are listed in tests/data/paddle/conformance_pending.txt: the test fails for
a new difference and for a listed one that is gone, so the list only shrinks."""

import conformance
from gradc import registry


def test_op_definitions_match_paddle():
    found, pending = conformance.findings(), conformance.pending()
    new, fixed = sorted(found - pending), sorted(pending - found)
    assert not new, "gradc's op definitions differ from Paddle's:\n" + "\n".join(new)
    assert not fixed, "fixed: remove from conformance_pending.txt:\n" + "\n".join(fixed)


def test_the_check_catches_a_wrong_definition():
    """Renaming an attribute, dropping a slot flag, or changing a default is each reported."""
    opdef = registry.get("softmax")
    saved = dict(opdef.attrs), dict(opdef.attr_types)
    opdef.attrs["dim"], opdef.attr_types["dim"] = opdef.attrs.pop("axis"), opdef.attr_types.pop("axis")
    try:
        found = conformance.findings()
        assert {"softmax: attr axis missing", "softmax: attr dim: Paddle has no such attribute"} <= found
    finally:
        opdef.attrs, opdef.attr_types = saved
    concat = registry.get("concat")
    slot = concat.slots["X"]
    concat.slots["X"] = type(slot)("X")
    registry.get("leaky_relu").attrs["alpha"] = 0.2
    try:
        found = conformance.findings()
        assert "concat: X duplicable: gradc False, Paddle True" in found
        assert "leaky_relu: attr alpha default: gradc 0.2, Paddle 0.019999999552965164" in found
    finally:
        concat.slots["X"] = slot
        registry.get("leaky_relu").attrs["alpha"] = 0.02

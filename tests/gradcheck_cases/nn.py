"""Cases for this op family."""

from . import Case, rng  # noqa: F401

CASES = []

"""The CLI contract on hostile inputs (tests/fuzzing.py): mutated copies of real Paddle programs, feeds
and parameter files through every command end in success or one `gradc: error:` line, never an internal
error, a traceback, a partial output, a hang, a memory blowup or an invalid input accepted. `make fuzz`
runs the same cases by the ten thousand."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzzing


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(st.integers(min_value=0, max_value=2**32))
def test_hostile_inputs_keep_the_cli_contract(seed):
    case = fuzzing.random_case(seed)
    outcome = fuzzing.run_case(case, timeout=60)
    verdict = fuzzing.verdict(case, outcome)
    assert verdict not in fuzzing.BAD, f"seed {seed} ({case.label}): {verdict}: {outcome.stderr[-400:]!r}"


@pytest.mark.parametrize("mutation, expected", [
    ("internal", "internal"), ("two lines", "multiline"), ("accepted", "accepted_invalid"), ("clean", "error")])
def test_the_verdicts_can_fail(mutation, expected):
    """The judge itself: each breach of the contract is recognised."""
    case = fuzzing.Case({}, ["run"], must_fail=mutation == "accepted")
    stderr = {"internal": "gradc: internal error: KeyError: 'x'", "two lines": "gradc: error: a\nmore",
              "accepted": "", "clean": "gradc: error: bad file"}[mutation]
    outcome = fuzzing.Outcome(0 if mutation == "accepted" else 1, stderr, 0.1, False)
    assert fuzzing.verdict(case, outcome) == expected

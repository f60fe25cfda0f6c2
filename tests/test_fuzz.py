"""The CLI contract on hostile inputs (tests/fuzzing.py): mutated copies of real Paddle programs, feeds
and parameter files through every command end in success or one `gradc: error:` line, never an internal
error, a traceback, a partial output, a hang, a memory blowup or an invalid input accepted. `make fuzz`
runs the same cases by the ten thousand."""

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzzing
import fuzzing_pir
import gradc
from gradc.pir import load_pir


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


@pytest.mark.parametrize("kind", fuzzing_pir.KINDS)
def test_every_pir_mutation_loads_or_is_refused_in_one_error(kind, monkeypatch):
    """Each JSON-level mutation of a PIR program (control flow and the fused rnn included) gives a program
    or a FormatError; one that must be refused is."""
    monkeypatch.setattr(fuzzing_pir, "KINDS", [kind])
    for seed, case in enumerate(("cond", "lstm", "while_loop")):
        data, must_fail, _ = fuzzing_pir.mutate_pir((fuzzing.DATA / "pir" / case / "forward.json").read_bytes(),
                                                   random.Random(seed))
        try:
            load_pir(data)
        except gradc.FormatError as error:
            assert "\n" not in str(error)
        else:
            assert must_fail is None, f"{case}: a {kind} mutation that must be refused loaded"

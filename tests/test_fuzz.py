"""The CLI contract on hostile inputs (tests/fuzzing.py): mutated copies of real Paddle programs, feeds
and parameter files through every command end in success or one `gradc: error:` line, never an internal
error, a traceback, a partial output, a hang, a memory blowup or an invalid input accepted. `make fuzz`
runs the same cases by the ten thousand."""

import copy
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzzing
import fuzzing_pir
import gradc
from gradc.pir import load_pir
from pir_fixtures import program_file, train_and_run


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(st.integers(min_value=0, max_value=2**32))
def test_hostile_inputs_keep_the_cli_contract(seed):
    case = fuzzing.random_case(seed)
    outcome = fuzzing.run_case(case, timeout=60)
    verdict = fuzzing.verdict(case, outcome)
    assert verdict not in fuzzing.BAD, f"seed {seed} ({case.label}): {verdict}: {outcome.stderr[-400:]!r}"


@pytest.mark.parametrize("seed", [921, 3283, 8455])
def test_a_check_with_nothing_to_check_says_one_line_without_the_compiles_warnings(seed):
    """`make fuzz`'s breaches of 2026-12-03: `check` of a mutated program whose loss no parameter reaches printed the
    compile's warnings (a per-example loss, parameters without a gradient) before its error line."""
    case = fuzzing.random_case(seed)
    outcome = fuzzing.run_case(case, timeout=60)
    assert case.args[0] == "check" and "nothing to check" in outcome.stderr
    assert fuzzing.verdict(case, outcome) == "error", outcome.stderr


@pytest.mark.parametrize("mutation, expected", [
    ("internal", "internal"), ("two lines", "multiline"), ("accepted", "accepted_invalid"), ("clean", "error")])
def test_the_verdicts_can_fail(mutation, expected):
    """The judge itself: each breach of the contract is recognised."""
    case = fuzzing.Case({}, ["run"], must_fail=mutation == "accepted")
    stderr = {"internal": "gradc: internal error: KeyError: 'x'", "two lines": "gradc: error: a\nmore",
              "accepted": "", "clean": "gradc: error: bad file"}[mutation]
    outcome = fuzzing.Outcome(0 if mutation == "accepted" else 1, stderr, 0.1, False)
    assert fuzzing.verdict(case, outcome) == expected


@pytest.mark.parametrize("code, stderr, stdout, expected", [
    (1, "gradc: error: bad file", "", "error"), (1, "gradc: error: bad file", '{"ok": true}\n', "partial_output"),
    (1, "", '{"ok": false}\n', "ok"), (1, "", '{"ok": true}\n', "bad_json"), (1, "", "", "bad_json"),
    (0, "", '{"ok": true}\n', "ok"), (0, "", '{"value": NaN}\n', "bad_json"), (0, "", '{"ok": true}', "bad_json")])
def test_the_json_verdicts_can_fail(code, stderr, stdout, expected):
    """--json: stdout empty after an error, else one strict JSON object whose verdict an exit 1 without an error
    line must be."""
    case = fuzzing.Case({}, ["verify", "forward.pb", "--json"])
    assert fuzzing.verdict(case, fuzzing.Outcome(code, stderr, 0.1, False, stdout=stdout)) == expected


STEP, END = '{"event": "step", "step": 1}\n', '{"event": "end", "steps": 1}\n'


@pytest.mark.parametrize("code, stderr, stdout, expected", [
    (0, "", STEP + END, "ok"), (0, "", STEP, "bad_json"), (0, "", END + STEP, "bad_json"), (0, "", "", "bad_json"),
    (1, "gradc: error: step 2: NaN", STEP, "error"), (1, "gradc: error: bad file", "", "error"),
    (1, "gradc: error: cannot write", STEP + END, "partial_output"), (0, "", '{"loss": NaN}\n' + END, "bad_json")])
def test_the_json_lines_verdicts_of_train_can_fail(code, stderr, stdout, expected):
    """train --json: strict JSON lines ending in its "end" object; after an error the lines so far and no end."""
    case = fuzzing.Case({}, ["train", "train.pb", "--json"])
    assert fuzzing.verdict(case, fuzzing.Outcome(code, stderr, 0.1, False, stdout=stdout)) == expected


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


# one coverage row each of the rows with hooks (which read attributes before any check) and of ops with folds
HOOKED = {"pir_layers/any": "1.any", "pir_layers/unique_all": "1.unique", "pir_layers/arange_float": "1.arange",
          "pir_layers/tril_diagonal": "1.tril", "pir_layers/bincount": "1.bincount", "pir_layers/roll": "1.roll",
          "pir_layers/repeat_interleave_tensor": "1.repeat_interleave_with_tensor_index",
          "translated_reshape_v1_tensor": "1.legacy_reshape", "translated_fc_plain": "onednn_op.fc",
          "translated_fill_constant_batch_size_like_v1": "1.full_batch_size_like"}


def _op_mutations(op: dict):
    """Each attribute dropped or of another kind, an operand dropped or doubled."""
    for k, attr in enumerate(op.get("A", [])):
        yield f"drop {attr['N']}", lambda o, k=k: o["A"].pop(k)
        for kind, value in (("0.a_i32", 7), ("0.a_array", []), ("0.a_str", "x"), ("0.a_f32", float("nan"))):
            yield f"{attr['N']} as {kind}", lambda o, k=k, kind=kind, value=value: o["A"][k].update(
                AT={"#": kind, "D": value})
    yield "an operand fewer", lambda o: o["I"].pop()
    yield "an operand more", lambda o: o["I"].append(o["I"][0])


@pytest.mark.parametrize("case", sorted(HOOKED))
def test_a_mutated_op_of_the_hooked_rows_loads_or_is_refused_in_one_error(case):
    source = json.loads(program_file(case).read_bytes())
    ops = source["program"]["regions"][0]["blocks"][0]["ops"]
    first = next(i for i, op in enumerate(ops) if op["#"] == HOOKED[case])
    for label, mutate in _op_mutations(ops[first]):
        doc = copy.deepcopy(source)
        mutate(doc["program"]["regions"][0]["blocks"][0]["ops"][first])
        try:
            train_and_run(load_pir(json.dumps(doc).encode()), case)
        except gradc.GradcError as error:
            assert "\n" not in str(error).strip(), label


def test_train_data_of_a_classifier_without_its_scores_is_one_error(tmp_path):
    """Found by the train --json scenarios: the labels' check before the first step indexed the empty Logits slot."""
    from cli_inprocess import gradc_cli

    sgd = fuzzing.DATA / "train_sgd"
    program = gradc.load(sgd / "train.pb")
    loss_op = next(op for op in program.global_block.ops if op.type == "softmax_with_cross_entropy")
    loss_op.inputs["Logits"] = []
    gradc.save(program, tmp_path / "train.pb")
    done = gradc_cli("train", tmp_path / "train.pb", "--startup", sgd / "startup.pb", "--data", sgd / "feed.npz",
                     "--batch-size", "8", "--json")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [f"gradc: error: data '{sgd / 'feed.npz'}', step 1 (epoch 1, batch 1): block 0, "
                                        "op 5 (softmax_with_cross_entropy): the required input slot 'Logits' is empty"]

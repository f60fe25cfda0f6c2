"""What straight-line code takes for granted while ``sure`` holds (gradc.executor.facts): parameters read once a run
and checked together, ops whose inputs are known arrays skipping their rank tests and result checks, and every op
checking again once a parameter does not fit or an op has failed over to its kernel."""

import itertools

import numpy as np
import pytest

import gradc
from gradc.executor import executor as executor_module
from gradc.executor import straight
from gradc.executor.direct.inline import GUARD, ROWS, _row_inputs, row_code, slot_token
from gradc.executor.facts import RULES, Unwritten
from gradc.executor.scope import MISSING
from test_direct_steps import _mlp
from test_straight_code import _assert_same, _plan, _straight_and_loop


def _every_var(net):
    return sorted({name for op in net.program.global_block.ops for name in op.output_names()} - {"@EMPTY@"})


def _block(source: str, op: str) -> str:
    """The code of one op of the generated source (from its ``# idx type`` line to the next op's)."""
    start = source.index(f" {op}\n")
    end = source.find("    # ", start + 1)
    return source[start:end if end > 0 else None]


def test_known_inputs_skip_rank_tests_and_result_checks_while_sure(monkeypatch):
    monkeypatch.setattr(executor_module, "STRAIGHT_AFTER_RUNS", 0)
    net, scope, feed = _mlp()
    executor = gradc.Executor()
    executor.run(net.program, feed, [net.loss], scope)
    source = straight.source_text(_plan(executor, net.program))
    first_mul, second_mul = _block(source, "0 mul"), _block(source, "3 mul")
    assert "if sure:" not in first_mul   # x is fed: nothing is known of it
    trusted = second_mul.split("if sure:")[1].split("else:")[0]
    assert "ndim" not in trusted and "ok = True" in trusted and "_Y = C[" in second_mul
    assert "if a['axis'] == -1 or a['axis'] == 1:" in _block(source, "4 elementwise_add")
    assert "sure = False" in second_mul.split("if ok:")[1]


@pytest.mark.parametrize("edit", ["float64 bias", "2-d bias", "bias in the feed", "axis"])
def test_a_parameter_or_attribute_the_code_did_not_assume_is_the_kernels_bit_for_bit(monkeypatch, edit):
    net, scope, feed = _mlp()
    bias = scope.vars["fc_0.b_0"]
    if edit == "float64 bias":   # put in unchecked: the bias add's kernel refuses it as the loop does
        scope.vars["fc_0.b_0"] = bias.astype(np.float64)
    elif edit == "2-d bias":
        scope.vars["fc_0.b_0"] = bias.reshape(1, -1)
    elif edit == "bias in the feed":
        feed = dict(feed, **{"fc_0.b_0": bias + 1})
    else:   # the first bias add fails over to its kernel (the default axis): sure is False from there on
        del net.program.global_block.ops[1].attrs["axis"]
    fetch = _every_var(net)
    try:
        straight_runs, looped = _straight_and_loop(monkeypatch, net.program, feed, fetch, scope)
    except gradc.ExecutionError as exc:
        assert edit == "float64 bias" and "computed 'fc_0.tmp_1' as float64" in str(exc)
        with pytest.raises(gradc.ExecutionError) as looped_error:
            gradc.Executor().run(net.program, feed, fetch, scope)
        assert str(looped_error.value) == str(exc)
        return
    _assert_same(straight_runs, looped, fetch)


def test_parameters_are_read_once_a_run_from_the_run_then_the_caller_then_further_out():
    w, b = np.ones((2, 2), np.float32), np.zeros(2, np.float32)
    read = Unwritten(["w", "b"], [w.dtype, b.dtype], [2, 1])
    outer = gradc.Scope()
    outer.vars["b"] = b
    inner = outer.child().child()
    assert read.read({}, {"w": w, "b": b}, inner) == ([w, b], True)
    values, sure = read.read({"w": w}, {}, inner)
    assert values[0] is w and values[1] is b and sure
    assert read.read({}, {"w": w.astype(np.float64), "b": b}, inner)[1] is False
    assert read.read({}, {"w": w[0], "b": b}, inner)[1] is False
    values, sure = read.read({}, {"b": b}, gradc.Scope())
    assert values[0] is MISSING and not sure


_SHAPES = [(), (3,), (1,), (2, 3), (1, 3), (2, 2, 3)]   # ranks 0-3, with the shapes a bias add's rows match
_ATTRS = [{"x_num_col_dims": x, "y_num_col_dims": y, "axis": axis}
          for x, y, axis in itertools.product((1, 2), (1, 2), (-1, 0, 1, 2))]


def _holds(guard: str, values: dict, attrs: dict) -> bool:
    """A row's guard on these inputs and attributes, as the generated code runs it (an exception: False)."""
    code = row_code(guard, lambda name: f"a[{name!r}]")
    try:
        return bool(eval(code, {"abs": abs}, {**values, "a": attrs}))   # noqa: S307 - a row's own guard
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.parametrize("op_type", sorted(RULES))
def test_a_rules_guard_given_the_ranks_says_what_the_rows_guard_says(op_type):
    """Wherever a rule decides the rank tests, its guard holds exactly where the row's whole guard holds."""
    row, rule = ROWS[op_type], RULES[op_type]
    slots = _row_inputs(row)
    decided = 0
    for shapes in itertools.product(_SHAPES, repeat=len(slots)):
        ranks = {slot: len(shape) for slot, shape in zip(slots, shapes)}
        trusted = rule.guard(ranks)
        if trusted is None:
            continue
        values = {f"_{slot_token(slot)}": np.zeros(shape, np.float32) for slot, shape in zip(slots, shapes)}
        for attrs in _ATTRS:
            assert _holds(trusted, values, attrs) == _holds(row[GUARD], values, attrs), (shapes, attrs, trusted)
            decided += 1
    assert decided or rule.guard({slot: 2 for slot in slots}) is None   # scale: never decided, always checked

"""Every forward op of the registry has a bad-input case (here, in tests/bad_input_cases.py, or in a family's
table) or a reason it has none. Bad input is one error naming the block, the op index and type, and the input
vars: shape inference catches what declared shapes and attributes show, at `gradc compile` and again when the
executor plans the program (never a wrong result at `gradc run`); the kernels catch what only values show."""

import numpy as np
import pytest

import gradc
import test_activation_math_family
import test_axis_errors
import test_family_b_errors
import test_loss_ops
import test_optimizer_errors
import test_shape_bad_input
from bad_input_cases import COMPILE_TIME, EXEMPT, RUN_TIME
from gradc import registry
from gradc.cli import main
from gradc.errors import ExecutionError, ProgramError
from gradc.ir import to_var_type
from gradc.verify_shapes import check_shapes


def one_op(op_type, inputs: dict, attrs: dict):
    """A program of one op reading vars `<slot><i>` that hold the given arrays: (program, feed, [first output]), no
    output for an op that writes none (send_v2)."""
    program, feed = gradc.Program(), {}
    block = program.global_block
    slots = {}
    for slot, value in inputs.items():
        arrays = value if isinstance(value, list) else [value]
        slots[slot] = [f"{slot.lower()}{i}" for i in range(len(arrays))]
        for name, array in zip(slots[slot], arrays):
            block.create_var(name, list(array.shape), to_var_type(array.dtype))
            feed[name] = array
    opdef, outputs = registry.get(op_type), {}
    longest = max((len(names) for names in slots.values()), default=1)
    for slot in opdef.outputs:
        if opdef.slot(slot).dispensable:
            continue
        outputs[slot] = [f"{slot.lower()}_out{i}" for i in range(longest if opdef.slot(slot).duplicable else 1)]
        for name in outputs[slot]:
            block.create_var(name, None, None)
    block.append_op(op_type, slots, outputs, attrs)
    return program, feed, [names[0] for names in outputs.values()][:1]


def assert_names_the_op(message: str, op_type: str, phrase: str, inputs: dict) -> None:
    assert message.startswith(f"block 0, op 0 ({op_type})"), message
    assert phrase in message, message
    for slot in inputs:
        assert f"{slot}={slot.lower()}0[" in message, message   # each input var, with its shape


@pytest.mark.parametrize("case", COMPILE_TIME, ids=str)
def test_inference_refuses_it_at_compile_and_at_run(case):
    op_type, inputs, attrs, phrase = COMPILE_TIME[case]
    program, feed, out = one_op(op_type, inputs, attrs)
    with pytest.raises(ProgramError) as compiled:
        check_shapes(program)
    assert_names_the_op(str(compiled.value), op_type, phrase, inputs)
    with pytest.raises(ExecutionError) as ran:
        gradc.Executor().run(program, feed, out, gradc.Scope())
    assert_names_the_op(str(ran.value), op_type, phrase, inputs)


@pytest.mark.parametrize("case", RUN_TIME, ids=str)
def test_the_kernel_refuses_values_only_the_run_shows(case):
    op_type, inputs, attrs, phrase = RUN_TIME[case]
    program, feed, out = one_op(op_type, inputs, attrs)
    check_shapes(program)   # the declared shapes and attributes are fine
    with pytest.raises(ExecutionError) as ran:
        gradc.Executor().run(program, feed, out, gradc.Scope())
    assert_names_the_op(str(ran.value), op_type, phrase, inputs)


def gradc_cli(capsys, monkeypatch, *args) -> tuple[int, str]:
    monkeypatch.setattr("sys.argv", ["gradc", *map(str, args)])
    try:
        main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("case", ["pool3d type", "dropout rate", "group_norm zero groups", "linear_interp_v2 scale",
                                  "tile repeats", "merged_adam moment", "scatter ids", "one_hot_v2 depth"])
def test_the_cli_says_it_in_one_line(case, tmp_path, capsys, monkeypatch):
    """`gradc compile` of the program (inference), `gradc run` of it (the plan, or the kernel on the values)."""
    op_type, inputs, attrs, phrase = {**COMPILE_TIME, **RUN_TIME}[case]
    program, feed, out = one_op(op_type, inputs, attrs)
    gradc.save(program, tmp_path / "p.pb")
    np.savez(tmp_path / "feed.npz", **feed)
    commands = [("run", tmp_path / "p.pb", "--feed", tmp_path / "feed.npz", "--fetch", out[0])]
    if case in COMPILE_TIME:
        commands.append(("compile", tmp_path / "p.pb", "-o", tmp_path / "o.pb", "--loss", out[0]))
    for command in commands:
        code, err = gradc_cli(capsys, monkeypatch, *command)
        lines = err.strip().splitlines()
        assert code == 1 and len(lines) == 1 and "Traceback" not in err, err
        assert lines[0].startswith(f"gradc: error: block 0, op 0 ({op_type})") and phrase in lines[0], lines[0]
    assert not (tmp_path / "o.pb").exists()


def cases_elsewhere() -> set[str]:
    """The op types of the families' bad-input tables."""
    tables = [test_family_b_errors.INFERENCE_CASES, test_family_b_errors.RUN_CASES, test_shape_bad_input.COMPILE_TIME,
              test_shape_bad_input.RUN_TIME, test_activation_math_family.BAD_INPUT, test_axis_errors.ONE_OP_CASES,
              test_optimizer_errors.CASES]
    rows = [row for table in tables for row in table.values()] + test_loss_ops.SHAPE_ERRORS + test_loss_ops.RUN_ERRORS
    return ({row[0] for row in rows} | {"conv2d", "conv2d_transpose", "pool2d"}   # tests/test_conv_shapes.py
            | {"rnn", "write_to_array", "read_from_array", "tensor_array_to_tensor"})   # test_rnn_errors and co.


def forward_ops() -> set[str]:
    return {t for t, opdef in registry.OPS.items() if not opdef.grad_op_of and not t.endswith("_grad")}


def test_every_forward_op_has_a_bad_input_case_or_a_reason():
    covered = cases_elsewhere() | {case[0] for case in (*COMPILE_TIME.values(), *RUN_TIME.values())}
    assert not forward_ops() - covered - EXEMPT.keys(), "give these ops a bad-input case"
    assert not EXEMPT.keys() & covered, "an exempt op has a case now: drop it from EXEMPT"
    assert EXEMPT.keys() <= forward_ops()

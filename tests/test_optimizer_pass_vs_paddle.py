"""gradc's own optimizer API (gradc.optimizers, the optimizer pass) set up like each Paddle fixture writes what
Paddle's minimize wrote: the same optimize ops in the same order with the same slots, attributes, op_role and
op_role_var, the same accumulator and learning-rate vars, and the same startup initialisers; and its program
trains like Paddle's (losses and every persistable after every step). Temporaries may be numbered differently
(Paddle's name counters are global to its program guard): they are matched one to one as they appear."""

import struct

import numpy as np
import pytest

import gradc
from gradc import registry
from gradc.optimizers import SGD, ClipGradByValue
from optim_cases import CASES, OptimCase, assert_trained_like_paddle, gradc_program, train

OPTIMIZE = 0x0002 | 0x0010


def optimize_ops(program):
    return [op for op in program.global_block.ops if op.attrs.get("op_role", 0) & OPTIMIZE]


def _normal(value):
    """Attribute values as Paddle stores them: floats in float32."""
    if isinstance(value, float):
        return struct.unpack("f", struct.pack("f", value))[0]
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


class Matcher:
    """Compares our program with Paddle's, pairing our temporaries with Paddle's as they appear."""

    def __init__(self, ours: gradc.Program, theirs: gradc.Program):
        self.ours, self.theirs = ours.global_block, theirs.global_block
        self.pairs: dict[str, str] = {}

    def name(self, ours: str, theirs: str, where: str) -> None:
        """Persistables and gradients must have Paddle's names; temporaries pair one to one."""
        if ours not in self.pairs:
            temporary = not self.ours.var(ours).persistable and "@GRAD" not in ours
            assert ours == theirs or temporary, f"{where}: gradc has {ours}, Paddle {theirs}"
            assert theirs not in self.pairs.values(), f"{where}: Paddle's {theirs} is already another var"
            self.pairs[ours] = theirs
            self.var(ours, theirs, where)
        assert self.pairs[ours] == theirs, f"{where}: gradc's {ours} is Paddle's {self.pairs[ours]}, here {theirs}"

    def var(self, ours: str, theirs: str, where: str) -> None:
        a, b = self.ours.var(ours), self.theirs.var(theirs)
        mine = (a.shape, a.dtype, bool(a.persistable), bool(a.stop_gradient))
        paddle = (b.shape, b.dtype, bool(b.persistable), bool(b.stop_gradient))
        assert mine == paddle, f"{where}: var {ours} (shape, dtype, persistable, stop_gradient) {mine}, Paddle {paddle}"

    def op(self, ours, theirs, where: str) -> None:
        assert ours.type == theirs.type, f"{where}: gradc {ours.type}, Paddle {theirs.type}"
        for side, mine, paddle in (("inputs", ours.inputs, theirs.inputs), ("outputs", ours.outputs, theirs.outputs)):
            mine = {slot: args for slot, args in mine.items() if args}
            paddle = {slot: args for slot, args in paddle.items() if args}
            assert sorted(mine) == sorted(paddle), f"{where} {side}: gradc {sorted(mine)}, Paddle {sorted(paddle)}"
            for slot in mine:
                assert len(mine[slot]) == len(paddle[slot]), f"{where} {slot}: {mine[slot]} vs {paddle[slot]}"
                for a, b in zip(mine[slot], paddle[slot]):
                    self.name(a, b, f"{where} {slot}")
        for attr in [*registry.get(ours.type).attrs, "op_role", "op_role_var"]:
            mine, paddle = _normal(ours.attrs.get(attr)), _normal(theirs.attrs.get(attr))
            if attr == "op_role_var":
                mine = [self.pairs.get(n, n) for n in mine]
            assert mine == paddle, f"{where}: attribute {attr} gradc {mine!r}, Paddle {paddle!r}"
            kinds = ours.attr_types.get(attr), theirs.attr_types.get(attr)
            assert kinds[0] == kinds[1], f"{where}: attribute {attr} has wire type {kinds[0]}, Paddle {kinds[1]}"


def startup_fills(case: OptimCase, startup: gradc.Program) -> list:
    """(var, shape, dtype, value, str_value) of each initialiser that is not a parameter's."""
    params = {n for n, v in case.forward().global_block.vars.items() if v.is_parameter}
    rows = []
    for op in startup.global_block.ops:
        out = op.output("Out")[0]
        if out not in params:
            assert op.type == "fill_constant", f"startup writes {out} with {op.type}"
            var = startup.global_block.var(out)
            rows.append((out, var.shape, var.dtype, bool(var.persistable), op.attrs["shape"], op.attrs["dtype"],
                         _normal(op.attrs["value"]), op.attrs["str_value"], op.attrs.get("op_role")))
    return rows


@pytest.mark.parametrize("name", CASES)
def test_optimizer_pass_writes_what_paddles_minimize_writes(name):
    case = OptimCase(name)
    program, startup = gradc_program(case)
    ours, theirs = optimize_ops(program), optimize_ops(case.program())
    assert [op.type for op in ours] == [op.type for op in theirs]
    matcher = Matcher(program, case.program())
    for index, (a, b) in enumerate(zip(ours, theirs)):
        matcher.op(a, b, f"{name}: optimize op {index}")
    assert startup_fills(case, startup) == startup_fills(case, case.program("startup"))


@pytest.mark.parametrize("name", CASES)
def test_optimizer_pass_trains_like_paddle(name):
    """gradc's program, started from gradc's startup program and Paddle's parameters, trains like Paddle."""
    case = OptimCase(name)
    program, startup = gradc_program(case)
    scope, init = gradc.Scope(), case.arrays("init")
    gradc.Executor().run(startup, scope=scope)
    for var in startup.global_block.vars:
        np.testing.assert_array_equal(scope[var], init[var].reshape(np.shape(scope[var])), err_msg=var)
    for param, value in init.items():
        if param not in scope:
            scope[param] = value
    losses, states = train(case, program, scope=scope)
    assert_trained_like_paddle(case, losses, states)


def test_the_comparison_catches_a_different_program():
    """A clip bound off by a factor of 2 and a missing clip are both reported."""
    case = OptimCase("mlp_clip_value")
    for optimizer, phrase in ((SGD(0.1, grad_clip=ClipGradByValue(0.1)), "attribute min gradc -0.1"),
                              (SGD(0.1), "gradc sgd, Paddle clip")):
        program = case.forward()
        optimizer.minimize(program, case.meta["loss"])
        with pytest.raises(AssertionError, match=phrase):
            matcher = Matcher(program, case.program())
            for a, b in zip(optimize_ops(program), optimize_ops(case.program())):
                matcher.op(a, b, "op")

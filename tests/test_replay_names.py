"""The set of declared names a control-flow double grad's replay picks its new names from (gradc.ops.replay_names):
it must agree with the program's blocks whoever changed them, or a replay would reuse a name."""

from gradc.ir import Program, VarType
from gradc.ops.control_flow_double import Replay
from gradc.ops.replay_names import child_block, declare, declared_names


def every_name(program: Program) -> set[str]:
    return {name for block in program.blocks for name in block.vars}


def test_the_set_follows_the_replay_and_every_other_change():
    program = Program()
    program.global_block.create_var("x", [2], VarType.FP32)
    replay = Replay(child_block(program.global_block))
    steps = [
        lambda: replay.var("x", VarType.FP32),
        lambda: replay.fresh("x"),
        lambda: child_block(replay.block),
        lambda: program.global_block.create_var(replay.unique("x"), [1]),   # declared by others, between replays
        lambda: declare(program.blocks[-1], program.global_block.var("x").copy(replay.unique("y"))),
        lambda: (program.global_block.vars.pop("x"), program.mark_changed()),   # a pass dropping a var
    ]
    for step in steps:
        step()
        assert declared_names(program) == every_name(program)


def test_a_name_declared_by_others_is_not_chosen_again():
    program = Program()
    program.global_block.create_var("x", [2], VarType.FP32)
    replay = Replay(child_block(program.global_block))
    first = replay.fresh("x")
    taken = replay.unique("x")
    program.global_block.create_var(taken, [1])   # not through the replay
    second = replay.fresh("x")
    assert len({first, taken, second}) == 3
    assert second in replay.block.vars

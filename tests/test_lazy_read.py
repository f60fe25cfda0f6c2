"""gradc.io.lazy_read: a binary program loaded with its blocks unread is, once read, the program an eager load gives;
a fault inside a block is raised where the block is first used, with the eager load's message; the frame is checked
at load; reading a block is not an edit; and an unread program holds no reference cycle."""

import gc
import pickle
import random
import threading
import weakref

import pytest

import gradc
from fixtures import DATA
from fuzzing_mutations import mutate_bytes, mutate_program
from gradc.io import parse_program, serialize
from gradc.io.wire_values import varint
from gradc.ir import AttrType, Program
from gradc.passed_checks import STRUCTURE, passed
from gradc.proto import framework_pb2 as pb
from test_fast_read import _program_fields


def _two_blocks() -> bytes:
    """A relu in block 0 and a conditional_block running block 1, which holds a scale."""
    program = Program()
    top = program.global_block
    for name in ("a", "b", "c", "cond"):
        top.create_var(name, [2, 3])
    top.append_op("relu", {"X": ["a"]}, {"Out": ["b"]})
    inner = program.append_block(0)
    inner.append_op("scale", {"X": ["b"]}, {"Out": ["c"]}, {"scale": 2.0})
    top.append_op("conditional_block", {"Cond": ["cond"], "Input": ["b"]}, {"Out": ["c"], "Scope": []},
                  {"sub_block": 1, "is_scalar_condition": True}, {"sub_block": AttrType.BLOCK})
    return serialize(program)


def _error(load, data: bytes) -> str:
    with pytest.raises(gradc.GradcError) as caught:
        program = load(data)
        for block in program.blocks:
            block.ops   # noqa: B018 (reads it)
    return f"{type(caught.value).__name__}: {caught.value}"


@pytest.mark.parametrize("case", ["cond", "while_loop", "mlp", "layers/lstm"])
def test_a_lazy_load_once_read_is_the_eager_load(case):
    data = (DATA / case / "forward.pb").read_bytes()
    lazy = parse_program(data, source=case)
    assert all(block.sizes() is None for block in lazy.blocks)
    assert _program_fields(lazy) == _program_fields(parse_program(data, source=case, lazy=False))
    assert serialize(lazy) == data


def test_blocks_are_read_one_at_a_time_on_first_use():
    program = parse_program(_two_blocks())
    assert [block.sizes() for block in program.blocks] == [None, None]
    assert [op.type for op in program.blocks[1].ops] == ["scale"]
    assert program.blocks[0].sizes() is None and program.blocks[1].sizes() == (1, 0)
    assert program.blocks[0].forward_block_idx is None   # any of the contents reads the block
    assert program.blocks[0].sizes() == (2, 4)


def test_a_fault_inside_a_block_is_raised_on_first_use_with_the_eager_message():
    data = _two_blocks()
    bad_wire = data.replace(b"\x0a\x01X\x12\x01a", b"\x0a\x01X\x17\x01a")   # wire type 7: protobuf refuses it
    bad_name = data.replace(b"\x1a\x05scale", b"\x1a\x05sc\x01le")          # a control character in an op type
    for data in (bad_wire, bad_name):
        program = parse_program(data, source="f.pb")   # the frame is sound: the load succeeds
        eager = _error(lambda d: parse_program(d, source="f.pb", lazy=False), data)
        assert _error(lambda d: parse_program(d, source="f.pb"), data) == eager
        assert "f.pb" in eager
        with pytest.raises(gradc.GradcError):   # raised again, not left half-read
            program.blocks[1 if data is bad_name else 0].ops   # noqa: B018
    assert "not a readable ProgramDesc" in _error(parse_program, bad_wire)
    assert "block 1, op 0" in _error(parse_program, bad_name)


def test_the_frame_is_checked_at_load():
    program = Program()
    program.append_block(0)
    program.blocks[1].parent_idx = 5
    with pytest.raises(gradc.ProgramError, match="parent_idx 5"):
        parse_program(serialize(program))
    cut = _two_blocks()[:-3]
    with pytest.raises(gradc.FormatError, match="not a"):
        parse_program(cut)


def _field(tag: int, value: bytes) -> bytes:
    return bytes([tag]) + varint(len(value)) + value


def _with_block(data: bytes, idx: int, edit) -> bytes:
    """``data`` with block ``idx``'s bytes given by ``edit`` (of them, and of the block's message)."""
    block = pb.ProgramDesc.FromString(data).blocks[idx]
    old = block.SerializeToString()
    return data.replace(_field(0x0A, old), _field(0x0A, edit(old, block)))


def test_a_block_whose_idx_is_given_twice_is_refused_when_read():
    twice = _with_block(_two_blocks(), 1, lambda old, _: old + b"\x08\x03")   # protobuf keeps the last: 3
    program = parse_program(twice)
    with pytest.raises(gradc.FormatError, match="block 1 gives its idx or parent_idx twice"):
        program.blocks[1].ops   # noqa: B018


def test_a_block_the_fast_reader_leaves_to_protobuf_is_read_through_it():
    data = _with_block(_two_blocks(), 0, lambda old, _: old + b"\xf8\x01\x07")   # field 31, unknown to BlockDesc
    lazy, eager = parse_program(data), parse_program(data, lazy=False)
    unread = lazy.blocks[0]._unread
    assert [op.type for op in lazy.blocks[0].ops] == ["relu", "conditional_block"]
    assert unread.whole is not None   # protobuf's parse of the whole program gave block 0
    assert _program_fields(lazy) == _program_fields(eager)


def test_reading_a_block_is_not_an_edit():
    program = parse_program(_two_blocks())
    assert passed(program, STRUCTURE)
    program.blocks[1].ops   # noqa: B018
    assert passed(program, STRUCTURE)
    program.blocks[0].ops.pop()   # an edit no mutator announced: the counts show it
    assert not passed(program, STRUCTURE)


def test_contents_the_caller_set_before_reading_stay():
    program = parse_program(_two_blocks())
    program.blocks[1].ops = []
    assert program.blocks[1].ops == [] and set(program.blocks[1].vars) == set()


def test_an_unread_program_is_freed_when_dropped_and_read_bytes_are_let_go():
    program = parse_program(_two_blocks())
    unread = program.blocks[0]._unread
    gone = weakref.ref(program)
    del program
    assert gone() is None   # no cycle through the unread blocks: freed without the collector
    program = parse_program(_two_blocks())
    unread = program.blocks[0]._unread
    for block in program.blocks:
        block.ops   # noqa: B018
    assert unread.data is None and unread.reader is None
    gc.collect()


def test_copies_read_the_blocks():
    program = parse_program(_two_blocks())
    for copy in (pickle.loads(pickle.dumps(program)), program.clone()):
        assert _program_fields(copy) == _program_fields(parse_program(_two_blocks(), lazy=False))


def test_threads_reading_one_block_share_its_contents():
    program = parse_program((DATA / "mlp" / "forward.pb").read_bytes())
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(program.global_block.ops)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 4 and all(ops is seen[0] for ops in seen)


def test_the_command_line_reads_every_block_at_load(tmp_path):
    from click.testing import CliRunner

    from gradc.cli import cli
    path = tmp_path / "bad.pb"
    path.write_bytes(_two_blocks().replace(b"\x1a\x05scale", b"\x1a\x05sc\x01le"))
    result = CliRunner().invoke(cli, ["show", str(path)])
    assert result.exit_code != 0 and result.output == "" and "block 1, op 0" in str(result.exception)


def test_a_block_kept_after_its_program_is_dropped_is_still_read():
    block = parse_program(_two_blocks()).blocks[1]   # the program is freed at once
    assert [op.type for op in block.ops] == ["scale"]
    bad = parse_program(_two_blocks().replace(b"\x1a\x05scale", b"\x1a\x05sc\x01le")).blocks[1]
    with pytest.raises(gradc.ProgramError, match="block 1, op 0"):
        bad.ops   # noqa: B018


def _outcome(load, data: bytes):
    try:
        program = load(data)
        return _program_fields(program)   # reads every block, in order
    except gradc.GradcError as exc:
        return f"{type(exc).__name__}: {exc}"


def _refused_at_load(data: bytes) -> bool:
    try:
        parse_program(data)
    except gradc.GradcError:
        return True
    return False


@pytest.mark.parametrize("case", ["cond", "mlp"])
def test_mutated_bytes_give_the_eager_loads_program_or_error(case):
    """Flipped, cut, inserted and repeated bytes, and changed fields: loaded lazily then read, the same program as an
    eager load, or the same error; a file with faults in several places may be refused for another of them, one the
    lazy load checks before reading any block (the frame, the op version map)."""
    data = (DATA / case / "forward.pb").read_bytes()
    rng = random.Random(1)
    mutants = [mutate_bytes(data, rng) for _ in range(150)] + [mutate_program(data, rng)[0] for _ in range(50)]
    outcomes = [(_outcome(parse_program, m), _outcome(lambda d: parse_program(d, lazy=False), m), m) for m in mutants]
    differ = [(lazy, eager, m) for lazy, eager, m in outcomes if lazy != eager]
    assert all(type(lazy) is type(eager) is str and _refused_at_load(m) for lazy, eager, m in differ)
    assert len(differ) < len(outcomes) // 20
    assert {type(lazy) for lazy, _, _ in outcomes} == {list, str}   # both programs and errors among them

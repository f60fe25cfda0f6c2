"""Loading and saving: wire compatibility, unknown attributes kept, determinism, clear errors."""

import os

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.io import parse_program, serialize
from gradc.proto import framework_pb2 as pb

PROGRAMS = sorted(DATA.glob("*/*.pb"))


def _message(data: bytes) -> pb.ProgramDesc:
    msg = pb.ProgramDesc()
    msg.ParseFromString(data)
    return msg


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_load_save_round_trip_is_exact(path):
    data = path.read_bytes()
    out = serialize(parse_program(data))
    assert _message(out) == _message(data)
    assert out == data  # Paddle writes fields in order too, so even the bytes agree


@pytest.mark.parametrize("suffix", ["pbtxt", "pbjson"])
def test_text_formats_round_trip(tmp_path, suffix):
    program = gradc.load(DATA / "mlp" / "forward.pb")
    gradc.save(program, tmp_path / f"p.{suffix}")
    again = gradc.load(tmp_path / f"p.{suffix}")
    assert serialize(again) == serialize(program)


def test_format_is_sniffed_without_a_known_extension(tmp_path):
    program = gradc.load(DATA / "mlp" / "forward.pb")
    for fmt in ("pb", "pbtxt", "json"):
        path = tmp_path / f"program_{fmt}.model"
        path.write_bytes(serialize(program, fmt))
        assert serialize(gradc.load(path)) == serialize(program)


def test_unknown_attributes_survive_compile(tmp_path):
    program = gradc.load(DATA / "mlp" / "forward.pb")
    program.global_block.ops[0].set_attr("my_tool_tag", "keep me")
    gradc.append_backward(program)
    gradc.save(program, tmp_path / "train.pb")
    again = gradc.load(tmp_path / "train.pb")
    first = again.global_block.ops[0]
    assert first.attrs["my_tool_tag"] == "keep me"
    assert "op_callstack" in first.attrs and "use_mkldnn" in first.attrs


def test_compile_output_is_byte_deterministic():
    outputs = set()
    for _ in range(3):
        program = gradc.load(DATA / "shared_param" / "forward.pb")
        gradc.append_backward(program)
        outputs.add(serialize(program))
    assert len(outputs) == 1


def test_unknown_op_types_load_and_save():
    program = gradc.Program()
    block = program.global_block
    block.create_var("x", [2])
    block.append_op("some_future_op", {"X": ["x"]}, {"Out": ["x"]}, {"flavour": "new"})
    again = parse_program(serialize(program))
    assert again.global_block.ops[0].type == "some_future_op"


@pytest.mark.parametrize("size", [1, 100, 1000, 3000])
def test_truncated_file_is_a_format_error(tmp_path, size):
    data = (DATA / "mlp" / "forward.pb").read_bytes()[:size]
    path = tmp_path / "cut.pb"
    path.write_bytes(data)
    with pytest.raises(gradc.FormatError, match="cut.pb: not a"):
        gradc.load(path)


@pytest.mark.parametrize("seed", range(20))
def test_random_bytes_are_a_format_error(tmp_path, seed):
    path = tmp_path / "noise.pb"
    path.write_bytes(np.random.default_rng(seed).integers(0, 256, 2000, dtype=np.uint8).tobytes())
    with pytest.raises(gradc.GradcError):
        gradc.load(path)


def test_missing_file_is_a_format_error(tmp_path):
    with pytest.raises(gradc.FormatError, match="cannot read"):
        gradc.load(tmp_path / "nope.pb")


def test_bad_block_reference_names_the_op(tmp_path):
    program = gradc.Program()
    op = program.global_block.append_op("conditional_block", {}, {})
    op.set_attr("sub_block", 7, gradc.ir.AttrType.BLOCK)
    with pytest.raises(gradc.ProgramError, match=r"block 0, op 0 \(conditional_block\).*block 7"):
        parse_program(serialize(program), lazy=False)
    loaded = parse_program(serialize(program))   # a lazy load checks a block's contents where they are first used
    with pytest.raises(gradc.ProgramError, match=r"block 0, op 0 \(conditional_block\).*block 7"):
        loaded.global_block.ops   # noqa: B018 (reads it)


def test_parent_cycle_is_reported():
    program = gradc.Program()
    program.append_block(0)
    program.append_block(1)
    program.blocks[1].parent_idx = 2
    with pytest.raises(gradc.ProgramError, match="cycle"):
        parse_program(serialize(program))


def test_save_is_atomic(tmp_path, monkeypatch):
    """A failure while writing leaves the previous file untouched and no temp file behind."""
    target = tmp_path / "train.pb"
    target.write_bytes(b"previous contents")
    program = gradc.load(DATA / "mlp" / "forward.pb")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(gradc.OutputError, match="cannot write"):
        gradc.save(program, target)
    assert target.read_bytes() == b"previous contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.pb"]

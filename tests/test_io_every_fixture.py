"""Every committed program, binary and Paddle 3's PIR JSON: gradc.io.wire writes the bytes protobuf's deterministic
serialisation of the same program's message gives, and gradc.io.fast_read reads a binary one as protobuf's parse
and the reference converter do (the writer's and reader's caches, one save or load long, change no byte)."""

from functools import cache

import pytest

from fixtures import DATA, data_files
from gradc.io.fast_read import read_program
from gradc.io.protobuf import program_from_proto, program_to_proto
from gradc.io.wire import encode_program
from gradc.pir import is_pir, parse_pir
from gradc.proto import framework_pb2 as pb
from test_fast_read import _program_fields

SHARDS = 8   # the files split into shards, so that test workers share them
REFERENCE_EVERY = 4


@cache
def _binary() -> list:
    return data_files(".pb")


@cache
def _pir() -> list:   # listed at a test's first look, not at collection (each worker collects every module)
    return [path for path in data_files(".json") if is_pir(path.read_bytes()[:4096])]


def _message_bytes(program) -> bytes:
    return program_to_proto(program).SerializeToString(deterministic=True)


def test_the_fixtures_are_there():
    assert len(_binary()) > 3000 and len(_pir()) > 1000


@pytest.mark.parametrize("shard", range(SHARDS))
def test_binary_programs_read_and_written_as_protobuf_does(shard):
    """Each file read and written again gives protobuf's bytes of its parse; every REFERENCE_EVERY-th file is also
    read and written against the reference converter's program, field by field (the rest would repeat that
    converter's cost, most of the test's, for what the bytes already show)."""
    for index, path in enumerate(_binary()[shard::SHARDS]):
        data = path.read_bytes()
        message = pb.ProgramDesc.FromString(data)
        program = read_program(data)
        if program is not None:
            assert encode_program(program) == message.SerializeToString(deterministic=True), path.relative_to(DATA)
        if program is None or index % REFERENCE_EVERY == 0:
            reference = program_from_proto(message)
            if program is not None:
                assert _program_fields(program) == _program_fields(reference), path.relative_to(DATA)
            assert encode_program(reference) == _message_bytes(reference), path.relative_to(DATA)


@pytest.mark.parametrize("shard", range(SHARDS))
def test_pir_programs_written_as_protobuf_does(shard):
    for path in _pir()[shard::SHARDS]:
        program = parse_pir(path.read_bytes(), str(path))
        assert encode_program(program) == _message_bytes(program), path.relative_to(DATA)

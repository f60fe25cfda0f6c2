"""One regression test per class of hostile input (the fuzz test samples them at random): archives,
allocation bombs, endless loops, deep nesting, bad names and enums, unguarded stages, invalid values
accepted, usage. Each ends in one `gradc: error:` line (exit 1; 2 for usage, 130 for Ctrl-C)."""

import io
import select
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.ir import AttrType, VarType, to_var_type
from gradc.limits import limited
from gradc.proto import framework_pb2 as pb
from test_cli import assert_clean_failure
from test_cli import gradc as run_gradc

MLP = DATA / "mlp"


def _npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _archive(path, members: dict[str, bytes], compress=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compress) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


@pytest.mark.parametrize("make, phrase", [
    (lambda p: p.write_bytes(b"PK\x03\x04 not really a zip"), "not an .npz archive"),
    (lambda p: p.write_bytes(_npy(np.zeros(3))), "a single .npy array, not an .npz"),
    (lambda p: _archive(p, {"x.npy": _npy(np.zeros(3, "float32")).replace(b"(3,)", b"(1000000000000,)")}),
     "more than the limit"),
    (lambda p: _archive(p, {"x.npy": _npy(np.zeros(3))[:-1] + b"\0" * 10**6}, zipfile.ZIP_DEFLATED), "more bytes"),
    (lambda p: _archive(p, {"x.npy": _npy(np.array([{"a": 1}], dtype=object))}), "a pickle"),
])
def test_archives(tmp_path, make, phrase):
    make(tmp_path / "feed.npz")
    assert_clean_failure(run_gradc("run", MLP / "forward.pb", "--feed", tmp_path / "feed.npz"), "feed.npz", phrase)


def test_pdiparams_with_huge_dims(tmp_path):
    model = DATA / "inference"
    data = bytearray((model / "model.pdiparams").read_bytes())
    desc = pb.VarType.TensorDesc(data_type=5, dims=[10**9, 10**9]).SerializeToString()
    first = int.from_bytes(data[16:20], "little")   # version, lod levels, version, then the desc size
    data[16:20 + first] = len(desc).to_bytes(4, "little") + desc
    (tmp_path / "model.pdiparams").write_bytes(bytes(data))
    assert_clean_failure(run_gradc("run", model / "model.pdmodel", "--params", tmp_path / "model.pdiparams",
                                   "--feed", model / "feed.npz"), "truncated in the data")


def _program(build) -> gradc.Program:
    program = gradc.Program()
    build(program.global_block, program)
    return program


def _endless_loop(block, program):
    block.create_var("c", [1], VarType.BOOL)
    block.create_var("scopes", None, None, type=VarType.STEP_SCOPES)
    block.append_op("fill_constant", {}, {"Out": ["c"]}, {"shape": [1], "dtype": int(VarType.BOOL), "value": 1.0})
    program.append_block(0)
    block.append_op("while", {"Condition": ["c"], "X": ["c"]}, {"Out": [], "StepScopes": ["scopes"]},
                    {"sub_block": 1, "is_test": True}, {"sub_block": AttrType.BLOCK})


def test_an_endless_loop_stops_at_the_iteration_limit(tmp_path):
    gradc.save(_program(_endless_loop), tmp_path / "loop.pb")
    result = run_gradc("--max-iterations", "500", "run", tmp_path / "loop.pb")
    assert_clean_failure(result, "block 0, op 1 (while)", "ran 500 iterations", "--max-iterations")


def _endless_loop_saying_so(block, program):
    """The endless loop, its body printing one line on the first iteration: the run is past the imports."""
    _endless_loop(block, program)
    body = program.blocks[1]
    body.create_var("shown", [1], VarType.BOOL)
    body.append_op("print", {"In": ["c"]}, {"Out": ["shown"]}, {"first_n": 1})


def test_ctrl_c_ends_a_run_with_one_line(tmp_path):
    gradc.save(_program(_endless_loop_saying_so), tmp_path / "loop.pb")
    child = subprocess.Popen([sys.executable, "-m", "gradc", "run", tmp_path / "loop.pb"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    shown, _, _ = select.select([child.stdout], [], [], 60)   # the loop's first line, or a child that ended
    first = child.stdout.readline() if shown else ""
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=30)
    assert first == "Variable: c\n", (first, stderr)   # the print's first line
    assert child.returncode == 130 and stderr.strip() == "gradc: interrupted"


def test_a_huge_constant_is_refused_before_it_is_allocated(tmp_path):
    def build(block, program):
        block.create_var("big", None, VarType.FP32)
        block.append_op("fill_constant", {}, {"Out": ["big"]},
                        {"shape": [10**6, 10**6], "dtype": int(VarType.FP32), "value": 1.0})
    gradc.save(_program(build), tmp_path / "big.pb")
    assert_clean_failure(run_gradc("--max-memory", "1G", "run", tmp_path / "big.pb", "--fetch", "big"),
                         "block 0, op 0 (fill_constant)", "limit")


def _nested(depth: int) -> bytes:
    msg = pb.ProgramDesc()
    msg.blocks.add(idx=0, parent_idx=-1)
    for idx in range(1, depth + 1):
        msg.blocks.add(idx=idx, parent_idx=idx - 1)
    return msg.SerializeToString()


@pytest.mark.parametrize("depth", [65, 30_000])
def test_deep_nesting_is_refused_quickly(tmp_path, depth):
    (tmp_path / "deep.pb").write_bytes(_nested(depth))
    start = time.monotonic()
    assert_clean_failure(run_gradc("show", tmp_path / "deep.pb"), "nested 65 blocks deep", "at most 64")
    assert time.monotonic() - start < 20   # linear: 30,000 blocks is not quadratic


def _mlp_message() -> pb.ProgramDesc:
    return pb.ProgramDesc.FromString((MLP / "forward.pb").read_bytes())


@pytest.mark.parametrize("edit, phrase", [
    (lambda m: setattr(m.blocks[0].vars[1], "name", "a\nb"), "not printable text"),
    (lambda m: setattr(m.blocks[0].ops[0], "type", "mul\nrelu"), "op type 'mul\\nrelu' is not printable"),
])
def test_names_must_be_printable(tmp_path, edit, phrase):
    msg = _mlp_message()
    edit(msg)
    (tmp_path / "p.pb").write_bytes(msg.SerializeToString())
    assert_clean_failure(run_gradc("show", tmp_path / "p.pb"), phrase)


def test_invalid_utf8_and_unknown_enums_are_refused_at_load(tmp_path):
    data = (MLP / "forward.pb").read_bytes()
    (tmp_path / "utf8.pb").write_bytes(data.replace(b"fc_0.w_0", b"fc_0.w\xff0"))
    assert_clean_failure(run_gradc("show", tmp_path / "utf8.pb"), "not printable text")
    msg = _mlp_message()
    var = next(v for v in msg.blocks[0].vars if v.type.HasField("dense_tensor"))
    raw = bytearray(msg.SerializeToString())
    tensor = var.type.dense_tensor.tensor.SerializeToString()
    at = raw.find(tensor)
    raw[at + 1] = 77   # data_type = 77: not a VarType.Type
    (tmp_path / "enum.pb").write_bytes(bytes(raw))
    assert_clean_failure(run_gradc("show", tmp_path / "enum.pb"), "var", "data_type", "outside the schema")


def test_wrong_parameter_shapes_and_feed_dtypes_are_refused(tmp_path):
    with np.load(MLP / "params.npz") as params:
        values = {k: params[k] for k in params.files}
    values["fc_0.w_0"] = values["fc_0.w_0"][:, :-1]
    np.savez(tmp_path / "params.npz", **values)
    assert_clean_failure(run_gradc("run", MLP / "forward.pb", "--params", tmp_path / "params.npz",
                                   "--feed", MLP / "feed.npz"),
                         "'fc_0.w_0', read first by block 0, op 0 (mul), has shape", "the program declares")
    with np.load(MLP / "feed.npz") as feed:
        np.savez(tmp_path / "feed.npz", **{k: feed[k].astype(np.float64) if feed[k].dtype == np.float32
                                           else feed[k] for k in feed.files})
    assert_clean_failure(run_gradc("run", MLP / "forward.pb", "--params", MLP / "params.npz",
                                   "--feed", tmp_path / "feed.npz"), "is float64, but block 0 declares float32")


def test_an_emptied_slot_is_an_error_at_compile(tmp_path):
    msg = _mlp_message()
    op = next(o for o in msg.blocks[0].ops if o.type == "relu")
    del op.inputs[0].arguments[:]
    (tmp_path / "p.pb").write_bytes(msg.SerializeToString())
    assert_clean_failure(run_gradc("compile", tmp_path / "p.pb", "-o", tmp_path / "out.pb"),
                         "(relu)", "required input slot 'X' is empty")
    assert not (tmp_path / "out.pb").exists()


def test_usage(tmp_path):
    assert_clean_failure(run_gradc("compile", MLP / "forward.pb", "-o", tmp_path), "it is a directory")
    assert_clean_failure(run_gradc("--plugin", "no_such_plugin_module", "ops"), "cannot import plugin")
    usage = run_gradc("compile")
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1 and usage.stderr.startswith("gradc: error: ")


def _one_op(op_type, inputs: dict, attrs: dict, out_slot="Out"):
    program = gradc.Program()
    block = program.global_block
    feed = {}
    for slot, array in inputs.items():
        block.create_var(slot.lower(), list(array.shape), to_var_type(array.dtype))
        feed[slot.lower()] = array
    block.create_var("out", None, None)
    block.append_op(op_type, {slot: [slot.lower()] for slot in inputs}, {out_slot: ["out"]}, attrs)
    return program, feed


@pytest.mark.parametrize("op_type, inputs, attrs", [
    ("expand_v2", {"X": np.ones((1, 1), "float32")}, {"shape": [10**6, 10**6]}),
    ("tile", {"X": np.ones((2, 2), "float32")}, {"repeat_times": [10**6, 10**6]}),
    ("pad3d", {"X": np.ones((1, 1, 1, 1, 1), "float32")}, {"paddings": [10**5] * 6}),
    ("one_hot_v2", {"X": np.zeros((4, 1), "int64")}, {"depth": 10**12}),
    ("eye", {}, {"num_rows": 10**7, "num_columns": 10**7, "dtype": int(VarType.FP32)}),
    ("uniform_random", {}, {"shape": [10**6, 10**6], "dtype": int(VarType.FP32)}),
])
def test_attribute_sized_outputs_are_refused_before_they_are_allocated(op_type, inputs, attrs):
    program, feed = _one_op(op_type, inputs, attrs)
    with limited(max_bytes=1 << 30), pytest.raises(gradc.ExecutionError,
                                                                  match=rf"op 0 \({op_type}\).*more than the limit"):
        gradc.Executor().run(program, feed, ["out"], gradc.Scope())


def test_an_emptied_required_output_slot_is_refused_before_the_backward(tmp_path):
    """Found by make fuzz: a softmax_with_cross_entropy whose Softmax output list was emptied reached its
    grad maker (an IndexError); a loop's empty Out list stays valid, as in Paddle."""
    program = gradc.load(DATA / "transformer" / "forward.pb")
    op_idx, op = next((i, op) for i, op in enumerate(program.global_block.ops)
                      if op.type == "softmax_with_cross_entropy")
    op.outputs["Softmax"] = []
    gradc.save(program, tmp_path / "cut.pb")
    result = run_gradc("compile", tmp_path / "cut.pb", "-o", tmp_path / "out.pb")
    assert_clean_failure(result, f"block 0, op {op_idx} (softmax_with_cross_entropy)",
                         "required output slot 'Softmax' is empty")
    gradc.save(gradc.load(tmp_path / "cut.pb"), tmp_path / "ran.pb")   # still a program that runs forward
    assert not (tmp_path / "out.pb").exists()


def test_npz_with_an_encrypted_member(tmp_path):
    """A zip member flagged encrypted made zipfile ask for a password: an internal error (found by the fuzzer)."""
    np.savez(tmp_path / "feed.npz", x=np.ones((32, 16), np.float32))
    data = bytearray((tmp_path / "feed.npz").read_bytes())
    for header, flags in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):   # the local and the central header's flags
        data[data.index(header) + flags] |= 0x1
    (tmp_path / "feed.npz").write_bytes(bytes(data))
    assert_clean_failure(run_gradc("run", MLP / "forward.pb", "--params", MLP / "params.npz", "--feed",
                               tmp_path / "feed.npz"), "array 'x.npy': the member is encrypted")

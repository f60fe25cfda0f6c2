"""The committed generated code matches proto/gradc/framework.proto (regenerated with protoc here)."""

import subprocess
import sys
from pathlib import Path

from google.protobuf import descriptor_pb2

from gradc.proto import framework_pb2

ROOT = Path(__file__).parent.parent


def test_generated_code_matches_the_proto(tmp_path):
    descriptor_set = tmp_path / "framework.desc"
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{ROOT / 'proto'}",
                    f"--descriptor_set_out={descriptor_set}", "gradc/framework.proto"], check=True)
    fresh = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes()).file[0]
    _drop_json_names(fresh)  # descriptor sets carry json_name; generated code leaves it out
    committed = descriptor_pb2.FileDescriptorProto.FromString(framework_pb2.DESCRIPTOR.serialized_pb)
    assert committed == fresh, "run `make proto` and commit src/gradc/proto/framework_pb2.py"


def _drop_json_names(file: descriptor_pb2.FileDescriptorProto) -> None:
    def clear(message):
        for field in message.field:
            field.ClearField("json_name")
        for nested in message.nested_type:
            clear(nested)

    for message in file.message_type:
        clear(message)


def test_paddle_field_numbers():
    """Spot checks of the wire facts the fixtures depend on (DESIGN section 4)."""
    fields = {f.name: f.number for f in framework_pb2.OpDesc.Attr.DESCRIPTOR.fields}
    assert fields["b"] == 10 and fields["block_idx"] == 12 and fields["scalars"] == 21
    assert framework_pb2.BlockDesc.DESCRIPTOR.fields_by_name["forward_block_idx"].number == 5
    assert framework_pb2.ProgramDesc.DESCRIPTOR.fields_by_name["op_version_map"].number == 5
    assert framework_pb2.VarType.Type.Value("FP8_E5M2") == 33

"""Kernels of the file ops (gradc.ops.file_io): each refuses in one line, naming the file and what gradc does
instead; decode_jpeg refuses as Paddle's CPU kernel does."""

from __future__ import annotations

from ...errors import ExecutionError
from ...ops.file_io import FILE_OPS
from . import kernel

CUT = "gradc export --input {out} writes the program from that var on, fed"
INSTEAD = {"read_file": f"{CUT} (the file's bytes)",
           "load": "give the file with --params (gradc.load_params) instead",
           "load_combine": "give the file with --params (gradc.load_params) instead",
           "save": "write persistables with gradc.save_params instead",
           "save_combine": "write persistables with gradc.save_params instead"}


@kernel(*FILE_OPS)
def file_op(k):
    path = k.attr("filename" if k.op.type == "read_file" else "file_path")
    verb = "reads" if k.op.type in ("read_file", "load", "load_combine") else "writes"
    raise ExecutionError(f"{k.where} {verb} the file '{path}': gradc runs no op that reads or writes a file the "
                         f"program names; {INSTEAD[k.op.type].format(out=_first_output(k))}")


@kernel("decode_jpeg")
def decode_jpeg(k):
    raise ExecutionError(f"{k.where}: decoding JPEG runs on GPU only (Paddle 3.3.1's CPU kernel refuses it too: "
                         f"\"DecodeJpeg op only supports GPU now\"); decode the image outside: "
                         f"{CUT.format(out=_first_output(k))} (the pixels, uint8 [channels, height, width])")


def _first_output(k) -> str:
    return (k.op.output("Out") or ["OUT"])[0]

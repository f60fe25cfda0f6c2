"""Ops that read or write files, and decode_jpeg, which decodes the bytes read_file reads: read_file and decode_jpeg
(paddle.vision.ops), save / load (a file per var) and save_combine / load_combine (one file for many vars: the
programs paddle.static.save_vars, load_vars and load_inference_model build and run).

gradc runs no op that reads or writes a file a program names: running a program then never touches the disk beyond
what the command line says (--params reads what load and load_combine would, gradc.save_params writes what save
and save_combine would). Their kernels refuse in one line naming the file. decode_jpeg is refused as Paddle 3.3.1's
CPU kernel refuses it (it decodes with nvJPEG, on GPU only). None has a gradient (Paddle registers none)."""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import NO_GRAD, defop, typed

FILE_OPS = ("read_file", "save", "load", "save_combine", "load_combine")
JPEG_MODES = ("unchanged", "gray", "rgb")


def _read_file_infer(ctx):
    return {"Out": ([-1], VarType.UINT8)}


def _decode_jpeg_infer(ctx):
    if ctx.attr("mode") not in JPEG_MODES:
        ctx.fail(f"mode {ctx.attr('mode')!r} is not one of {', '.join(JPEG_MODES)}")
    if ctx.dtype("X") not in (None, VarType.UINT8) or len(ctx.shape("X") or [-1]) != 1:
        ctx.fail(f"X must hold a file's bytes (1-D uint8), got {ctx.dtype('X')} of shape {ctx.shape('X')}")
    return {"Out": ([-1, -1, -1], VarType.UINT8)}


WRITE = {"file_path": "", "overwrite": True, "save_as_fp16": False}

defop("read_file", [], ["Out"], attrs={"filename": ""}, infer=_read_file_infer, grad=NO_GRAD)
defop("decode_jpeg", ["X"], ["Out"], attrs={"mode": "unchanged"}, infer=_decode_jpeg_infer, grad=NO_GRAD)
defop("save", ["X"], ["kLookupTablePath?"], attrs=WRITE, grad=NO_GRAD)
defop("save_combine", ["X[]"], ["Y?"], attrs={**WRITE, "save_to_memory": False}, grad=NO_GRAD)
defop("load", [], ["Out"], attrs={"file_path": "", "load_as_fp16": False, "seek": typed(-1, AttrType.LONG),
                                  "shape": typed([], AttrType.LONGS)}, grad=NO_GRAD)
defop("load_combine", [], ["Out[]"], attrs={"file_path": "", "load_as_fp16": False, "model_from_memory": False},
      grad=NO_GRAD)

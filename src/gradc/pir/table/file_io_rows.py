"""Rows: paddle.vision.ops' read_file and decode_jpeg (gradc.ops.file_io), which a PIR program holds as Paddle's
vision models' readers write them; gradc converts them and, as for the legacy ops, refuses to run them."""

from __future__ import annotations

from . import row

ROWS = [
    row("pd_op.read_file", "read_file", "", "out:Out", "filename:str dtype=-:dtype=uint8 place=-:place"),
    row("pd_op.decode_jpeg", "decode_jpeg", "x:X", "out:Out", "mode:str place=-:place"),
]

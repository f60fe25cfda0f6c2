"""What the Paddle tools share for writing legacy programs."""

from __future__ import annotations

import paddle


def without_callstacks(program) -> bytes:
    """The program's bytes without the Python stack traces Paddle records on every op (most of its size, and of no
    use to a reader); the program itself keeps them."""
    copy = paddle.static.Program.parse_from_string(program.desc.serialize_to_string())
    for block in copy.blocks:
        for op in block.ops:
            if op.desc.has_attr("op_callstack"):
                op.desc.remove_attr("op_callstack")
    return copy.desc.serialize_to_string()

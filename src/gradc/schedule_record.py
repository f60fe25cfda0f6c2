"""A Paddle scheduler given to `gradc compile --lr-schedule` is stepped by the host, as Paddle's own static programs
leave it to theirs: the program holds one rate. Its text is kept as a string attribute of the learning-rate var
(VarDesc.attrs, which Paddle loads and keeps), so that `gradc train` follows it without being told again."""

from __future__ import annotations

import os
import warnings

from .errors import GradcNotice
from .ir import AttrType, Program
from .schedules import learning_rate_vars

ATTR = "gradc_lr_schedule"


def record(program: Program, spec: str) -> None:
    """Keep ``spec`` on each learning-rate var of ``program`` (one a schedule; a recorded one replaced)."""
    from .proto import framework_pb2 as pb  # here: compile and train read programs without importing protobuf

    raw = pb.VarDesc.Attr(name=ATTR, type=AttrType.STRING, s=spec).SerializeToString(deterministic=True)
    for name in learning_rate_vars(program):
        var = program.global_block.find_var(name)
        if var is not None:
            var.attrs = tuple(a for a in var.attrs if _read(a).name != ATTR) + (raw,)
    program.mark_changed()


def recorded(program: Program) -> str | None:
    """The schedule ``record`` kept on the program's learning rate, if any."""
    for name in learning_rate_vars(program):
        var = program.global_block.find_var(name)
        for raw in getattr(var, "attrs", ()):   # most vars have none: protobuf imported only for those that do
            attr = _read(raw)
            if attr.name == ATTR and attr.type == AttrType.STRING:
                return attr.s
    return None


def followed(program: Program, path: str | os.PathLike) -> str | None:
    """The recorded schedule, said in a note: `gradc train` without --lr or --lr-schedule follows it."""
    spec = recorded(program)
    if spec is not None:
        warnings.warn(f"the learning rate follows {spec}, the schedule gradc compile recorded in '{path}' "
                      f"(--lr-schedule or --lr for another)", GradcNotice, stacklevel=2)
    return spec


def _read(raw: bytes):
    """A VarDesc.Attr message."""
    from .proto import framework_pb2 as pb

    return pb.VarDesc.Attr.FromString(raw)

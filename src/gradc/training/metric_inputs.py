"""The vars an evaluation metric's option names (--ranking, --roc, --keypoints): its first computed by the forward
part, the others arrays of the data."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import GradcError
from ..ir import Program, VarDesc


def checked_inputs(program: Program, names: Sequence[str], option: str, spec: Sequence[str]) -> VarDesc:
    """The var of ``spec[0]``, which the forward part must compute; each of ``spec[1:]`` must be one of the data's
    ``names``."""
    block = program.global_block
    var = block.find_var(spec[0])
    if var is None or spec[0] not in {name for op in block.ops for name in op.output_names()}:
        raise GradcError(f"evaluation: {option}: '{spec[0]}' is not computed by the forward part of the program")
    for name in spec[1:]:
        if name not in names:
            raise GradcError(f"evaluation: {option}: the data has no array '{name}' (it holds {', '.join(names)})")
    return var

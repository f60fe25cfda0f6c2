"""The verify pass: structure, declared vars and shapes are consistent before anything else runs."""

from __future__ import annotations

from ..ir import Program
from ..passed_checks import STRUCTURE, passed
from ..verify import check_structure, check_vars
from ..verify_shapes import check_shapes
from .base import Pass, register_pass


@register_pass
class VerifyPass(Pass):
    name = "verify"
    edits = False   # the checks it passed stay current for the passes after it (the backward's definition check)

    def apply(self, program: Program) -> None:
        if not passed(program, STRUCTURE):   # load checked it: again only if the program changed since
            check_structure(program)
        check_vars(program)
        check_shapes(program)

"""The verify pass: structure, declared vars and shapes are consistent before anything else runs."""

from __future__ import annotations

from ..ir import Program
from ..verify import check_structure, check_vars
from ..verify_shapes import check_shapes
from .base import Pass, register_pass


@register_pass
class VerifyPass(Pass):
    name = "verify"

    def apply(self, program: Program) -> None:
        check_structure(program)
        check_vars(program)
        check_shapes(program)

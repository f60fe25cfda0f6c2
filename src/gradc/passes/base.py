"""Pass infrastructure: a pass is a named transformation of a Program with a precondition it
requires and a postcondition it ensures; passes compose into a Pipeline.

    @register_pass
    class CountOps(Pass):
        name = "count-ops"
        def apply(self, program):
            return program.num_ops()
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import ClassVar

from ..errors import GradcError
from ..gcpause import gc_paused
from ..ir import Program


class PassConditionError(GradcError):
    """A pass's precondition did not hold before it ran, or its postcondition after."""


class Pass:
    name: ClassVar[str] = ""
    edits: ClassVar[bool] = True   # False: the pass only reads the program, whose revision it leaves as it was

    def requires(self, program: Program) -> None:
        """Raise PassConditionError if the program is not fit for this pass."""

    def ensures(self, program: Program) -> None:
        """Raise PassConditionError if the pass did not leave the program as promised."""

    def apply(self, program: Program):
        """Transform ``program`` in place; the return value is the pass's result (any value)."""
        raise NotImplementedError

    @gc_paused()
    def __call__(self, program: Program):
        with self._named("requires"):
            self.requires(program)
        with self._named("apply"):
            result = self.apply(program)
        if self.edits:
            program.mark_changed()   # a pass may edit vars and ops in place
        with self._named("ensures"):
            self.ensures(program)
        return result

    @contextmanager
    def _named(self, step: str):
        """A plugin's pass failing names itself and the step (gradc's own passes name themselves where needed)."""
        try:
            yield
        except Exception as exc:
            if type(self).__module__.partition(".")[0] == "gradc" or str(exc).startswith(f"pass '{self.name}'"):
                raise
            if isinstance(exc, GradcError):
                raise type(exc)(f"pass '{self.name}': {step}(): {exc}") from None
            raise GradcError(f"pass '{self.name}' ({type(self).__module__}.{type(self).__qualname__}) raised "
                             f"{type(exc).__name__} in {step}(): {exc} (fix the pass; --debug shows the "
                             f"traceback)") from exc

    def fail(self, message: str) -> PassConditionError:
        return PassConditionError(f"pass '{self.name}': {message}")


@dataclass
class Pipeline:
    passes: list[Pass] = field(default_factory=list)

    def __call__(self, program: Program) -> dict[str, object]:
        """Run every pass in order; return each pass's result by name."""
        return {p.name: p(program) for p in self.passes}


PASSES: dict[str, Callable[..., Pass]] = {}


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Make a pass available by name (``gradc compile --pass NAME``)."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a non-empty `name`")
    PASSES[cls.name] = cls
    return cls

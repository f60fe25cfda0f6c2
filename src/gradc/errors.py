"""The errors gradc reports to users. Each says where (block, op index, op type, var) and what."""

from collections.abc import Iterable


def closest(name: str, known: Iterable[str], ignore_case: bool = False) -> str | None:
    """The known name ``name`` is likeliest a slip for (difflib's closest match), else None: an error's 'did you mean'
    (difflib imported here, as only an error needs it: every gradc command imports this module)."""
    import difflib
    if not ignore_case:
        return next(iter(difflib.get_close_matches(name, list(known), n=1)), None)
    by_lower = {candidate.lower(): candidate for candidate in known}
    return next((by_lower[m] for m in difflib.get_close_matches(name.lower(), list(by_lower), n=1)), None)


class GradcError(Exception):
    """Base of every error gradc raises on purpose; the CLI prints its message as one line."""


class FormatError(GradcError):
    """A file is not a readable ProgramDesc (truncated, random bytes, wrong format)."""


class OutputError(GradcError):
    """An output file cannot be written (no such directory, no permission, disk full)."""


class ProgramError(GradcError):
    """The program is malformed: a missing var, a bad block index, a cycle, a shape mismatch."""


class GradError(GradcError):
    """The backward pass cannot differentiate the program (no grad maker, unknown loss, ...)."""


class ExecutionError(GradcError):
    """An op failed while the executor ran it."""


class FeedError(ExecutionError):
    """A fed value does not fit the program (not declared, another dtype or shape, missing); the CLI and the
    trainer put the feed's file in front."""


class Interrupted(GradcError):
    """Ctrl-C: the CLI raises it from its signal handler (so a run ends with one line, exit 130); training
    raises it once it has saved a checkpoint."""


class GradcWarning(UserWarning):
    """Something gradc went on past but a user should know (parameters the program does not have, a loss that is
    summed); the CLI prints it as one line, ``gradc: warning: ...``."""


class GradcNotice(GradcWarning):
    """A choice gradc made by itself that a user should see (the loss it picked); the CLI prints it as one line,
    ``gradc: note: ...``."""


def op_location(block_idx: int, op_idx: int, op_type: str) -> str:
    return f"block {block_idx}, op {op_idx} ({op_type})"

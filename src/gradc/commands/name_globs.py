"""Options that name vars (compile's --param and --no-grad, check's --wrt) take globs: '*lora*' names every LoRA
adapter of a model, where listing them one by one is what a fine-tuner would otherwise do."""

from __future__ import annotations

import fnmatch

from ..errors import GradcError


def matching(patterns: tuple[str, ...], names: list[str], option: str, what: str) -> list[str]:
    """The names each glob of ``patterns`` matches, in the order of ``names``; a plain name is kept as given (the
    command names an undeclared one)."""
    chosen = []
    for pattern in patterns:
        if not any(char in pattern for char in "*?["):
            chosen.append(pattern)
            continue
        matched = fnmatch.filter(names, pattern)
        if not matched:
            raise GradcError(f"{option} '{pattern}' matches no {what} (of its {len(names)}: {', '.join(names[:8])}"
                             f"{', ...' if len(names) > 8 else ''})")
        chosen += matched
    return list(dict.fromkeys(chosen))

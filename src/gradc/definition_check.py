"""An op definition's per-op check (gradc.opdef.definition_problem) as straight-line code made once per definition:
the backward and the verifier check every op of a program, and a definition's rules are fixed."""

from __future__ import annotations

from collections.abc import Callable


def compile_definition_check(one_var: tuple[str, ...], other_rules: tuple[tuple[str, bool, bool], ...],
                             runs_block: bool, attr_kinds: tuple[tuple[str, int], ...],
                             slot_problem: Callable, attr_type_problem: Callable) -> Callable:
    """``check(op)``: None where the op meets the rules, else what slot_problem or attr_type_problem says. ``one_var``:
    the input slots that must hold exactly one var; ``other_rules``: (slot, must hold a var, holds at most one) of
    the others; ``runs_block``: every attribute checked by attr_type_problem; ``attr_kinds``: (attribute, declared
    wire type), an attribute the op lacks passing."""
    lines = ["def check(op):", "    given = op.inputs"]
    if one_var:   # a missing slot (KeyError), another count (ValueError) or no list (TypeError): slot_problem says
        unpack = ", ".join("(_,)" for _ in one_var)
        lists = ", ".join(f"given[{name!r}]" for name in one_var)
        lines += ["    try:", f"        {unpack}, = {lists},", "    except (KeyError, ValueError, TypeError):",
                  "        return slot_problem(op)"]
    for name, required, single in other_rules:
        if required:
            lines += [f"    if not given.get({name!r}):", "        return slot_problem(op)"]
        elif single:
            lines += [f"    args = given.get({name!r})", "    if args and len(args) > 1:",
                      "        return slot_problem(op)"]
    namespace: dict = {"slot_problem": slot_problem, "attr_type_problem": attr_type_problem}
    if runs_block:
        lines += ["    return attr_type_problem(op)"]
    elif attr_kinds:   # the declared attributes, a few (Paddle writes a dozen more on every op, which none declares)
        for k, (_, kind) in enumerate(attr_kinds):
            namespace[f"k{k}"] = kind
        differs = " or ".join(f"get({name!r}, k{k}) != k{k}" for k, (name, _) in enumerate(attr_kinds))
        lines += ["    get = op.attr_types.get", f"    if {differs}:", "        return attr_type_problem(op)"]
    lines += ["    return None"]
    exec(compile("\n".join(lines) + "\n", "<gradc definition check>", "exec"), namespace)
    return namespace["check"]

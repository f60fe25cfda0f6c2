"""Run by tests/test_op_families.py in a new interpreter: for every op type, read it from op tables that have
imported no family yet (past what importing the executor imports), and compare what they hold (the OpDef, the
optimizer update rule, the kernel and its shape-only slots) with what they hold once every family is imported.
Prints {"types": n, "differ": [...]} as JSON."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import defaultdict

from gradc.executor import Executor  # noqa: F401  (the tables, and the families gradc and its executor import)
from gradc.executor.kernels import KERNELS, SHAPE_ONLY
from gradc.ops.optimizer_checks import UPDATES
from gradc.registry import OPS

TABLES = (OPS, KERNELS)       # each with its own index of families
FILLED = (UPDATES, SHAPE_ONLY)   # filled by the families, read through OPS's and KERNELS's index


def describe(value, depth: int = 0):
    """A JSON-able picture of a definition: functions by module and name (a module imported again makes new
    ones), with what their closures hold."""
    if depth > 5:
        return "..."
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (frozenset, set)):
        return sorted(map(str, value))
    if isinstance(value, (list, tuple)):
        return [describe(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {str(key): describe(item, depth + 1) for key, item in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if dataclasses.is_dataclass(value):
        return [type(value).__qualname__, {f.name: describe(getattr(value, f.name), depth + 1)
                                           for f in dataclasses.fields(value) if f.compare}]
    if callable(value) and hasattr(value, "__qualname__"):
        cells = [describe(cell.cell_contents, depth + 1) for cell in (getattr(value, "__closure__", None) or ())]
        return [value.__module__, value.__qualname__, cells]
    return [type(value).__qualname__, describe(vars(value), depth + 1) if hasattr(value, "__dict__") else repr(value)]


def picture(op_type: str) -> str:
    return json.dumps([describe(table.get(op_type)) for table in TABLES + FILLED], sort_keys=True, default=str)


class Fresh:
    """The state after importing the executor, to go back to before each type: the modules, the tables, their
    indexes."""

    def __init__(self):
        self.modules = set(sys.modules)
        self.tables = [(dict(dict.items(t)), dict(t.staged), dict(t.pending)) for t in TABLES]
        self.pending = [pending for _, _, pending in self.tables]
        self.filled = [dict(dict.items(t)) for t in FILLED]

    def restore(self) -> None:
        for name in [m for m in sys.modules if m not in self.modules]:
            del sys.modules[name]
            parent, _, child = name.rpartition(".")
            if parent in sys.modules and hasattr(sys.modules[parent], child):
                delattr(sys.modules[parent], child)   # else `from . import child` takes the old module
        for table, (entries, staged, pending) in zip(TABLES, self.tables):
            dict.clear(table)
            dict.update(table, {name: copied(entry) for name, entry in entries.items()})
            table.staged.clear()
            table.staged.update({name: copied(entry) for name, entry in staged.items()})
            table.pending.clear()
            table.pending.update(pending)
        for table, entries in zip(FILLED, self.filled):
            dict.clear(table)
            dict.update(table, entries)


def copied(entry):
    """A definition copied (defgrad changes one in place); a kernel as it is."""
    return dataclasses.replace(entry) if dataclasses.is_dataclass(entry) else entry


def main() -> None:
    fresh = Fresh()
    # types whose reads import the same modules are read from one fresh state: reading one leaves the tables as
    # reading another alone would (1,126 types, 269 states)
    needs = defaultdict(list)
    for table in TABLES:
        table.load_all()
    complete = {name: picture(name) for name in sorted({*dict.keys(OPS), *dict.keys(KERNELS)})}
    for name in complete:
        needs[tuple(modules.get(name, ()) for modules in fresh.pending)].append(name)
    differ = []
    for names in needs.values():
        fresh.restore()
        differ.extend(name for name in names if picture(name) != complete[name])
    print(json.dumps({"types": len(complete), "states": len(needs), "differ": sorted(differ)}))


if __name__ == "__main__":
    main()

"""Run by tests/test_op_families.py in a new interpreter: for every op type, read it from an op table that has
imported no family yet, and compare what it holds (the OpDef and the type's optimizer update rule) with what it
holds once every family is imported. Prints {"types": n, "differ": [...]} as JSON."""

from __future__ import annotations

import dataclasses
import json
import sys

import gradc  # noqa: F401  (the op table and the families gradc itself imports)
from gradc.ops.optimizer_checks import UPDATES
from gradc.registry import OPS


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
    return json.dumps([describe(OPS.get(op_type)), describe(UPDATES.get(op_type))], sort_keys=True, default=str)


class Fresh:
    """The state after `import gradc`, to go back to before each type: the modules, the tables, the index."""

    def __init__(self):
        self.modules = set(sys.modules)
        self.definitions = {name: dataclasses.replace(d) for name, d in dict.items(OPS)}
        self.staged = {name: dataclasses.replace(d) for name, d in OPS.staged.items()}
        self.rules = dict(dict.items(UPDATES))
        self.pending = dict(OPS.pending)

    def restore(self) -> None:
        for name in [m for m in sys.modules if m not in self.modules]:
            del sys.modules[name]
            parent, _, child = name.rpartition(".")
            if parent in sys.modules and hasattr(sys.modules[parent], child):
                delattr(sys.modules[parent], child)   # else `from . import child` takes the old module
        dict.clear(OPS)
        dict.update(OPS, {name: dataclasses.replace(d) for name, d in self.definitions.items()})
        OPS.staged.clear()
        OPS.staged.update({name: dataclasses.replace(d) for name, d in self.staged.items()})
        dict.clear(UPDATES)
        dict.update(UPDATES, self.rules)
        OPS.pending.clear()
        OPS.pending.update(self.pending)


def main() -> None:
    fresh = Fresh()
    OPS.load_all()
    complete = {name: picture(name) for name in dict.keys(OPS)}
    differ = []
    for name in sorted(complete):
        fresh.restore()
        if picture(name) != complete[name]:
            differ.append(name)
    print(json.dumps({"types": len(complete), "differ": differ}))


if __name__ == "__main__":
    main()

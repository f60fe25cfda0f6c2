"""Scopes: name -> value maps with parent links. Parameters live in an outer scope across runs;
each run's temporaries live in a child scope that is dropped afterwards."""

from __future__ import annotations

from collections.abc import Iterator


class Scope:
    __slots__ = ("vars", "parent", "lods", "unchecked")

    def __init__(self, parent: Scope | None = None):
        self.vars: dict[str, object] = {}
        self.parent = parent
        self.lods: dict[str, tuple] | None = None   # name -> LoD of the vars that have one (gradc.executor.lod)
        self.unchecked: set[str] = set()   # names given values by scope[name] = ...: Executor.run checks them

    def child(self) -> Scope:
        return Scope(self)

    def owner(self, name: str) -> Scope | None:
        """The nearest scope, this one or an ancestor, that holds ``name``."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope
            scope = scope.parent
        return None

    def find(self, name: str, default=None):
        scope: Scope | None = self
        while scope is not None:
            value = scope.vars.get(name, scope)
            if value is not scope:
                return value
            scope = scope.parent
        return default

    def home(self, name: str) -> Scope:
        """Where a write of ``name`` lands: the scope that holds it (an outer var updated in place), else this."""
        return self.owner(name) or self

    def assign(self, name: str, value) -> None:
        self.home(name).vars[name] = value

    def __getitem__(self, name: str):
        value = self.find(name, MISSING)
        if value is MISSING:
            raise KeyError(name)
        return value

    def __setitem__(self, name: str, value) -> None:
        self.vars[name] = value
        self.unchecked.add(name)

    def __delitem__(self, name: str) -> None:
        del self.vars[name]

    def __contains__(self, name: str) -> bool:
        return self.owner(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.vars)

    def __len__(self) -> int:
        return len(self.vars)

    def keys(self):
        return self.vars.keys()

    def __repr__(self) -> str:
        return f"Scope({len(self.vars)} vars{', with parent' if self.parent else ''})"


MISSING = object()  # find()'s default when absence must be told apart from a stored None
_GLOBAL = Scope()


def global_scope() -> Scope:
    """The scope used when Executor.run is given none."""
    return _GLOBAL

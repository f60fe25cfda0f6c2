"""Op tables: op type -> OpDef (gradc.registry.OPS) or kernel (gradc.executor.kernels.KERNELS) for every op gradc
knows, importing only the families a run asks for.

The built-in families (the modules of gradc.ops and of gradc.executor.kernels) register their ops when imported.
Importing all the op families was about a quarter of `import gradc`, and a program uses a few. So a table holds an
index, op type -> the family modules whose import registers or changes that type, and imports them the first time
the type is read. Walking the table (iterating, len, keys, values, items, copy) imports every family first: to a
reader the table is always complete.

Other tables keyed by op type that the families fill as they are imported (an optimizer op's update rule, the
input slots a kernel reads only the shape of) are FamilyTables: reading one imports the families of the type
read, as the op table does.

Registering goes through ``holds`` and ``before_registering``, not ``in``: a family registering its own ops must
not import the modules that extend them while it is itself half imported.
"""

from __future__ import annotations

import importlib
import sys


class _FilledByFamilies(dict):
    """A dict keyed by op type whose entries the op families make as they are imported: reading a type imports
    its families first; walking the dict imports them all."""

    _ops: OpTable

    def __getitem__(self, type: str):
        if type in self._ops.pending:
            self._ops.load(type)
        return dict.__getitem__(self, type)

    def get(self, type: str, default=None):
        if type in self._ops.pending:
            self._ops.load(type)
        return dict.get(self, type, default)

    def __contains__(self, type) -> bool:
        if type in self._ops.pending:
            self._ops.load(type)
        return dict.__contains__(self, type)

    def __iter__(self):
        self._ops.load_all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._ops.load_all()
        return dict.__len__(self)

    def keys(self):
        self._ops.load_all()
        return dict.keys(self)

    def values(self):
        self._ops.load_all()
        return dict.values(self)

    def items(self):
        self._ops.load_all()
        return dict.items(self)

    def copy(self) -> dict:
        self._ops.load_all()
        return dict(dict.items(self))


class OpTable(_FilledByFamilies):
    """op type -> its OpDef (gradc.registry.OPS) or its kernel (gradc.executor.kernels.KERNELS). An entry registered
    while its type is pending waits in ``staged`` until the type's modules are all imported, so that an entry found
    in the dict itself is always whole: the compiler's lookups (gradc.opdef.get) need no other check."""

    def __init__(self):
        super().__init__()
        self._ops = self
        self.pending: dict[str, tuple[str, ...]] = {}   # op type -> modules to import before it is read
        self.staged: dict[str, object] = {}              # op type -> its entry, until the type is loaded

    def defer(self, families: dict[str, tuple[str, ...]], package: str) -> None:
        """``families``: module of ``package`` -> the op types its import registers or changes. Each type's
        modules are imported the first time the type is read."""
        for module, types in families.items():
            for type in types:
                self.pending[type] = (*self.pending.get(type, ()), f"{package}.{module}")

    def load(self, type: str) -> None:
        """Import the modules that register or change ``type``. The type stays pending until they are imported:
        another thread reading it meanwhile waits on the import's lock instead of reading a half-made entry."""
        for module in self.pending.get(type, ()):
            importlib.import_module(module)
        self.pending.pop(type, None)
        if type in self.staged:
            dict.__setitem__(self, type, self.staged.pop(type))

    def __setitem__(self, type: str, entry) -> None:
        if type in self.pending:
            self.staged[type] = entry
        else:
            dict.__setitem__(self, type, entry)

    def load_all(self) -> None:
        while self.pending:
            self.load(next(iter(self.pending)))

    def holds(self, type: str) -> bool:
        """Whether ``type`` is registered already, importing nothing."""
        return dict.__contains__(self, type) or type in self.staged

    def knows(self, type: str) -> bool:
        """Whether ``type`` has an entry, or will have one once its modules are imported; importing nothing (`gradc
        ops` and the viewer say which ops have kernels without importing the kernels, and numpy)."""
        return dict.__contains__(self, type) or type in self.staged or type in self.pending

    def before_registering(self, type: str, replace: bool) -> None:
        """A registration from outside the families (a plugin, a user's op) of a built-in type: import the type's
        families first, so that a duplicate is refused now and a replacement is not undone by a later import. A
        family registering its own type has one of the type's modules imported (itself): nothing is imported."""
        modules = self.pending.get(type)
        if modules and (replace or not any(module in sys.modules for module in modules)):
            self.load(type)


class FamilyTable(_FilledByFamilies):
    """Another table keyed by op type that the families fill, read through the op table's index."""

    def __init__(self, ops: OpTable):
        super().__init__()
        self._ops = ops

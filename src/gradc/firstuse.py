"""Names a package imports from its modules on first use (a module ``__getattr__``, PEP 562): importing the package
costs only what its user reads. gradc, gradc.executor and gradc.training keep their public names so."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable


def on_first_use(package: str, names: dict[str, str], namespace: dict) -> tuple[Callable, Callable]:
    """The package's ``__getattr__`` and ``__dir__``. ``names``: name -> the module, relative to ``package``, that
    defines it; ``namespace``: the package's globals, where a name stays once read. A submodule is imported when
    read as an attribute, as it is once imported."""

    def __getattr__(name: str):
        if name not in names:   # a submodule (gradc.gradcheck, gradc.optimizers) after a bare `import gradc`
            if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}") is not None:
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(names[name], package), name)
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__

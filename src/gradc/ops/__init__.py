"""Op definitions, one module per family. A family registers its ops when imported, and the op table imports it
the first time one of its ops is read (gradc.optable): a compile imports the families its program uses. Which
module registers which op is in families.py, written by tools/op_families.py."""

from ..opdef import OPS
from .families import FAMILIES


def _index() -> dict[str, tuple[str, ...]]:
    """op type -> the modules (full names) whose import registers or changes it."""
    modules: dict[str, list[str]] = {}
    for family, types in FAMILIES.items():
        for op_type in types:
            modules.setdefault(op_type, []).append(f"{__name__}.{family}")
    return {op_type: tuple(names) for op_type, names in modules.items()}


OPS.defer(_index())

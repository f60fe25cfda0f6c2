"""Op definitions, one module per family. A family registers its ops when imported, and the op table imports it
the first time one of its ops is read (gradc.optable): a compile imports the families its program uses. Which
module registers which op is in families.py, written by tools/op_families.py."""

from ..opdef import OPS
from .families import FAMILIES

OPS.defer(FAMILIES, __name__)

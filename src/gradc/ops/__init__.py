"""Op definitions, one module per family. Importing this package registers them all: every module in it is
imported, so a new family needs no list to be edited."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

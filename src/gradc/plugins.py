"""Plugins: a module gradc imports before a command (gradc --plugin NAME), so it can register ops, kernels and
passes. NAME is a module importable from the current directory, or a path to a .py file."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from .errors import GradcError


def import_plugin(name: str) -> None:
    """A module name (importable from the current directory too) or a path to a .py file."""
    try:
        if name.endswith(".py") or "/" in name:
            path = Path(name)
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or not path.is_file():
                raise ImportError(f"no file {path}")
            loaded = sys.modules.get(path.stem)
            if loaded is not None and getattr(loaded, "__file__", None) == spec.origin:
                return   # imported already, as a module name's second import_module is: its ops stay registered once
            sys.path.insert(0, str(path.parent.resolve()))   # its own helper modules import as they would beside it
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module
            spec.loader.exec_module(module)
        else:
            sys.path.insert(0, os.getcwd())
            importlib.import_module(name)
    except GradcError:
        raise
    except Exception as exc:  # noqa: BLE001 - the plugin's own bug: one line naming it
        raise GradcError(f"cannot import plugin '{name}': {type(exc).__name__}: {exc}") from None

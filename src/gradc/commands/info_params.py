"""gradc info of parameter files: what a checkpoint holds (`gradc info pretrained.pdparams`), and, beside a program
(`gradc info PROGRAM --params FILE`), which of its parameters the files give, which they leave to a startup program,
which of their values it has no var for and which have another shape or dtype: a partial load read before training."""

from __future__ import annotations

import numpy as np

from ..errors import FormatError
from ..executor.feeding import shape_fits
from ..ir import Program
from ..ir.types import NUMPY_DTYPE_NAMES
from ..training.params import checked_param, read_values

LISTED = 12   # names listed; the rest counted


def _named(names: list[str]) -> str:
    return ", ".join(names[:LISTED]) + (f", ... ({len(names)} in all)" if len(names) > LISTED else "") or "none"


def file_facts(path: str) -> dict:
    """Each array of a parameter file that names its values (.npz, .pdparams, .pdopt): name, dtype, shape."""
    values = read_values(path)
    return {"file": path, "kind": "parameter file", "values": int(sum(np.size(v) for v in values.values())),
            "arrays": [{"name": name, "dtype": str(np.asarray(value).dtype), "shape": list(np.shape(value))}
                       for name, value in sorted(values.items())]}


def file_lines(facts: dict) -> list[str]:
    return [f"{facts['file']}: a parameter file, {len(facts['arrays'])} arrays ({facts['values']:,} values); give it "
            f"to a program with --params (gradc info PROGRAM --params FILE: what it gives the program)",
            *(f"  {array['name']}  {array['dtype']}{array['shape']}" for array in facts["arrays"])]


def loading_facts(program: Program, paths: tuple[str, ...]) -> dict:
    """What the files, later ones winning, give the program's parameters, as `--params` would load them."""
    values = {}
    for path in paths:
        # a .pdiparams names nothing itself: it is read in the program's order
        values.update(read_values(path, program if str(path).endswith(".pdiparams") else None, check=False))
    block = program.global_block
    params = sorted(name for name, var in block.vars.items() if var.is_parameter)
    mismatched, other_dtype = {}, {}
    for name, value in sorted(values.items()):
        var = block.find_var(name)
        shape = list(var.shape) if var is not None else None
        if shape is not None and not shape_fits(np.shape(value), shape):
            mismatched[name] = {"file": list(np.shape(value)), "program": shape}
        elif var is not None and not _fits(program, name, value):   # the shape fits: --params refuses its dtype
            other_dtype[name] = {"file": str(np.asarray(value).dtype),
                                 "program": NUMPY_DTYPE_NAMES.get(var.dtype, str(var.dtype))}
    return {"files": [str(path) for path in paths], "given": [name for name in params if name in values],
            "not_given": [name for name in params if name not in values],
            "unused": sorted(name for name in values if block.find_var(name) is None), "other_shape": mismatched,
            "other_dtype": other_dtype}


def _fits(program: Program, name: str, value) -> bool:
    """Whether --params would load ``value`` into the var (checked_param, the check a run makes)."""
    try:
        checked_param(program, name, value, "")
    except FormatError:
        return False
    return True


def loading_lines(facts: dict, parameters: int) -> list[str]:
    refused = [name for name in facts["given"] if name in facts["other_shape"] or name in facts["other_dtype"]]
    lines = [f"--params {', '.join(facts['files'])}: gives {len(facts['given'])} of the {parameters} parameters"
             + (f", {len(refused)} of them refused (below)" if refused else ""),
             f"  not given (a startup program must initialise them): {_named(facts['not_given'])}",
             f"  values no var of the program has (left out, with a warning): {_named(facts['unused'])}"]
    lines += [f"  another shape (refused): {name} {shapes['file']}, the program's {shapes['program']}"
              for name, shapes in facts["other_shape"].items()]
    lines += [f"  another dtype (refused): {name} {dtypes['file']}, the program's {dtypes['program']}"
              for name, dtypes in facts["other_dtype"].items()]
    return lines

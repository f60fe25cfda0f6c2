"""Examples from a CSV file with a header: each column is named after the feed var it fills, and a var with k
values an example repeats its name over k columns (x,x,x,x,label). A var's columns take its declared shape (the
batch dim is the rows) and dtype, so the file is read against the program it feeds."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..errors import FormatError
from ..executor.feeding import program_inputs
from ..ir import Program
from ..ir.types import NUMPY_DTYPE_NAMES


def read_csv(path: str | Path, program: Program, what: str = "data", others: bool = False) -> dict[str, np.ndarray]:
    """``others``: a column that names no var of the program is kept (int64 when it holds whole numbers), as an
    exported model's labels are, instead of refused."""
    where = f"{what} '{path}'"
    try:
        with open(path, encoding="utf-8") as handle:
            names = [name.strip().strip('"') for name in handle.readline().rstrip("\r\n").split(",")]
            rows = [_numbers(line, number, names, where) for number, line in enumerate(handle, 2) if line.strip()]
    except OSError as exc:
        raise FormatError(f"cannot read {where}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise FormatError(f"cannot read {where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if names == [""] or not rows or all(_is_number(name) for name in names):
        header = _header_for(program)
        raise FormatError(f"{where}: give a header line naming each column's feed var{f' ({header})' if header else ''}"
                          f", then one example a line")
    table = np.array(rows, np.float64)
    return {name: _column_group(table[:, [i for i, n in enumerate(names) if n == name]], name, program, where, others)
            for name in dict.fromkeys(names)}


def _numbers(line: str, number: int, names: list[str], where: str) -> list[float]:
    fields = line.split(",")
    if len(fields) != len(names):
        raise FormatError(f"{where}, line {number}: {len(fields)} values, but the header names {len(names)} columns")
    try:
        return [float(field) for field in fields]
    except ValueError:
        column = next(i for i, field in enumerate(fields) if not _is_number(field))
        raise FormatError(f"{where}, line {number}, column {column + 1} ('{names[column]}'): "
                          f"'{fields[column].strip()}' is not a number") from None


def _is_number(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _header_for(program: Program) -> str:
    """'x,x,x,x,label': a header the program's inputs take, each name over as many columns as an example has values
    (empty where their shapes do not tell, or the header is too long to show)."""
    block, names = program.global_block, []
    for name in program_inputs(block):
        example = (block.find_var(name).shape or [0])[1:]
        if any(d < 0 for d in example):
            return ""
        names += [name] * math.prod(example)
    return ",".join(names) if 0 < len(names) <= 16 else ""


def _column_group(values: np.ndarray, name: str, program: Program, where: str, others: bool) -> np.ndarray:
    var = program.global_block.find_var(name)
    if var is None and others:
        return values.astype(np.int64 if np.array_equal(values, np.round(values)) else np.float32)
    if var is None:
        raise FormatError(f"{where}: column '{name}' names no var of the program (its inputs: "
                          f"{', '.join(program_inputs(program.global_block)) or 'none'}"
                          f"{f'; a header it takes: {header}' if (header := _header_for(program)) else ''})")
    example = list(var.shape[1:]) if var.shape else []
    known = math.prod(d for d in example if d >= 0)
    if example.count(-1) == 1 and known and values.shape[1] % known == 0:
        example[example.index(-1)] = values.shape[1] // known
    if math.prod(example) != values.shape[1] or -1 in example:
        raise FormatError(f"{where}: {values.shape[1]} column(s) '{name}' do not make one example of var '{name}', "
                          f"declared {var.shape} (repeat a name over as many columns as the var has values)")
    dtype = np.dtype(NUMPY_DTYPE_NAMES.get(var.dtype, "float32"))
    if dtype.kind in "biu" and not np.array_equal(values, np.round(values)):
        raise FormatError(f"{where}: column '{name}' holds fractions, but var '{name}' is {dtype}")
    return values.reshape([len(values), *example]).astype(dtype)

"""Examples from a CSV file with a header: each column is named after the feed var it fills, and a var with k
values an example repeats its name over k columns (x,x,x,x,label). A var's columns take its declared shape (the
batch dim is the rows) and dtype, so the file is read against the program it feeds."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from ..errors import FormatError, GradcNotice
from ..executor.feeding import program_inputs
from ..ir import Program
from ..ir.types import NUMPY_DTYPE_NAMES


def read_csv(path: str | Path, program: Program, what: str = "data", others: bool = False) -> dict[str, np.ndarray]:
    """``others``: a column that names no var of the program is kept (int64 when it holds whole numbers), as an
    exported model's labels are, instead of refused. An integer var's cells are read as integers (a 64-bit hashed
    id keeps every digit); an empty cell, nan or inf is refused with its line and column (docs: no missing values)."""
    where = f"{what} '{path}'"
    try:
        with open(path, encoding="utf-8") as handle:
            names = [name.strip().strip('"') for name in handle.readline().rstrip("\r\n").split(",")]
            if (parsed := _parsed(handle, names, program, where)) is not None:
                try:
                    return {name: _column_group(parsed, name, program, others) for name in dict.fromkeys(names)}
                except _NotPlain:
                    pass
            handle.seek(0)
            handle.readline()
            lines, rows = [], []
            for number, line in enumerate(handle, 2):
                if line.strip():
                    lines.append(number)
                    rows.append(_fields(line, number, names, where))
    except OSError as exc:
        raise FormatError(f"cannot read {where}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise FormatError(f"cannot read {where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if names == [""] or not rows or all(_is_number(name) for name in names):
        header = _header_for(program)
        raise FormatError(f"{where}: give a header line naming each column's feed var{f' ({header})' if header else ''}"
                          f", then one example a line")
    if unnamed := [str(i + 1) for i, name in enumerate(names) if not name]:
        warnings.warn(f"{where}: column {', '.join(unnamed)} left out: no name in the header (pandas' to_csv writes "
                      f"its index so; index=False leaves it out)", GradcNotice, stacklevel=3)
    table = _Table(np.array(rows, dtype=str), lines, names, where)
    return {name: _column_group(table, name, program, others) for name in dict.fromkeys(names) if name}


class _NotPlain(Exception):
    """A cell numpy's parser read that the var cannot take: the file is read again cell by cell, to name it."""


def _parsed(handle, names: list[str], program: Program, where: str) -> _Columns | None:
    """The cells read by numpy's parser in C, each column as its var's kind (integers as int64, the rest float64);
    None where a column names no var, or a cell is not a plain number of its kind (an empty cell, a row too short):
    the reading cell by cell says which."""
    block = program.global_block
    found = [block.find_var(name) if name else None for name in names]
    if None in found:
        return None
    kinds = [np.int64 if np.dtype(NUMPY_DTYPE_NAMES.get(var.dtype, "float32")).kind in "biu" else np.float64
             for var in found]
    try:
        with warnings.catch_warnings():   # a file of a header alone: its error is the reading cell by cell's
            warnings.simplefilter("ignore", UserWarning)
            # numpy before 2.3 reads '1.5', 'nan' or 2**64 into an int64 column as 1 or -2**63, with this warning
            warnings.simplefilter("error", DeprecationWarning)
            table = np.loadtxt(handle, delimiter=",", comments=None, ndmin=1,
                               dtype=np.dtype([(str(i), kind) for i, kind in enumerate(kinds)]))
    except (ValueError, OverflowError, UnicodeDecodeError, DeprecationWarning):
        return None
    return _Columns(table, names, where) if len(table) else None


class _Columns:
    """The columns numpy's parser read, taken as _Table takes its text; a cell the var cannot take raises _NotPlain."""

    def __init__(self, table: np.ndarray, names: list[str], where: str):
        self.table, self.names, self.where = table, names, where

    def floats(self, columns: list[int]) -> np.ndarray:
        values = np.stack([self.table[str(i)] for i in columns], axis=1)
        if not np.isfinite(values).all():
            raise _NotPlain
        return values

    def whole_numbers(self, columns: list[int], var: str, dtype: np.dtype) -> np.ndarray:
        values = np.stack([self.table[str(i)] for i in columns], axis=1)
        if dtype.kind in "iu" and dtype != np.int64:
            limits = np.iinfo(dtype)
            if ((values < limits.min) | (values > limits.max)).any():
                raise _NotPlain
        return values


def _fields(line: str, number: int, names: list[str], where: str) -> list[str]:
    fields = [field.strip() for field in line.split(",")]
    if len(fields) != len(names):
        raise FormatError(f"{where}, line {number}: {len(fields)} values, but the header names {len(names)} columns")
    return fields


def _is_number(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


class _Table:
    """The cells as text, read column group by column group into the dtype of the var they feed; a cell that does
    not read is refused naming its line and column."""

    def __init__(self, cells: np.ndarray, lines: list[int], names: list[str], where: str):
        self.cells, self.lines, self.names, self.where = cells, lines, names, where

    def floats(self, columns: list[int]) -> np.ndarray:
        try:
            values = self.cells[:, columns].astype(np.float64)
        except ValueError:
            self._refuse(columns, lambda field: not _is_number(field), "is not a number")
        if not np.isfinite(values).all():
            self._refuse(columns, lambda field: not math.isfinite(float(field)), "is not a finite number (gradc "
                         "reads no missing or infinite values: a loss over them is nan)")
        return values

    def whole_numbers(self, columns: list[int], var: str, dtype: np.dtype) -> np.ndarray:
        """Integers read as integers, not through a float, which holds 53 bits (a 64-bit hashed id keeps its
        digits); '3.0' reads as 3."""
        try:
            values = self.cells[:, columns].astype(np.int64)
        except (ValueError, OverflowError):
            self.floats(columns)   # an empty cell, a word, nan or inf: refused as in a float column
            self._refuse(columns, lambda field: not _whole(field), f"is not a whole number, but var '{var}' is {dtype}")
            self._refuse(columns, lambda field: not INT64.min <= _integer(field) <= INT64.max,
                         f"is out of int64's range ({INT64.min} to {INT64.max})")
            values = np.array([[_integer(field) for field in fields] for fields in self.cells[:, columns]], np.int64)
        if dtype.kind in "iu" and dtype != np.int64:
            limits = np.iinfo(dtype)
            self._refuse(columns, lambda field: True, f"is out of {dtype}'s range ({limits.min} to {limits.max}), the "
                         f"dtype of var '{var}'", (values < limits.min) | (values > limits.max))
        return values

    def _refuse(self, columns: list[int], bad, why: str, flagged: np.ndarray | None = None) -> None:
        """Raise for the first cell, row by row, that ``bad`` finds (among those ``flagged``, if given)."""
        for row, fields in enumerate(self.cells[:, columns]):
            for offset, field in enumerate(fields):
                if (flagged is None or flagged[row, offset]) and bad(field):
                    column = columns[offset]
                    said = (f"'{field}' {why}" if field else "the cell is empty (gradc reads no missing values: fill "
                            "them in, as pandas' fillna does, or leave the row out)")
                    raise FormatError(f"{self.where}, line {self.lines[row]}, column {column + 1} "
                                      f"('{self.names[column]}'): {said}")


INT64 = np.iinfo(np.int64)


def _integer(field: str) -> int:
    try:
        return int(field)
    except ValueError:
        return int(float(field))


def _whole(field: str) -> bool:
    try:
        int(field)
    except ValueError:
        return _is_number(field) and float(field).is_integer()
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


def _column_group(table: _Table | _Columns, name: str, program: Program, others: bool) -> np.ndarray:
    columns = [i for i, n in enumerate(table.names) if n == name]
    var, where = program.global_block.find_var(name), table.where
    if var is None and others:
        if all(map(_whole, table.cells[:, columns].ravel())):
            return table.whole_numbers(columns, name, np.dtype(np.int64))
        return table.floats(columns).astype(np.float32)
    if var is None:
        raise FormatError(f"{where}: column '{name}' names no var of the program (its inputs: "
                          f"{', '.join(program_inputs(program.global_block)) or 'none'}"
                          f"{f'; a header it takes: {header}' if (header := _header_for(program)) else ''})")
    example = list(var.shape[1:]) if var.shape else []
    known = math.prod(d for d in example if d >= 0)
    if example.count(-1) == 1 and known and len(columns) % known == 0:
        example[example.index(-1)] = len(columns) // known
    if math.prod(example) != len(columns) or -1 in example:
        raise FormatError(f"{where}: {len(columns)} column(s) '{name}' do not make one example of var '{name}', "
                          f"declared {var.shape} (repeat a name over as many columns as the var has values)")
    dtype = np.dtype(NUMPY_DTYPE_NAMES.get(var.dtype, "float32"))
    values = table.whole_numbers(columns, name, dtype) if dtype.kind in "biu" else table.floats(columns)
    return values.reshape([len(values), *example]).astype(dtype, order="C")   # a batch is C-ordered, whichever read it

"""Putting fed values into a run's scope: each checked against the var it feeds (declared, dtype, shape),
and the holder list that a saved inference program's feed ops read (columns checked); and the names a run fetches,
checked before it starts."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping

import numpy as np

from ..bfloat16 import as_bfloat16
from ..errors import ExecutionError, FeedError, GradcNotice, closest, op_location
from ..float8 import FORMATS as FLOAT8_FORMATS
from ..float8 import as_float8
from ..io.arrays import read_npz
from ..ir import GRAD_SUFFIX, Block, VarType
from ..ir.types import NUMPY_DTYPE_NAMES
from .declared import read_by
from .lod import LoDTensor, checked_lod, set_lod
from .scope import MISSING, Scope

_DTYPES = {var_type: np.dtype(name) for var_type, name in NUMPY_DTYPE_NAMES.items()}   # compared faster than names


def as_feed(feed) -> Mapping[str, object]:
    """What Executor.run takes as its feed: a dict of name -> value, None, or the path of an .npz of them (what
    gradc run --feed reads, and gradc.train and gradc.evaluate take)."""
    if feed is None:
        return {}
    if isinstance(feed, (str, os.PathLike)):
        return read_npz(feed, "feed")
    if not isinstance(feed, Mapping):
        raise FeedError(f"the feed is a {type(feed).__name__}: give a dict of var name -> array, or the path of an "
                        f".npz of them")
    return feed


def fetch_names(fetch_list) -> list[str]:
    """What Executor.run takes as its fetch_list: one name, or a list of names or of vars (a VarDesc, as Paddle's
    executor takes its Variables: each stands for its name), and, as Paddle's flattens them, lists of those among
    them (``[loss, grads]``, the list gradients() returns)."""
    if fetch_list is None or isinstance(fetch_list, str):
        return [] if fetch_list is None else [fetch_list]
    names, one_var = [], isinstance(getattr(fetch_list, "name", None), str)
    entries = [fetch_list] if one_var else fetch_list
    flat = [inner for entry in entries for inner in (entry if isinstance(entry, (list, tuple)) else [entry])]
    for entry in flat:
        name = entry if isinstance(entry, str) else getattr(entry, "name", None)
        if not isinstance(name, str):
            raise ExecutionError(f"fetch_list holds a {type(entry).__name__}: give var names, or the program's vars "
                                 f"(block.var(name))")
        names.append(name)
    return names


def feed_values(block: Block, feed: Mapping[str, object], scope: Scope, feeds: list | None = None) -> None:
    """As Paddle's executor: a numpy array fed to a data var (need_check_feed) must have its dtype;
    Python scalars and lists are converted to it. Other vars take any numeric array, cast. ``feeds``: the
    block's ``feed_ops`` when the caller knows them (the executor's plan). A LoDTensor's LoD is checked
    against its rows and recorded beside the value (gradc.executor.lod); one fed to a var of padded sequences
    (_takes_padded) is padded."""
    feeds = feed_ops(block.ops) if feeds is None else feeds
    for name, value in feed.items():
        lod = None
        if isinstance(value, LoDTensor):
            value, lod = value.array, value.lod
        var = block.find_var(name)
        if var is None:
            raise FeedError(f"feed var '{name}' is not declared in block 0{_expected_feeds(block, name, feed)}")
        if lod is not None and _takes_padded(var, value, lod):   # its offsets checked first: they cut the rows
            checked_lod(lod, np.shape(value)[0], f"feed var '{name}'")
            rows = np.asarray(value)
            if rows.ndim == len(var.shape) and rows.shape[-1] == 1:   # Paddle's LoD ids, [T, 1]: a token a row
                rows = rows.reshape(rows.shape[:-1])
            value, lod = padded_sequences(rows, lod[0]), None
        if var.dtype == VarType.BF16:
            array = _bfloat16_feed(name, value, var.need_check_feed)
        elif var.dtype in FLOAT8_FORMATS:
            array = _float8_feed(name, value, var)
        else:
            array = _checked_feed(name, value, var, block)
        if var.shape is not None and not shape_fits(array.shape, var.shape):
            if not (feeds and array.ndim == len(var.shape)):
                raise FeedError(f"feed var {read_by(block, name)} has shape {list(array.shape)}, but block 0 declares "
                                f"{var.shape}{_unit_axis_hint(array.shape, var.shape)}")
            warnings.warn(f"feed var '{name}' has shape {list(array.shape)} where the saved model declares "
                          f"{var.shape}: run as Paddle's Predictor runs it, which checks no declared size",
                          GradcNotice, stacklevel=2)
        scope[name] = array
        if lod is not None:
            set_lod(scope, name, checked_lod(lod, array.shape[0] if array.ndim else 0, f"feed var '{name}'"))
    _fill_holder(block, scope, feeds)


def _takes_padded(var, value, lod) -> bool:
    """Sequences fed to a var of no LoD that has a time axis after the batch axis, of any length ([-1, -1] token
    ids): it takes them padded, a row a sequence; rows of a trailing unit axis the var lacks too (Paddle's [T, 1] LoD
    ids)."""
    shape, rank = var.shape or [], np.ndim(value)
    unit_rows = rank == len(shape) and np.shape(value)[-1] == 1 and shape[-1] != 1
    return (not var.lod_level and len(lod) == 1 and (len(shape) == rank + 1 or unit_rows) and len(shape) >= 2
            and shape[1] < 0)


def padded_sequences(rows, offsets) -> np.ndarray:
    """The sequences of ``rows`` cut at ``offsets``, each a row padded with zeros to the longest, as a DataLoader's
    collate_fn pads a batch of sentences to its own longest."""
    rows, offsets = np.asarray(rows), [int(offset) for offset in offsets]
    lengths = np.diff(offsets)
    out = np.zeros((len(lengths), int(lengths.max(initial=0)), *rows.shape[1:]), rows.dtype)
    for index, (start, length) in enumerate(zip(offsets, lengths)):
        out[index, :length] = rows[start:start + length]
    return out


def _unit_axis_hint(shape: tuple, declared: list) -> str:
    """How to fit an array that lacks, or has, only a trailing axis of size 1 the var declares otherwise (labels of
    shape [N] for a var of [-1, 1], as Paddle's dygraph losses take them)."""
    if shape_fits((*shape, 1), declared):
        return " (give it the trailing axis of 1, e.g. with np.expand_dims(array, -1))"   # any rank, not just [N]
    if shape and shape[-1] == 1 and shape_fits(shape[:-1], declared):
        return " (drop its trailing axis of 1, e.g. with .squeeze(-1))"
    return ""


def _checked_feed(name: str, value, var, block: Block) -> np.ndarray:
    """A value fed to a var of a numpy dtype: converted to it, or refused where Paddle's executor refuses it."""
    expected = _DTYPES.get(var.dtype)
    array = np.asarray(value) if isinstance(value, np.ndarray) or expected is None else np.asarray(value, expected)
    if array.dtype.kind not in "biufc":
        raise FeedError(f"feed var '{name}' is {array.dtype}, not a numeric array")
    if expected is not None and array.dtype.type is not expected.type:   # either byte order
        if var.need_check_feed or (array.dtype.kind == "c" and expected.kind != "c"):
            raise FeedError(f"feed var {read_by(block, name)} is {array.dtype}, but block 0 declares {expected} "
                            f"(convert it, e.g. with .astype('{expected}'))")
        array = array.astype(expected)
    return array


def _bfloat16_feed(name: str, value, need_check_feed: bool | None) -> np.ndarray:
    """A value fed to a bfloat16 var, as float32 values rounded to bfloat16: uint16 arrays are bfloat16 bits (how
    Paddle hands bfloat16 to numpy, and what it feeds), float values are rounded; a data var takes only those two
    arrays, or Python numbers and lists."""
    array = np.asarray(value)
    checked = need_check_feed and isinstance(value, np.ndarray)   # Python numbers and lists are converted
    if array.dtype.kind not in "biuf" or (checked and array.dtype not in (np.float32, np.uint16)):
        raise FeedError(f"feed var '{name}' is {array.dtype}, but block 0 declares bfloat16: feed float32 "
                             f"values or uint16 bfloat16 bits")
    return as_bfloat16(array)


def _float8_feed(name: str, value, var) -> np.ndarray:
    """A value fed to a float8 var, as float32 values of its format: uint8 / int8 arrays are float8 bits (Paddle's
    numpy arrays of float8 are int8), float values are rounded; a data var takes only those, or Python numbers."""
    array = np.asarray(value)
    checked = var.need_check_feed and isinstance(value, np.ndarray)
    if array.dtype.kind not in "biuf" or (checked and array.dtype not in (np.float32, np.uint8, np.int8)):
        raise FeedError(f"feed var '{name}' is {array.dtype}, but block 0 declares {FLOAT8_FORMATS[var.dtype]}: "
                             f"feed float32 values or uint8 / int8 float8 bits")
    return as_float8(array, var.dtype)


def feed_ops(ops: list) -> list:
    """(index, op) of each feed op of a block's ops."""
    return [(idx, op) for idx, op in enumerate(ops) if op.type == "feed"]


def _fill_holder(block: Block, scope: Scope, feeds: list) -> None:
    """A saved inference program reads its inputs through feed ops: holder[col] for each."""
    if not feeds:
        return
    holder = [None] * len(feeds)
    for idx, op in feeds:
        col, out, src = op.attrs.get("col", 0), op.output("Out"), op.input("X")
        if len(out) != 1 or len(src) != 1 or src[0] != feeds[0][1].input("X")[0]:
            raise ExecutionError(f"{op_location(block.idx, idx, op.type)}: a feed op reads one holder var (X) "
                                 f"shared by all feed ops and writes one var (Out)")
        if not isinstance(col, int) or not 0 <= col < len(feeds):
            raise ExecutionError(f"{op_location(block.idx, idx, op.type)}: column {col!r} is outside the "
                                 f"{len(feeds)} columns of the program's feed ops")
        if out[0] in scope.vars:
            holder[col] = scope.vars[out[0]]
        elif scope.find(out[0], MISSING) is MISSING:
            raise FeedError(f"feed var '{out[0]}' is missing: {op_location(block.idx, idx, op.type)} takes it (the "
                            f"program's inputs: {', '.join(_feed_names(feeds))})")
    scope[feeds[0][1].input("X")[0]] = holder


def _feed_names(feeds: list) -> list[str]:
    return [name for _, op in feeds for name in op.output("Out")]


def program_inputs(block: Block) -> list[str]:
    """What a program takes: its feed ops' vars (a saved model), else its data vars (need_check_feed; a PIR training
    program's persistable data ops, its learning rate and optimizer state, are state its startup fills: not marked)."""
    return _feed_names(feed_ops(block.ops)) or [var.name for var in block.vars.values() if var.need_check_feed]


def _expected_feeds(block: Block, name: str, fed: Mapping[str, object]) -> str:
    """What the program does take, for an error about a name it does not: the one the name is a slip for, else the
    inputs the feed lacks (a file of the batch alone, a test set's labels beside it, without a fixed input)."""
    names = program_inputs(block)
    if not names:
        return ""
    close = closest(name, names, ignore_case=True)
    unfed = [input_name for input_name in names if input_name not in fed]
    hint = (f"; did you mean '{close}'?" if close else
            f"; not fed: {', '.join(unfed)}" if unfed else "")
    return f" (the program's inputs: {', '.join(names)}{hint})"


def shape_fits(actual: tuple[int, ...], declared: list[int]) -> bool:
    if len(actual) != len(declared):
        return False
    return all(d < 0 or d == a for a, d in zip(actual, declared))


def check_fetches(block: Block, names: list[str], scope: Scope) -> None:
    """A fetched name block 0 neither declares nor writes, and the scope does not hold, is a slip: said before the
    run, with the name meant."""
    for name in names:
        if (block.find_var(name) is None and scope.find(name, MISSING) is MISSING
                and not any(name in op.output_names() for op in block.ops)):
            close = closest(name, block.vars)
            hint = f" (did you mean '{close}'?)" if close else ""
            if "@GRAD" in name and not any("@GRAD" in out for op in block.ops for out in op.output_names()):
                hint = " (the program has no backward: gradc compile, or gradc.append_backward in Python, appends it)"
                if in_test_mode(block):   # clone(for_test=True) drops the backward
                    hint = (" (the program is in test mode, as clone(for_test=True) or an export leaves it, without "
                            "the backward: fetch gradients from the training program)")
            elif name.endswith(GRAD_SUFFIX) and getattr(block.find_var(var := name.removesuffix(GRAD_SUFFIX)),
                                                        "stop_gradient", False):
                hint = (f" ('{var}' is stop_gradient, as Paddle saves a fed input, so the backward gives it no "
                        f"gradient: gradc compile --wrt {var}, or clear block.var('{var}').stop_gradient "
                        f"before gradc.append_backward)")
            raise ExecutionError(f"fetch var '{name}' is not a var of block 0: no op writes it{hint}")


def in_test_mode(block: Block) -> bool:
    return any(op.attrs.get("is_test") for op in block.ops)


def unwritten_fetch(block: Block, name: str) -> ExecutionError:
    """A fetched var the run left without a value: declared, but no op wrote it and no feed gave it."""
    hint = ""
    if in_test_mode(block) and block.find_var(name) is not None:   # declared by the training program it was cloned from
        hint = (" (the program is in test mode, as clone(for_test=True) leaves it: outputs only training writes, such "
                "as batch norm's ReserveSpace, are not written; fetch it from the training program)")
    return ExecutionError(f"fetch var '{name}' has no value after the run: no op wrote it and it was not fed{hint}")

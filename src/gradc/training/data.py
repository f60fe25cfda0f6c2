"""Data for training: named arrays (one per feed var) that share their first dimension, the examples, cut
into batches in order or shuffled; or one batch fed at every step. Arrays may be memory-mapped (a directory
of .npy files): a batch reads only its rows."""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..errors import ExecutionError, FeedError, GradcError, GradcWarning, op_location
from ..executor.failures import NonFiniteError
from ..executor.feeding import feed_values, program_inputs
from ..executor.lod import LOD_SUFFIX, LoDTensor, checked_lod, with_lods
from ..executor.scope import Scope
from ..io.arrays import read_arrays
from ..ir import Program
from .labels import check_indices


class Dataset:
    """Examples as arrays named after feed vars, sharing their first dimension, or as sequences of rows (an array
    with its LoD offsets as ``NAME@LOD0``: a legacy detector's ground-truth boxes, an example's sentence), fed as a
    LoDTensor of the batch's sequences; and ``fixed`` arrays, fed whole with every batch (a detector's prior boxes or
    anchors: an input that is the same at every step). ``episodes``: each example is one step's whole feed (a
    meta-learning task's support and query sets, as Paddle's DataLoader(batch_size=None) gives them): a step feeds one
    example without a batch axis."""

    def __init__(self, arrays: Mapping[str, np.ndarray], source: str = "data",
                 fixed: Mapping[str, np.ndarray] | None = None, episodes: bool = False):
        if not arrays:
            raise GradcError(f"{source}: no arrays")
        fixed = {name: np.asarray(value) for name, value in (fixed or {}).items()}
        both = sorted(set(arrays) & set(fixed))
        if both:
            raise GradcError(f"{source}: {', '.join(both)} is both an array of examples and a fixed array (--feed)")
        examples, self.sequences = {}, {}   # a LoD array (NAME@LOD0 beside it): an example is a sequence of rows
        for name, value in with_lods(arrays).items():
            if isinstance(value, LoDTensor):
                if len(value.lod) != 1:
                    raise GradcError(f"{source}: '{name}' has {len(value.lod)} LoD levels; data sets take one")
                checked_lod(value.lod, len(value.array), f"{source}: '{name}{LOD_SUFFIX}0'")
                self.sequences[name] = np.asarray(value.lod[0])
                value = value.array
            examples[name] = value if isinstance(value, np.ndarray) else np.asarray(value)
        sizes = {name: (len(self.sequences[name]) - 1 if name in self.sequences else value.shape[0] if value.ndim
                        else None) for name, value in examples.items()}
        if len(set(sizes.values())) != 1 or None in sizes.values():
            listed = ", ".join(f"{name} {list(value.shape)}" + (f" ({sizes[name]} sequences)" if name in self.sequences
                                                                else "") for name, value in examples.items())
            raise GradcError(f"{source}: the arrays must share their first dimension (the examples): {listed}; an "
                             f"input that is the same at every step (prior boxes, anchors) goes in a second .npz "
                             f"given with --feed (fixed= of gradc.Dataset in Python){_rows_per_example(sizes)}")
        self.size = next(iter(sizes.values()))
        if self.size == 0:
            raise GradcError(f"{source}: holds no examples")
        self.arrays = {**examples, **fixed}   # every array the program is fed, by name
        self.fixed = fixed
        self.episodes = episodes
        if episodes and self.sequences:
            raise GradcError(f"{source}: episodes take arrays whose rows are whole feeds, not LoD sequences")
        self.source = source
        self.item = "array"   # what the error of a bad value calls one of them (a .csv's are columns)

    @classmethod
    def load(cls, path: str | Path, what: str = "data", program: Program | None = None,
             others: bool = False, fixed: Mapping[str, np.ndarray] | None = None, episodes: bool = False) -> Dataset:
        """An .npz of named arrays, a directory of NAME.npy files (memory-mapped), or a .csv read against
        ``program`` (gradc.training.csvdata; ``others``: keep columns no var of it is named after); with ``fixed``
        and ``episodes``."""
        if str(path).endswith(".csv"):
            if program is None:
                raise GradcError(f"{what} '{path}': a .csv is read against the program it feeds (its columns are "
                                 f"named after the program's inputs)")
            from .csvdata import read_csv
            dataset = cls(read_csv(path, program, what, others), f"{what} '{path}'", fixed)
            dataset.item = "column"
            return dataset
        return cls(read_arrays(path, what), f"{what} '{path}'", fixed, episodes)

    @classmethod
    def joined(cls, paths: Sequence[str | Path], what: str = "data", program: Program | None = None,
               others: bool = False, fixed: Mapping[str, np.ndarray] | None = None, episodes: bool = False,
               cycle: bool = False) -> Dataset:
        """Data sets of as many examples each, fed together: a batch holds the same examples of each (DARTS's
        training and validation splits, a batch of both a step); one path is ``load``'s. ``cycle``: a smaller one is
        repeated to the largest's size, example i its i mod size (a replay buffer of an earlier task's examples)."""
        if len(paths) == 1:
            return cls.load(paths[0], what, program, others, fixed, episodes)
        parts = [cls.load(path, what, program, others, episodes=episodes) for path in paths]
        if len({part.size for part in parts}) != 1 and not cycle:
            sizes = ", ".join(f"{part.source} {part.size}" for part in parts)
            raise GradcError(f"{what}: data sets given together feed a batch of each at every step, so they must hold "
                             f"as many examples each: {sizes} (cut the larger to the smaller, or repeat the smaller "
                             f"with --cycle: a replay buffer)")
        parts = [_cycled(part, max(part.size for part in parts)) for part in parts]
        arrays: dict[str, np.ndarray] = {}
        for part in parts:
            for name, value in part.arrays.items():
                if name in arrays:
                    raise GradcError(f"{what}: '{name}' is in more than one of {', '.join(map(str, paths))}: each "
                                     f"input comes from one data set")
                arrays[name] = value
                if name in part.sequences:
                    arrays[f"{name}{LOD_SUFFIX}0"] = part.sequences[name]
        return cls(arrays, f"{what} {' + '.join(repr(str(path)) for path in paths)}", fixed, episodes)

    def batch_count(self, batch_size: int, drop_last: bool) -> int:
        if self.episodes:
            return self.size
        full, rest = divmod(self.size, batch_size)
        return full if drop_last or not rest else full + 1

    def order(self, epoch: int, shuffle: bool, seed: int) -> np.ndarray:
        """The examples of an epoch: a function of (seed, epoch) alone, so a resumed run sees the same order."""
        return np.random.default_rng([seed, epoch]).permutation(self.size) if shuffle else np.arange(self.size)

    def batches(self, epoch: int, batch_size: int, shuffle: bool = False, seed: int = 0, drop_last: bool = False,
                start: int = 0) -> Iterator[dict[str, np.ndarray]]:
        """The batches of ``epoch`` from batch ``start`` on (episodes: one example a step, whatever ``batch_size``)."""
        order = self.order(epoch, shuffle, seed)
        if self.episodes:
            for index in order[start:]:
                yield {name: value if name in self.fixed else np.asarray(value[index])
                       for name, value in self.arrays.items()}
            return
        for index in range(start, self.batch_count(batch_size, drop_last)):
            rows = order[index * batch_size:(index + 1) * batch_size]
            yield {name: value if name in self.fixed else
                   _sequences(value, self.sequences[name], rows) if name in self.sequences else
                   _rows(value, rows, shuffle) for name, value in self.arrays.items()}


class OneBatch:
    """The same fed values at every step (gradc train --feed): one batch per epoch."""

    def __init__(self, feed: Mapping[str, object], source: str = "feed"):
        self.feed, self.source = dict(feed), source
        first = next((np.shape(v) for v in self.feed.values() if np.ndim(v)), None)
        self.size = first[0] if first else 1

    def batch_count(self, batch_size: int | None = None, drop_last: bool = False) -> int:
        return 1

    def batches(self, epoch: int, batch_size=None, shuffle=False, seed=0, drop_last=False, start: int = 0):
        if start == 0:
            yield self.feed


def as_data(data, what: str = "data", program: Program | None = None, others: bool = False) -> Dataset | OneBatch:
    """A Dataset, OneBatch, a mapping of arrays (examples), or a path (.npz, a directory of .npy, or a .csv read
    against ``program``)."""
    if isinstance(data, (Dataset, OneBatch)):
        return data
    if isinstance(data, Mapping):
        return Dataset(data, what)
    if isinstance(data, (str, os.PathLike)):
        return Dataset.load(data, what, program, others)
    raise GradcError(f"{what}: give arrays (a dict of name -> array), a Dataset, or a path, not {type(data).__name__}")


def without_unread(program: Program, data: Dataset | OneBatch, wanted: Sequence[str] = ()) -> Dataset | OneBatch:
    """Data holding every input of ``program``, without its arrays that name no var of it (the class labels of a data
    set shared with another model's loss) but those an evaluation ``wanted`` (a ranker's query ids), with a warning,
    as Paddle's executor leaves out a feed it does not find."""
    arrays = data.feed if isinstance(data, OneBatch) else data.arrays
    block = program.global_block
    unread = [name for name in arrays if block.find_var(name) is None and name not in wanted]
    if not unread or not set(program_inputs(block)) <= arrays.keys():
        return data   # a slip of a name is said by check_fits, with the name meant
    warnings.warn(f"{data.source} holds arrays the program does not read ({', '.join(unread)}; its inputs: "
                  f"{', '.join(program_inputs(block))}): left out, as Paddle's executor leaves them out",
                  GradcWarning, stacklevel=2)
    kept = {name: value for name, value in arrays.items() if name not in unread}
    if isinstance(data, OneBatch):
        return OneBatch(kept, data.source)
    trimmed = copy.copy(data)
    trimmed.arrays, trimmed.fixed = kept, {name: value for name, value in data.fixed.items() if name in kept}
    return trimmed


def check_fits(program: Program, data: Dataset | OneBatch, batch_size: int, drop_last: bool = False,
               labels_of: Program | None = None, evaluated: bool = False) -> None:
    """Refuse, before any step, data ``program`` cannot take: an input it reads that the data lacks, a name,
    dtype or shape its vars refuse, in the first or the last batch (the only two sizes an epoch feeds), or a class
    label out of range anywhere (for the classification ops of ``labels_of``, the user's program of which
    ``program`` is a part, so the error names the op by its index there). ``evaluated``: data that is evaluated, which
    has no --drop-last."""
    block = program.global_block
    given, written = set(data.feed if isinstance(data, OneBatch) else data.arrays), set()
    inputs = set(program_inputs(block))
    for idx, op in enumerate(block.ops):
        for name in op.input_names():
            if name in inputs and name not in given and name not in written:
                raise FeedError(f"{data.source}: has no array '{name}', which {op_location(0, idx, op.type)} "
                                f"reads (the program's inputs: {', '.join(sorted(inputs))}){_fixed_hint(data)}")
        written.update(op.output_names())
    count = data.batch_count(batch_size, drop_last)
    for index in sorted({0, count - 1}):
        feed = next(iter(data.batches(0, batch_size, drop_last=drop_last, start=index)), None)
        if feed is None:   # no batch (an empty eval set): nothing to check
            continue
        try:
            feed_values(block, feed, Scope())
        except FeedError as exc:
            raise FeedError(f"{data.source}: {exc}{_fixed_batch(block, feed, data, batch_size, evaluated)}") from None
    if isinstance(data, OneBatch):
        check_indices(labels_of or program, data.feed, data.source, "feed var")
    else:
        check_indices(labels_of or program, data.arrays, data.source, data.item, data.sequences)


def _cycled(part: Dataset, size: int) -> Dataset:
    """``part`` repeated to ``size`` examples, example i its i mod part.size (read into memory: a small set's)."""
    if part.size == size:
        return part
    if part.sequences:
        raise GradcError(f"{part.source}: holds sequences (LoD), which --cycle does not repeat (repeat them in the "
                         f"file)")
    rows = np.arange(size) % part.size
    return Dataset({name: np.asarray(value)[rows] for name, value in part.arrays.items()}, part.source,
                   episodes=part.episodes)


def _rows_per_example(sizes: dict[str, int | None]) -> str:
    """A hint for an array of several rows per example (one per token: [tokens, E] beside [sequences, ...])."""
    fewest = min((size for size in sizes.values() if size), default=0)
    multiples = {name: size // fewest for name, size in sizes.items() if size and size != fewest and size % fewest == 0}
    if not multiples:
        return ""
    name, rows = next(iter(multiples.items()))
    return (f"; '{name}' holds {rows} rows for each of {fewest} examples: give it as [{fewest}, {rows}, ...] and "
            f"reshape it in the program, so each batch takes its examples' rows")


def _fixed_hint(data) -> str:
    """Where an input the same at every step goes, for data that has examples."""
    return "" if isinstance(data, OneBatch) else "; one the same at every step goes in --feed FIXED.npz beside --data"


def _fixed_batch(block, feed: dict, data, batch_size: int, evaluated: bool) -> str:
    """What to change when the program was saved for one batch size (Paddle's static examples often fix it) and a
    batch of the data has another number of rows: the --batch-size that fits, and --drop-last for a last, short one."""
    if isinstance(data, OneBatch):
        return ""
    for name, value in feed.items():
        var = block.find_var(name)
        shape = getattr(value, "shape", ())
        if var is None or not var.shape or not shape:
            continue
        if list(shape[1:]) == list(var.shape) and min(var.shape) > 0:   # each example is a whole feed
            return (f" (each example of the data is a whole feed of {list(var.shape)}, as a meta-learning task's: "
                    f"--episodes, gradc.Dataset(..., episodes=True) in Python)")
        if var.shape[0] < 0 or var.shape[0] == shape[0]:
            continue
        fixed = var.shape[0]
        takes = f" (the program takes batches of exactly {fixed} examples"
        if batch_size == fixed:   # the last batch of an epoch is short
            short = (f"a number of examples that is a multiple of {fixed}" if evaluated else
                     "--drop-last, drop_last=True in Python")
            return f"{takes} and the last batch has {shape[0]}: {short})"
        if data.size % fixed == 0:
            return f"{takes}: --batch-size {fixed}, batch_size= in Python)"
        if evaluated:
            return f"{takes}: --batch-size {fixed}, with a number of examples that is a multiple of {fixed})"
        return f"{takes}: --batch-size {fixed} and --drop-last; batch_size=, drop_last= in Python)"
    return ""


def _sequences(value: np.ndarray, offsets: np.ndarray, examples: np.ndarray) -> LoDTensor:
    """The sequences of a batch's examples, their rows in a LoDTensor (an example of no rows: an empty sequence)."""
    pieces = [np.asarray(value[offsets[i]:offsets[i + 1]]) for i in examples]
    rows = np.concatenate(pieces) if pieces else np.asarray(value[:0])
    return LoDTensor.from_lengths(rows, [[len(piece) for piece in pieces]])


def _rows(value: np.ndarray, rows: np.ndarray, shuffled: bool) -> np.ndarray:
    """The rows of a batch as an in-memory array (a contiguous slice when the order is the natural one)."""
    if not shuffled and len(rows):
        return np.array(value[rows[0]:rows[-1] + 1])
    return np.asarray(value[rows])


@contextmanager
def naming(data: Dataset | OneBatch, where: str | None = None):
    """A fed value that does not fit the program: the error names the data it came from; an op that fails on a
    batch (a label out of range): the data and the step, epoch and batch too."""
    try:
        yield
    except FeedError as exc:
        raise FeedError(f"{data.source}: {exc}") from None
    except NonFiniteError:
        raise   # it names its step already
    except ExecutionError as exc:
        if where is None or type(exc) is not ExecutionError:
            raise
        raise ExecutionError(f"{data.source}, {where}: {exc}") from None


def examples(feed: Mapping[str, object]) -> int:
    first = next((np.shape(v) for v in feed.values() if np.ndim(v)), None)
    return first[0] if first else 1

"""What `gradc run`, `check` and `precision` are fed: .npz files, or a .csv read against the program, and the errors of
a fed value that does not fit, naming the feed files."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from contextlib import contextmanager

from ..errors import FeedError, GradcWarning
from ..executor.feeding import feed_ops, program_inputs
from ..executor.lod import with_lods
from ..io.arrays import read_npz

FEED_HELP = ("Repeatable: the files' arrays fed together, a later file's value for a name winning (a batch and an "
             "input the same for every batch, Deep SVDD's center, as train takes --data and --feed).")


def named_files(paths: str | Sequence[str] | None) -> str:
    """The feed files as an error names them: 'a.npz', or 'a.npz' + 'center.npz'."""
    paths = [paths] if isinstance(paths, str) else list(paths or ())
    return " + ".join(f"'{path}'" for path in paths)


@contextmanager
def naming_feed(paths: str | Sequence[str] | None):
    """A fed value that does not fit the program: the error names the feed files it came from."""
    try:
        yield
    except FeedError as exc:
        raise FeedError(f"feed {named_files(paths)}: {exc}" if paths else str(exc)) from None


def feed_arrays(feeds: str | Sequence[str] | None, prog) -> dict:
    """--feed (repeatable, a later file's value for a name winning): an .npz (LoD offsets beside), or a .csv read
    against the program as --data reads one (a table to score: its columns that name no input, an id or the labels,
    left out of a saved model's run)."""
    arrays = {}
    for feed in [feeds] if isinstance(feeds, str) else list(feeds or ()):
        if str(feed).endswith(".csv"):
            from ..training.csvdata import read_csv
            arrays.update(read_csv(feed, prog, "feed", others=True))
        else:
            arrays.update(with_lods(read_npz(feed, "feed")))
    return arrays


def model_inputs(prog, feeds: dict, paths: str | Sequence[str] | None) -> dict:
    """A program given all its inputs leaves out other arrays of the feed, as Paddle's executor does, with a warning
    naming them: those that name no var of it (a label beside a PointNet's points), and of a saved model (feed ops, or
    a PIR file's fetch ops: PIR feeds through data ops) also outputs named as columns (the labels of a test set)."""
    block = prog.global_block
    saved = feed_ops(block.ops) or any(op.type == "fetch" for op in block.ops)
    inputs = program_inputs(block)
    if not set(inputs) <= feeds.keys():
        return feeds   # a slip of a name is said by the run, with the name meant
    written = {name for op in block.ops if op.type != "feed" for name in op.output_names()} if saved else set()
    # an output named as a column (a label) is none of the inputs either; an added loss's label is read, not written
    extra = [name for name in feeds if block.find_var(name) is None or (name in written and name not in inputs)]
    if extra:
        taken = "model does not take" if saved else "program does not read"
        warnings.warn(f"feed {named_files(paths)} holds arrays the {taken} "
                      f"({', '.join(extra)}; its inputs: {', '.join(inputs)}): left out, as Paddle's executor leaves "
                      f"them out", GradcWarning, stacklevel=2)
    return {name: value for name, value in feeds.items() if name not in extra}

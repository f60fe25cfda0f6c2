"""What `gradc run`, `check` and `precision` are fed: an .npz, or a .csv read against the program, and the errors of a
fed value that does not fit, naming the feed file."""

from __future__ import annotations

import warnings
from contextlib import contextmanager

from ..errors import FeedError, GradcWarning
from ..executor.feeding import feed_ops, program_inputs
from ..executor.lod import with_lods
from ..io.arrays import read_npz


@contextmanager
def naming_feed(path: str | None):
    """A fed value that does not fit the program: the error names the feed file it came from."""
    try:
        yield
    except FeedError as exc:
        raise FeedError(f"feed '{path}': {exc}" if path else str(exc)) from None


def feed_arrays(feed: str | None, prog) -> dict:
    """--feed: an .npz (LoD offsets beside), or a .csv read against the program as --data reads one (a table to
    score: its columns that name no input, an id or the labels, left out of a saved model's run)."""
    if feed is None:
        return {}
    if str(feed).endswith(".csv"):
        from ..training.csvdata import read_csv
        return read_csv(feed, prog, "feed", others=True)
    return with_lods(read_npz(feed, "feed"))


def model_inputs(prog, feeds: dict, path: str | None) -> dict:
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
        warnings.warn(f"feed '{path}' holds arrays the {'model does not take' if saved else 'program does not read'} "
                      f"({', '.join(extra)}; its inputs: {', '.join(inputs)}): left out, as Paddle's executor leaves "
                      f"them out", GradcWarning, stacklevel=2)
    return {name: value for name, value in feeds.items() if name not in extra}

"""A coverage row is one Paddle layer, loss or model with the inputs it is fed; the row tables of
the families (activations.py, conv.py, ...) are lists of one-line entries built with these helpers:

    ("relu", lambda x: nn.ReLU()(x), f(2, 3))

The builder's parameter names are the names of the program's data vars; parameters with defaults
bind loop variables in generated rows (`lambda x, mode=mode: ...`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Input:
    shape: tuple[int, ...]
    kind: str = "normal"   # normal | positive | unit | ints | signs | soft | choice | given
    high: int = 0          # ints: values in [0, high); choice: values in [0, high) or -100 (ignored)
    grad: bool = True      # a float input Paddle differentiates (stop_gradient False)
    int_dtype: str = "int64"
    value: np.ndarray | None = field(default=None, compare=False)   # given: the values themselves
    lengths: tuple[int, ...] | None = None   # a LoD tensor: the lengths of its sequences (one LoD level)
    dynamic: tuple[int, ...] = ()   # dims declared -1 (None in an InputSpec): their sizes known at run time only

    @property
    def declared(self) -> list[int]:
        """The shape the program declares: -1 at the dynamic dims."""
        return [-1 if i in self.dynamic else d for i, d in enumerate(self.shape)]

    @property
    def is_float(self) -> bool:
        if self.kind == "given":
            return self.value.dtype.kind == "f"
        return self.kind not in ("ints", "choice")


def seq(*width: int, lengths: tuple[int, ...] = (2, 3), grad: bool = True) -> Input:
    """A LoD tensor of sequences of these lengths (an empty one: 0), rows of shape ``width``, standard normal."""
    return Input((sum(lengths), *width), grad=grad, lengths=tuple(lengths))


def seq_ids(high: int, lengths: tuple[int, ...] = (2, 3)) -> Input:
    """A LoD tensor of int64 ids in [0, high), one per row ([rows, 1]): a batch of sentences."""
    return Input((sum(lengths), 1), "ints", high, grad=False, lengths=tuple(lengths))


def f(*shape: int) -> Input:
    """Standard normal values, differentiated."""
    return Input(shape)


def dyn(*shape: int, dims: tuple[int, ...] | None = None) -> Input:
    """Standard normal values, differentiated, declared with ``dims`` (default: all) of size -1."""
    return Input(shape, dynamic=tuple(range(len(shape)) if dims is None else dims))


def pos(*shape: int) -> Input:
    """Values in [0.5, 2): inputs of log, sqrt, Poisson rates."""
    return Input(shape, "positive")


def unit(*shape: int, grad: bool = True) -> Input:
    """Values in [0.05, 0.95): probabilities."""
    return Input(shape, "unit", grad=grad)


def ints(high: int, *shape: int, dtype: str = "int64") -> Input:
    """Integer values in [0, high): class labels, ids."""
    return Input(shape, "ints", high, grad=False, int_dtype=dtype)


def given(values, dtype: str) -> Input:
    """These exact values (label layouts a random draw would not make), not differentiated."""
    array = np.array(values, dtype=dtype)
    return Input(array.shape, "given", grad=False, int_dtype=dtype, value=array)


def some_ignored(high: int, *shape: int) -> Input:
    """int64 labels in [0, high) with one -100 (the default ignore_index)."""
    return Input(shape, "choice", high, grad=False)


def signs(*shape: int) -> Input:
    """+1 / -1 labels, not differentiated."""
    return Input(shape, "signs", grad=False)


def soft(*shape: int) -> Input:
    """Probability rows over the last axis (soft labels), not differentiated."""
    return Input(shape, "soft", grad=False)


def weights(*shape: int) -> Input:
    """Values in [0.5, 2), not differentiated: class weights, positive weights."""
    return Input(shape, "positive", grad=False)


def const(*shape: int) -> Input:
    """Standard normal values, not differentiated (regression targets)."""
    return Input(shape, grad=False)


@dataclass(frozen=True)
class Row:
    id: str
    build: Callable
    inputs: tuple[Input, ...]
    family: str
    numbers: bool = True   # False: too big for a fixture's numbers; only the programs and op lists are kept

    @property
    def input_names(self) -> list[str]:
        """The builder's parameters without defaults (a default binds a loop variable)."""
        parameters = inspect.signature(self.build).parameters.values()
        return [p.name for p in parameters if p.default is inspect.Parameter.empty]

    @property
    def code(self) -> str:
        """The row's source line(s): `("relu", lambda x: nn.ReLU()(x), f(2, 3))`."""
        return " ".join(line.strip() for line in inspect.getsource(self.build).splitlines()).rstrip(",")


def table(family: str, *entries: tuple, numbers: bool = True) -> list[Row]:
    rows = [Row(entry[0], entry[1], tuple(entry[2:]), family, numbers) for entry in entries]
    for row in rows:
        assert len(row.input_names) == len(row.inputs), f"{row.id}: builder and inputs disagree"
    return rows


def evaluated(layer):
    """The layer in eval mode (dropout off, batch norm on its running statistics)."""
    layer.eval()
    return layer

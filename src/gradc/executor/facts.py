"""What a plan's straight-line code may take for granted while ``sure`` holds: that a var an inline step read is an
exact ndarray of its op's dtype and of a known rank (None: any rank). Where an op's inputs are known so, numpy's
result is an ndarray of that dtype without looking (a matmul, sum, product or maximum of arrays of one dtype), and
its guard's rank tests are constants: the code skips them. ``sure`` starts a run as whether the parameters fit
(``Unwritten``) and turns False at the first op that fails over to its kernel: from there on every op checks."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .scope import MISSING

_DTYPE_OF, _NDIM_OF = operator.attrgetter("dtype"), operator.attrgetter("ndim")


def _widest(*ranks):
    return None if None in ranks else max(ranks)


def _when(ranks: dict, slots: tuple[str, ...], rank: int, rest: str) -> str | None:
    """A guard whose rank tests ask each slot for ``rank``, decided: ``rest`` where they all have it, False where
    one has another, None (undecided) where one's rank is unknown."""
    known = [ranks.get(slot) for slot in slots]
    return None if None in known else rest if all(r == rank for r in known) else "False"


def _bias_add(ranks: dict) -> str | None:
    x, y = ranks.get("X"), ranks.get("Y")
    return None if x is None or y is None else "True" if x == y else f"@axis == -1 or @axis == {abs(x - y)}"


class Rule(NamedTuple):
    """Per row: the input slots whose facts it needs; whether the result's type and dtype then follow (given its
    guard held); each output's rank from the input ranks; and the row's guard (inline.ROWS, in its notation) with
    what the known ranks decide taken out (None: they do not decide it)."""
    needs: tuple[str, ...]
    result_follows: Callable[[dict], bool]
    out_ranks: Callable[[dict], dict]
    guard: Callable[[dict], str | None]


def _always(ranks: dict) -> bool:
    return True


RULES = {
    "mul": Rule(("X", "Y"), _always, lambda r: {"Out": 2},
                lambda r: _when(r, ("X", "Y"), 2, "@x_num_col_dims == 1 == @y_num_col_dims")),
    "mul_grad": Rule(("X", "Y", "Out@GRAD"), _always, lambda r: {"X@GRAD": 2, "Y@GRAD": 2},
                     lambda r: _when(r, ("X", "Y", "Out@GRAD"), 2, "@x_num_col_dims == 1 == @y_num_col_dims")),
    # two 0-d arrays add up to a numpy scalar, not an array
    "elementwise_add": Rule(("X", "Y"), lambda r: (r["X"] or 0) > 0 or (r["Y"] or 0) > 0,
                            lambda r: {"Out": _widest(r["X"], r["Y"])}, _bias_add),
    "elementwise_add_grad": Rule(("Out@GRAD",), _always, lambda r: {"X@GRAD": 2, "Y@GRAD": 1},
                                 lambda r: _when(r, ("Out@GRAD",), 2, "(_s := dOut.shape) == X.shape and Y.shape == "
                                                 "_s[1:] and (@axis == -1 or @axis == 1 < _s[0])")),
    "relu": Rule(("X",), lambda r: (r["X"] or 0) > 0, lambda r: {"Out": r["X"]}, lambda r: "True"),
    "relu_grad": Rule(("Out", "Out@GRAD"), lambda r: (r["Out"] or 0) > 0 or (r["Out@GRAD"] or 0) > 0,
                      lambda r: {"X@GRAD": _widest(r["Out"], r["Out@GRAD"])}, lambda r: "True"),
    # float() of an attribute: always checked
    "scale": Rule(("X",), lambda r: False, lambda r: {"Out": r["X"]}, lambda r: None),
}


class Unwritten:
    """The vars a plan reads and no op writes (parameters), read once a run, and whether each is an exact ndarray
    of the dtype and rank the code assumes: a few passes in C over all of them."""

    def __init__(self, names: list[str], dtypes: list, ranks: list[int]):
        self.names, self.dtypes, self.ranks = names, dtypes, ranks
        self.name_set = frozenset(names)
        self.arrays = [np.ndarray] * len(names)

    def read(self, V: dict, P: dict, S) -> tuple[list, bool]:
        if V.keys().isdisjoint(self.name_set) and P.keys() >= self.name_set:   # the usual case: all in P
            values = list(map(P.__getitem__, self.names))
        else:
            values = [V[n] if n in V else P[n] if n in P else S.find(n, MISSING) for n in self.names]
        return values, self._fit(values)

    def _fit(self, values: list) -> bool:
        try:
            return all(map(operator.is_, map(type, values), self.arrays)) \
                and all(map(operator.is_, map(_DTYPE_OF, values), self.dtypes)) \
                and list(map(_NDIM_OF, values)) == self.ranks
        except Exception:  # noqa: BLE001 - a value that is no array: the code checks everything
            return False

"""What a plan's straight-line code may take for granted while ``sure`` holds: that a var an inline step read is an
exact ndarray of its op's dtype and of a known rank (None: any rank). Where an op's inputs are known so, numpy's
result is an ndarray of that dtype without looking (a matmul, sum, product or maximum of arrays of one dtype), and
its guard's rank tests are constants: the code skips them. ``sure`` starts a run as whether the parameters fit
(``Unwritten``) and turns False at the first op that fails over to its kernel: from there on every op checks."""

from __future__ import annotations

import operator
import re

import numpy as np

from .scope import MISSING

_DTYPE_OF, _NDIM_OF = operator.attrgetter("dtype"), operator.attrgetter("ndim")


def _widest(*ranks):
    return None if None in ranks else max(ranks)


# per row: the input slots whose facts it needs, whether the result's type and dtype then follow (given its guard
# held), and each output's rank from the input ranks (a bias add broadcasts; a grad's guard fixes its rank)
RULES = {
    "mul": (("X", "Y"), lambda r: True, lambda r: {"Out": 2}),
    "mul_grad": (("X", "Y", "Out@GRAD"), lambda r: True, lambda r: {"X@GRAD": 2, "Y@GRAD": 2}),
    # two 0-d arrays add up to a numpy scalar, not an array
    "elementwise_add": (("X", "Y"), lambda r: (r["X"] or 0) > 0 or (r["Y"] or 0) > 0,
                        lambda r: {"Out": _widest(r["X"], r["Y"])}),
    "elementwise_add_grad": (("Out@GRAD",), lambda r: True, lambda r: {"X@GRAD": 2, "Y@GRAD": 1}),
    "relu": (("X",), lambda r: (r["X"] or 0) > 0, lambda r: {"Out": r["X"]}),
    "relu_grad": (("Out", "Out@GRAD"), lambda r: (r["Out"] or 0) > 0 or (r["Out@GRAD"] or 0) > 0,
                  lambda r: {"X@GRAD": _widest(r["Out"], r["Out@GRAD"])}),
    "scale": (("X",), lambda r: False, lambda r: {"Out": r["X"]}),   # float() of an attribute: always checked
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


def trusting_guard(guard: str, ranks: dict[str, int | None]) -> str:
    """The guard (code) with the known ranks in place of ``_X.ndim``..., and what that decides evaluated away."""
    for token, rank in ranks.items():
        if rank is not None:
            guard = re.sub(rf"\b{token}\.ndim\b", str(rank), guard)
    while match := re.search(r"\((_\w+) := ([^()]*)\)", guard):   # a local bound to a constant: the constant
        if _reads_values(match[2]):
            break
        value = repr(eval(match[2], {}))   # noqa: S307 - ranks' arithmetic
        guard = re.sub(rf"\b{match[1]}\b", value, guard[:match.start()] + value + guard[match.end():])
    return _simplified(re.sub(r"\babs\((-?\d+)\)", lambda m: str(abs(int(m[1]))), guard))


def _reads_values(text: str) -> bool:
    """Whether code reads an input (a ``_`` local) or an attribute (``a[...]``, ``a.get(...)``)."""
    return bool(re.search(r"\b_\w|\ba(\[|\.get\()", text))


def _simplified(guard: str) -> str:
    kept = []
    for conjunct in _split(guard, "and"):
        alternatives = []
        for disjunct in _split(_unwrapped(conjunct.strip()), "or"):
            if _reads_values(disjunct):
                alternatives.append(disjunct)
            elif eval(disjunct, {"abs": abs}):   # noqa: S307 - constants of a row's guard
                alternatives = None   # the conjunct holds whatever the values are
                break
        if alternatives is None and ":=" not in conjunct:   # a local it binds may be read further on
            continue
        if alternatives is None:
            alternatives = [conjunct]
        if not alternatives:
            return "False"
        kept.append(alternatives[0] if len(alternatives) == 1 else f"({' or '.join(alternatives)})")
    return " and ".join(kept) or "True"


def _split(text: str, word: str) -> list[str]:
    """``text`` split at each `` and `` (or `` or ``) outside brackets."""
    parts, depth, start, index, token = [], 0, 0, 0, f" {word} "
    while index < len(text):
        depth += (text[index] in "([{") - (text[index] in ")]}")
        if depth == 0 and text.startswith(token, index):
            parts.append(text[start:index])
            start = index = index + len(token)
            continue
        index += 1
    return [*parts, text[start:]]


def _unwrapped(text: str) -> str:
    """``text`` without brackets around the whole of it."""
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1]
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += (char in "([{") - (char in ")]}")
        if depth < 0:
            return False
    return depth == 0

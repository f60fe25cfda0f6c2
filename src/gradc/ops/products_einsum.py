"""einsum: Einstein summation of the Operands by an equation such as "ij,jk->ik" or "bii->b".

The equation has one term of letters per operand, optionally with one "..." (the broadcast dims, aligned at
the end); "->" and the output's letters, or none (implicit: "..." then the letters used once, sorted). A dim of
size 1 broadcasts against its label's size. The grad of each operand is itself an einsum of dOut with the other
operands. The slots are Paddle's: XShape (one var per operand, though Paddle records einsum_grad's slot x_shape as
holding one) and InnerCache go to einsum_grad. Paddle's kernels keep the operands' dims in XShape and the
transposed operands in InnerCache; gradc's keep the operands themselves in XShape and leave InnerCache empty, so a
program runs in either. (einsum_grad ops of a second derivative read no InnerCache: the operands they take are
not those einsum cached.)
"""

from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple

from ..ir import EMPTY_VAR
from ..registry import defgrad, defop
from .composite import multilinear

_TERM = re.compile(r"[A-Za-z]*(\.\.\.)?[A-Za-z]*")
ELLIPSIS = "..."
MAX_LABELS = 52   # numpy's einsum takes at most 52 distinct labels


class Subscripts(NamedTuple):
    """An equation read against the operands' shapes: each operand's dims and the output's dims as label
    numbers 0, 1, ...; the size of each label (-1 if unknown)."""
    operands: list[list[int]]
    output: list[int]
    sizes: dict[int, int]


def _checked_term(term: str, what: str, fail) -> str:
    if not _TERM.fullmatch(term):
        fail(f"{what} {term!r} must be letters with at most one '...'")
    return term


def parse_equation(equation: str, shapes: list[list[int]], fail) -> Subscripts:
    """Read ``equation`` for operands of ``shapes``; ``fail(message)`` reports what is wrong with it."""
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = [_checked_term(t, "term", fail) for t in lhs.split(",")]
    if len(terms) != len(shapes):
        fail(f"equation {equation!r} has {len(terms)} input term(s) for {len(shapes)} operand(s)")
    broadcast_ranks = []
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        letters = len(term.replace(ELLIPSIS, ""))
        if len(shape) < letters or (ELLIPSIS not in term and len(shape) != letters):
            fail(f"term {term!r} does not fit operand {i} of shape {shape}")
        broadcast_ranks.append(len(shape) - letters)
    ellipsis = [f"...{j}" for j in range(max(broadcast_ranks, default=0))]   # the broadcast dims' names

    def names(term: str, rank: int) -> list[str]:
        head, _, tail = term.partition(ELLIPSIS)
        return [*head, *ellipsis[len(ellipsis) - rank:], *tail]

    operands = [names(t, r) for t, r in zip(terms, broadcast_ranks)]
    if arrow:
        output = names(_checked_term(rhs, "output", fail), len(ellipsis) if ELLIPSIS in rhs else 0)
        if ELLIPSIS in lhs and ELLIPSIS not in rhs:
            fail(f"equation {equation!r}: the output lacks the '...' of the input terms")
        given = {n for dims in operands for n in dims}
        if any(n not in given for n in output) or len(set(output)) != len(output):
            fail(f"equation {equation!r}: each output label must be an input label, once")
    else:
        used = Counter(n for dims in operands for n in dims if not n.startswith(ELLIPSIS))
        output = ellipsis + sorted(n for n, count in used.items() if count == 1)
    return _numbered(operands, output, shapes, equation, fail)


def _numbered(operands: list[list[str]], output: list[str], shapes, equation: str, fail) -> Subscripts:
    """Label names as numbers; an operand's dim of size 1 whose label is larger elsewhere gets a label of its own
    (summed over alone: broadcasting, and its grad sums over the label's other dims)."""
    sizes: dict[str, int] = {}
    for dims, shape in zip(operands, shapes):
        for name, size in zip(dims, shape):
            known = sizes.get(name, 1)
            if size != 1 and known not in (1, -1) and size not in (known, -1):
                fail(f"equation {equation!r}: label {name!r} has sizes {known} and {size}")
            sizes[name] = size if known in (1, -1) and size != 1 else known
    numbers: dict[str, int] = {}
    label_sizes: dict[int, int] = {}

    def number(name: str, size: int) -> int:
        label = numbers.setdefault(name, len(numbers))
        label_sizes[label] = size
        return label

    numbered = [[number(f"{i}:{d}", 1) if size == 1 and sizes[name] > 1 else number(name, sizes[name])
                 for d, (name, size) in enumerate(zip(dims, shape))]
                for i, (dims, shape) in enumerate(zip(operands, shapes))]
    result = [number(name, sizes[name]) for name in output]
    if len(numbers) > MAX_LABELS:
        fail(f"equation {equation!r} uses {len(numbers)} labels, more than {MAX_LABELS}")
    return Subscripts(numbered, result, label_sizes)


def _einsum_infer(ctx):
    shapes, dtype = ctx.shapes("Operands"), ctx.dtype("Operands")
    subscripts = parse_equation(ctx.attr("equation"), shapes, ctx.fail)
    return {"Out": ([subscripts.sizes[label] for label in subscripts.output], dtype),
            "XShape": [(shape, dtype) for shape in shapes]}


def _einsum_grad(g):
    """One einsum_grad for all operands, reading them from XShape. Differentiated again, einsum_grad gives grads to
    the XShape vars it read (the operands): they add to the operands' grads."""
    inputs = {"InnerCache": g.O("InnerCache"), "Out@GRAD": g.OG("Out"), "x_shape": g.O("XShape")}
    through_xshape = [og if g.wants(xs) else None for xs, og in zip(g.O("XShape"), g.OG("XShape"))]
    if not any(through_xshape):
        return [g.op("einsum_grad", inputs, {"Operands@GRAD": g.IG("Operands")}, forward_attrs=True)]
    partial = [g.tmp(x) if ig != EMPTY_VAR else EMPTY_VAR for x, ig in zip(g.I("Operands"), g.IG("Operands"))]
    ops = [g.op("einsum_grad", inputs, {"Operands@GRAD": partial}, forward_attrs=True)]
    for grad, part, more in zip(g.IG("Operands"), partial, through_xshape):
        if grad != EMPTY_VAR:
            ops.append(g.op("sum", {"X": [part] + ([more] if more else [])}, {"Out": [grad]}))
    return ops


defop("einsum", ["Operands[]"], ["Out", "InnerCache[]!", "XShape[]!"], attrs={"equation": ""}, infer=_einsum_infer,
      grad=_einsum_grad, no_grad_outputs=["InnerCache", "XShape"])
# its own grad: einsum of the operands with one replaced by its ddX, and einsum_grad of the same (composite.multilinear)
defgrad("einsum_grad", inputs=["InnerCache[]?", "Out@GRAD", "x_shape[]"], outputs=["Operands@GRAD[]"],
        attrs={"equation": ""},
        infer=lambda ctx: {"Operands@GRAD": [(shape, ctx.dtype("x_shape", i))
                                             for i, shape in enumerate(ctx.shapes("x_shape"))]},
        grad=multilinear("einsum", "x_shape", "Operands@GRAD", extra=("InnerCache", "XShape")),
        no_grad_inputs=["InnerCache"], of="einsum")

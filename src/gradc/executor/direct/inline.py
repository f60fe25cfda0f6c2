"""Inline steps: the hottest ops' numpy calls as source rows, one per op type (an fc layer's ops and their grads,
and scale). The executor's loop runs a row through a function made from it once per op type; the straight-line
code of a plan (gradc.executor.straight) pastes it in.

A row is (guard, {output slot: expression}). Inputs are named by slot (``dOut`` for ``Out@GRAD``); ``@name`` is
the op's attribute read live, with its definition's default; ``ZERO`` is a 0 and ``DTYPE`` the dtype of the
op's first output. Where the guard fails, a read or call raises (a SelectedRows value has no arithmetic), or a
result is not an array of its var's declared dtype, the op's kernel runs instead, as for any op, and reports
whatever is wrong."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..scope import MISSING
from . import FALLBACK, binds, fits

GUARD, OUTPUTS = 0, 1
ROWS: dict[str, tuple[str, dict[str, str]]] = {
    "mul": ("X.ndim == 2 == Y.ndim and @x_num_col_dims == 1 == @y_num_col_dims", {"Out": "X @ Y"}),
    "mul_grad": ("X.ndim == 2 == Y.ndim == dOut.ndim and @x_num_col_dims == 1 == @y_num_col_dims",
                 {"X@GRAD": "dOut @ Y.T", "Y@GRAD": "X.T @ dOut"}),
    # the lower-rank operand aligned with the trailing dims, as numpy's + aligns it (_d: the ranks' difference)
    "elementwise_add": ("(_d := X.ndim - Y.ndim) == 0 or @axis == -1 or @axis == abs(_d)", {"Out": "X + Y"}),
    # the kernel's fc case: a batch of rows plus a bias row; dX is dOut itself, dY its sum over the batch (with axis
    # 1 and one row the kernel reshapes dOut, keeping a -0.0 the sum would make +0.0: that case stays the kernel's);
    # _s, dOut's shape, is read once
    "elementwise_add_grad": ("(_s := dOut.shape) == X.shape and dOut.ndim == 2 and Y.shape == _s[1:] "
                             "and (@axis == -1 or @axis == 1 < _s[0])",
                             {"X@GRAD": "dOut", "Y@GRAD": "add_reduce(dOut, 0)"}),
    "relu": ("True", {"Out": "maximum(X, ZERO)"}),
    "relu_grad": ("True", {"X@GRAD": "dOut * (Out > ZERO)"}),
    # X alone, of the float type the program declares (the kernel's case without scale or bias tensors)
    "scale": ("X.dtype is DTYPE",
              {"Out": "X * float(@scale) + float(@bias) if @bias_after_scale else (X + float(@bias)) * float(@scale)"}),
}
ROW_NAMES = {"ndarray": np.ndarray, "maximum": np.maximum, "add_reduce": np.add.reduce}   # what rows' code calls
FLOAT_ONLY = {"scale"}   # rows whose first output must be declared a float type (the kernel's float case)


_SLOTS = ("X", "Y", "Out", "Out@GRAD")   # the input slots rows may read


def slot_token(slot: str) -> str:
    """How a row names a slot: ``dOut`` for ``Out@GRAD``."""
    return "d" + slot[:-5] if slot.endswith("@GRAD") else slot


def row_code(text: str, attr) -> str:
    """A row's guard or expression as code: each slot token as the local ``_X``, ``_dOut``..., each ``@name`` as
    ``attr(name)``'s code."""
    return re.sub(r"@(\w+)", lambda m: attr(m[1]), _SLOT_TOKENS.sub(r"_\1", text))


_SLOT_TOKENS = re.compile(r"\b(" + "|".join(map(slot_token, _SLOTS)) + r")\b")


def _row_inputs(row: tuple[str, dict[str, str]]) -> list[str]:
    """The input slots the row reads."""
    used = set(re.findall(r"[A-Za-z_]\w*", " ".join((row[GUARD], *row[OUTPUTS].values()))))
    return [slot for slot in _SLOTS if slot_token(slot) in used]


@dataclass
class Inline:
    """One op's row, bound: the var each input slot reads, and (var, declared dtype) of each output slot written.
    Called (values, params, scope), it is the op's direct step for the executor's loop: the row run through a
    function made once per op type, until the plan's straight-line code pastes the row in."""
    op: object
    defaults: dict
    ins: dict[str, str]
    outs: dict[str, tuple[str, object]]
    row: tuple[str, dict[str, str]]
    dtype: object = field(init=False)   # the first output's declared dtype (DTYPE), and a 0 of it (ZERO)
    zero: object = field(init=False)

    def __post_init__(self):
        self.dtype = next(iter(self.outs.values()))[1]
        self.zero = np.zeros((), self.dtype)

    def __call__(self, values, params, scope):
        return _STEPS[self.op.type](values, params, scope, self)


def _step_source(op_type: str) -> str:
    """The row as ``step(V, P, S, bound) -> None (done) or FALLBACK``, reading its vars, attributes (live, else the
    default) and constants from ``bound``, an Inline."""
    guard, exprs = ROWS[op_type]
    lines = ["def step(V, P, S, bound):", "    ins, outs, a, D = bound.ins, bound.outs, bound.op.attrs, bound.defaults",
             "    ZERO, DTYPE = bound.zero, bound.dtype"]
    for slot in _row_inputs(ROWS[op_type]):
        lines.append(f"    n = ins[{slot!r}]; _{slot_token(slot)} = V[n] if n in V else P[n] if n in P else S.find(n)")

    def fill(text: str) -> str:
        return row_code(text, lambda name: f"(a[{name!r}] if {name!r} in a else D.get({name!r}, MISSING))")
    lines.append(f"    if not ({fill(guard)}): return FALLBACK")
    for n, (slot, expr) in enumerate(exprs.items()):
        lines += [f"    if {slot!r} in outs:", f"        o{n} = {fill(expr)}",
                  f"        if type(o{n}) is not ndarray or o{n}.dtype is not outs[{slot!r}][1]: return FALLBACK"]
    for n, slot in enumerate(exprs):
        lines.append(f"    if {slot!r} in outs: V[outs[{slot!r}][0]] = o{n}")
    return "\n".join(lines) + "\n"


def _compile_step(op_type: str):
    namespace = {**ROW_NAMES, "FALLBACK": FALLBACK, "MISSING": MISSING}
    exec(compile(_step_source(op_type), f"<gradc direct step {op_type}>", "exec"), namespace)
    return namespace["step"]


def _binder(op_type: str):
    row = ROWS[op_type]
    inputs = set(_row_inputs(row))
    outputs = set(row[OUTPUTS])
    grad = op_type.endswith("_grad")   # a grad op may be asked for some of its grads only

    def bind(op, ins, outs, defaults):
        if not fits(ins, outs, inputs, outputs, not grad) \
                or op_type in FLOAT_ONLY and next(iter(outs.values()))[1].kind != "f":
            return None
        return Inline(op, defaults, ins, outs, row)
    return bind


_STEPS = {op_type: _compile_step(op_type) for op_type in ROWS}
for _op_type in ROWS:
    binds(_op_type)(_binder(_op_type))

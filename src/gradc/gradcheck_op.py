"""Numeric gradient checking of one op (``check_op``): it builds a one-op program, seeds every differentiable output's
grad with random weights W (so the scalar checked is sum(out * W)), compiles the backward with the op's registered
maker and runs it; then perturbs each input element by +-eps (or moves it along random directions) and compares.
gradc.gradcheck checks whole programs with the pieces here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from . import registry
from .backward import append_grad_ops
from .central_differences import direction_kinks, directional_derivatives, numeric_grad, random_directions
from .errors import GradcError
from .executor import Executor, LoDTensor, Scope
from .gradcheck_verdicts import (
    Kink,
    Mismatch,
    along_units,
    directional_tolerances,
    element_mismatch,
    verdict_along,
)
from .ir import DIFFERENTIABLE_DTYPES, Program, to_var_type


class GradcheckError(GradcError):
    """Analytic and numeric gradients disagree."""


def perturbable(feed: Mapping[str, object]) -> tuple[dict[str, np.ndarray], dict]:
    """(C-contiguous copies of the fed arrays, which numeric_grad perturbs in place; a LoDTensor's array,
    and a function giving the feed again from them, each LoDTensor's LoD around its array)."""
    arrays = {name: np.array(v.array if isinstance(v, LoDTensor) else v, order="C") for name, v in feed.items()}
    lods = {name: v.lod for name, v in feed.items() if isinstance(v, LoDTensor)}

    def fed() -> dict:
        return {name: LoDTensor(a, lods[name]) if name in lods else a for name, a in arrays.items()}

    return arrays, fed


def check_op(op_type: str, inputs: Mapping[str, np.ndarray | Sequence[np.ndarray]],
             attrs: Mapping | None = None, outputs: Mapping[str, int] | None = None,
             wrt: Sequence[str] | None = None, eps: float = 1e-6, rtol: float = 1e-5,
             atol: float = 1e-7, seed: int = 0, directions: int | None = None) -> dict[str, np.ndarray]:
    """Check ``op_type``'s gradients numerically; return the analytic grads by input var name.

    ``inputs`` maps slot -> array (or list of arrays for duplicable slots; a gradc.executor.LoDTensor for a
    sequence input); vars are named ``{slot}{i}``. ``outputs`` gives the number of vars of a multi-var output
    slot (default 1).
    ``wrt`` restricts the checked input vars; float inputs of non-differentiable slots never count.
    ``directions``: compare along that many random directions per var instead of at every element (_check_var).
    """
    opdef = registry.get(op_type)
    if opdef is None or not opdef.differentiable:
        raise GradcheckError(f"op '{op_type}' is not a registered differentiable op")
    program = Program()
    block = program.global_block
    in_slots = {slot: [f"{slot}{i}" for i in range(len(value) if isinstance(value, (list, tuple)) else 1)]
                for slot, value in inputs.items()}
    values, feed = perturbable({name: array for slot, value in inputs.items() for name, array in
                                zip(in_slots[slot], value if isinstance(value, (list, tuple)) else [value])})
    for name, array in values.items():
        _declare(program, name, array)
    out_slots = {slot: [f"{slot}{i}.out" for i in range((outputs or {}).get(slot, 1))]
                 for slot in opdef.outputs if (outputs is None or slot in outputs)}
    for names in out_slots.values():
        for name in names:
            block.create_var(name, None, None)
    block.append_op(op_type, in_slots, out_slots, dict(attrs or {}))

    executor = Executor()
    forward = dict(zip(_all(out_slots), executor.run(program, feed(), _all(out_slots), Scope())))
    differentiable = [name for slot, names in out_slots.items() if slot not in opdef.no_grad_outputs
                      for name in names
                      if forward[name] is not None and np.issubdtype(forward[name].dtype, np.inexact)]
    for name, value in forward.items():
        var = block.var(name)
        var.shape, var.dtype = list(np.shape(value)), to_var_type(np.asarray(value).dtype)
    rng = np.random.default_rng(seed)
    weights = {name: _weights(rng, forward[name]) for name in differentiable}

    candidates = [name for slot, names in in_slots.items() if slot not in opdef.no_grad_inputs
                  for name in names if block.var(name).dtype in DIFFERENTIABLE_DTYPES]
    checked = [n for n in candidates if wrt is None or n in wrt or _slot_of(n, in_slots) in wrt]
    frozen = set(values) - set(checked)

    train = program.clone()
    got = append_grad_ops(train, differentiable, no_grad_set=frozen)
    grad_feed = {**feed(), **{name + "@GRAD": w for name, w in weights.items()}}
    missing = [name for name in checked if name not in got]
    if missing:
        raise GradcheckError(f"{op_type}: the backward gives no gradient for {missing}")
    analytic = dict(zip(checked, executor.run(train, grad_feed, [n + "@GRAD" for n in checked], Scope())))

    def objective() -> float:
        outs = executor.run(program, feed(), differentiable, Scope())
        return float(sum(np.sum((np.conj(weights[name]) * out).real) for name, out in zip(differentiable, outs)))

    along = np.random.default_rng(seed + 1)   # its own stream: the weights stay those of a check at every element
    problems = [m for name in checked
                if (m := _check_var(name, values[name], analytic[name], objective, eps, rtol, atol, directions,
                                    along)) is not None]
    if problems:
        raise GradcheckError(mismatch_report(op_type, attrs, problems))
    return analytic


def _weights(rng: np.random.Generator, value: np.ndarray) -> np.ndarray:
    """Random weights W of an output (its seeded grad): the scalar checked is Re(sum(conj(W) * out)), whose
    gradient by Paddle's convention is W also for a complex output."""
    weights = rng.standard_normal(np.shape(value))
    return weights + 1j * rng.standard_normal(np.shape(value)) if np.iscomplexobj(value) else weights


def _check_var(name: str, value: np.ndarray, analytic, objective, eps: float, rtol: float, atol: float,
               directions: int | None, rng: np.random.Generator) -> Mismatch | None:
    """Compare ``name``'s analytic gradient with central differences: at every element, or (``directions``, when
    the var has more elements than that) along that many random unit directions, each costing two runs whatever
    the size. Along u, the tolerance is what the element tolerances give for u's parts added in quadrature."""
    if directions is None or value.size <= directions:
        return element_mismatch(name, analytic, numeric_grad(objective, value, eps).reshape(value.shape), rtol, atol)
    return along_directions(name, value, analytic, objective, eps, rtol, atol, directions, rng)[1]


def along_directions(name, value, analytic, objective, eps, rtol, atol, count, rng
                     ) -> tuple[float, Mismatch | None, list[Kink]]:
    """(the largest |analytic - numeric| along ``count`` random unit directions, the worst one that is a mismatch,
    the directions crossing a kink: their misses are no mismatch, as an element's at a kink is not)."""
    units = random_directions(rng, value, count)
    numeric = directional_derivatives(objective, value, eps, units)
    along, tolerances = along_units(analytic, units), directional_tolerances(analytic, units, rtol, atol)
    misses = np.flatnonzero(~(np.abs(along - numeric) <= tolerances))   # NaN is a miss
    found = direction_kinks(objective, value, eps, units[misses], tolerances[misses]) if misses.size else {}
    kinked = {int(misses[k]): sides for k, sides in found.items()}
    return verdict_along(name, along, numeric, tolerances, kinked)


def _declare(program: Program, name: str, array: np.ndarray) -> None:
    program.global_block.create_var(name, list(array.shape), to_var_type(array.dtype))


def _all(slots: Mapping[str, list[str]]) -> list[str]:
    return [name for names in slots.values() for name in names]


def _slot_of(name: str, slots: Mapping[str, list[str]]) -> str | None:
    return next((slot for slot, names in slots.items() if name in names), None)


def mismatch_report(what: str, attrs, problems: list[Mismatch]) -> str:
    """A GradcheckError's text: what was checked (an op and its attrs, or "program"), then each mismatch's line."""
    lines = [f"{what}{' ' + str(dict(attrs)) if attrs else ''}: gradient mismatch"]
    for m in problems:
        where = f"at {m.index}" if m.direction is None else f"along random direction {m.direction}"
        lines.append(f"  {m.var}: max |analytic - numeric| = {m.max_abs_error:.3g} {where} "
                     f"(analytic {m.analytic:.6g}, numeric {m.numeric:.6g})")
    return "\n".join(lines)

"""Numeric gradient checking: central differences against the grads gradc compiles and runs.

``check_program`` and ``compare_program`` check a whole program and its loss (``check_op``, one op, is
gradc.gradcheck_op's, named here too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .backward import append_backward, default_loss, no_loss_hint, resolve_loss
from .backward.names import GradNames
from .backward.ungraded import without_gradient
from .central_differences import kinks, numeric_grad, settled
from .cut_paths import cut_at, detached, reattached
from .errors import GradcError
from .executor import Executor, Scope
from .executor.declared import check_scope_values
from .executor.randomness import same_draws
from .executor.selected_rows import as_dense
from .float64_copies import float64_copy
from .gradcheck_op import GradcheckError, along_directions, check_op, mismatch_report, perturbable
from .gradcheck_verdicts import Kink, Mismatch, element_verdict
from .ir import DIFFERENTIABLE_DTYPES, Program, dtype_name, grad_name
from .optimizers.base import last_gradients

__all__ = ["GradcheckError", "Mismatch", "VarCheck", "check_op", "check_program", "compare_program", "perturbable"]


@dataclass
class VarCheck:
    var: str
    checked: int            # elements compared
    size: int
    max_abs_error: float
    mismatch: Mismatch | None
    directions: int = 0     # compared along that many random directions instead (checked is then 0)
    kinks: list[Kink] = field(default_factory=list)   # elements where the loss has no derivative, not compared
    no_path_to_loss: bool = False   # the backward gives it no gradient: its zeros agreeing test no gradient
    stationary: bool = False   # a gradient of 0, but the loss rises (or falls) on both sides: a penalty at its anchor


def compare_program(program: Program, feed: Mapping[str, np.ndarray], wrt: Sequence[str] | None,
                    loss: str | Sequence[str] | None = None, params: Mapping[str, np.ndarray] | None = None,
                    eps: float = 1e-6, rtol: float = 1e-5, atol: float = 1e-7,
                    max_elements: int | None = None, seed: int = 0, float64: bool = False,
                    directions: int | None = None, compiled: Program | None = None
                    ) -> tuple[dict[str, np.ndarray], list[VarCheck]]:
    """The compiled d(loss)/d(var) of each var in ``wrt`` (fed inputs or parameters; None: every
    parameter that gets a gradient) of a whole program, and its comparison with central differences
    at every element, or at ``max_elements`` random ones, or along ``directions`` random directions (a var with
    more elements than that). Several losses: the gradients of their sum, each summed over its elements (as
    append_backward of several seeds each with ones). With ``float64``, a widened copy of the program runs on
    widened values (the program itself is not changed). ``compiled``: a program holding its own backward of
    ``program`` (a compiled program being checked), whose run gives the gradients compared; None: compiled here."""
    if float64:
        program, feed, params = float64_copy(program, feed, params or {})
        compiled = compiled and float64_copy(compiled)[0]
    if loss is None:
        loss = default_loss(program)
        if loss is None:
            raise GradcheckError(f"name the loss (--loss): {no_loss_hint(program)}")
    losses = [loss] if isinstance(loss, str) else list(loss)
    program = reattached(program, wrt or ())   # a var checked by name gets its gradient, stop_gradient or not
    train, grad_of, differentiated = _with_backward(program, compiled, loss)
    wrt = differentiated if wrt is None else list(wrt)
    values, fed = perturbable(feed)   # numeric_grad perturbs the arrays in place
    param_values = {k: np.array(v, order="C") for k, v in (params or {}).items()}
    undeclared = [name for name in wrt if program.global_block.find_var(name) is None]
    if undeclared:
        raise GradcheckError(f"no var {', '.join(map(repr, undeclared))} in block 0 of the program to check the "
                             f"gradient of (--wrt, wrt= in Python)")
    dtypes = {name: program.global_block.find_var(name).dtype for name in wrt}
    unfloated = [f"{name} ({dtype_name(dtype)})" for name, dtype in dtypes.items()
                 if dtype not in DIFFERENTIABLE_DTYPES]
    if unfloated:   # perturbed, a shape or an index would be another program: no derivative to compare
        raise GradcheckError(f"no gradient of {', '.join(unfloated)}: only float vars have one (--wrt, wrt= in Python)")
    written = {name for op in program.global_block.ops for name in op.output_names()}
    valueless = [name for name in wrt if name not in values and name not in param_values]
    activations = [name for name in valueless if name in written]
    unknown = [name for name in valueless if name not in written]
    if unknown:
        raise GradcheckError(f"no value for {', '.join(unknown)}: give the parameters with --params (params= in "
                             f"Python), initialise them with --startup, or feed them")
    run = same_draws(Executor().run)   # a random op (a VAE's noise, dropout) draws the same values at every run
    checked = _checked_as_they_are(train, param_values)
    run_writes = {name for each in (program, train) for block in each.blocks for op in block.ops
                  for name in op.output_names()}   # every block, the backward's too: block 0's forward is `written`

    def scope() -> Scope:   # the values are the arrays perturbed in place: a run reads them, copies only to write
        s = Scope()
        for name, value in param_values.items():
            if name in run_writes:   # a run's own copy (batch norm's running statistics)
                s[name] = value.copy()
            elif name in checked:
                s.vars[name] = value
            else:   # converted (bfloat16) or not read by the backward's program: checked by a run that reads it
                s[name] = value
        return s

    # an intermediate var checked (--wrt an activation) is fed, perturbed, to the program without the ops writing it
    known = dict(param_values)
    if activations:   # one forward run for their values, only where one is checked
        known.update((name, np.array(value, order="C"))
                     for name, value in zip(activations, run(program, fed(), activations, scope())))
    # a var the loss does not depend on gets no grad var at all: its gradient is zero
    unreached = without_gradient(train.global_block, {name: grad_of(name) for name in wrt})
    computed = [name for name in wrt if name not in unreached]
    analytic = {name: np.zeros(np.shape(values.get(name, known.get(name)))) for name in wrt}
    # an Embedding(sparse=True)'s gradient is a SelectedRows: compared as the table it stands for
    analytic.update(zip(computed, map(as_dense, run(train, fed(), [grad_of(n) for n in computed], scope()))))

    cut, held = detached(program, losses)   # detached values stay as they are, as the compiled gradient takes them
    held_values = dict(zip(held, run(program, fed(), held, scope()))) if held else {}
    cuts, siblings = {}, {}   # each activation's own cut: fed one, the loss still depends on the others through it
    for name in activations:
        cuts[name], shared = cut_at(cut, [name])
        # its writer's other outputs (top_k's indices: the routing) held, as its gradient, a partial derivative, holds
        siblings[name] = dict(zip(shared, run(program, fed(), shared, scope()))) if shared else {}
        # fed now, it is declared as its value: Paddle may have declared it off (affine_grid's of a shape tensor)
        cuts[name].global_block.var(name).shape = list(known[name].shape)
    values.update({name: known[name] for name in activations})

    def fed_for(name: str) -> dict:   # the feed of name's cut: the other checked activations, it computes them
        return {key: value for key, value in fed().items() if key not in cuts or key == name} | held_values | \
            siblings.get(name, {})

    # a var a constant op writes (Normal(0, 1)'s scale) has no gradient in the whole program: a leaf of its own cut
    for name in set(activations) - set(computed) if compiled is None else ():
        alone, grad_alone, _ = _with_backward(cuts[name], None, loss)
        if not without_gradient(alone.global_block, {name: grad_alone(name)}):
            analytic[name] = run(alone, fed_for(name), [grad_alone(name)], scope())[0]
            unreached.remove(name)

    def objective_of(name: str):
        def objective() -> float:
            outs = run(cuts.get(name, cut), fed_for(name), losses, scope())
            return float(sum(np.sum(value) for value in outs))
        return objective

    rng = np.random.default_rng(seed)
    checks = []
    for name in wrt:
        value, objective = values[name] if name in values else known[name], objective_of(name)
        stationary = name not in unreached and not np.any(analytic[name]) and _curved(objective, value, rng)
        if directions is not None and value.size > directions:
            error, mismatch, at_kinks = along_directions(name, value, analytic[name], objective, eps, rtol, atol,
                                                          directions, rng)
            checks.append(VarCheck(name, 0, value.size, error, mismatch, directions, at_kinks, name in unreached,
                                   stationary))
            continue
        indices = np.arange(value.size)
        if max_elements is not None and value.size > max_elements:
            indices = np.sort(_looked_up(rng.choice(value.size, max_elements, replace=False), analytic[name], rng))
        numeric = numeric_grad(objective, value, eps, indices)
        computed = np.asarray(analytic[name], dtype=numeric.dtype).reshape(-1)[indices]
        numeric = settled(objective, value, eps, indices, computed, numeric, rtol, atol)
        kinked = kinks(objective, value, eps, indices, computed, numeric, rtol, atol)
        error, mismatch, at_kinks = element_verdict(name, computed, numeric, indices, value.shape, kinked, rtol, atol)
        checks.append(VarCheck(name, len(indices), value.size, error, mismatch, kinks=at_kinks,
                               no_path_to_loss=name in unreached, stationary=stationary))
    return analytic, checks


def _checked_as_they_are(program: Program, values: Mapping[str, np.ndarray]) -> set[str]:
    """The names of ``values`` that fit their declarations in ``program`` as they are (checked once here, as each run
    would check them: a value refused raises); not those it does not read, nor those a run would convert."""
    checked = Scope()
    for name, value in values.items():
        checked[name] = value
    check_scope_values(program.global_block, checked)
    return {name for name, value in values.items() if name not in checked.unchecked and checked.vars[name] is value}


def _with_backward(program: Program, compiled: Program | None, loss) -> tuple[Program, Callable, list[str]]:
    """The program whose run writes the gradients, each var's gradient name in it, and the parameters it gives one."""
    if compiled is None:
        train = program.clone()
        grad_of = GradNames(train)   # v@GRAD, or v@GRAD@2 where the program has a backward already
        pairs = append_backward(train, loss, any_shape=not isinstance(loss, str) and len(loss) > 1)
        return train, grad_of, [param for param, _ in pairs]
    for name in [loss] if isinstance(loss, str) else loss:   # named as a fresh compile would name a wrong loss
        resolve_loss(program.global_block, name, any_shape=not isinstance(loss, str))
    written = {name for op in compiled.global_block.ops for name in op.output_names()}
    grads = {param: grad for param, grad in last_gradients(compiled.global_block) if grad in written}
    return compiled, lambda name: grads.get(name, grad_name(name)), list(grads)


def _curved(objective: Callable[[], float], value: np.ndarray, rng) -> bool:
    """Whether the loss, flat to first order in ``value`` (a gradient of 0), moves the same way on both sides of it
    along a random direction: a minimum or maximum (a penalty at its anchor), not a step function (round, sign), which
    stays as it is on both sides (or jumps on one). A move out of the op's domain (a negative rate) says no."""
    base, saved = objective(), value.copy()
    step = 1e-3 * (float(np.max(np.abs(value), initial=0.0)) + 1.0) * rng.standard_normal(value.shape)
    sides = []
    try:
        for sign in (1.0, -1.0):
            value[...] = saved + sign * step
            sides.append(objective() - base)
    except GradcError:
        return False
    finally:
        value[...] = saved
    return all(abs(side) > 1e-12 * max(1.0, abs(base)) for side in sides) and sides[0] * sides[1] > 0


def _looked_up(indices: np.ndarray, gradient, rng) -> np.ndarray:
    """A uniform draw of an embedding table's elements falls mostly in rows no example looks up, zero both ways: at
    least half the elements drawn have a nonzero computed gradient, where there are as many."""
    flat = np.asarray(gradient).reshape(-1)
    missing = min(len(indices) // 2, np.count_nonzero(flat)) - np.count_nonzero(flat[indices])
    if missing <= 0:
        return indices
    zero = indices[flat[indices] == 0]
    extra = rng.choice(np.setdiff1d(np.flatnonzero(flat), indices), missing, replace=False)
    return np.concatenate([indices[flat[indices] != 0], zero[missing:], extra])


def check_program(program: Program, feed: Mapping[str, np.ndarray], wrt: Sequence[str],
                  loss: str | Sequence[str] | None = None, params: Mapping[str, np.ndarray] | None = None,
                  eps: float = 1e-6, rtol: float = 1e-5, atol: float = 1e-7,
                  directions: int | None = None) -> dict[str, np.ndarray]:
    """Check d(loss)/d(var) for each var in ``wrt`` at every element (or along ``directions`` random directions);
    raise GradcheckError on a mismatch."""
    analytic, checks = compare_program(program, feed, wrt, loss, params, eps, rtol, atol, directions=directions)
    problems = [c.mismatch for c in checks if c.mismatch is not None]
    if problems:
        raise GradcheckError(mismatch_report("program", None, problems))
    return analytic

"""L-BFGS on the host, as paddle.optimizer.LBFGS runs it (its arguments, its defaults, its stopping tests): each
step makes up to ``max_iter`` iterations on one batch, each a direction from the last ``history_size`` position and
gradient changes (the two-loop recursion, Nocedal & Wright's algorithm 7.4) and a step along it, fixed or found by a
line search satisfying the strong Wolfe conditions (their algorithms 3.5 and 3.6, trial steps by cubic
interpolation, eq. 3.59).

A compiled program without optimizer ops (gradc compile without --optimizer) gives the loss and every parameter's
gradient; ``ProgramObjective`` runs it at any position of the parameters, the flat vector the algorithm moves.

    trainer = Trainer("backward.pb", "startup.pb", lbfgs=LBFGS(max_iter=20, line_search_fn="strong_wolfe"))
    trainer.fit(OneBatch(feed), epochs=5)

Scalars keep the parameters' float type, as Paddle's 0-d tensors do, so a float32 run rounds where Paddle's does.
The line search is line_search.py's.
"""

from __future__ import annotations

import ast
import inspect
from collections import deque

import numpy as np

from ..errors import GradcError, closest
from .grad_norms import parameter_gradients
from .history import default_fetch
from .line_search import strong_wolfe
from .programs import updates_parameters

PREFIX = "@lbfgs@/"   # a checkpoint's arrays of L-BFGS's history; no var of a Paddle program is named so


def split_lbfgs(values: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A checkpoint's arrays: (the vars' values, L-BFGS's state without the prefix)."""
    state = {name[len(PREFIX):]: value for name, value in values.items() if name.startswith(PREFIX)}
    return {name: value for name, value in values.items() if not name.startswith(PREFIX)}, state


class LBFGS:
    """paddle.optimizer.LBFGS's arguments; ``step`` moves a flat parameter vector."""

    def __init__(self, learning_rate: float = 1.0, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None):
        for name, value in (("max_iter", max_iter), ("history_size", history_size),
                            ("max_eval", 1 if max_eval is None else max_eval)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise GradcError(f"LBFGS: {name} must be a whole number >= 1, not {value!r}")
        for name, value in (("learning_rate", learning_rate), ("tolerance_grad", tolerance_grad),
                            ("tolerance_change", tolerance_change)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise GradcError(f"LBFGS: {name} must be a number >= 0, not {value!r}")
        if line_search_fn not in (None, "strong_wolfe"):
            raise GradcError(f"LBFGS: line_search_fn must be None or 'strong_wolfe' (Paddle's only one), not "
                             f"{line_search_fn!r}")
        self.learning_rate, self.max_iter, self.history_size = learning_rate, max_iter, history_size
        self.max_eval = max_iter * 5 // 4 if max_eval is None else max_eval
        self.tolerance_grad, self.tolerance_change = tolerance_grad, tolerance_change
        self.line_search_fn = line_search_fn
        self.iterations = 0      # over every step: the first ever takes the steepest descent
        self.evaluations = 0
        self._steps: deque = deque(maxlen=history_size)       # (s, y, 1 / y.s), oldest first
        self._direction = self._alpha = self._last_grad = None
        self._scale = None       # y.s / y.y of the newest pair: the initial inverse Hessian's diagonal

    def settings(self) -> dict:
        """Its arguments: a checkpoint's history is resumed only by an L-BFGS of the same ones."""
        return {name: getattr(self, name) for name in ("learning_rate", "max_iter", "max_eval", "tolerance_grad",
                                                       "tolerance_change", "history_size", "line_search_fn")}

    def checkpoint_values(self) -> dict[str, np.ndarray]:
        """Where it stands, as a checkpoint's arrays: the counters, the last direction, step and gradient, and each
        remembered pair (s, y, 1 / y.s) with the Hessian's scale, so that a resumed run takes the same steps."""
        values = {PREFIX + "counts": np.array([self.iterations, self.evaluations], np.int64)}
        last = {"direction": self._direction, "last_grad": self._last_grad, "scale": self._scale,
                # a Python float step scales the direction as one of its dtype does
                "alpha": None if self._alpha is None else np.asarray(self._alpha, self._direction.dtype)}
        values.update((PREFIX + name, np.asarray(value)) for name, value in last.items() if value is not None)
        for k, pair in enumerate(self._steps):
            values.update((f"{PREFIX}{part}/{k}", np.asarray(value)) for part, value in zip(("s", "y", "rho"), pair))
        return values

    def resume(self, values: dict[str, np.ndarray]) -> None:
        """Continue from a checkpoint's arrays (checkpoint_values without its prefix)."""
        self.iterations, self.evaluations = (int(count) for count in values["counts"])
        self._direction, self._last_grad = values.get("direction"), values.get("last_grad")
        self._alpha, self._scale = (values[name][()] if name in values else None for name in ("alpha", "scale"))
        pairs = sum(name.startswith("s/") for name in values)
        self._steps.clear()
        self._steps.extend((values[f"s/{k}"], values[f"y/{k}"], values[f"rho/{k}"][()]) for k in range(pairs))

    def step(self, evaluate, x: np.ndarray) -> np.ndarray:
        """Up to ``max_iter`` iterations from ``x``; ``evaluate(x)`` gives (loss, gradient) there. The new position."""
        loss, grad = evaluate(x)
        evaluations = 1
        self.evaluations += 1
        if np.abs(grad).max() <= self.tolerance_grad:
            return x
        for iteration in range(1, self.max_iter + 1):
            self.iterations += 1
            direction = self._first_direction(grad) if self.iterations == 1 else self._next_direction(grad)
            self._direction, self._last_grad, last_loss = direction, grad, loss
            alpha = (min(1.0, 1.0 / np.abs(grad).sum()) * self.learning_rate if self.iterations == 1
                     else self.learning_rate)
            self._alpha = alpha
            slope = np.dot(grad, direction)
            if slope > -self.tolerance_change:
                break
            converged, used = False, 0
            if self.line_search_fn is not None:
                loss, grad, alpha, used = strong_wolfe(evaluate, x, direction, loss, grad, slope, alpha)
                x = x + alpha * direction
                converged = np.abs(grad).max() <= self.tolerance_grad
            else:
                x = x + alpha * direction
                if iteration != self.max_iter:   # the last iteration's loss is the next step's first evaluation
                    loss, grad = evaluate(x)
                    used = 1
                    converged = np.abs(grad).max() <= self.tolerance_grad
            self._alpha = alpha
            evaluations += used
            self.evaluations += used
            if (converged or np.abs(direction * alpha).max() <= self.tolerance_change
                    or abs(loss - last_loss) < self.tolerance_change or evaluations >= self.max_eval):
                break
        return x

    def _first_direction(self, grad: np.ndarray) -> np.ndarray:
        self._steps.clear()
        self._scale = grad.dtype.type(1)
        return -grad

    def _next_direction(self, grad: np.ndarray) -> np.ndarray:
        """The two-loop recursion over the remembered pairs, the newest (from the last iteration) added first where
        its curvature y.s is positive enough."""
        y, s = grad - self._last_grad, self._direction * self._alpha
        ys = np.dot(y, s)
        if ys > 1e-10:
            self._steps.append((s, y, 1.0 / ys))
            self._scale = ys / np.dot(y, y)
        q, coefficients = -grad, []
        for s, y, rho in reversed(self._steps):
            a = np.dot(s, q) * rho
            coefficients.append(a)
            q = q + y * -a
        r = q * self._scale
        for (s, y, rho), a in zip(self._steps, reversed(coefficients)):
            r = r + s * (a - np.dot(y, r) * rho)
        return r


def program_objective(executor, program, scope) -> ProgramObjective:
    """What L-BFGS minimises: the one loss of a compiled program without optimizer ops, and its parameters'
    gradients."""
    if updates_parameters(program):
        raise GradcError("L-BFGS moves the parameters itself: give it a program compiled without --optimizer (the "
                         "update ops of this one would move them too)")
    losses = default_fetch(program)
    if len(losses) != 1:
        found = f"it has {len(losses)}: {', '.join(losses)}" if losses else "it has none gradc can pick"
        raise GradcError(f"L-BFGS minimises one scalar loss, and {found}")
    try:
        pairs = parameter_gradients(program)
    except GradcError:
        raise GradcError("L-BFGS needs the parameters' gradients: give it the program gradc compile writes (without "
                         "--optimizer), not the forward program") from None
    return ProgramObjective(executor, program, scope, losses[0], pairs)


class ProgramObjective:
    """A compiled program's loss and its parameters' gradients at a flat vector of the parameters' values."""

    def __init__(self, executor, program, scope, loss: str, pairs: list[tuple[str, str]]):
        self.executor, self.program, self.scope, self.loss = executor, program, scope, loss
        self.params, self.grads = [param for param, _ in pairs], [grad for _, grad in pairs]
        self.shapes: list[tuple] = []   # set at the first step: `gradc train --params` loads the values after
        self.ends: list[int] = []

    def position(self) -> np.ndarray:
        values = [np.asarray(self.scope[param]) for param in self.params]
        if not self.ends:   # the steps place values of these shapes and dtype back
            if len(dtypes := {value.dtype for value in values}) != 1 or not np.issubdtype(values[0].dtype, np.floating):
                raise GradcError(f"L-BFGS moves one vector of every parameter: they must share one float type, not "
                                 f"{', '.join(sorted(map(str, dtypes)))}")
            self.shapes = [value.shape for value in values]
            self.ends = np.cumsum([value.size for value in values]).tolist()
        return np.concatenate([value.reshape(-1) for value in values])

    def place(self, x: np.ndarray) -> None:
        for param, shape, part in zip(self.params, self.shapes, np.split(x, self.ends[:-1])):
            self.scope[param] = part.reshape(shape).copy()

    def run(self, feed, fetch: list[str]) -> list:
        """``fetch`` at the parameters' values now, then the loss and the flat gradient."""
        values = self.executor.run(self.program, feed, [*fetch, self.loss, *self.grads], self.scope)
        grads = values[len(fetch) + 1:]
        flat = np.concatenate([np.asarray(grad).reshape(-1) for grad in grads])
        return [*values[:len(fetch)], float(np.asarray(values[len(fetch)]).reshape(-1)[0]), flat]

    def step(self, lbfgs: LBFGS, feed, fetch: list[str], reseed) -> list:
        """One L-BFGS step on ``feed``: ``fetch``'s values where it starts (Paddle's step returns that loss)."""
        first = []

        def evaluate(x):
            self.place(x)
            reseed()   # every evaluation of one step draws the same dropout masks: a line search needs one function
            values = self.run(feed, fetch if not first else [])
            first.extend(values[:-2] if not first else ())
            return values[-2], values[-1]
        self.place(lbfgs.step(evaluate, self.position()))
        return first


def parse(spec: str) -> LBFGS:
    """--lbfgs's "max_iter=20, line_search_fn='strong_wolfe'" (LBFGS's keyword arguments; none for its defaults)."""
    try:
        call = ast.parse(f"LBFGS({spec})", mode="eval").body
        if call.args:
            raise ValueError
        arguments = {keyword.arg: ast.literal_eval(keyword.value) for keyword in call.keywords}
    except (SyntaxError, ValueError, TypeError):
        raise GradcError(f"cannot read --lbfgs '{spec}': give LBFGS's keyword arguments, e.g. \"max_iter=20, "
                         f"line_search_fn='strong_wolfe'\"") from None
    known = list(inspect.signature(LBFGS).parameters)
    unknown = [name for name in arguments if name not in known]
    if unknown:
        meant = closest(unknown[0], known)
        raise GradcError(f"--lbfgs: LBFGS has no argument {unknown[0]!r}{f' (did you mean {meant}?)' if meant else ''}"
                         f"; it takes {', '.join(known)}")
    return LBFGS(**arguments)

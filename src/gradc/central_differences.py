"""Central differences of a scalar function of an array, by element or along directions (gradcheck's numeric side).

The function reads the array it is given each time it is called, so both perturb the array in place and put it back.
"""

from __future__ import annotations

import numpy as np


def _flat(value: np.ndarray) -> np.ndarray:
    if not value.flags.c_contiguous:   # reshape would copy: the perturbations would never reach f
        raise ValueError("central differences perturb value in place: it must be C-contiguous")
    return value.reshape(-1)


def numeric_grad(f, value: np.ndarray, eps: float, indices: np.ndarray | None = None) -> np.ndarray:
    """Central differences of the scalar f(value) with respect to the elements of ``value`` at the flat
    ``indices`` (default: all); the result is flat, one entry per index. A complex element is moved along
    the real and the imaginary axis: its entry is dL/dRe + i dL/dIm (Paddle's gradient of a complex var)."""
    flat = _flat(value)
    indices = np.arange(flat.size) if indices is None else indices
    directions = (1, 1j) if np.iscomplexobj(value) else (1,)
    grad = np.zeros(len(indices), dtype=np.complex128 if len(directions) > 1 else np.float64)
    for k, i in enumerate(indices):
        for direction in directions:
            plus, minus = _plus_minus(f, flat, i, eps * direction)
            grad[k] += direction * (plus - minus) / (2 * eps)
    return grad


def _plus_minus(f, flat: np.ndarray, i, step) -> tuple:
    """f() with flat[i] moved by +step, then by -step; flat[i] put back."""
    original = flat[i]
    flat[i] = original + step
    plus = f()
    flat[i] = original - step
    minus = f()
    flat[i] = original
    return plus, minus


def _along(f, flat: np.ndarray, original: np.ndarray, direction: np.ndarray, step) -> tuple:
    """f() with flat moved from ``original`` by +step, then by -step, along ``direction``; the caller puts it back."""
    flat[...] = original + step * direction
    plus = f()
    flat[...] = original - step * direction
    return plus, f()


def _misses(analytic: np.ndarray, numeric: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """The positions where ``analytic`` is not within the tolerance of ``numeric`` (NaN misses)."""
    return np.flatnonzero(~(np.abs(analytic - numeric) <= atol + rtol * np.abs(numeric)))


def random_directions(rng: np.random.Generator, value: np.ndarray, count: int) -> np.ndarray:
    """``count`` random unit vectors in the space of ``value`` (flat, one per row; complex for a complex value):
    each moves every element at once, so a wrong gradient anywhere changes the derivative along it."""
    directions = rng.standard_normal((count, value.size))
    if np.iscomplexobj(value):
        directions = directions + 1j * rng.standard_normal((count, value.size))
    return directions / np.linalg.norm(directions, axis=1, keepdims=True)


def directional_derivatives(f, value: np.ndarray, eps: float, directions: np.ndarray) -> np.ndarray:
    """Central differences of the scalar f(value) along each (flat) row of ``directions``: two calls of f a
    direction, whatever the array's size. For a complex value the derivative along u is Re(sum(conj(g) * u)),
    g being Paddle's gradient dL/dRe + i dL/dIm."""
    flat = _flat(value)
    original = flat.copy()
    derivatives = np.zeros(len(directions))
    try:
        for k, direction in enumerate(directions):
            plus, minus = _along(f, flat, original, direction, eps)
            derivatives[k] = (plus - minus) / (2 * eps)
    finally:
        flat[...] = original
    return derivatives


def settled(f, value: np.ndarray, eps: float, indices: np.ndarray, analytic: np.ndarray, numeric: np.ndarray,
            rtol: float, atol: float) -> np.ndarray:
    """``numeric`` (central differences at the flat ``indices`` with step eps), retaken with steps eps/10 and eps/100
    where it misses ``analytic``: a step's error c*eps^2 can exceed the tolerance where the function curves hard (a
    LayerNorm of a nearly constant row: a SpecAugment-masked frame). An element whose miss shrinks tenfold or more at
    eps/10 and that agrees at eps/100 takes that estimate, as does one that agrees further down (_inside_the_step); a
    wrong gradient misses at every step."""
    missing = _misses(analytic, numeric, rtol, atol)
    if missing.size == 0:
        return numeric
    finer = numeric_grad(f, value, eps / 10, indices[missing])
    finest = numeric_grad(f, value, eps / 100, indices[missing])
    wanted = analytic[missing]
    curving = (np.abs(wanted - finer) <= np.abs(wanted - numeric[missing]) / 10) & \
        (np.abs(wanted - finest) <= atol + rtol * np.abs(finest))
    numeric = numeric.copy()
    numeric[missing[curving]] = finest[curving]
    rest = missing[~curving]
    inside = _inside_the_step(f, value, eps / 100, indices[rest], analytic[rest], finest[~curving], rtol, atol)
    numeric[rest] = np.where(np.isnan(inside), numeric[rest], inside)
    return numeric


def _inside_the_step(f, value: np.ndarray, eps: float, indices: np.ndarray, wanted: np.ndarray,
                     estimate: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """``estimate`` (step eps) retaken at steps ten times smaller while each moves it towards ``wanted``, down to
    1e-16: a slope that holds only within a tiny distance (F.normalize's 1/1e-12 at a zero vector, where a step above
    1e-12 measures 1/step) shows at the steps inside it. The estimate of an element that agrees at two steps in a
    row, NaN for the others: a wrong gradient's estimates stop moving towards it (a smooth f's settle by eps), and
    no step is taken below what rounding resolves (at x = 1154, x + 1e-13 == x: every slope measures 0)."""
    estimate, agreements = estimate.copy(), np.zeros(len(indices), int)
    moving = np.ones(len(indices), bool)
    real = value.real.dtype
    x_spacing = np.spacing(np.abs(_flat(value)[indices]).astype(real))
    f_spacing = np.spacing(np.array(abs(f()), dtype=real))
    while (eps := eps / 10) >= 1e-16 and moving.any():
        at = np.flatnonzero(moving)
        finer = numeric_grad(f, value, eps, indices[at])
        tolerance = atol + rtol * np.abs(finer)
        # the rounding of f and of x +- eps, as a slope: a step it blurs measures nothing
        resolved = (f_spacing + np.abs(finer) * x_spacing[at]) / eps < tolerance
        agrees = resolved & (np.abs(wanted[at] - finer) <= tolerance)
        closer = resolved & (np.abs(wanted[at] - finer) < np.abs(wanted[at] - estimate[at]) - tolerance)
        estimate[at] = finer
        agreements[at] = np.where(agrees, agreements[at] + 1, 0)
        moving[at] = (closer | agrees) & (agreements[at] < 2)
    return np.where(agreements >= 2, estimate, np.nan)


def kinks(f, value: np.ndarray, eps: float, indices: np.ndarray, analytic: np.ndarray, numeric: np.ndarray,
          rtol: float, atol: float) -> dict[int, tuple[float, float]]:
    """{position in ``indices``: (left, right) one-sided differences} of the elements where ``analytic`` misses
    ``numeric`` because f has no derivative there: the two sides differ by a jump that does not shrink from step eps
    to eps/100 (a smooth f's shrinks with the step; a wrong gradient has none): a relu at exactly 0 (a black pixel
    under a zero bias), a max's tie. Central differences there are the mean of the two sides, no derivative."""
    missing = _misses(analytic, numeric, rtol, atol)
    if missing.size == 0 or np.iscomplexobj(value):
        return {}
    flat, at = _flat(value), f()
    found = {}
    for k in missing:
        sides = [_plus_minus(f, flat, indices[k], step) for step in (eps, eps / 100)]
        if (kink := _kink(at, sides, eps, atol + rtol * abs(numeric[k]))) is not None:
            found[int(k)] = kink
    return found


def direction_kinks(f, value: np.ndarray, eps: float, directions: np.ndarray, tolerances: np.ndarray
                    ) -> dict[int, tuple[float, float]]:
    """{row of ``directions``: (left, right) one-sided differences} of the (flat, unit) directions along which f has
    no derivative, by ``kinks``' test with each direction's tolerance: one that moves a relu's input off exactly 0
    (every random direction moves every element, so every one crosses such a kink)."""
    if np.iscomplexobj(value):
        return {}
    flat = _flat(value)
    original, at = flat.copy(), f()
    found = {}
    try:
        for k, direction in enumerate(directions):
            sides = [_along(f, flat, original, direction, step) for step in (eps, eps / 100)]
            if (kink := _kink(at, sides, eps, tolerances[k])) is not None:
                found[k] = kink
    finally:
        flat[...] = original
    return found


def _kink(at: float, sides: list[tuple], eps: float, tolerance: float) -> tuple[float, float] | None:
    """(left, right) slopes at step eps/100 from f's values ``at`` the point and ``sides`` ((plus, minus) at steps
    eps and eps/100), where they differ by a jump above ten tolerances that did not shrink to under half from eps."""
    (left, right), (finer_left, finer_right) = (((at - minus) / step, (plus - at) / step)
                                                for (plus, minus), step in zip(sides, (eps, eps / 100)))
    jump = abs(finer_right - finer_left)
    if jump > 10 * tolerance and jump >= abs(right - left) / 2:
        return float(finer_left), float(finer_right)
    return None

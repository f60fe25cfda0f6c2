"""The verdicts of a gradient check: where an analytic gradient and its central differences disagree, at an
element or along a random direction (gradc.gradcheck compares; this says which element, by how much)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Mismatch:
    var: str
    max_abs_error: float
    index: tuple
    analytic: float
    numeric: float
    direction: int | None = None   # the random direction it was found along, or None: at an element


@dataclass
class Kink:
    """An element (or a random direction: index ()) where the loss has no derivative (central_differences.kinks):
    its sides' slopes, not compared."""
    index: tuple
    compiled: float
    left: float
    right: float
    direction: int | None = None


def along_units(analytic, units: np.ndarray) -> np.ndarray:
    """The analytic gradient's derivative along each unit: Re(sum(conj(g) * u)) (vdot conjugates g)."""
    grad = np.asarray(analytic).reshape(-1)
    return np.array([np.vdot(grad, u).real for u in units])


def directional_tolerances(analytic, units: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Along each unit u, what the element tolerances give for u's parts added in quadrature."""
    grad = np.asarray(analytic).reshape(-1)
    return np.sqrt(np.sum(np.abs(units) ** 2 * (atol + rtol * np.abs(grad)) ** 2, axis=1))


def directional_verdict(name: str, analytic, units: np.ndarray, numeric: np.ndarray, rtol: float,
                        atol: float, kinked: dict | None = None) -> tuple[float, Mismatch | None, list[Kink]]:
    """The analytic gradient's derivatives along ``units`` against their ``numeric`` central differences: (the
    largest error of the directions compared, the worst mismatch, the Kinks); a direction crossing a kink
    (``kinked``, central_differences.direction_kinks) is reported, not compared."""
    return verdict_along(name, along_units(analytic, units), numeric,
                         directional_tolerances(analytic, units, rtol, atol), kinked)


def verdict_along(name: str, along: np.ndarray, numeric: np.ndarray, tolerances: np.ndarray,
                  kinked: dict | None = None) -> tuple[float, Mismatch | None, list[Kink]]:
    """directional_verdict from the analytic derivatives along the units and their tolerances (NaN is off)."""
    kinked = kinked or {}
    error = np.abs(along - numeric)
    compared = np.isin(np.arange(len(along)), list(kinked), invert=True)
    bad = ~(error <= tolerances) & compared
    found = [Kink((), float(along[k]), left, right, k) for k, (left, right) in kinked.items()]
    largest = float(error[compared].max(initial=0))
    if not bad.any():
        return largest, None, found
    k = int(np.argmax(np.where(bad, error, -1)))
    return largest, Mismatch(name, largest, (), float(along[k]), float(numeric[k]), k), found


def element_mismatch(name, analytic, numeric, rtol, atol) -> Mismatch | None:
    """The worst element where the two disagree; complex grads compare as (real, imaginary) pairs."""
    if np.iscomplexobj(numeric) or np.iscomplexobj(analytic):
        shape = np.shape(numeric)
        analytic, numeric = (complex_pairs(np.asarray(v, np.complex128).reshape(shape)) for v in (analytic, numeric))
    analytic = np.asarray(analytic, dtype=np.float64).reshape(numeric.shape)
    error = np.abs(analytic - numeric)
    bad = ~(error <= atol + rtol * np.abs(numeric))   # a NaN on either side is a mismatch
    if not bad.any():
        return None
    index = np.unravel_index(np.argmax(np.where(bad, error, -1)), numeric.shape)
    return Mismatch(name, float(error.max()), tuple(int(i) for i in index),
                    float(analytic[index]), float(numeric[index]))


def element_verdict(name, computed, numeric, indices, shape, kinked: dict, rtol, atol):
    """(the largest |computed - numeric| of the elements compared, the worst Mismatch, the Kinks), indices in the
    var's own ``shape``: an element at a kink (``kinked``, central_differences.kinks) is reported, not compared."""
    def place(k: int) -> tuple:
        return tuple(int(i) for i in np.unravel_index(indices[k], shape))
    compared = np.setdiff1d(np.arange(len(indices)), list(kinked))
    mismatch = element_mismatch(name, computed[compared], numeric[compared], rtol, atol)
    if mismatch is not None:
        mismatch.index = place(compared[mismatch.index[0]])
    found = [Kink(place(k), float(computed[k]), left, right) for k, (left, right) in kinked.items()]
    return float(np.abs(computed[compared] - numeric[compared]).max(initial=0)), mismatch, found


def complex_pairs(values: np.ndarray) -> np.ndarray:
    """A complex array as float64 (real, imaginary) pairs along a last axis."""
    return np.stack([values.real, values.imag], axis=-1)

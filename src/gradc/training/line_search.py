"""The strong Wolfe line search of paddle.optimizer.LBFGS (Nocedal & Wright's algorithms 3.5 and 3.6, trial steps
by cubic interpolation, eq. 3.59), which gradc.training.lbfgs steps with. It tests its bracket's width against 1e-9
whatever ``tolerance_change`` is: Paddle passes it no tolerance, and its default is 1e-9."""

from __future__ import annotations

import numpy as np

C1, C2, MAX_LINE_SEARCH, BRACKET_TOLERANCE = 1e-4, 0.9, 25, 1e-9


def cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through two points' values and slopes, clamped to ``bounds`` (default: between
    them); their midpoint where the cubic has no minimum."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    discriminant = d1 * d1 - g1 * g2
    if discriminant < 0:
        return (low + high) / 2.0
    d2 = np.sqrt(discriminant)
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, low), high)


def strong_wolfe(evaluate, x, direction, loss, grad, slope, alpha):
    """A step satisfying the strong Wolfe conditions from ``x`` along ``direction``: steps grow until they bracket
    one, then the bracket is narrowed by cubic interpolation. (loss, gradient, step, evaluations) at the step taken."""
    def evaluate_at(step):
        return evaluate(x + step * direction)
    width = np.abs(direction).max()
    new_loss, new_grad = evaluate_at(alpha)
    new_slope, evaluations, searched = np.dot(new_grad, direction), 1, 0
    previous = [0, loss, grad, slope]
    bracket, done = None, False
    while searched < MAX_LINE_SEARCH:
        point = [alpha, new_loss, new_grad, new_slope]
        if new_loss > loss + C1 * alpha * slope or (searched > 1 and new_loss >= previous[1]):
            bracket = [previous, point]
            break
        if abs(new_slope) <= -C2 * slope:
            bracket, done = [point], True
            break
        if new_slope >= 0:
            bracket = [previous, point]
            break
        alpha = cubic_minimum(*previous[:2], previous[3], alpha, new_loss, new_slope,
                              bounds=(alpha + 0.01 * (alpha - previous[0]), alpha * 10))
        previous = point
        new_loss, new_grad = evaluate_at(alpha)
        new_slope = np.dot(new_grad, direction)
        evaluations, searched = evaluations + 1, searched + 1
    if searched == MAX_LINE_SEARCH:
        bracket = [[0, loss, grad, slope], [alpha, new_loss, new_grad, new_slope]]
    low, high = (0, 1) if bracket[0][1] <= bracket[-1][1] else (1, 0)
    stalled = False
    while not done and searched < MAX_LINE_SEARCH:
        steps = (bracket[0][0], bracket[1][0])
        if abs(steps[1] - steps[0]) * width < BRACKET_TOLERANCE:
            break
        alpha = cubic_minimum(*bracket[0][:2], bracket[0][3], *bracket[1][:2], bracket[1][3])
        alpha, stalled = _away_from_the_ends(alpha, min(steps), max(steps), stalled)
        new_loss, new_grad = evaluate_at(alpha)
        new_slope = np.dot(new_grad, direction)
        evaluations, searched = evaluations + 1, searched + 1
        point = [alpha, new_loss, new_grad, new_slope]
        if new_loss > loss + C1 * alpha * slope or new_loss >= bracket[low][1]:
            bracket[high] = point
            low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
            continue
        if abs(new_slope) <= -C2 * slope:
            done = True
        elif new_slope * (bracket[high][0] - bracket[low][0]) >= 0:
            bracket[high] = bracket[low]
        bracket[low] = point
    best = bracket[low]
    return best[1], best[2], best[0], evaluations


def _away_from_the_ends(alpha, low, high, stalled: bool) -> tuple:
    """A trial step within a tenth of the bracket's width of an end is moved to that distance when the last trial
    was too (or it is at or past the end): the bracket then shrinks by a tenth at least."""
    margin = 0.1 * (high - low)
    if min(high - alpha, alpha - low) >= margin:
        return alpha, False
    if not (stalled or alpha >= high or alpha <= low):
        return alpha, True
    return (high - margin if abs(alpha - high) < abs(alpha - low) else low + margin), False

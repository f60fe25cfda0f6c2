"""Kernels of gradc.ops.random_draws: draws from gradc's generators (Paddle's own engine where gradc draws as Paddle
does: gradc.executor.paddle_random)."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from .. import paddle_random, paddle_random_dists, randomness
from . import kernel


@kernel("bernoulli")
def bernoulli(k):
    p = k.x("X")
    if not ((p >= 0) & (p <= 1)).all():
        raise ValueError("probabilities in X must lie in [0, 1]")
    draws = paddle_random.canonical(randomness.engine(), p.size, paddle_random.distribution_dtype(p.dtype))
    return {"Out": (draws.reshape(p.shape) < p).astype(p.dtype)}   # Paddle's: one uniform an element, below p


_PADDLE_WALK_LIMIT = 10 ** 5   # draws without replacement walked as Paddle walks them; beyond, numpy's choice


@kernel("multinomial")
def multinomial(k):
    """Each row of X weighs its categories (any positive total); draws with or without replacement, as Paddle's CPU
    kernel draws: row by row, a uniform a sample searched in the row's running sums over their total, in X's float,
    a category drawn without replacement weighing 0 after."""
    weights, samples, replace = k.x("X"), k.attr("num_samples"), k.attr("replacement")
    rows = weights.reshape(-1, weights.shape[-1])
    if (rows < 0).any() or np.isnan(rows).any():
        raise ValueError("multinomial weights in X must be >= 0")
    totals = rows.astype(np.float64).sum(axis=1)
    if not (totals > 0).all() or not np.isfinite(totals).all():
        raise ValueError("every distribution in X needs a finite positive total weight")
    if not replace and ((rows > 0).sum(axis=1) < samples).any():
        raise ValueError(f"without replacement, {samples} samples need as many categories of nonzero weight")
    check_shape([*weights.shape[:-1], samples], np.int64, "multinomial")
    rows = rows.astype(paddle_random.distribution_dtype(rows.dtype))
    if replace:
        drawn = _search(rows, paddle_random.canonical(randomness.engine(), rows.shape[0] * samples, rows.dtype))
    elif samples * len(rows) <= _PADDLE_WALK_LIMIT and samples * rows.size <= 1000 * _PADDLE_WALK_LIMIT:
        drawn = np.empty((len(rows), samples), np.int64)
        for i, row in enumerate(rows.copy()):   # Paddle's walk is a sample at a time, quadratic in the row
            for s in range(samples):
                drawn[i, s] = _search(row[None], paddle_random.canonical(randomness.engine(), 1, rows.dtype))[0, 0]
                row[drawn[i, s]] = 0
    else:
        generator = randomness.generator()
        drawn = np.array([generator.choice(row.size, samples, replace=False, p=row / row.sum())
                          for row in rows.astype(np.float64)])
    return {"Out": drawn.reshape(*weights.shape[:-1], samples)}


def _search(rows: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Each row's draws (laid out row after row): the first category whose running sum over the row's total exceeds
    the draw. The rows' sums are laid end to end, row i's raised by i (exact in float64), for one search; a zero
    weight is never drawn."""
    sums = np.cumsum(rows, axis=1, dtype=rows.dtype)
    shift = np.arange(len(rows))[:, None]
    shares = (sums / sums[:, -1:]).astype(np.float64) + shift
    found = np.searchsorted(shares.ravel(), (draws.reshape(len(rows), -1).astype(np.float64) + shift).ravel(),
                            side="right").reshape(len(rows), -1) - shift * rows.shape[1]
    last_nonzero = rows.shape[1] - 1 - np.argmax(rows[:, ::-1] > 0, axis=1)
    return np.minimum(found, last_nonzero[:, None])


@kernel("poisson")
def poisson(k):
    rates = k.x("X")
    if not (rates >= 0).all():
        raise ValueError("poisson rates in X must be >= 0")
    if not (rates < 2 ** 31 - 1).all():   # Paddle's draws are C ints: a larger rate's would never be accepted
        raise ValueError("poisson rates in X must be below 2**31 - 1")
    drawn = paddle_random_dists.poisson(randomness.engine(), rates.ravel())   # std::poisson_distribution's, in double
    return {"Out": drawn.reshape(rates.shape).astype(rates.dtype)}


kernel("poisson_grad")(lambda k: {"X@GRAD": np.zeros_like(k.x("Out@GRAD"))})
kernel("random_grad")(lambda k: {"x@GRAD": np.zeros_like(k.x("out@GRAD"))})


@kernel("random")
def random(k):
    """One word of Paddle's engine an element, modulo to - from, plus from: the word's low 32 bits for a range below
    2^28, as Paddle's CPU kernel takes them."""
    x, low = k.x("x"), k.attr("from")
    span = np.uint64(k.attr("to") - low)
    words = randomness.engine().words(x.size)
    if span < 1 << 28:
        words = words & np.uint64(0xFFFFFFFF)
    return {"out": ((words % span).astype(np.int64) + low).reshape(x.shape).astype(x.dtype)}


@kernel("class_center_sample")
def class_center_sample(k):
    """The distinct labels in ascending order (each label remapped to its position), then classes drawn uniformly
    as Paddle draws them, a bounded int at a time, the ones not yet sampled kept in order of drawing, until
    num_samples are sampled (none when the labels already hold as many). Paddle's engine: the op's seed with fix_seed
    (0: the global one); without fix_seed Paddle seeds one from std::random_device, gradc takes its global engine."""
    labels, classes, samples = k.x("Label"), k.attr("num_classes"), k.attr("num_samples")
    if labels.ndim != 1 or ((labels < 0) | (labels >= classes)).any():
        raise ValueError(f"class_center_sample needs Label [batch] of classes in [0, {classes})")
    check_shape((classes,), labels.dtype, "the list of classes")
    positive, remapped = np.unique(labels, return_inverse=True)
    engine = randomness.engine((k.attr("seed") or None) if k.attr("fix_seed") else None)
    sampled, drawn, draws = set(positive.tolist()), [], paddle_random_dists.ScalarDraws(engine, np.float64)
    while len(sampled) < min(samples, classes):
        negative = draws.below(classes)
        if negative not in sampled:
            sampled.add(negative)
            drawn.append(negative)
    return {"RemappedLabel": remapped.astype(labels.dtype).reshape(labels.shape),
            "SampledLocalClassCenter": np.concatenate([positive, np.array(drawn, np.int64)]).astype(labels.dtype)}


@kernel("seed")
def seed(k):
    """deterministic: the low 32 bits of the named generator's next word, drawn again while 0 (as Paddle); else the
    seed attribute, else a fresh seed (Paddle takes one from std::random_device, which nothing reproduces)."""
    if k.attr("deterministic"):
        engine, value = randomness.seed_generator(k.attr("rng_name")), 0
        while value == 0:
            value = int(engine.words(1).astype(np.uint32).view(np.int32)[0])
        return {"Out": np.array([value], np.int32)}
    value = k.attr("seed") or int(randomness.generator().integers(1, 2 ** 31))
    return {"Out": np.array([value], np.int32)}

"""Kernels of gradc.ops.static_nn: cvm, nce (its samplers draw Paddle's numbers from Paddle's global engine, or from
an engine of their own when the seed attribute is set, seeded afresh on every run as Paddle's) and row_conv."""

from __future__ import annotations

import math

import numpy as np

from ...limits import check_shape
from .. import paddle_random, randomness
from ..paddle_random_dists import ScalarDraws
from ..selected_rows import selected
from . import kernel


@kernel("cvm")
def cvm(k):
    """use_cvm: the show and click columns become log(show + 1) and log(click + 1) - log(show + 1); else dropped."""
    x, counts = k.x("X"), k.x("CVM")
    if x.ndim != 2 or x.shape[1] < 2 or counts.shape != (x.shape[0], 2):
        raise ValueError(f"cvm needs X [batch, width >= 2] and CVM [batch, 2], got {list(x.shape)} and "
                         f"{list(counts.shape)}")
    if not k.attr("use_cvm"):
        return {"Y": x[:, 2:].copy()}
    y = x.copy()
    y[:, 0] = np.log1p(x[:, 0])
    y[:, 1] = np.log1p(x[:, 1]) - y[:, 0]
    return {"Y": y}


@kernel("cvm_grad")
def cvm_grad(k):
    """Paddle's: the CVM input in the show and click columns, Y's gradient in the others."""
    counts, dy = k.x("CVM"), k.x("Y@GRAD")
    dx = np.empty(k.x("X").shape, dy.dtype)
    dx[:, :2] = counts
    dx[:, 2:] = dy[:, 2:] if k.attr("use_cvm") else dy
    return {"X@GRAD": dx}


# row_conv: out[t] = sum over w < future_context + 1 (and t + w < time) of Filter[w] * X[t + w], X [batch, time, dim].
# An empty X has no tap to add, however long its time and Filter.
def _taps(x: np.ndarray, weights: np.ndarray) -> range:
    return range(min(len(weights), x.shape[-2]) if x.size else 0)


def lookahead(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    steps, out = x.shape[-2], np.zeros_like(x)
    for w in _taps(x, weights):
        out[..., :steps - w, :] += weights[w] * x[..., w:, :]
    return out


def lookahead_grads(x: np.ndarray, weights: np.ndarray, dout: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(X@GRAD, Filter@GRAD) of ``lookahead``."""
    steps, dx, dweights = x.shape[-2], np.zeros_like(x), np.zeros_like(weights)
    for w in _taps(x, weights):
        dx[..., w:, :] += weights[w] * dout[..., :steps - w, :]
        dweights[w] = (dout[..., :steps - w, :] * x[..., w:, :]).reshape(-1, x.shape[-1]).sum(axis=0)
    return dx, dweights


def _row_conv_operands(k):
    x, weights = k.x("X"), k.x("Filter")
    lod = k.lod("X") if x.ndim == 2 else None
    if (x.ndim != 3 and not lod) or weights.ndim != 2 or weights.shape[1] != x.shape[-1]:
        raise ValueError(f"row_conv needs X [batch, time, dim] (or [rows, dim] with a LoD) and Filter "
                         f"[future_context + 1, dim], got {list(x.shape)}{' without a LoD' if x.ndim == 2 else ''} "
                         f"and {list(weights.shape)}")
    if lod and lod[-1][-1] != x.shape[0]:
        raise ValueError(f"X's LoD {[list(level) for level in lod]} ends at {lod[-1][-1]}, but X has {x.shape[0]} rows")
    return x, weights, lod


def _sequences(lod) -> list[slice]:
    """The rows of each sequence of the LoD's last level."""
    return [slice(start, end) for start, end in zip(lod[-1][:-1], lod[-1][1:])]


@kernel("row_conv")
def row_conv(k):
    x, weights, lod = _row_conv_operands(k)
    if not lod:
        return {"Out": lookahead(x, weights)}
    out = np.empty_like(x)
    for rows in _sequences(lod):
        out[rows] = lookahead(x[rows], weights)
    return {"Out": out}


@kernel("row_conv_grad")
def row_conv_grad(k):
    x, weights, lod = _row_conv_operands(k)
    dout = k.x("Out@GRAD")
    if not lod:
        dx, dweights = lookahead_grads(x, weights, dout)
    else:
        dx, dweights = np.empty_like(x), np.zeros_like(weights)
        for rows in _sequences(lod):
            dx[rows], dsequence = lookahead_grads(x[rows], weights, dout[rows])
            dweights += dsequence
    return k.grads({"X@GRAD": lambda: dx, "Filter@GRAD": lambda: dweights})


# nce
def _sampler(k, classes: int):
    """(draw(engine, count) -> classes, probability(classes) -> float64) of the op's sampler, drawing as Paddle's
    samplers draw: a bounded int, a double uniform's log-uniform inverse, or the alias method's int then double."""
    kind = k.attr("sampler")
    if kind == 0:
        return ((lambda engine, n: paddle_random.integers(engine, n, 0, classes)),
                (lambda c: np.full(c.shape, 1.0 / classes)))
    if kind == 1:   # Paddle's inverse transform, which never draws the last class; C's exp, as numpy's may differ
        log_range = float(np.float32(math.log(classes)))   # Paddle keeps it in a float

        def log_uniform(engine, n):
            drawn = paddle_random.canonical(engine, n, np.float64).tolist()
            return (np.array([int(math.exp(u * log_range)) for u in drawn], np.int64) - 1) % (classes - 1)

        return log_uniform, (lambda c: np.log((c + 2.0) / (c + 1.0)) / log_range)
    probs, alias, alias_probs = (k.x(s).reshape(-1) for s in ("CustomDistProbs", "CustomDistAlias",
                                                              "CustomDistAliasProbs"))
    if not probs.size == alias.size == alias_probs.size == classes:
        raise ValueError(f"nce's custom_dist tables must each hold num_total_classes={classes} entries")
    if ((alias < -1) | (alias >= classes)).any():
        raise ValueError(f"CustomDistAlias must hold classes in [0, {classes}) (or -1 for none)")

    def draw(engine, n):   # the alias method: a class, kept with its alias probability, else its alias
        picked, chance, draws = np.empty(n, np.int64), np.empty(n, np.float64), ScalarDraws(engine, np.float64)
        for i in range(n):   # Paddle's order: each class's int, then its double
            picked[i] = draws.below(classes)
            chance[i] = draws()
        swapped = (chance > alias_probs[picked]) & (alias[picked] != -1)
        return np.where(swapped, alias[picked], picked)

    return draw, (lambda c: probs[c].astype(np.float64))


def _nce_labels(k):
    """(true labels [batch, trues], the sampler's probability function)."""
    x, labels, classes = k.x("Input"), k.x("Label"), k.attr("num_total_classes")
    if classes < 2:
        raise ValueError(f"nce needs num_total_classes >= 2, got {classes}")
    if labels.dtype.kind not in "iu" or labels.ndim not in (1, 2) or len(labels) != len(x) \
            or ((labels < 0) | (labels >= classes)).any():
        raise ValueError(f"nce needs one row of integer labels in [0, {classes}) per row of Input")
    labels = labels.reshape(len(x), 1) if labels.ndim == 1 else labels
    return labels.astype(np.int64), _sampler(k, classes)


def _rows(k, name: str, batch: int) -> np.ndarray | None:
    value = k.optional(name)
    if value is not None and value.size != batch:
        raise ValueError(f"nce needs one {name} per row of Input ({batch}), got shape {list(value.shape)}")
    return None if value is None else value.reshape(-1).astype(np.float64)


@kernel("nce")
def nce(k):
    """SampleLogits = sigmoid(Input . Weight[c] + Bias[c]) for the true classes c, then the negatives; with b =
    num_neg_samples P(c), Cost = sum of -log(o / (o + b)) over the true ones and -log(b / (o + b)) over the
    negatives, times SampleWeight."""
    x, weight, bias = k.x("Input"), k.x("Weight"), k.optional("Bias")
    labels, (draw, probability) = _nce_labels(k)
    classes, batch = k.attr("num_total_classes"), len(x)
    if weight.shape != (classes, x.shape[1]):
        raise ValueError(f"nce needs Weight [num_total_classes={classes}, {x.shape[1]}], got {list(weight.shape)}")
    chosen = np.asarray(k.attr("custom_neg_classes"), np.int64)
    if ((chosen < 0) | (chosen >= classes)).any() or chosen.size not in (0, k.attr("num_neg_samples")):
        raise ValueError(f"custom_neg_classes must be num_neg_samples classes in [0, {classes}), got "
                         f"{chosen.tolist()}")
    count = k.attr("num_neg_samples")
    check_shape((batch, labels.shape[1] + count, x.shape[1]), np.float64, "the sampled rows of Weight")
    if chosen.size:
        negatives = np.broadcast_to(chosen, (batch, chosen.size))
    else:
        # the int attribute read as an unsigned word; Paddle seeds seed 0 from std::random_device, gradc takes its
        # global engine (gradc.seed) there
        negatives = draw(randomness.engine(k.attr("seed") % 2 ** 32 or None), batch * count).reshape(batch, count)
    samples = np.concatenate([labels, negatives], axis=1)
    logits = np.einsum("bd,bsd->bs", x.astype(np.float64), weight[samples].astype(np.float64))
    if bias is not None:
        logits += bias.reshape(-1)[samples]
    with np.errstate(over="ignore"):   # exp(-logit) overflows to inf for a logit below -709: o = 0, as Paddle's
        odds = 1.0 / (1.0 + np.exp(-logits))
    b = probability(samples) * k.attr("num_neg_samples")
    true = np.arange(samples.shape[1]) < labels.shape[1]
    cost = -np.log(np.where(true, odds, b) / (odds + b))
    weights = _rows(k, "SampleWeight", batch)
    total = cost.sum(axis=1) * (1.0 if weights is None else weights)
    return {"Cost": total.reshape(batch, 1).astype(x.dtype), "SampleLogits": odds.astype(x.dtype),
            "SampleLabels": samples}


@kernel("nce_grad")
def nce_grad(k):
    """With the samples and their sigmoids o fixed: d(cost)/d(logit) = b (o - 1) / (o + b) for a true class,
    o (1 - o) / (o + b) for a negative one; the logits' gradient flows to Input, Weight and Bias rows."""
    x, weight, samples = k.x("Input"), k.x("Weight"), k.x("SampleLabels")
    labels, (_, probability) = _nce_labels(k)
    odds, dcost = k.x("SampleLogits").astype(np.float64), k.x("Cost@GRAD").reshape(-1).astype(np.float64)
    b = probability(samples) * k.attr("num_neg_samples")
    true = np.arange(samples.shape[1]) < labels.shape[1]
    dlogits = np.where(true, b * (odds - 1.0), odds * (1.0 - odds)) / (odds + b)
    weights = _rows(k, "SampleWeight", len(x))
    dlogits *= (dcost if weights is None else dcost * weights)[:, None]

    def dweight():
        grad = np.zeros(weight.shape, np.float64)
        np.add.at(grad, samples, dlogits[:, :, None] * x.astype(np.float64)[:, None, :])
        return selected(grad.astype(weight.dtype), samples) if k.attr("is_sparse") else grad.astype(weight.dtype)

    def dbias():
        bias = k.x("Bias")
        grad = np.zeros(bias.size, np.float64)
        np.add.at(grad, samples, dlogits)
        return grad.reshape(bias.shape).astype(bias.dtype)

    return k.grads({"Input@GRAD": lambda: np.einsum("bs,bsd->bd", dlogits, weight[samples]).astype(x.dtype),
                    "Weight@GRAD": dweight, "Bias@GRAD": dbias})

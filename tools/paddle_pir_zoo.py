"""Op-zoo cases for tools/paddle_pir_fixtures.py: programs built from Paddle's functional API that
together use every PIR op gradc's table maps. Each returns (loss, feed, description); the loss adds
up the mean of every float result, so Paddle's gradients check each op's translation."""

from __future__ import annotations

import numpy as np
import paddle
import paddle.nn.functional as F


def _inputs(rng, *names, shape=(2, 3, 4)):
    values = []
    for name in names:
        value = paddle.static.data(name, list(shape), "float32")
        value.stop_gradient = False
        values.append(value)
    return values, {name: rng.uniform(0.5, 1.5, shape).astype("float32") * rng.choice([-1, 1], shape).astype("float32")
                    for name in names}


def _loss(outs):
    return paddle.add_n([paddle.mean(paddle.cast(o, "float32")) for o in outs])


def zoo_math(rng):
    (x, y), feed = _inputs(rng, "x", "y")
    positive = paddle.exp(y)
    ints = paddle.static.data("ints", [2, 3], "int64")
    feed["ints"] = rng.integers(1, 9, (2, 3)).astype("int64")
    outs = [paddle.subtract(x, y), paddle.multiply(x, y), paddle.divide(x, positive), paddle.maximum(x, y),
            paddle.minimum(x, y), paddle.pow(positive, x), paddle.bmm(x, paddle.transpose(y, [0, 2, 1])),
            paddle.add_n([x, y, x]), paddle.abs(x), paddle.log(positive), paddle.sqrt(positive),
            paddle.rsqrt(positive), paddle.sign(x) * y, paddle.pow(x, 3.0), paddle.clip(x, -0.8, 0.9),
            paddle.cumsum(x, 1), paddle.where(x > y, x, y), paddle.scale(x, 2.0, 1.0),
            paddle.remainder(ints, paddle.full_like(ints, 4)), paddle.floor_divide(ints, paddle.full_like(ints, 3)),
            paddle.increment(paddle.full([1], 1.0), 2.0) * x]
    return _loss(outs), feed, "elementwise math: sub mul div max min pow bmm add_n abs log sqrt rsqrt sign ..."


def zoo_activation(rng):
    (x,), feed = _inputs(rng, "x")
    outs = [F.relu6(3 * x), F.sigmoid(x), F.tanh(x), F.gelu(x), F.gelu(x, approximate=True), F.elu(x, 0.7),
            F.leaky_relu(x, 0.1), F.silu(x), F.swish(x), F.softplus(x, 2.0), F.hardswish(3 * x),
            F.hardsigmoid(3 * x), F.log_softmax(x, 1), F.softmax(x, 2) * x]
    return _loss(outs), feed, "activations: relu6 sigmoid gelu elu leaky_relu silu swish softplus hardswish ..."


def zoo_reduce(rng):
    (x, y), feed = _inputs(rng, "x", "y")
    outs = [paddle.max(x, 1), paddle.min(x, [0, 2], keepdim=True), paddle.prod(x, 2), paddle.sum(x, 1),
            paddle.mean(x, [1], keepdim=True), paddle.argmax(x, 1), paddle.argmin(x, 2),
            paddle.linalg.norm(x, 2, axis=1), paddle.logical_and(paddle.equal(x, x), paddle.not_equal(x, y)),
            paddle.less_equal(x, y), paddle.greater_equal(x, y), paddle.logical_or(x > 0, y > 0),
            paddle.logical_xor(x > 0, y > 0), paddle.logical_not(x > 0), paddle.cast(x > y, "float32") * x]
    return _loss(outs), feed, "reductions, arg max/min, p_norm, comparisons, logic, cast"


def zoo_extremes(rng):
    """amax/amin (their ties share the grad), logsumexp, and max/maximum on inputs full of ties."""
    (x, y), feed = _inputs(rng, "x", "y")
    tied = paddle.static.data("tied", [2, 3, 4], "float32")
    tied.stop_gradient = False
    feed["tied"] = rng.integers(-1, 2, (2, 3, 4)).astype("float32")
    outs = [paddle.amax(x, 1), paddle.amin(x, [0, 2], keepdim=True), paddle.amax(tied, 2), paddle.amin(tied),
            paddle.logsumexp(x, 1), paddle.logsumexp(y, [0, 2], keepdim=True), paddle.logsumexp(x),
            paddle.max(tied, 0), paddle.maximum(tied, paddle.zeros_like(tied)) * y]
    return _loss(outs), feed, "amax, amin, logsumexp; max, maximum and amax/amin over ties"


def zoo_shape(rng):
    (x, y), feed = _inputs(rng, "x", "y")
    index = paddle.static.data("index", [2], "int64")
    feed["index"] = np.array([2, 0], "int64")
    first, second = paddle.split(x, [1, 3], axis=2)
    halves = paddle.split(y, 2, axis=2)
    outs = [paddle.reshape(x, [6, 4]), paddle.flatten(x, 1), paddle.squeeze(paddle.unsqueeze(x, [0, 2]), [0]),
            paddle.concat([x, y], 1), first * 2, second, halves[0] * halves[1], paddle.stack([x, y], 1),
            *paddle.unstack(y, 1), x[:, 1:3, ::2], paddle.strided_slice(y, [2], [0], [4], [2]),
            paddle.tile(x, [1, 2, 1]), paddle.expand(paddle.unsqueeze(y[0], 0), [3, 3, 4]),
            paddle.expand_as(x[:1], y), paddle.gather(x, index, axis=1),
            paddle.gather_nd(paddle.transpose(y, [2, 0, 1]), paddle.unsqueeze(index, 1)),
            paddle.scatter(x[0], index, y[0, :2]), paddle.assign(x) * y,
            F.pad(paddle.unsqueeze(x, 0), [1, 1, 0, 2], mode="reflect"), F.one_hot(index, 5) * x[0, :2, :1],
            paddle.topk(x, 2)[0], paddle.full_like(x, 2.0) * x, paddle.zeros_like(y) + y]
    return _loss(outs), feed, "reshape flatten squeeze unsqueeze concat split stack unstack slice tile expand ..."


def zoo_nn(rng):
    (img,), feed = _inputs(rng, "img", shape=(2, 4, 6, 6))
    (prob, target), more = _inputs(rng, "prob", "target", shape=(2, 5))
    feed.update(more)
    ids = paddle.static.data("ids", [2, 3], "int64")
    feed["ids"] = rng.integers(0, 10, (2, 3)).astype("int64")
    feed["prob"] = rng.uniform(0.1, 0.9, (2, 5)).astype("float32")
    conv = paddle.nn.Conv2D(4, 4, 3, groups=4, padding=1)(img)
    outs = [conv, paddle.nn.Conv2DTranspose(4, 2, 3, stride=2)(img), F.avg_pool2d(img, 2, exclusive=False),
            F.adaptive_avg_pool2d(img, 2), paddle.nn.GroupNorm(2, 4)(conv), F.dropout(img, 0.5, training=False),
            paddle.nn.Embedding(10, 4, padding_idx=0)(ids), F.binary_cross_entropy(prob, F.sigmoid(target)),
            F.binary_cross_entropy_with_logits(target, prob), F.kl_div(F.log_softmax(target), F.softmax(prob), "mean"),
            F.smooth_l1_loss(target, prob), paddle.nn.BatchNorm2D(4)(img) * 0.5,
            F.batch_norm(img, paddle.full([4], 0.1), paddle.full([4], 1.5), training=False),
            0 * paddle.uniform([2, 3]), 0 * paddle.randn([2, 3])]
    return _loss(outs), feed, "depthwise conv, conv transpose, pools, group norm, dropout (test), embedding, losses"


def zoo_index(rng):
    """Ops only nn.MultiLabelMarginLoss emits (there on the label's path, without grads), here with grads:
    cumprod over a zero, index_put accumulating and not, broadcast_tensors."""
    (x, y), feed = _inputs(rng, "x", "y")
    index = paddle.static.data("nd_index", [2, 2], "int64")
    feed["nd_index"] = np.array([[0, 1], [1, 2]], "int64")
    keep = paddle.static.data("keep", [2, 3, 4], "float32")
    feed["keep"] = np.ones((2, 3, 4), "float32")
    feed["keep"][0, 1, 1] = feed["keep"][1, 0, 2:] = 0.0
    rows = paddle.static.data("rows", [2], "int64")
    feed["rows"] = np.array([2, 0], "int64")
    mask = paddle.zeros([2, 3])
    mask[0, 1:3] = paddle.ones([2])       # setitem of a tensor: set_value_with_tensor_
    wide, narrow = paddle.broadcast_tensors([x, y[:, :1, :]])
    outs = [paddle.scatter_nd_add(x, index, y[:, 0, :]), mask * x[:, :, 0], paddle.nonzero(x > 0),
            paddle.cumprod(x * keep, dim=-1), paddle.cumprod(y, dim=1) * x,
            paddle.index_put(x[0], (rows,), y[1, 0]), paddle.index_put(x[1], (rows, rows + 1), y[0, 0, :2], True),
            wide * narrow]
    return _loss(outs), feed, "scatter_nd_add, setitem with a tensor value, nonzero, cumprod, index_put, broadcast"


def zoo_draws_bits(rng):
    """Random draws at parameters that fix them (probabilities 0 and 1, one-hot weights, rates of 1e-12: all
    draws 0), so Paddle's numbers are gradc's; and the bitwise ops, shifts both ways."""
    (x,), feed = _inputs(rng, "x")
    certain = paddle.static.data("certain", [2, 3, 4], "float32")
    feed["certain"] = rng.integers(0, 2, (2, 3, 4)).astype("float32")
    one_hot = paddle.static.data("one_hot", [3, 4], "float32")
    feed["one_hot"] = np.eye(4, dtype="float32")[[2, 0, 3]]
    a, b = paddle.static.data("a", [2, 3], "int32"), paddle.static.data("b", [2, 3], "int32")
    feed["a"], feed["b"] = rng.integers(-64, 64, (2, 3)).astype("int32"), rng.integers(0, 6, (2, 3)).astype("int32")
    outs = [x * paddle.bernoulli(certain), paddle.multinomial(one_hot, 3, replacement=True),
            x * paddle.poisson(paddle.scale(paddle.abs(x), 1e-12)), paddle.bitwise_and(a, b), paddle.bitwise_or(a, b),
            paddle.bitwise_xor(a, b), paddle.bitwise_left_shift(a, b), paddle.bitwise_right_shift(a, b),
            paddle.bitwise_right_shift(a, b, is_arithmetic=False)]
    return _loss(outs), feed, "bernoulli, multinomial, poisson at fixed draws; bitwise and/or/xor, shifts"


def zoo_tensor_draws(rng):
    """Draws the tensor API makes at parameters that fix them: randint in [0, 1), a permutation of one
    element, and gumbel_softmax over logits 1000 apart (the Gumbel noise cannot move the maximum, so the
    output is one-hot, soft or hard, and the gradient zero)."""
    (x,), feed = _inputs(rng, "x", shape=(3, 4))
    apart = paddle.static.data("apart", [3, 4], "float32")
    feed["apart"] = (np.arange(12, dtype="float32").reshape(3, 4) % 4) * 1000
    outs = [x * paddle.randint(0, 1, [3, 4]).astype("float32"), paddle.gather(x, paddle.randperm(1), axis=1),
            x * F.gumbel_softmax(x + apart), F.gumbel_softmax(x + apart, hard=True)]
    return _loss(outs), feed, "randint, randperm, gumbel_softmax (soft and hard) at fixed draws"


def zoo_random_dist(rng):
    """Draws their parameters fix up to float32 rounding: a truncated normal on [0.5, 0.5 + 2^-24], binomials of
    probability 0 or 1, gamma and Dirichlet at shapes of 1e12 (relative spread 1e-6), exponential at rate 1e30;
    and the graph samplers asked for every neighbour, which they then give in order, and reindex_graph."""
    import paddle.geometric as G

    (x,), feed = _inputs(rng, "x", shape=(2, 3))
    count = paddle.static.data("count", [2, 3], "int64")
    certain = paddle.static.data("certain", [2, 3], "float32")
    feed["count"], feed["certain"] = rng.integers(0, 9, (2, 3)), rng.integers(0, 2, (2, 3)).astype("float32")
    graph = {"row": [3, 1, 0, 2, 0, 1], "colptr": [0, 2, 3, 3, 6, 6], "nodes": [3, 0, 2], "eids": [5, 4, 3, 2, 1, 0]}
    row, colptr, nodes, eids = (paddle.to_tensor(np.array(v, "int64")) for v in graph.values())
    weight = paddle.to_tensor(np.array([0.5, 2.0, 1.0, 0.1, 3.0, 1.5], "float32"))
    features = paddle.scale(paddle.reshape(paddle.tile(x, [1, 2]), [6, 2]), 1.0)
    neighbors, _, edges = G.sample_neighbors(row, colptr, nodes, 3, eids=eids, return_eids=True)
    weighted, _, weighted_edges = G.weighted_sample_neighbors(row, colptr, weight, nodes, 3, eids=eids,
                                                              return_eids=True)
    out_nodes = G.reindex_graph(nodes, neighbors, paddle.to_tensor(np.array([3, 2, 0], "int32")))[2]
    huge = paddle.full([2, 3], 1e12)
    outs = [x * paddle._C_ops.truncated_gaussian_random([2, 3], 0.0, 1.0, 0, 0.5, 0.5 + 2.0 ** -24, paddle.float32,
                                                        paddle.CPUPlace()),
            x * paddle.binomial(count, certain).astype("float32"), x * paddle.standard_gamma(huge) * 1e-12,
            x * paddle.distribution.Dirichlet(paddle.scale(huge, 1.0, 1e12)).sample(),
            x * paddle.scale(x, 1.0).exponential_(1e30),
            paddle.gather(features, neighbors), paddle.gather(features, edges), paddle.gather(features, weighted),
            paddle.gather(features, weighted_edges), paddle.gather(features, out_nodes)]
    return _loss(outs), feed, "truncated normal, binomial, gamma, Dirichlet, exponential_ at fixed draws; samplers"


ZOO = {"zoo_math": zoo_math, "zoo_activation": zoo_activation, "zoo_reduce": zoo_reduce, "zoo_shape": zoo_shape,
       "zoo_nn": zoo_nn, "zoo_index": zoo_index, "zoo_extremes": zoo_extremes,
       "zoo_draws_bits": zoo_draws_bits, "zoo_tensor_draws": zoo_tensor_draws, "zoo_random_dist": zoo_random_dist}

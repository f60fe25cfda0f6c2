"""Rows: paddle.distribution's densities, entropies and KL divergences (what a VAE's or a policy gradient's loss
differentiates), and the linear-algebra and FFT functions Paddle writes from other ops."""

import paddle
import paddle.distribution as D

from .spec import Input, f, pos, table, unit


def _soft(*shape: int) -> Input:
    """Values in [0.05, 0.95), not differentiated: points of a distribution on (0, 1)."""
    return unit(*shape, grad=False)


def _sample(*shape: int) -> Input:
    return Input(shape, grad=False)


def _spd(x):
    return paddle.matmul(x, x, transpose_y=True) + 3.0 * paddle.eye(x.shape[-1])


DENSITIES = table(
    "distributions",
    ("Normal_log_prob", lambda m, s, v: D.Normal(m, s).log_prob(v), f(3), pos(3), _sample(3)),
    ("Normal_entropy", lambda m, s: D.Normal(m, s).entropy() + 0.0 * m, f(3), pos(3)),
    ("Normal_kl", lambda m, s, m2, s2: D.kl_divergence(D.Normal(m, s), D.Normal(m2, s2)), f(3), pos(3), f(3), pos(3)),
    ("Laplace_entropy", lambda m, s: D.Laplace(m, s).entropy() + 0.0 * m, f(3), pos(3)),
    ("LogNormal_log_prob", lambda m, s, v: D.LogNormal(m, s).log_prob(v), f(3), pos(3), pos(3)),
    ("Exponential_log_prob", lambda r, v: D.Exponential(r).log_prob(v), pos(3), pos(3)),
    ("Bernoulli_entropy", lambda p: D.Bernoulli(p).entropy(), unit(4)),
    ("Categorical_log_prob", lambda logits: D.Categorical(paddle.nn.functional.softmax(logits)).log_prob(
        paddle.to_tensor([0, 2, 1])), f(4)),
    ("Categorical_entropy", lambda logits: D.Categorical(paddle.nn.functional.softmax(logits)).entropy(), f(2, 4)),
    ("Categorical_kl", lambda a, b: D.kl_divergence(D.Categorical(paddle.nn.functional.softmax(a)),
                                                    D.Categorical(paddle.nn.functional.softmax(b))), f(2, 4), f(2, 4)),
    ("Beta_log_prob", lambda a, b, v: D.Beta(a, b).log_prob(v), pos(3), pos(3), _soft(3)),
    ("Gamma_log_prob", lambda c, r, v: D.Gamma(c, r).log_prob(v), pos(3), pos(3), pos(3)),
    ("Dirichlet_log_prob", lambda a: D.Dirichlet(a).log_prob(paddle.to_tensor([0.2, 0.3, 0.5])), pos(3)),
    ("MultivariateNormal_log_prob", lambda m, x, v: D.MultivariateNormal(m, covariance_matrix=_spd(x)).log_prob(v),
     f(3), f(3, 3), _sample(3)),
    ("Poisson_log_prob", lambda r: D.Poisson(r).log_prob(paddle.to_tensor([0.0, 2.0, 5.0])), pos(3)),
)

LINALG_AND_FFT = table(
    "distributions",
    ("corrcoef", lambda x: paddle.linalg.corrcoef(x), f(3, 5)),
    ("cholesky_inverse", lambda x: paddle.linalg.cholesky_inverse(paddle.linalg.cholesky(_spd(x))), f(3, 3)),
    ("matrix_exp", lambda x: paddle.linalg.matrix_exp(0.3 * x), f(3, 3)),
    ("householder_product", lambda x, tau: paddle.linalg.householder_product(x, tau), f(4, 3), f(3)),
    ("fftn_abs", lambda x: paddle.abs(paddle.fft.fftn(x)), f(2, 3, 4)),
    ("irfft2", lambda x: paddle.fft.irfft2(paddle.fft.rfft2(x)), f(3, 4)),
    ("ihfft2_abs", lambda x: paddle.abs(paddle.fft.ihfft2(x)), f(3, 4)),
    ("fftshift", lambda x: paddle.fft.fftshift(x), f(3, 4)),
    ("ifftshift_axes", lambda x: paddle.fft.ifftshift(x, axes=[1]), f(3, 5)),
    ("fftfreq", lambda x: x * paddle.fft.fftfreq(4, 0.5), f(2, 4)),
    ("rfftfreq", lambda x: x * paddle.fft.rfftfreq(6), f(2, 4)),
)

MORE_DENSITIES = table(
    "distributions",
    ("Cauchy_kl", lambda m, s, m2, s2: D.kl_divergence(D.Cauchy(m, s), D.Cauchy(m2, s2)), f(3), pos(3), f(3),
     pos(3)),
    ("Chi2_log_prob", lambda k, v: D.Chi2(k + 1.0).log_prob(v), pos(3), pos(3)),
    ("ContinuousBernoulli_log_prob", lambda p, v: D.ContinuousBernoulli(p).log_prob(v), unit(3), _soft(3)),
    ("ContinuousBernoulli_entropy", lambda p: D.ContinuousBernoulli(p).entropy(), unit(4)),
    ("Geometric_entropy", lambda p: D.Geometric(p).entropy(), unit(3)),
    ("Gumbel_log_prob", lambda m, s, v: D.Gumbel(m, s).log_prob(v), f(3), pos(3), _sample(3)),
    ("Independent_Normal_log_prob", lambda m, s, v: D.Independent(D.Normal(m, s), 1).log_prob(v), f(2, 3), pos(2, 3),
     _sample(2, 3)),
    ("StudentT_log_prob", lambda d, m, s, v: D.StudentT(d + 1.0, m, s).log_prob(v), pos(3), f(3), pos(3),
     _sample(3)),
    ("Uniform_log_prob", lambda lo, w: D.Uniform(lo, lo + w + 1.0).log_prob(lo + 0.5), f(3), pos(3)),
    ("Uniform_entropy", lambda lo, w: D.Uniform(lo, lo + w + 1.0).entropy(), f(3), pos(3)),
    ("TransformedDistribution_log_prob", lambda m, s, v: D.TransformedDistribution(
        D.Normal(m, s), [D.AffineTransform(paddle.to_tensor(0.5), paddle.to_tensor(2.0)), D.ExpTransform()]
    ).log_prob(v), f(3), pos(3), pos(3)),
    ("TransformedDistribution_sigmoid_power", lambda m, s, v: D.TransformedDistribution(
        D.Normal(m, s), [D.SigmoidTransform(), D.PowerTransform(paddle.to_tensor(2.0))]
    ).log_prob(v), f(3), pos(3), _soft(3)),
)

ROWS = DENSITIES + MORE_DENSITIES + LINALG_AND_FFT

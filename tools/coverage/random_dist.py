"""Rows: random distributions (binomial, standard_gamma, dirichlet, exponential_, truncated normal) and graph
sampling."""

from .spec import table

ROWS = table(
    "random_dist",
)

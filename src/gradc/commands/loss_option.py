"""The --loss option of compile, check and evaluate: one loss var, or several, whose sum is the loss."""

from __future__ import annotations

import click


def _distinct(ctx, param, names: tuple[str, ...]) -> tuple[str, ...]:
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:   # summed twice would double its gradients: a weight belongs in the program, where it shows
        raise click.BadParameter(f"{', '.join(map(repr, repeated))} given twice: give each loss once")
    return names


def loss_option(default: str, several: str):
    """--loss NAME, repeatable: ``default`` says which var is taken without it, ``several`` what several mean."""
    return click.option("--loss", "losses", multiple=True, callback=_distinct, metavar="NAME",
                        help=f"The loss var (default: {default}). Repeatable: {several}")

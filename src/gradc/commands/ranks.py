"""`gradc run-ranks`: run the programs of every rank of a collective (tensor-parallel) job together, in one process
(gradc.executor.ranks.run_ranks)."""

from __future__ import annotations

import click

from ..errors import GradcError
from ..executor import Scope
from ..executor.lod import with_lods
from ..executor.ranks import run_ranks
from ..io import check_writable, load
from ..io.arrays import read_npz
from .run import _save_npz, _summary, load_params


def _per_rank(paths: tuple[str, ...], count: int, what: str) -> list:
    """One value (a path, a seed) per rank, or one for every rank, or none."""
    if len(paths) in (0, 1):
        return [paths[0] if paths else None] * count
    if len(paths) != count:
        raise GradcError(f"give one {what} for every rank or one per rank: {len(paths)} for {count} programs")
    return list(paths)


@click.command("run-ranks")
@click.argument("programs", nargs=-1, required=True, type=click.Path())
@click.option("--feed", "feeds", multiple=True, type=click.Path(),
              help="Inputs (.npz): one for every rank, or one per rank in the programs' order. Repeatable.")
@click.option("--params", "params", multiple=True, type=click.Path(),
              help="Persistable values (.npz or .pdiparams): one for every rank, or one per rank. Repeatable.")
@click.option("--fetch", "fetches", multiple=True, help="A var to fetch from every rank. Repeatable.")
@click.option("--out", type=click.Path(), help="Write the fetched values to this .npz, as rank<r>/<var>.")
@click.option("--seed", type=int, multiple=True,
              help="Seed the random ops' streams of every rank (as paddle.seed on each), or once per rank.")
def run_ranks_command(programs, feeds, params, fetches, out, seed):
    """Run rank 0's program, rank 1's, ... together; each collective op meets the other ranks' (ring_id: the
    group, every rank by default)."""
    if out:
        check_writable(out)
    loaded = [load(path) for path in programs]
    scopes = []
    for program, values in zip(loaded, _per_rank(params, len(loaded), "--params")):
        scope = Scope()
        for name, value in load_params(values, program).items():
            scope[name] = value
        scopes.append(scope)
    inputs = [with_lods(read_npz(path, "feed")) if path else {}
              for path in _per_rank(feeds, len(loaded), "--feed")]
    seeds = _per_rank(seed, len(loaded), "--seed") if seed else None
    results = run_ranks(loaded, inputs, list(fetches), scopes, seed=seeds)
    for rank, values in enumerate(results):
        for name, value in zip(fetches, values):
            click.echo(f"rank {rank} {_summary(name, value)}")
    if out:
        _save_npz(out, {f"rank{rank}/{name}": value for rank, values in enumerate(results)
                        for name, value in zip(fetches, values)})
        click.echo(f"wrote {out}")

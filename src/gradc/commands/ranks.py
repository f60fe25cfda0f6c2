"""`gradc run-ranks`: run the programs of every rank of a collective (tensor-parallel) job together, in one process
(gradc.executor.ranks.run_ranks)."""

from __future__ import annotations

import click
import numpy as np

from ..errors import GradcError
from ..executor import Scope
from ..executor.lod import with_lods
from ..executor.ranks import run_ranks
from ..io import check_writable, is_stdout, load
from ..io.arrays import read_npz
from ..training.params import read_files
from .run import _save_npz
from .run_reports import summary_line


def _per_rank(paths: tuple[str, ...], count: int, what: str) -> list:
    """One value (a path, a seed) per rank, or one for every rank, or none."""
    if len(paths) in (0, 1):
        return [paths[0] if paths else None] * count
    if len(paths) != count:
        raise GradcError(f"give one {what} for every rank or one per rank: {len(paths)} for {count} programs")
    return list(paths)


def _fetched_by(rank: int, fetches: tuple[str, ...], count: int) -> list[str]:
    """The vars rank fetches: each --fetch VAR, and each RANK:VAR naming it."""
    names = []
    for fetch in fetches:
        prefix, _, name = fetch.partition(":")
        if not (prefix.isdigit() and name):
            names.append(fetch)
        elif int(prefix) >= count:
            raise GradcError(f"--fetch {fetch}: there is no rank {prefix} ({count} programs)")
        elif int(prefix) == rank:
            names.append(name)
    return names


@click.command("run-ranks")
@click.argument("programs", nargs=-1, required=True, type=click.Path())
@click.option("--feed", "feeds", multiple=True, type=click.Path(),
              help="Inputs (.npz): one for every rank, or one per rank in the programs' order. Repeatable.")
@click.option("--params", "params", multiple=True, type=click.Path(),
              help="Persistable values (.npz or .pdiparams): one for every rank, or one per rank. Repeatable.")
@click.option("--fetch", "fetches", multiple=True,
              help="A var to fetch from every rank, or from one: RANK:VAR. Repeatable.")
@click.option("--out", type=click.Path(), help="Write the fetched values to this .npz, as rank<r>/<var>.")
@click.option("--seed", type=int, multiple=True,
              help="Seed the random ops' streams of every rank (as paddle.seed on each), or once per rank.")
@click.option("--micro-batches", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run each program as a pipeline stage over this many micro-batches of its feed (split along axis "
                   "0), as Paddle's SectionWorker; each fetched var gets a leading micro-batch axis.")
@click.option("--schedule", type=click.Choice(["fthenb", "1f1b", "vpp"]), default="fthenb", show_default=True,
              help="The micro-batches' order on each stage (rank r is stage r): all forwards then all backwards, "
                   "1F1B as Paddle's SectionWorker (schedule_mode 1), or Paddle's VPP job list over the chunks "
                   "the ops' chunk_id marks (interleaved pipeline chunks).")
def run_ranks_command(programs, feeds, params, fetches, out, seed, micro_batches, schedule):
    """Run rank 0's program, rank 1's, ... together; each collective op meets the other ranks' (ring_id: the
    group, every rank by default)."""
    if out:
        check_writable(out)
    loaded = [load(path, lazy=False) for path in programs]
    scopes = []
    for program, values in zip(loaded, _per_rank(params, len(loaded), "--params")):
        scope = Scope()
        for name, value in read_files((values,) if values else (), program).items():
            scope[name] = value
        scopes.append(scope)
    inputs = [with_lods(read_npz(path, "feed")) if path else {}
              for path in _per_rank(feeds, len(loaded), "--feed")]
    seeds = _per_rank(seed, len(loaded), "--seed") if seed else None
    per_rank = [_fetched_by(rank, fetches, len(loaded)) for rank in range(len(loaded))]
    results = run_ranks(loaded, inputs, per_rank, scopes, seed=seeds, micro_batches=micro_batches,
                        schedule=schedule)
    if micro_batches > 1:
        results = [[np.stack(value) for value in values] for values in results]
    for rank, values in enumerate(results):
        for name, value in zip(per_rank[rank], values):
            click.echo(f"rank {rank} {summary_line(name, value)}")
    if out:
        _save_npz(out, {f"rank{rank}/{name}": value for rank, values in enumerate(results)
                        for name, value in zip(per_rank[rank], values)})
        click.echo(f"wrote {out}", err=is_stdout(out))

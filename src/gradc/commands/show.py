"""`gradc show`: a readable listing, a Graphviz picture (--dot/--svg/--png) or a memory estimate."""

from __future__ import annotations

import click

from ..errors import GradcError
from ..io import check_writable, is_stdout, load, write_atomic
from ..listing import program_listing


@click.command()
@click.argument("program", type=click.Path())
@click.option("--no-attrs", is_flag=True, help="Leave op attributes out of the listing.")
@click.option("--all-attrs", is_flag=True, help="List Paddle's bookkeeping attributes too (op_namescope, op_device, "
              "use_mkldnn, ...: left out by default, as gradc diff leaves them out).")
@click.option("--dot", "dot_out", type=click.Path(), metavar="FILE",
              help="Write the program as a Graphviz DOT graph to FILE (ops styled by role, grad ops linked to "
                   "their forward op).")
@click.option("--svg", "svg_out", type=click.Path(), metavar="FILE",
              help="Render the graph to an SVG file with Graphviz's `dot` (it must be on PATH).")
@click.option("--png", "png_out", type=click.Path(), metavar="FILE",
              help="Render the graph to a PNG file with Graphviz's `dot` (it must be on PATH).")
@click.option("--memory", is_flag=True,
              help="Print a static estimate of one step's peak memory per block instead of the listing.")
@click.option("--batch-size", type=click.IntRange(min=1),
              help="The size that unknown (-1) dims take in the --memory estimate (default: the --feed arrays' first "
                   "dim, else 1).")
@click.option("--feed", type=click.Path(), metavar="NPZ",
              help="With --memory: a batch (.npz) whose arrays' shapes fix the inputs' dims (a sequence's length) "
                   "and, through the ops, the dims that follow from them.")
def show(program, no_attrs, all_attrs, dot_out, svg_out, png_out, memory, batch_size, feed):
    """Print a readable listing (blocks, vars, ops), or write a DOT/SVG/PNG graph, or estimate memory."""
    for path in (dot_out, svg_out, png_out):
        if path:
            check_writable(path)
    prog = load(program, lazy=False)
    if dot_out or svg_out or png_out:
        from ..viz.dot import program_dot, render
        text = program_dot(prog, title=str(program))
        if dot_out:
            write_atomic(dot_out, text.encode())
            click.echo(f"wrote {dot_out}", err=is_stdout(dot_out))
        for path, fmt in ((svg_out, "svg"), (png_out, "png")):
            if path:
                write_atomic(path, render(text, fmt))
                click.echo(f"wrote {path}", err=is_stdout(path))
        return
    if feed and not memory:
        raise GradcError("--feed: only with --memory")
    if memory:
        from ..memory import estimate, memory_report
        shapes = _feed_shapes(prog, feed) if feed else None
        firsts = {shape[0] for shape in (shapes or {}).values() if shape}
        batch_size = batch_size or (firsts.pop() if len(firsts) == 1 else 1)   # the feed's batch: its gradients'
        click.echo(memory_report(estimate(prog, batch_size, feed=shapes), batch_size, prog, feed))
        return
    click.echo(program_listing(prog, attrs=not no_attrs, bookkeeping=all_attrs))


def _feed_shapes(prog, path: str) -> dict[str, tuple[int, ...]]:
    """name -> shape of each array of the feed file; one the program does not take is an error naming its inputs."""
    from ..executor.feeding import program_inputs
    from ..io.arrays import read_npz
    shapes = {name: value.shape for name, value in read_npz(path, "feed").items() if "@LOD" not in name}
    inputs = program_inputs(prog.global_block)
    strangers = sorted(name for name in shapes if name not in inputs)
    if strangers:
        raise GradcError(f"feed '{path}': {', '.join(strangers)} is not an input of the program (its inputs: "
                         f"{', '.join(inputs) or 'none'})")
    return shapes

"""`gradc ops`: the registered op types, one op's reference, or the whole reference as Markdown."""

from __future__ import annotations

import difflib

import click

from .. import registry
from ..errors import GradcError
from ..executor import KERNELS
from ..io import is_stdout, write_atomic
from ..opdoc import describe, grad_kind, markdown_reference


@click.command()
@click.argument("op_type", required=False)
@click.option("--markdown", "markdown", type=click.Path(), metavar="FILE",
              help="Write the reference of every registered op as Markdown to FILE ('-' for stdout); "
                   "docs/ops.md is made this way.")
def ops(op_type, markdown):
    """List registered op types, their grad makers and kernels; or describe OP_TYPE: slots, attributes,
    what its grad maker emits, an example."""
    if markdown:
        text = markdown_reference({name for name in registry.OPS if KERNELS.knows(name)})
        if markdown == "-":
            click.echo(text, nl=False)
        else:
            write_atomic(markdown, text.encode())
            click.echo(f"wrote {markdown} ({len(registry.OPS)} ops)", err=is_stdout(markdown))
        return
    if op_type:
        opdef = registry.get(op_type)
        legacy = _legacy_of_pir(op_type) if opdef is None else None
        if legacy is not None:
            click.echo(f"{op_type} is Paddle 3's PIR name of {legacy} (gradc reads it as that op)")
            opdef, op_type = registry.get(legacy), legacy
        if opdef is None:
            lowered = [name for name in registry.OPS if name.lower() == op_type.lower()]   # Relu, Conv2D
            close = lowered or difflib.get_close_matches(op_type, list(registry.OPS), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise GradcError(f"no op '{op_type}' is registered (gradc ops lists them){hint}")
        click.echo(describe(opdef, KERNELS.knows(op_type)))
        return
    rows = [(name, grad_kind(registry.OPS[name]), "yes" if KERNELS.knows(name) else "no")
            for name in sorted(registry.OPS)]
    width = max(len(r[0]) for r in rows)
    grad_width = max(len(r[1]) for r in rows)
    click.echo(f"{'op':<{width}}  {'grad':<{grad_width}}  kernel")
    for name, grad, kernel in rows:
        click.echo(f"{name:<{width}}  {grad:<{grad_width}}  {kernel}")
    differentiable = sum(1 for d in registry.OPS.values() if d.differentiable)
    click.echo(f"{len(rows)} ops, {differentiable} differentiable, {sum(r[2] == 'yes' for r in rows)} with kernels")


def _legacy_of_pir(op_type: str) -> str | None:
    """The registered op a PIR op name (pd_op.relu) becomes when gradc reads a PIR program, if it has one."""
    if "." not in op_type:
        return None
    from ..pir.table.rows import TABLE  # the PIR table, only for a PIR name
    legacy = getattr(TABLE.get(op_type), "legacy", None)
    return legacy if registry.get(legacy or "") is not None else None

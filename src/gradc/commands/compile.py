"""`gradc compile`: the backward of a forward program, and with --optimizer its updates and their initialiser."""

from __future__ import annotations

import warnings
from functools import partial

import click

from ..cli_memory import memory_options, memory_passes
from ..errors import GradcError, GradcNotice, GradcWarning
from ..io import check_writable, is_stdout, load, save
from ..optimizers.cli_options import build_optimizer, optimizer_options
from ..passes import BackwardPass, OptimizerPass, Pipeline, VerifyPass, make_pass
from ..training.finetune import KINDS, add_loss, mark_parameters, set_train_mode, test_mode_ops
from ..verification import verify


@click.command()
@click.argument("program", type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(), help="Where to write the result.")
@click.option("--loss", help="The loss var (default: the one float scalar the last op writes, else, with a note, "
              "the one float scalar no op reads).")
@click.option("--add-loss", "add_loss_kind", type=click.Choice(KINDS), help="Fine-tune a model that has no loss (an "
              "inference model paddle.jit.save wrote): append cross-entropy (F.cross_entropy against integer class "
              "labels) or mse of its output, against a new input --label.")
@click.option("--label", default="label", show_default=True, help="With --add-loss: the name of the labels' input.")
@click.option("--loss-of", metavar="NAME", help="With --add-loss: the output it scores (default: the model's one "
              "output).")
@click.option("--train-mode", is_flag=True, help="Train a saved model's dropout and batch norm as the model trains in "
              "Paddle (model.train(): the batch's statistics, the running ones updated); by default they stay in the "
              "test mode it was saved in.")
@click.option("--param", "params", multiple=True, help="Only these parameters get gradients. Repeatable.")
@click.option("--no-grad", "no_grad", multiple=True, help="Vars that get no gradient. Repeatable.")
@click.option("--pass", "extra_passes", multiple=True, metavar="NAME",
              help="Run a registered pass after the backward pass. Repeatable.")
@click.option("--startup-out", type=click.Path(),
              help="Where the optimizer's initialiser program goes (default: OUTPUT with .startup before the suffix).")
@click.option("--no-verify", is_flag=True, help="Skip checking the compiled program (gradc verify) before writing it.")
@memory_options
@optimizer_options
def compile(program, output, loss, add_loss_kind, label, loss_of, train_mode, params, no_grad, extra_passes,
            startup_out, no_verify, recompute, recompute_budget, accumulate, **optimizer_settings):
    """Append the backward (training) ops of a forward program."""
    if add_loss_kind and loss:
        raise click.UsageError("give --loss (the program's own loss) or --add-loss (a new one), not both")
    if not add_loss_kind and (loss_of or label != "label"):
        raise click.UsageError(f"{'--loss-of' if loss_of else '--label'}: only with --add-loss")
    optimizer = build_optimizer(**optimizer_settings)
    memory = memory_passes(recompute, recompute_budget, accumulate)
    if optimizer is not None and "optimizer" in extra_passes:
        raise GradcError("give --optimizer or --pass optimizer, not both")
    updates = optimizer is not None or "optimizer" in extra_passes   # either writes a startup program too
    if updates:
        startup_out = startup_out or _with_suffix(output, ".startup")
    for path in (output, startup_out) if updates else (output,):
        check_writable(path)   # before any work, so a bad path leaves nothing half done
    say = partial(click.echo, err=is_stdout(output))   # `-o /dev/stdout`: the program alone on stdout
    prog = load(program)
    if add_loss_kind:
        marked = mark_parameters(prog.global_block)
        if marked:
            say(f"marked {len(marked)} persistable vars parameters (the file marks none): {', '.join(marked)}")
        loss = add_loss(prog, add_loss_kind, label, loss_of)
        say(f"added the loss {loss}: {add_loss_kind} of {loss_of or 'the output'} against the input {label}")
    if train_mode or add_loss_kind:
        _say_mode(prog, train_mode, say)
    passes = [VerifyPass(), BackwardPass(loss, list(params) or None, no_grad), *memory]
    if optimizer is not None:
        passes.append(OptimizerPass(optimizer))
    results = Pipeline(passes + [make_pass(name) for name in extra_passes])(prog)
    problems = [] if no_verify else verify(prog, output)
    if problems:   # gradc's own output: a bug, reported before anything is written
        raise GradcError(f"the compiled program fails verification ({len(problems)} problem(s); --no-verify "
                         f"skips this): {problems[0]}")
    save(prog, output)
    if updates:
        save(results["optimizer"], startup_out)
    pairs = results["backward"]
    if not pairs:
        warnings.warn("no parameter gets a gradient: each is stop_gradient, in the no-grad set (--no-grad), or on no "
                      "path to the loss; training this program would change nothing", GradcWarning, stacklevel=2)
    width = max([len(p) for p, _ in pairs] + [9])
    lines = [f"{'parameter':<{width}}  gradient"] + [f"{param:<{width}}  {grad}" for param, grad in pairs]
    say("\n".join(lines))   # one write: an echo per line cost 40 ms for 6,000 parameters
    for name in [p.name for p in memory] + list(extra_passes):
        if results[name] is not None and name != "optimizer":
            say(f"{name}: {results[name]}")
    say(f"wrote {output} ({prog.num_ops()} ops, {len(pairs)} parameter gradients)")
    if updates:
        state = {name for op in results["optimizer"].global_block.ops for name in op.output_names()}
        more = " and accumulators" if len(state) > 1 else ""   # plain SGD keeps none
        say(f"wrote {startup_out} (initialises the {optimizer_settings['optimizer'] or 'sgd'} learning rate"
                   f"{more})")


def _say_mode(prog, train_mode: bool, say) -> None:
    """Turn test-mode ops to training with --train-mode, else, fine-tuning a saved model, say that they train in test
    mode (its batch norm keeps its running statistics, where the model in Paddle, model.train(), normalises by the
    batch's)."""
    counts = set_train_mode(prog) if train_mode else test_mode_ops(prog)
    ops = ", ".join(f"{count} {op_type}" for op_type, count in sorted(counts.items()))
    if train_mode:
        say(f"train mode: is_test turned off on {ops}" if ops else "train mode: no op is in test mode")
    elif ops:
        warnings.warn(f"{ops} train in test mode, as saved (dropout off, batch norm on its running statistics); "
                      f"--train-mode trains them as the model trains in Paddle (model.train())", GradcNotice,
                      stacklevel=2)


def _with_suffix(path: str, infix: str) -> str:
    """train.pb -> train.startup.pb"""
    stem, dot, suffix = path.rpartition(".")
    return f"{stem}{infix}.{suffix}" if dot and "/" not in suffix else path + infix

"""`gradc check`: a program's compiled gradients against float64 central differences."""

from __future__ import annotations

import math
import sys
import warnings

import click
import numpy as np

from ..errors import GradcError, GradcNotice
from ..executor import randomness
from ..io import load
from ..ir import DIFFERENTIABLE_DTYPES
from ..training.params import initialised_values, read_files
from .json_output import emit
from .loss_option import loss_option
from .name_globs import matching
from .run_feeds import FEED_HELP, feed_arrays, model_inputs, naming_feed
from .run_reports import checked_document, compared_nothing, kinks_said, mismatch_place


def program_and_values(startup_help: str):
    """check's and precision's program argument and the options that give it values."""
    def apply(command):
        for option in reversed([
                click.argument("program", type=click.Path()),
                click.option("--feed", type=click.Path(), multiple=True, help=f"Inputs, an .npz. {FEED_HELP}"),
                click.option("--params", type=click.Path(), multiple=True,
                             help="Parameters: an .npz, Paddle's .pdiparams, or its .pdparams. Repeatable."),
                click.option("--startup", "startups", multiple=True, type=click.Path(), help=startup_help)]):
            command = option(command)
        return command
    return apply


@click.command()
@program_and_values("Initialiser programs run first, in order (values --params does not give). Repeatable.")
@loss_option("the single float scalar written by the last op", "the gradients of the sum of the losses, each "
             "a float var of any shape (its elements summed), as gradc compile differentiates them.")
@click.option("--wrt", multiple=True, help="Vars to check (default: every parameter with a gradient; a glob matches "
              "names: '*lora*'; an intermediate var is fed, perturbed, to the ops after it). Repeatable.")
@click.option("--max-elements", type=click.IntRange(min=1), default=20, show_default=True,
              help="Elements checked per var, chosen at random (each costs two forward runs).")
@click.option("--directions", type=click.IntRange(min=1),
              help="Instead of elements, compare each var along N random directions: each moves every element, "
                   "so a wrong gradient anywhere shows, for two forward runs a direction whatever the var's size.")
@click.option("--rtol", type=float, default=1e-5, show_default=True, help="Relative tolerance of the comparison.")
@click.option("--atol", type=float, default=1e-7, show_default=True, help="Absolute tolerance of the comparison.")
@click.option("--test-mode", is_flag=True, help="Dropout and batch norm in test mode, as compile --test-mode.")
@click.option("--seed", type=click.IntRange(min=0), help="Seed the draws of random ops without a seed of their own "
              "as paddle.seed(N) does, before the startup programs. Every run of the comparison draws what the first "
              "draws (a VAE's noise, dropout's mask), with or without it.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead: the loss, each var checked, and "
              "each mismatch as a problem naming its var.")
def check(program, feed, params, startups, losses, wrt, max_elements, directions, rtol, atol, test_mode, seed,
          as_json):
    """Check a program's compiled gradients against central differences, in float64.

    Exit codes: 0 every gradient agrees; 1 some differ (with --json, its object says which and stderr is empty)
    or the check could not run (one 'gradc: error:' line on stderr; with --json, nothing on stdout); 2 a usage
    error."""
    from ..amp_loss import unscaled_loss
    from ..backward import default_loss
    from ..backward.ungraded import ungraded_parameters, warn_ungraded
    from ..cut_paths import mismatch_reasons
    from ..gradcheck import compare_program  # and the layers it builds with: `gradc run` needs neither
    from ..passes.backward import refuses_again
    from ..rnn_flat import flat_buffers
    from ..training.programs import checkable_forward_part, is_training_op, set_test_mode, updates_parameters
    from ..training.stepped_losses import losses_stepped_apart
    whole = prog = load(program, lazy=False)
    if test_mode:
        set_test_mode(prog)
    compiled = note = None   # the note said once the check has run: a check that cannot run says one line
    if updates_parameters(prog) and (forward := checkable_forward_part(prog)) is not None:
        # Paddle's minimize program, saved as it trains, has no forward program beside it: check its forward part
        note = f"'{program}' is a training program: checking its forward part (its backward and optimizer ops left out)"
        prog = forward
    elif (any(is_training_op(op) for op in prog.global_block.ops) and refuses_again(prog, losses)
          and (forward := checkable_forward_part(prog)) is not None):
        # a compiled program without an optimizer (an attack's input gradient): the gradients it writes are checked
        note = (f"'{program}' has a backward: checking the gradients it computes against central differences of its "
                f"forward part")
        compiled, prog = prog, forward
    if updates_parameters(prog):   # each forward run of the comparison would move the parameters it differentiates
        raise GradcError(f"'{program}' is already a training program (it has optimizer ops, which would move the "
                         f"parameters at every run of the comparison): check the forward program it was compiled from")
    if any(is_training_op(op) for op in prog.global_block.ops) and refuses_again(prog, losses):
        raise GradcError(f"'{program}' is already a training program (it has backward or optimizer ops): check the "
                         f"forward program it was compiled from, or name a loss computed after its backward (--loss)")
    wrt = matching(wrt, [name for name, var in prog.global_block.vars.items() if var.dtype in DIFFERENTIABLE_DTYPES],
                   "--wrt", "float var of block 0")
    if seed is not None:
        randomness.seed(seed)
    values = initialised_values(startups)
    values.update(read_files(params, whole, startups=startups))   # a training program's: its optimizer state too
    # the pick compare_program would make, named for --json; of an AMP program the loss before its scaling
    # several minimize()s (DARTS's two levels): each parameter against the loss the updates of it step on
    apart = losses_stepped_apart(whole) if note and not losses and not wrt else []
    losses = [loss for loss, _ in apart] or list(losses) or [unscaled_loss(whole.global_block, default_loss(prog))]
    loss = losses if len(losses) > 1 else losses[0]   # None: compare_program says why
    groups = apart or [(loss, list(wrt) or None)]
    # the compile's warnings held back until the check has something to check: a check that cannot run says one line
    with naming_feed(feed), warnings.catch_warnings(record=True) as said:
        feeds, checks, grads = model_inputs(prog, feed_arrays(feed, prog), feed), [], {}
        for group_loss, group_wrt in groups:
            group_grads, group_checks = compare_program(prog, feeds, group_wrt, group_loss, values, rtol=rtol,
                                                        atol=atol, max_elements=max_elements, float64=True,
                                                        directions=directions, compiled=compiled)
            checks, grads = checks + group_checks, {**grads, **group_grads}
    loss_of = {name: group_loss for group_loss, names in apart for name in names}
    if not checks:   # "0 vars agree" would pass a loss that no parameter reaches (a metric such as a CER)
        _, cut_off = ungraded_parameters(prog.global_block, flat_buffers(prog.global_block), losses)
        why = "".join(f"; {reason}" for reason in cut_off)   # in the one error line, as the warnings are held back
        raise GradcError(f"nothing to check: no parameter gets a gradient from {' + '.join(losses)}{why} (name the "
                         f"loss with --loss, the vars to check with --wrt)")
    for warning in said:
        warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
    if note:
        warnings.warn(note, GradcNotice, stacklevel=2)
    if not wrt:   # a parameter with no gradient is checked by no row: say which and why
        warn_ungraded(prog.global_block, [c.var for c in checks], losses)
    bad = [c.var for c in checks if c.mismatch is not None]
    if as_json:
        reasons = {name: mismatch_reasons(prog.global_block, [name], losses) for name in bad}
        emit(checked_document(program, losses, checks, rtol, atol, reasons, loss_of))
        if bad:
            sys.exit(1)
        return
    width = max([len(c.var) for c in checks] + [3])
    for c in checks:
        m = c.mismatch
        verdict = ("not compared" if compared_nothing(c) else
                   ("ok (no path to the loss: 0 both ways)" if c.no_path_to_loss else "ok") if m is None else
                   f"MISMATCH {mismatch_place(m)}: compiled {m.analytic:.6g}, numeric {m.numeric:.6g}") + kinks_said(c)
        compared = f"{c.directions:>3} dir/{c.size:<6}" if c.directions else f"{c.checked:>5}/{c.size:<6}"
        click.echo(f"{c.var:<{width}}  {compared} max |compiled - numeric| {c.max_abs_error:.2e}  {verdict}")
    if bad:
        undefined = [c.var for c in checks if c.mismatch is not None and not math.isfinite(c.mismatch.numeric)]
        said = (f"; central differences of {', '.join(undefined)} are not finite: the loss is not finite at these "
                f"values (a mean over no elements, a log of 0), where no derivative is defined" if undefined else "")
        raise GradcError(f"gradients differ from central differences for {', '.join(bad)}{said}"
                         f"{mismatch_reasons(prog.global_block, bad, losses)}")
    differentiated = (f"loss {loss}" if len(losses) == 1 else f"the sum of the losses {' + '.join(losses)}" if not apart
                      else "each parameter against the loss its optimizer steps on: " + "; ".join(
                          f"{group_loss} {len(names)} ({names[0]}{', ...' if len(names) > 1 else ''})"
                          for group_loss, names in apart))
    unchecked = [c.var for c in checks if compared_nothing(c)]
    unreached = [c.var for c in checks if c.no_path_to_loss and not compared_nothing(c)]
    said = f"; {', '.join(unchecked)} compared along no direction (each crosses a kink)" if unchecked else ""
    said += f"; {', '.join(unreached)} on no path to the loss (0 both ways: no gradient tested)" if unreached else ""
    said += flat_said(prog.global_block, [c.var for c in checks if c.var not in unchecked + unreached], grads,
                      [c.var for c in checks if c.stationary])
    click.echo(f"{len(checks) - len(unchecked) - len(unreached)} var(s) checked: compiled gradients agree with "
               f"central differences ({differentiated}){said}")


def flat_said(block, agreed: list[str], grads: dict, stationary: list[str]) -> str:
    """'; ...' naming the vars whose gradient is 0 at every element, which central differences agree with: the loss
    is flat in them there (a one-hot), so training would not move them; or, ``stationary``, at its lowest or highest
    in them (a penalty at its anchor)."""
    flat = [name for name in agreed if name in grads and not np.any(grads[name]) and name not in stationary]
    held = [name for name in agreed if name in stationary]
    said = (f"; {', '.join(held)}: a gradient of 0 at every element, central differences too, but the loss rises or "
            f"falls on both sides: a stationary point in {'it' if len(held) == 1 else 'them'} (a penalty at its "
            f"anchor, w = w*), not a flat loss" if held else "")
    if not flat:
        return said
    hard = [f"block 0, op {idx} (gumbel_softmax)" for idx, op in enumerate(block.ops)
            if op.type == "gumbel_softmax" and op.attrs.get("hard")]
    why = (f"{', '.join(hard)} with hard=True outputs a one-hot, whose gradient is 0, as in Paddle; a straight-through "
           f"estimator is written in the program (y_hard - y_soft.detach() + y_soft)" if hard else
           "a step such as round, sign or a one-hot of argmax on the way")
    them = "it" if len(flat) == 1 else "them"
    return said + (f"; {', '.join(flat)}: a gradient of 0 at every element, central differences too: the loss is "
                   f"flat in {them} here, so training would not move {them} ({why})")

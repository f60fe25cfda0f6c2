"""`gradc compile`: the backward of a forward program, and with --optimizer its updates and their initialiser."""

from __future__ import annotations

import warnings
from contextlib import nullcontext
from functools import partial

import click

from .. import passes as named_passes  # AmpPass, OptimizerPass: imported when named
from .. import schedule_record
from ..backward.names import GradNames
from ..backward.smoothed_count import warn_smoothed_count
from ..backward.ungraded import warn_masks, warn_ungraded
from ..cli_amp import amp_option_decorators, amp_options
from ..cli_memory import memory_options, memory_passes
from ..errors import GradcError, GradcNotice, GradcWarning
from ..io import check_writable, detect_format, is_stdout, load, save
from ..optimizers.cli_options import build_optimizer, decay_exclusion, optimizer_options
from ..optimizers.gradient_merge import merge_gradients
from ..optimizers.lookahead import append_lookahead, parse_lookahead
from ..optimizers.param_clip import append_param_clips, parse_bounds
from ..optimizers.param_options import param_attrs
from ..optimizers.schedule_ops import KINDS as PROGRAM_SCHEDULES
from ..optimizers.schedule_ops import ProgramRate, unread_rates
from ..pairing import initialiser_program
from ..passes import BackwardPass, Pipeline, VerifyPass, make_pass
from ..schedules import Schedule
from ..training.finetune import KINDS, add_loss, mark_parameters, set_train_mode, test_mode_ops
from ..training.finetune_ctc import ctc_inputs
from ..verification import verify
from .json_output import emit, recorded_warnings
from .loss_option import loss_option
from .name_globs import input_gradients, matching, warn_frozen_named, with_gradients


@click.command()
@click.argument("program", type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(), help="Where to write the result.")
@loss_option("the one float scalar the last op writes, else, with a note, the one float scalar no op reads",
             "the gradients of the sum of the losses (a multi-task model's heads), each a float var of any shape "
             "(its elements summed).")
@click.option("--add-loss", "add_loss_kind", type=click.Choice(KINDS), help="Fine-tune a model that has no loss (an "
              "inference model paddle.jit.save wrote): append cross-entropy (F.cross_entropy against integer class "
              "labels), mse or ctc (nn.CTCLoss of a recogniser's scores a step, [N, T, C], blank 0) of its output, "
              "against a new input --label.")
@click.option("--label", default="label", show_default=True, help="With --add-loss: the name of the labels' input "
              "(ctc: LABEL[,LENGTHS[,BLANK]], the padded labels', their lengths' (default LABEL_len) and the blank).")
@click.option("--class-axis", type=int, default=-1, show_default=True, help="With --add-loss cross-entropy: the "
              "output's axis of classes (1 for a segmentation model's [N, C, H, W], its labels [N, 1, H, W]).")
@click.option("--ignore-index", type=int, metavar="N", help="With --add-loss cross-entropy: labels N count in no loss "
              "and the mean is over the others (a segmentation map's 255 borders), as F.cross_entropy's ignore_index.")
@click.option("--loss-of", metavar="NAME", help="With --add-loss: the output it scores (default: the model's one "
              "output).")
@click.option("--train-mode", is_flag=True, help="Train a saved model's dropout and batch norm as the model trains in "
              "Paddle (model.train(): the batch's statistics, the running ones updated); by default they stay in the "
              "test mode it was saved in.")
@click.option("--param", "params", multiple=True, help="Only these parameters get gradients (a glob matches names: "
              "'*lora*' trains LoRA adapters and freezes the rest). Repeatable.")
@click.option("--no-grad", "no_grad", multiple=True, help="Vars that get no gradient (globs too). Repeatable.")
@click.option("--wrt", multiple=True, help="Vars besides the parameters to get a gradient, whatever their "
              "stop_gradient: an input's, x@GRAD, as paddle.static.gradients(loss, x) gives it (globs too). "
              "Repeatable.")
@click.option("--test-mode", is_flag=True, help="Run dropout and batch norm as in test mode (is_test on, as "
              "Paddle's clone(for_test=True)): an attack's input gradient in eval mode, the running statistics "
              "left as they are.")
@click.option("--pass", "extra_passes", multiple=True, metavar="NAME",
              help="Run a registered pass after the backward pass. Repeatable.")
@click.option("--startup-out", type=click.Path(),
              help="Where the optimizer's initialiser program goes (default: OUTPUT with .startup before the suffix).")
@click.option("--no-verify", is_flag=True, help="Skip checking the compiled program (gradc verify) before writing it.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead, once the files are written: "
              "the files, ops before and after, the loss, each parameter and its gradient, the optimizer, the notes "
              "and the warnings (which stderr shows too).")
@memory_options
@optimizer_options
@amp_option_decorators
def compile(program, output, losses, add_loss_kind, label, class_axis, ignore_index, loss_of, train_mode, params,
            no_grad, wrt, test_mode, extra_passes, startup_out, no_verify, as_json, recompute, recompute_budget,
            accumulate, **optimizer_settings):
    """Append the backward (training) ops of a forward program.

    Exit codes: 0 it wrote the program; 1 it could not (one 'gradc: error:' line on stderr, nothing written; with
    --json, nothing on stdout); 2 a usage error."""
    if add_loss_kind and losses:
        raise click.UsageError("give --loss (the program's own loss) or --add-loss (a new one), not both")
    if not add_loss_kind and (loss_of or label != "label"):
        raise click.UsageError(f"{'--loss-of' if loss_of else '--label'}: only with --add-loss")
    if add_loss_kind != "cross-entropy" and (class_axis != -1 or ignore_index is not None):
        raise click.UsageError(f"{'--class-axis' if class_axis != -1 else '--ignore-index'}: only with --add-loss "
                               f"cross-entropy")
    if train_mode and test_mode:
        raise click.UsageError("give --train-mode or --test-mode, not both")
    if as_json and is_stdout(output):
        raise click.UsageError("--json and -o to stdout: both would write there; give -o a file")
    per_param = {key: optimizer_settings.pop(key) for key in ("param_lrs", "param_l1s", "param_l2s", "no_clip")}
    param_bounds, k_steps = optimizer_settings.pop("param_bounds"), optimizer_settings.pop("k_steps")
    lookahead = parse_lookahead(optimizer_settings.pop("lookahead"))
    for given, option in ((per_param["param_lrs"], "--param-lr"), (per_param["param_l1s"], "--param-l1"),
                          (per_param["param_l2s"], "--param-l2"), (per_param["no_clip"], "--no-clip"),
                          (param_bounds, "--clip-param"), (k_steps, "--gradient-merge"), (lookahead, "--lookahead")):
        if given and optimizer_settings["optimizer"] is None:
            raise GradcError(f"{option}: only with --optimizer")
    clipping = ("clip_global_norm", "clip_norm", "clip_value")
    if per_param["no_clip"] and all(optimizer_settings[key] is None for key in clipping):
        raise GradcError("--no-clip: only with --clip-global-norm, --clip-norm or --clip-value (it leaves "
                         "parameters out of the clipping)")
    amp = amp_options(optimizer_settings)
    optimizer = build_optimizer(**optimizer_settings)
    memory = memory_passes(recompute, recompute_budget, accumulate)
    if amp is not None:
        if optimizer is None:
            raise click.UsageError("--amp: needs --optimizer (paddle.static.amp.decorate wraps an optimizer)")
        if len(losses) > 1:
            raise click.UsageError("--amp: one --loss (decorate scales one loss)")
    if optimizer is not None and "optimizer" in extra_passes:
        raise GradcError("give --optimizer or --pass optimizer, not both")
    updates = optimizer is not None or "optimizer" in extra_passes   # either writes a startup program too
    if updates:
        startup_out = startup_out or _with_suffix(output, ".startup")
    for path in (output, startup_out) if updates else (output,):
        check_writable(path)   # before any work, so a bad path leaves nothing half done
    notes: list[str] = []
    say = notes.append if as_json else partial(click.echo, err=is_stdout(output))   # -o /dev/stdout: the program only
    with recorded_warnings() if as_json else nullcontext([]) as warned:
        prog = load(program, lazy=False)
        if initialiser_program(prog.global_block):
            raise GradcError(f"'{program}' is a startup program (its every op initialises a persistable var): it has "
                             f"no loss to differentiate; compile the forward program and give this one to gradc "
                             f"train --startup")
        ops_before = prog.num_ops()
        if optimizer is not None and not isinstance(optimizer.learning_rate, ProgramRate) and unread_rates(prog):
            warnings.warn(f"the program computes a learning rate with ops of its own ({', '.join(unread_rates(prog))}"
                          f", op_role LRSched) that the updates would not read: give --lr-var NAME to update with "
                          f"it", GradcWarning, stacklevel=1)
        if add_loss_kind:
            losses = [_add_loss(prog, add_loss_kind, label, loss_of, say, class_axis, ignore_index)]
        if train_mode or add_loss_kind:
            _say_mode(prog, train_mode, say)
        params = matching(params, [var.name for var in prog.global_block.vars.values() if var.is_parameter],
                           "--param", "parameter of block 0")
        warn_frozen_named(prog.global_block, params)
        if test_mode:
            from ..training.programs import set_test_mode  # here: its executor imports numpy, which compile needs not
            set_test_mode(prog)
        grad_names = GradNames(prog)   # the names the backward will give: before it declares them
        inputs = {name: grad_names(name) for name in with_gradients(prog, wrt)}
        no_grad = matching(no_grad, sorted({name for block in prog.blocks for name in block.vars}), "--no-grad",
                            "var of the program")
        backward = BackwardPass(list(losses), list(params) or None, no_grad)
        parameters = [var.name for var in prog.global_block.vars.values() if var.is_parameter]
        attrs = param_attrs(parameters, **per_param)
        updating = ([named_passes.OptimizerPass(optimizer, param_attrs=attrs, backward=backward)]
                    if optimizer is not None else [])
        amp_pass = named_passes.AmpPass(amp, backward, optimizer, attrs, memory) if amp is not None else None
        # --amp: one pass runs the backward of the scaled loss, the memory passes, the unscaling and the updates
        passes = [VerifyPass(), amp_pass] if amp_pass is not None else [VerifyPass(), backward, *memory, *updating]
        results = Pipeline(passes + [make_pass(name) for name in extra_passes])(prog)
        if amp is not None:
            results["backward"], results["optimizer"] = backward.pairs, results.pop("amp")
            results.update(amp_pass.memory_results)
        exclusion, undecayed = decay_exclusion(optimizer), None
        if exclusion is not None:
            exclusion.check_matched([param for param, _ in results["backward"]])
            excluded = exclusion.excluded()
            listed = ", ".join(excluded[:12]) + (f", ... ({len(excluded) - 12} more)" if len(excluded) > 12 else "")
            undecayed = (f"no weight decay on {len(excluded)} of {len(results['backward'])} parameters (--no-decay): "
                         f"{listed}")
        append_param_clips(prog, parse_bounds(param_bounds, [param for param, _ in results["backward"]]))
        if lookahead:
            append_lookahead(prog, results["optimizer"], [param for param, _ in results["backward"]], *lookahead)
        if k_steps:
            merge_gradients(prog, results["optimizer"], results["backward"], k_steps)
        inputs = input_gradients(prog, inputs)   # before anything is written
        problems = [] if no_verify else verify(prog, output)
        if problems:   # gradc's own output: a bug, reported before anything is written
            raise GradcError(f"the compiled program fails verification ({len(problems)} problem(s); --no-verify "
                             f"skips this): {problems[0]}")
        spec = optimizer_settings.get("lr_schedule")
        hosted = (optimizer is not None and isinstance(optimizer.learning_rate, Schedule)
                  and spec not in PROGRAM_SCHEDULES)
        recorded = hosted and detect_format(output) != "pir"   # a PIR program's values have no attributes to hold it
        if recorded:   # the host steps it: gradc train reads it back
            schedule_record.record(prog, spec)
        save(prog, output)
        if updates:
            save(results["optimizer"], startup_out)
        pairs = results["backward"]
        if not pairs and not inputs:
            warnings.warn("no parameter gets a gradient: each is stop_gradient, in the no-grad set (--no-grad), or on "
                          "no path to the loss; training this program would change nothing", GradcWarning,
                          stacklevel=2)
        elif not params:
            warn_ungraded(prog.global_block, [param for param, _ in pairs], backward.losses_used, no_grad)
            warn_masks(prog.global_block, [param for param, _ in pairs])
        warn_smoothed_count(prog.global_block, backward.losses_used)
    pass_results = {name: results[name] for name in [p.name for p in memory] + list(extra_passes)
                    if results[name] is not None and name != "optimizer"}
    optimizer_name = (optimizer_settings["optimizer"] or "sgd") if updates else None
    if as_json:
        notes += [undecayed] if undecayed else []
        notes += [amp_pass.summary()] if amp_pass is not None else []
        emit({"program": str(program), "output": str(output), "startup": str(startup_out) if updates else None,
              "ops_before": ops_before, "ops_after": prog.num_ops(), "loss": backward.loss_used,
              "losses": backward.losses_used,
              "parameters": [{"parameter": param, "gradient": grad} for param, grad in pairs],
              "inputs": [{"var": name, "gradient": grad} for name, grad in inputs],
              "optimizer": optimizer_name, "passes": {name: str(result) for name, result in pass_results.items()},
              "notes": notes, "warnings": warned})
        return
    width = max([len(p) for p, _ in pairs + inputs] + [9])
    lines = [f"{'parameter':<{width}}  gradient"] + [f"{param:<{width}}  {grad}" for param, grad in pairs]
    lines += [f"{name:<{width}}  {grad}  (--wrt)" for name, grad in inputs]
    say("\n".join(lines))   # one write: an echo per line cost 40 ms for 6,000 parameters
    for name, result in pass_results.items():
        say(f"{name}: {result}")
    if amp_pass is not None:
        say(amp_pass.summary())
    if len(backward.losses_used) > 1:
        say(f"the gradients are those of the sum of the losses {' + '.join(backward.losses_used)}")
    said_inputs = f", {len(inputs)} input gradient{'s' * (len(inputs) > 1)}" if inputs else ""
    say(f"wrote {output} ({prog.num_ops()} ops, {len(pairs)} parameter gradients{said_inputs})")
    if updates:
        state = {name for op in results["optimizer"].global_block.ops for name in op.output_names()}
        own_rate = not isinstance(getattr(optimizer, "learning_rate", None), ProgramRate)   # else --lr-var's
        parts = [f"the {optimizer_name} learning rate"] * own_rate + ["accumulators"] * (len(state) > own_rate)
        held = " and ".join(parts) or f"nothing: {optimizer_name} keeps no state, and the rate is the program's"
        say(f"wrote {startup_out} (initialises {held})")
    if hosted:
        follows = ("gradc train does (the program records it)" if recorded else
                   f"gradc train does when given --lr-schedule '{spec}' too (a PIR program records no schedule)")
        say(f"the learning rate follows {spec} where the host steps it: {follows}; Paddle's executor runs the step-0 "
            f"value {optimizer.learning_rate(0):g} unless its loop writes the rate")
    if undecayed:
        say(undecayed)


def _add_loss(prog, kind: str, label: str, loss_of: str | None, say, axis: int, ignore_index: int | None) -> str:
    """--add-loss: the parameters marked where the file marks none, and the loss appended; its name."""
    marked = mark_parameters(prog.global_block)
    if marked:
        say(f"marked {len(marked)} persistable vars parameters (the file marks none): {', '.join(marked)}")
    loss = add_loss(prog, kind, label, loss_of, axis, ignore_index)
    if kind == "ctc":   # the labels' input and their lengths', and the blank
        labels, lengths, blank = ctc_inputs(label)
        say(f"added the loss {loss}: ctc of {loss_of or 'the output'} against the inputs {labels} (padded labels, "
            f"int32) and {lengths} (their lengths, int64), blank {blank}")
        return loss
    scored = ""
    shape = prog.global_block.var(label).shape
    if kind == "cross-entropy" and (len(shape) > 2 or axis != -1 or ignore_index is not None):
        # the classes counted, so an image's scores taken along its width show
        block, along = prog.global_block, axis % len(shape)
        op = next(op for op in reversed(block.ops) if op.type == "softmax_with_cross_entropy")
        classes = block.var(op.input("Logits")[0]).shape[along]
        ignored = "" if ignore_index is None else f", {ignore_index} ignored"
        scored = f" of shape {shape} ({classes} classes along axis {along}{ignored})"
        if axis == -1 and len(shape) == 4:
            scored += "; the classes of scores [N, C, H, W] are along axis 1: --class-axis 1"
    say(f"added the loss {loss}: {kind} of {loss_of or 'the output'} against the input {label}{scored}")
    return loss


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


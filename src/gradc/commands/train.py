"""`gradc train`: training over a data set (or one batch), thin over gradc.training."""

from __future__ import annotations

import warnings

import click
import numpy as np

from .. import schedule_record
from ..errors import GradcError, GradcWarning, Interrupted
from ..executor.feeding import program_inputs
from ..io import check_writable, is_stdout, load
from ..io.arrays import read_npz
from ..optimizers.schedule_ops import KINDS
from ..schedules import learning_rate_vars
from ..training import Dataset, OneBatch, Trainer
from ..training import save_params as write_model_params
from ..training.data_init import run_on_first_batch
from ..training.ema import ema_applied, require_ema
from ..training.interrupt import Stopped
from ..training.lbfgs import parse as parse_lbfgs
from ..training.multilabel import ThresholdError
from ..training.params import check_params_path, read_files, require_values
from ..training.plot import plot_history, require_matplotlib
from ..training.programs import updated_parameters, updates_nothing
from ..training.report import ConsoleReporter
from ..training.startup_values import load_after_startups, preloaded
from .eval_options import check_dependents, metric_options, metrics_asked
from .run import STRICT_PARAMS
from .train_interrupt import kept_after_interrupt
from .train_report import JsonLinesReporter


@click.command()
@click.argument("program", type=click.Path())
@click.option("--data", type=click.Path(), multiple=True, help="Training examples: an .npz of arrays named after "
              "feed vars that share their first dimension, a directory of NAME.npy files (memory-mapped, read batch by "
              "batch), or a .csv whose header names each column's feed var (x,x,x,x,label: a var's values an example). "
              "Sentences: ids flat with their offsets as ids@LOD0, each batch padded to its longest. Repeatable: data "
              "sets of as many examples each, a batch of each fed at every step (DARTS's training and validation "
              "splits; --cycle: a smaller one repeated).")
@click.option("--cycle", is_flag=True, help="--data sets of fewer examples than the largest are repeated to its "
              "size, example i the i mod size of its own: a replay buffer mixed into each batch.")
@click.option("--episodes", is_flag=True, help="Each example of --data (and --eval) is one step's whole feed, "
              "without a batch axis: a meta-learning task's support and query sets, as Paddle's "
              "DataLoader(batch_size=None) gives them (--batch-size is then 1).")
@click.option("--feed", type=click.Path(), help="Without --data: one batch (.npz), fed at every step. With --data: "
              "inputs that are the same at every step (prior boxes, anchors), fed whole with every batch of --data "
              "and --eval.")
@click.option("--startup", "startups", multiple=True, type=click.Path(),
              help="Initialiser programs to run first, in order (gradc compile writes OUTPUT.startup.pb). Repeatable.")
@click.option("--params", type=click.Path(), multiple=True,
              help="Initial values: .npz, Paddle's .pdiparams, or its pickled .pdparams / .pdopt. Repeatable, "
              "loaded in order (paddle.static.save's .pdparams and .pdopt: both, to resume).")
@click.option("--epochs", type=click.IntRange(min=1), help="Passes over --data, in all (default 1; a resumed "
              "run continues up to this many).")
@click.option("--batch-size", type=click.IntRange(min=1), default=32, show_default=True, help="Examples per step.")
@click.option("--shuffle", is_flag=True, help="Shuffle the examples each epoch (the order depends only on --seed "
              "and the epoch).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seeds the shuffling, dropout and initialisers without a seed of their own.")
@click.option("--drop-last", is_flag=True, help="Leave out the last batch of an epoch when it is not full.")
@click.option("--steps", type=click.IntRange(min=1), help="With --feed: how many steps (default 10). With --data: "
              "stop after this many steps in all.")
@click.option("--eval", "eval_data", type=click.Path(), multiple=True, help="Examples to evaluate after each epoch "
              "(like --data, repeatable too): the forward part in test mode, the mean of each fetched scalar.")
@metric_options((), "With --eval: also each epoch's top-k accuracy at each K, where the program's class scores "
                "and the data's labels allow it (with --recall: recall@K; a multi-label loss's micro and macro F1). "
                "Repeatable.")
@click.option("--early-stop", type=click.IntRange(min=1), metavar="N", help="Stop when the --eval value of the "
              "first --fetch (the loss; or --monitor) has not improved for N epochs in a row, and keep the best "
              "epoch's parameters (what --save-params writes; a checkpoint also holds them).")
@click.option("--monitor", metavar="NAME", help="The --fetch'ed scalar --early-stop watches (default: the first), "
              "or a metric asked of --eval (acc, acc_topK, miou, recall@K, ndcg@K, hit@K, mrr, query_auc; a "
              "multi-label model's micro_f1, macro_f1, exact_match with --topk 1). Higher is better for a metric and "
              "for an accuracy or auc op's output, lower for anything else.")
@click.option("--fetch", "fetches", multiple=True, help="A scalar to report (loss, accuracy; default: the loss). "
              "Repeatable.")
@click.option("--log-every", type=click.IntRange(min=1), help="Without a terminal: a log line every N steps "
              "(default 1 with --feed, 10 with --data).")
@click.option("--check-nan", is_flag=True, help="Stop at the first op that writes NaN or Inf, naming it and the step "
              "(an AMP program's overflowing scaled loss and gradients pass: its loss scaling skips the step).")
@click.option("--log-grad-norms", is_flag=True, help="With each logged step, the L2 norm of every parameter's "
              "gradient and their global norm (the text names the largest; --json has all; no progress bar).")
@click.option("--checkpoint-dir", type=click.Path(), help="Keep checkpoints (parameters, optimizer state, position) "
              "here: after each epoch, every --checkpoint-every steps, at the end and on Ctrl-C (without it, Ctrl-C "
              "keeps one in a new PROGRAM.interrupted directory here).")
@click.option("--checkpoint-every", type=click.IntRange(min=1), metavar="N", help="A checkpoint every N steps.")
@click.option("--paddle-stream", is_flag=True, help="Seed once, as paddle.seed(--seed) seeds Paddle, before the "
              "startup programs, and draw on from there (Paddle's initial weights and dropout masks for the same "
              "programs); else each step is seeded from (--seed, step).")
@click.option("--resume", type=click.Path(), help="Continue from the newest checkpoint in this directory (with the "
              "same data, --batch-size, --shuffle, --seed and --drop-last).")
@click.option("--save-params", type=click.Path(), help="Write the trained model parameters (no optimizer state): "
              ".npz, .pdiparams (Paddle's load_inference_model reads it) or .pdparams; a .pdopt gets the "
              "optimizer's state instead, as paddle.static.save splits them.")
@click.option("--save-trained", type=click.Path(), help="Write only the parameters the optimizer ops update (a "
              "LoRA's adapters, BitFit's biases: not the frozen base), as --save-params; load them after the base's "
              "file with a second --params.")
@click.option("--save-ema", type=click.Path(), help="Write the parameters' exponential moving averages (the "
              "program's paddle.static.ExponentialMovingAverage), bias-corrected as its apply() gives them: the "
              "weights to sample or export. .npz, .pdiparams or .pdparams.")
@click.option("--plot", type=click.Path(), help="Draw the fetched scalars per step and per epoch (.png, .svg; "
              "needs matplotlib: pip install 'gradc[plot]').")
@click.option("--lr-schedule", metavar="SPEC",
              help="Learning rate per step (per epoch: --lr-per-epoch), written before each run as Paddle's "
                   "LRScheduler does: values (0.1,0.05,0.01) or a Paddle scheduler, e.g. 'StepDecay(learning_rate=0.1, "
                   "step_size=2)'.")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), metavar="RATE",
              help="The learning rate of every step instead of the one compiled in (what --lr-schedule RATE writes).")
@click.option("--lr-var", help="The learning-rate var the schedule writes (default: the one the optimizer reads).")
@click.option("--lr-per-epoch", is_flag=True, help="--lr-schedule's value at the epoch, not the step: the scheduler "
              "stepped after each epoch (MultiStepDecay's milestones in epochs), as Paddle's epoch loops step it.")
@click.option("--lbfgs", "lbfgs_spec", is_flag=False, flag_value="", metavar="[ARGS]", help="Train a program "
              "compiled without --optimizer by L-BFGS, as paddle.optimizer.LBFGS: each step up to max_iter iterations "
              "on its batch. ARGS: LBFGS's keyword arguments, e.g. \"max_iter=20, line_search_fn='strong_wolfe'\" "
              "(none: its defaults).")
@click.option("--after-step", "after_steps", multiple=True, type=click.Path(), help="A program run on the trained "
              "values after every step, unfed (a renormalisation: TransE's entities to norm <= 1, as a Paddle user's "
              "loop runs it). Repeatable, in order.")
@click.option("--data-init", "data_inits", multiple=True, type=click.Path(), help="A program run once on the first "
              "batch, after --startup and --params, before the first step: a data-dependent initialisation (Glow's "
              "actnorm from the batch's mean and deviation, as a Paddle user runs it before the loop). Repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead: an object per logged step (as "
              "--log-every) and per epoch as they come, then one for the end: steps, examples, time, the last values, "
              "where it saved.")
@STRICT_PARAMS
def train(program, data, cycle, episodes, feed, startups, params, epochs, batch_size, shuffle, seed, drop_last, steps,
          eval_data, label, scores, ignore_index, mask, miou, f1, recall, ranking, roc, keypoints, pck, ctc, threshold,
          iou, detections, topk, early_stop, monitor, fetches,
          log_every, check_nan, log_grad_norms, checkpoint_dir, checkpoint_every, paddle_stream, resume, save_params,
          save_trained, save_ema, plot, lr_schedule, lr, lr_var, lr_per_epoch, lbfgs_spec, after_steps, data_inits,
          as_json, strict_params):
    """Train a compiled training program (gradc compile --optimizer) over a data set, or on one batch.

    Exit codes: 0 it trained; 1 it could not (one 'gradc: error:' line on stderr; with --json, stdout holds the
    step and epoch lines before the error and no "end" line); 2 a usage error; 130 interrupted (Ctrl-C; with --json,
    the "end" line says "interrupted": true)."""
    data, eval_data = data or None, eval_data or None   # repeatable: () when not given
    if data is None and feed is None:
        raise click.UsageError("give --data (a data set) or --feed (one batch)")
    if lr is not None:   # compile takes --lr, so a user gives train one too
        if not np.isfinite(lr):   # FloatRange lets inf and nan through, which the schedule would read as names
            raise click.BadParameter(f"'{lr}' is not a finite number", param_hint="'--lr'")
        if lr_schedule:
            raise click.UsageError("give --lr (one rate) or --lr-schedule (a rate per step), not both")
        lr_schedule = repr(lr)
    for given, option, needed, needs in ((monitor, "--monitor", early_stop, "--early-stop"),
                                         (checkpoint_every, "--checkpoint-every", checkpoint_dir or resume,
                                          "--checkpoint-dir (or --resume)"),
                                         (lr_var, "--lr-var", lr_schedule, "--lr-schedule"),
                                         (lr_per_epoch, "--lr-per-epoch", lr_schedule, "--lr-schedule")):
        if given and not needed:   # else silently unused
            raise click.UsageError(f"{option}: only with {needs}")
    asked = [name for name, value in (("--label", label), ("--ignore-index", ignore_index), ("--mask", mask),
                                      ("--miou", miou), ("--f1", f1), ("--recall", recall),
                                      ("--ranking", ranking), ("--roc", roc), ("--keypoints", keypoints),
                                      ("--pck", pck), ("--threshold", threshold is not None),
                                      ("--detections", detections), ("--iou", iou),
                                      ("--topk", topk)) if value]
    if asked and eval_data is None:   # else silently unused
        raise click.UsageError(f"{', '.join(asked)}: only with --eval")
    check_dependents(pck, keypoints, iou, detections)
    if data is None:
        given = [name for name, value in (("--epochs", epochs), ("--shuffle", shuffle), ("--drop-last", drop_last),
                                          ("--eval", eval_data), ("--early-stop", early_stop),
                                          ("--episodes", episodes)) if value]
        if given:
            raise click.UsageError(f"{', '.join(given)}: only with --data")
    lbfgs = None if lbfgs_spec is None else parse_lbfgs(lbfgs_spec)
    if lbfgs and lr_schedule:   # L-BFGS steps by its line search
        raise click.UsageError("--lr and --lr-schedule: not with --lbfgs")
    if lr_schedule in KINDS:
        raise click.UsageError(f"--lr-schedule {lr_schedule} is written as ops of the program: give it to gradc "
                               f"compile (with --decay-steps N); gradc train then needs no schedule")
    for path in (save_params, save_trained, save_ema, plot):
        if path:
            check_writable(path)
            if as_json and is_stdout(path):
                raise click.UsageError(f"--json and {path}: both would write to stdout; give a file")
    for path in (save_params, save_trained, save_ema):
        if path:
            check_params_path(path)
    if plot:
        require_matplotlib()
    training = load(program, lazy=False)
    if lr_schedule is None and lr_var is None and lbfgs is None:
        lr_schedule = schedule_record.followed(training, program)
    if save_ema:
        require_ema(training, program)
    reason = None if lbfgs else updates_nothing(training)
    if reason:
        raise GradcError(f"{program}: {reason}")
    values = read_files(list(params), training, strict_params, startups) if params else {}   # startups may read them
    try:
        trainer = Trainer(training, startups, preloaded(values), fetch=list(fetches) or None, seed=seed,
                          check_nan=check_nan, lr_schedule=lr_schedule, lr_var=lr_var, paddle_stream=paddle_stream,
                          log_grad_norms=log_grad_norms, lbfgs=lbfgs, after_step=after_steps, lr_per_epoch=lr_per_epoch)
    except GradcError as exc:   # what L-BFGS finds missing in the program: said of the file
        if lbfgs is None or str(exc).startswith(str(program)):
            raise
        raise GradcError(f"{program}: {exc}") from None
    if params:
        load_after_startups(trainer.executor, trainer.scope, startups, values)
    fixed = read_npz(feed, "feed") if feed is not None else None
    if data is None:
        source, epochs = OneBatch(fixed, f"feed '{feed}'"), steps or 10
    else:
        source = Dataset.joined(data, "data", trainer.program, fixed=fixed, episodes=episodes, cycle=cycle)
        if eval_data is not None and (fixed or episodes or len(eval_data) > 1):
            eval_data = Dataset.joined(eval_data, "eval data", trainer.program, fixed=fixed, episodes=episodes)
        elif eval_data is not None:
            eval_data = eval_data[0]
        batch_size = 1 if episodes else batch_size   # epochs None: Trainer.fit's, as many as the steps span
    if data_inits and resume is None:   # a checkpoint holds the values they set
        set_from_data = run_on_first_batch(trainer.executor, trainer.scope, data_inits, source, batch_size, shuffle,
                                           seed, drop_last)
        if not as_json:
            click.echo(f"initialised from the first batch: {', '.join(set_from_data)}")
    if resume is None:   # a checkpoint gives the values the startup programs would
        require_values(trainer.program, trainer.scope, source.feed if data is None else source.arrays,
                       params, program)
        if lr_schedule is None and lbfgs is None:
            _warn_of_a_zero_rate(trainer)
    _check_after_steps(after_steps, trainer, params, resumed=resume is not None)
    log = log_every or (1 if data is None else 10)
    reporter = JsonLinesReporter(log) if as_json else ConsoleReporter(log, bar=not log_grad_norms)
    try:
        history = trainer.fit(source, epochs=epochs, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                              steps=steps, eval_data=eval_data, checkpoint_dir=checkpoint_dir,
                              checkpoint_every=checkpoint_every, resume=resume, early_stop=early_stop,
                              monitor=monitor, reporter=reporter,
                              metrics=metrics_asked(label, ignore_index, mask, miou, recall, topk, ranking,
                                                                    roc, f1, keypoints, pck, threshold, scores,
                                                                    ctc, detections, iou))
    except ThresholdError as exc:   # the value given does not fit the model's scores: a usage error
        raise click.UsageError(str(exc)) from None
    except Stopped as stop:
        kept, directory = kept_after_interrupt(trainer, stop, program, checkpoint_dir or resume, save_params)
        if as_json:   # the steps done and where they were kept, as a finished run's last line says them
            reporter.emit_end(trainer.history, save_params, None, directory and str(directory), interrupted=True)
        raise Interrupted(kept) from None
    if save_params:
        names = write_model_params(trainer.scope, save_params, trainer.program)
        if not as_json:
            held = "optimizer state values" if str(save_params).endswith(".pdopt") else "model parameters"
            click.echo(f"wrote {save_params} ({len(names)} {held})")
    if save_trained:
        names = write_model_params(trainer.scope, save_trained, trainer.program, updated_parameters(trainer.program))
        if not as_json:
            click.echo(f"wrote {save_trained} ({len(names)} trained parameters)")
    if save_ema:
        names = write_model_params(ema_applied(trainer.scope), save_ema, trainer.program)
        if not as_json:
            click.echo(f"wrote {save_ema} ({len(names)} model parameters, their exponential moving averages)")
    if plot:
        plot_history(history, plot)
        if not as_json:
            click.echo(f"wrote {plot}")
    if as_json:
        reporter.emit_end(history, save_params, plot, checkpoint_dir or resume)


def _warn_of_a_zero_rate(trainer) -> None:
    """A learning rate of 0 that no op changes (a warm-up's first rate, the startup's value of a Paddle scheduler
    the host should write) leaves every parameter as it is, step after step."""
    for name in learning_rate_vars(trainer.program):
        value = trainer.scope.find(name)
        if value is not None and not np.any(value):
            warnings.warn(f"the learning rate '{name}' is 0 and no op of the program changes it, so no step will "
                          f"move the parameters: a Paddle scheduler (given to Paddle's optimizer, as a warm-up from "
                          f"0, or to gradc compile --lr-schedule) is stepped by the host, so give gradc train the "
                          f"same one, --lr-schedule 'NAME(...)' (or --lr RATE)", GradcWarning, stacklevel=2)
            return


def _check_after_steps(paths, trainer, params, resumed: bool) -> None:
    """Refuse, before the first step, an --after-step program that reads inputs (it runs unfed) or, unless resumed
    from a checkpoint, persistable vars the scope has no value of."""
    for path, after in zip(paths, trainer.after_step):
        inputs = program_inputs(after.global_block)
        try:
            if inputs:
                raise GradcError(f"it reads the input(s) {', '.join(inputs)}, and runs unfed after each step")
            if not resumed:
                require_values(after, trainer.scope, (), params)
        except GradcError as exc:
            raise GradcError(f"--after-step program '{path}': {exc}") from None

"""`gradc evaluate`: a trained (forward, training or exported inference) program over a data set, the loss and the
accuracy as Paddle's Model.evaluate reports them; thin over gradc.training.evaluation."""

from __future__ import annotations

import warnings

import click
from click.core import ParameterSource

from ..backward import no_loss_hint
from ..errors import GradcNotice
from ..io import load
from ..io.arrays import read_npz
from ..training import Dataset
from ..training.eval_plan import UnknownFetchError
from ..training.evaluation import evaluate as evaluate_program
from ..training.history import default_fetch
from ..training.multilabel import ThresholdError
from .eval_options import check_dependents, metric_options
from .json_output import emit, number
from .loss_option import loss_option
from .run import STRICT_PARAMS


@click.command()
@click.argument("program", type=click.Path())
@click.option("--data", required=True, type=click.Path(), multiple=True, help="The examples, in any form gradc train "
              "reads: an .npz of arrays named after feed vars, a directory of NAME.npy files, or a .csv whose header "
              "names them. Repeatable: data sets of as many examples each, a batch of each fed together (DARTS's "
              "training and validation splits).")
@click.option("--episodes", is_flag=True, help="Each example of --data is one run's whole feed, without a batch "
              "axis (a meta-learning task's support and query sets); the means are over the episodes.")
@click.option("--feed", type=click.Path(), help="Inputs that are the same for every batch (prior boxes, anchors): "
              "an .npz fed whole with each batch of --data.")
@click.option("--params", type=click.Path(), multiple=True, help="The trained values: .npz (gradc train "
              "--save-params), Paddle's .pdiparams (gradc export) or .pdparams. Repeatable: a later file's value wins.")
@click.option("--startup", "startups", multiple=True, type=click.Path(),
              help="Initialiser programs run first (values --params does not give). Repeatable.")
@click.option("--batch-size", type=click.IntRange(min=1), default=32, show_default=True,
              help="Examples per run; the means are over examples, so it changes only the rounding (but for a "
              "loss summed over its batch, reduction='sum', whose batch values grow with the size).")
@loss_option("the one gradc train reports", "the loss is the sum of their means, each mean listed too (a "
             "multi-task model compiled with several --loss).")
@click.option("--fetch", "fetches", multiple=True, help="Another scalar to average over the examples (an "
              "accuracy op's output, ...; one computed from a batch's mean, a PSNR of its MSE: from the set's mean), "
              "or a value of one number an example (a density model's log-likelihood of each: its mean over the set). "
              "Repeatable.")
@metric_options(("1",), "Accuracy counts an example right when its label is among the K best-scored classes. "
                "Repeatable.")
@click.option("--seed", type=click.IntRange(min=0), help="Seed the draws of random ops without a seed of their own "
              "(a VAE's noise) as paddle.seed(N) does, before the startup programs (default: fresh ones each run).")
@click.option("--train-mode", is_flag=True, help="Run the forward part as it trains: dropout keeps dropping (a Monte "
              "Carlo dropout pass; --seed for Paddle's masks), batch norm normalises by the batch.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON line instead.")
@STRICT_PARAMS
def evaluate(program, data, episodes, feed, params, startups, batch_size, losses, fetches, label, scores, ignore_index,
             mask, miou, f1, recall, ranking, roc, keypoints, pck, ctc, topk, threshold, seed, train_mode, detections,
             iou, as_json, strict_params):
    """Evaluate a program over a data set: the loss (the mean over the examples) and, where the program's class
    scores and the data's labels allow it, the top-k accuracy (a multi-label loss's: micro precision, recall and
    F1, macro F1, exact match, each label's F1). The forward part runs in test mode, as after each
    epoch of gradc train --eval, whose numbers these are (--train-mode: as it trains)."""
    check_dependents(pck, keypoints, iou, detections)
    prog = load(program, lazy=False)
    if feed is not None or episodes or len(data) > 1:
        data = Dataset.joined(data, "data", prog, others=True,
                              fixed=read_npz(feed, "feed") if feed is not None else None, episodes=episodes)
        batch_size = 1 if episodes else batch_size
    else:
        data = data[0]
    try:
        results = evaluate_program(program, data, params, startups, batch_size=batch_size, fetch=fetches,
                                   loss=list(losses), label=label, scores=scores, topk=topk, strict=strict_params,
                                   seed=seed, ignore_index=ignore_index, miou=miou, f1=f1, mask=mask, recall=recall,
                                   test_mode=not train_mode, ranking=ranking, roc=roc, threshold=threshold,
                                   keypoints=keypoints, pck=pck, ctc=ctc, detections=detections, iou=iou)
    except (ThresholdError, UnknownFetchError) as exc:   # a value given does not fit the model: a usage error
        raise click.UsageError(str(exc)) from None
    asked = click.get_current_context().get_parameter_source("topk") is not ParameterSource.DEFAULT
    accuracy = any(key == "acc" or key.startswith("acc_top") or key == "micro_f1" for key in results)
    others = (recall, ranking, roc, keypoints, detections)
    if asked and all(other is None for other in others) and not accuracy and "cer" not in results:
        warnings.warn(_no_class_scores(prog), GradcNotice, stacklevel=2)
    if as_json:   # an undefined metric's NaN as "nan": strict JSON has no NaN literal
        emit({name: [number(item) for item in value] if isinstance(value, list) else number(value)
              for name, value in results.items()})
        return
    lines = [f"examples: {results['examples']:,}"]
    if "loss" in results:
        lines.append(f"loss: {results['loss']:.6g} ({' + '.join(results['loss_vars'])})")
    elif unfed := results.get("unfed_losses"):
        lines.append("loss: none (" + ", ".join(f"{loss} needs '{name}', which the data does not hold"
                                                for loss, name in unfed.items()) + ")")
    else:
        lines.append(_no_loss(prog, fetches))
    skipped = {"examples", "loss", "loss_var", "loss_vars", "unfed_losses", results.get("loss_var")}   # several: each
    lines += [f"{name}: {_shown(value)}" for name, value in results.items() if name not in skipped]
    click.echo("\n".join(lines))


def _shown(value) -> str:
    """A number, or a list of them by class ("-" for a class the set neither labels nor predicts)."""
    if isinstance(value, list):
        return " ".join("-" if item is None else f"{item:.4g}" for item in value)
    return f"{value:.6g}"


def _no_class_scores(program) -> str:
    """Why --topk gave no accuracy, and what gives a retrieval model's recall@k instead: --recall over the whole set,
    or the program's own accuracy ops (within each batch)."""
    ours = [op.output("Accuracy")[0] for op in program.global_block.ops if op.type == "accuracy"]
    offer = f"; its own accuracy ops, within each batch, average with --fetch: {', '.join(ours)}" if ours else ""
    return ("--topk: no top-k accuracy: no class scores of the program are scored against labels of the data (labels "
            "the program computes, as a contrastive loss's arange, are not the data's); a two-tower model's recall@k "
            f"over the whole set: --recall QUERY,GALLERY{offer}")


def _no_loss(program, fetches) -> str:
    if any(op.type == "fetch" for op in program.global_block.ops):
        return "loss: none (the program computes no loss; an exported model ends at its outputs)"
    if fetched := [name for name in default_fetch(program) if name in fetches]:   # a PSNR written last
        return f"loss: none ({', '.join(fetched)}, written last, is fetched: a metric, below; name it with --loss)"
    # a forward program whose loss is not what its last op writes (a decoder's metrics after it)
    return f"loss: none (not found: {no_loss_hint(program)}; name it with --loss)"

"""A picture of a training run (gradc train --plot): each fetched scalar per step, and its evaluation per
epoch. matplotlib is an optional extra (pip install 'gradc[plot]'); nothing else in gradc needs it."""

from __future__ import annotations

import io
import os

from ..errors import GradcError
from ..io import write_atomic
from .history import History


def require_matplotlib() -> None:
    """Fail before training, not after it, when the plot cannot be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise GradcError("--plot needs matplotlib: pip install 'gradc[plot]'") from None


def plot_history(history: History, path: str | os.PathLike) -> None:
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = history.fetch or ["(nothing fetched)"]
    figure = Figure(figsize=(7, 2.8 * len(names)), layout="constrained")
    FigureCanvasAgg(figure)
    for row, name in enumerate(names):
        axes = figure.add_subplot(len(names), 1, row + 1)
        steps = range(1, len(history.steps) + 1)
        if history.fetch:
            axes.plot(steps, [values[row] for values in history.steps], lw=0.8, label="training step")
            epochs = [record for record in history.epochs if name in record["train"]]
            axes.plot([r["step"] for r in epochs], [r["train"][name] for r in epochs], "s-",
                      label="training, epoch mean")
            evaluated = [record for record in history.epochs if name in record["eval"]]
            if evaluated:
                axes.plot([r["step"] for r in evaluated], [r["eval"][name] for r in evaluated], "o-",
                          label="evaluation")
        axes.set_xlabel("step")
        axes.set_ylabel(name)
        axes.grid(alpha=0.3)
        axes.legend()
    buffer = io.BytesIO()
    suffix = os.fspath(path).rpartition(".")[2].lower()
    try:
        figure.savefig(buffer, format=suffix if suffix in ("png", "svg", "pdf") else "png", dpi=110)
    except (ValueError, OSError) as exc:
        raise GradcError(f"cannot draw the plot '{path}': {exc}") from None
    write_atomic(path, buffer.getvalue())

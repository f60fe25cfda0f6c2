"""`gradc run --repeat N`: the fetches of N runs that draw on from one random stream (MC dropout's passes, a
sampler's draws), each fetch's values stacked along a new first axis."""

from __future__ import annotations

import numpy as np

from ..errors import GradcError
from ..executor.lod import LoDTensor
from ..executor.selected_rows import as_dense


def stacked(names: list[str], runs: list[list], option: str = "--repeat") -> list[np.ndarray]:
    """Each fetched var's values of ``runs`` (one list of values a run), stacked: [runs, *the var's shape];
    ``option`` names the one that asked for the runs in an error."""
    out = []
    for index, name in enumerate(names):
        values = [as_dense(values[index]) for values in runs]
        if any(isinstance(value, LoDTensor) and value.lod for value in values):
            raise GradcError(f"{option}: '{name}' is a LoD tensor, whose runs' sequences do not stack; fetch it "
                             f"from single runs")
        arrays = [np.asarray(value.array if isinstance(value, LoDTensor) else value) for value in values]
        shapes = sorted({array.shape for array in arrays})
        if len(shapes) > 1:
            raise GradcError(f"{option}: '{name}' has shapes {', '.join(map(str, map(list, shapes)))} in different "
                             f"runs, which do not stack")
        out.append(np.stack(arrays))
    return out

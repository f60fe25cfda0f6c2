"""Every coverage row, family by family."""

from . import (
        activations,
        conv,
        legacy_v1,
        losses,
        misc,
        models,
        models_full,
        norms,
        sequence,
        shape,
        tensor_math,
        tensor_ops,
)

ROWS = [*activations.ROWS, *conv.ROWS, *norms.ROWS, *shape.ROWS, *misc.ROWS, *sequence.ROWS, *losses.ROWS,
        *models.ROWS, *models_full.ROWS,
        *tensor_math.ROWS, *tensor_ops.ROWS, *legacy_v1.ROWS]

assert len({row.id for row in ROWS}) == len(ROWS), "row ids must be unique"

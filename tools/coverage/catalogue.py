"""Every coverage row, family by family."""

from . import (
        activations,
        complex_fft,
        composites,
        control_flow,
        conv,
        detection_v1,
        distributions,
        extra_math,
        geometric,
        indexing,
        legacy_v1,
        linalg_extra,
        lod_models,
        lod_text,
        losses,
        misc,
        models,
        models_full,
        norms,
        quant_layers,
        random_dist,
        sequence,
        sequence_lod,
        shape,
        static_nn,
        tensor_api,
        tensor_attrs,
        tensor_math,
        tensor_ops,
        vision_ops,
)

ROWS = [*activations.ROWS, *conv.ROWS, *norms.ROWS, *shape.ROWS, *misc.ROWS, *sequence.ROWS, *losses.ROWS,
        *models.ROWS, *models_full.ROWS,
        *tensor_math.ROWS, *tensor_ops.ROWS, *legacy_v1.ROWS, *vision_ops.ROWS, *geometric.ROWS,
        *static_nn.ROWS, *quant_layers.ROWS, *complex_fft.ROWS, *lod_models.ROWS, *sequence_lod.ROWS,
        *lod_text.ROWS, *tensor_api.ROWS, *extra_math.ROWS, *linalg_extra.ROWS, *random_dist.ROWS,
        *detection_v1.ROWS, *composites.ROWS, *tensor_attrs.ROWS,
        *distributions.ROWS, *indexing.ROWS, *control_flow.ROWS]

assert len({row.id for row in ROWS}) == len(ROWS), "row ids must be unique"

"""TABLE: PIR op name -> Row, assembled from the row modules."""

from __future__ import annotations

from .. import control_flow, stacks
from . import (
    assign_score_rows,
    bev_pool_rows,
    binary_math_rows,
    collective_rows,
    compat_rows,
    complex_fft_rows,
    cudnn_fusion_rows,
    deform_conv_rows,
    detection_rows,
    detection_v1_rows,
    extra_math_rows,
    file_io_rows,
    flash_attention_rows,
    fp8_rows,
    fused_bn_act_rows,
    fused_grad_steps_rows,
    fused_llm_rows,
    fused_transformer_rows,
    gpu_build_rows,
    grad_rows,
    graph_rows,
    higher_order_rows,
    import_only,
    incubate_rows,
    index_elementwise_rows,
    inference_fused_rows,
    inference_gpu_rows,
    legacy_nn_rows,
    legacy_shape_rows,
    linalg_extra_rows,
    linalg_rows,
    llm_attention_rows,
    math_rows,
    moe_permute_rows,
    moe_routing_rows,
    moe_rows,
    ms_deform_attn_rows,
    nn_rows,
    onednn_int8_rows,
    onednn_rows,
    optimizer_rows,
    pipeline_rows,
    plumbing,
    pointnet2_rows,
    products_rows,
    pylayer_rows,
    quant_rows,
    random_dist_rows,
    roi_rows,
    rotated_boxes_rows,
    sampling_rows,
    scans_rows,
    shape_rows,
    signal_rows,
    sparse_csr_rows,
    sparse_rows,
    special,
    special_math_rows,
    static_nn_rows,
    tensor_api_rows,
    tensor_inplace_rows,
    translated_rows,
    unary_math_rows,
    vision_rows,
    voxelize_rows,
    yolo_loss_rows,
)

SPECIAL = [
    special("builtin.parameter", plumbing.parameter, 0, 1),
    special("pd_op.data", plumbing.data, 0, 1),
    special("pd_op.feed", plumbing.data, 0, 1),   # an optimized program's input (the Predictor's _optimized.json)
    special("pd_op.fetch", plumbing.fetch, 1, 1),
    special("builtin.set_parameter", plumbing.keep_persistable, 1, 0),
    special("builtin.shadow_output", plumbing.keep_persistable, 1, 0),
    special("builtin.combine", plumbing.combine, None, 1),
    special("builtin.split", plumbing.split, 1, None),
    special("builtin.slice", plumbing.slice_one, 1, 1),
    special("pd_op.coalesce_tensor", plumbing.coalesce, 1, 2),
    special("pd_op.full", plumbing.full, 0, 1),
    special("pd_op.full_int_array", plumbing.full_int_array, 0, 1),
    special("pd_op.create_array", plumbing.create_array, 0, 1),
    special("pd_op.shape64", plumbing.shape64, 1, 1),
    special("cf.yield", plumbing.unexpected_yield),
    special("pd_op.if", control_flow.translate_if, 1, None),
    special("pd_op.while", control_flow.translate_while, None, None),
    special("pd_op.select_input", control_flow.translate_select_input, None, 1),
    special("pd_op.select_output", control_flow.translate_select_output, 2, None),
    special("cf.stack_create", stacks.stack_create, 0, 3),
    special("cf.tuple_push", stacks.tuple_push, None, 0),
    special("cf.tuple_pop", stacks.tuple_pop, 1, None),
    special("cf.has_elements", stacks.has_elements, 1, 1),
]


def _table(rows) -> dict:
    table = {}
    for entry in rows:
        if entry.pir in table:
            raise ValueError(f"two rows for {entry.pir}")
        table[entry.pir] = entry
    return table


TABLE = _table(math_rows.ROWS + shape_rows.ROWS + nn_rows.ROWS + vision_rows.ROWS + grad_rows.ROWS + optimizer_rows.ROWS
               + unary_math_rows.ROWS + special_math_rows.ROWS + binary_math_rows.ROWS + products_rows.ROWS
               + scans_rows.ROWS + linalg_rows.ROWS + sampling_rows.ROWS + legacy_nn_rows.ROWS + roi_rows.ROWS
               + deform_conv_rows.ROWS + detection_rows.ROWS + yolo_loss_rows.ROWS + signal_rows.ROWS + graph_rows.ROWS
               + static_nn_rows.ROWS + incubate_rows.ROWS + quant_rows.ROWS + complex_fft_rows.ROWS + pylayer_rows.ROWS
               + tensor_api_rows.ROWS + translated_rows.ROWS + extra_math_rows.ROWS + linalg_extra_rows.ROWS
               + random_dist_rows.ROWS + detection_v1_rows.ROWS + sparse_rows.ROWS + sparse_csr_rows.ROWS
               + fused_llm_rows.ROWS + llm_attention_rows.ROWS + fused_transformer_rows.ROWS + ms_deform_attn_rows.ROWS
               + pointnet2_rows.ROWS + voxelize_rows.ROWS + bev_pool_rows.ROWS + rotated_boxes_rows.ROWS
               + assign_score_rows.ROWS + inference_fused_rows.ROWS + moe_rows.ROWS + tensor_inplace_rows.ROWS
               + compat_rows.ROWS + flash_attention_rows.ROWS + gpu_build_rows.ROWS + fp8_rows.ROWS
               + moe_routing_rows.ROWS + moe_permute_rows.ROWS + fused_grad_steps_rows.ROWS + collective_rows.ROWS
               + pipeline_rows.ROWS + inference_gpu_rows.ROWS + fused_bn_act_rows.ROWS + cudnn_fusion_rows.ROWS
               + index_elementwise_rows.ROWS + higher_order_rows.ROWS + file_io_rows.ROWS
               + onednn_rows.ROWS + onednn_int8_rows.ROWS + SPECIAL)
TABLE.update(_table(onednn_rows.mirrored(TABLE)))
TABLE.update(_table(onednn_int8_rows.inplace(TABLE)))


def _exports(rows) -> dict:
    """legacy type -> the rows export may write it with: those with a ``when`` first, then in table order."""
    exports: dict[str, list] = {}
    for entry in rows:
        if entry.special is None and entry.when is not import_only:
            exports.setdefault(entry.legacy, []).append(entry)
    return {legacy: sorted(entries, key=lambda entry: entry.when is None) for legacy, entries in exports.items()}


# legacy_shape_rows and deform_conv_rows.EXPORTS are export-only: their PIR ops import as the ops of TABLE
EXPORTS = _exports([*TABLE.values(), *legacy_shape_rows.ROWS, *deform_conv_rows.EXPORTS])

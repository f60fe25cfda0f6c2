"""Rows: the PIR ops Paddle's legacy-to-PIR translator (paddle.base.libpaddle.pir.translate_to_pir, how Paddle 3
loads an old .pdmodel) writes for fluid 1.x ops that PIR's Python API never appends: the LoD sequence ops, dynamic
lstm / gru, v1 reshape (pd_op.legacy_reshape), fill_constant_batch_size_like, the metric and decoding ops, the
in-place moving-average quantizers and fc, which it turns into onednn_op.fc. Export keeps the rows written before
these for the legacy types both spell (pd_op.fc, pd_op.assign_value_), but writes a quantizer that updates its
state vars in place as the in-place op."""

from __future__ import annotations

import math

from ...ops.inference_fused import ACTIVATION_OPS
from . import row
from .grad_rows import X_GRAD
from .hooks import literal_values
from .onednn_rows import undeclared_results

LSTM_ATTRS = ("use_peepholes:bool is_reverse:bool is_test:bool gate_activation:str cell_activation:str "
              "candidate_activation:str")
LSTM_IN = "input:Input h0?:H0 c0?:C0 weight:Weight bias:Bias"
LSTM_OUT = "hidden:Hidden cell:Cell batch_gate:BatchGate batch_cell_pre_act:BatchCellPreAct"
GRU_ATTRS = "activation:str gate_activation:str is_reverse:bool origin_mode:bool is_test:bool"
GRU_IN = "input:Input h0?:H0 weight:Weight bias?:Bias"
GRU_OUT = ("batch_gate:BatchGate batch_reset_hidden_prev:BatchResetHiddenPrev batch_hidden:BatchHidden "
           "hidden:Hidden")
GRU_UNIT_ATTRS = "activation:i32 gate_activation:i32 origin_mode:bool"
GRU_UNIT_IN = "input:Input hidden_prev:HiddenPrev weight:Weight bias?:Bias"
SEQUENCE_POOL = "is_test:bool pooltype:str pad_value:f32"
SEQUENCE_CONV = ("context_length=contextLength:i32 padding_trainable=paddingTrainable:bool "
                 "context_start=contextStart:i32 context_stride=contextStride:i32")
IM2SEQUENCE = "kernels:i32s strides:i32s paddings:i32s out_stride:i32s"
LOD_RESET = "target_lod:i32s append:bool"
MOVING = "moving_rate:f32=0.9 bit_length:i32=8 is_test:bool round_type:i32=1"
# onednn_op.fc's fusion attributes, at the values with which it computes plain fc (what the translator writes);
# fuse_activation becomes an activation op after the fc. mkldnn_data_type int8 and the scales are kept: gradc runs
# oneDNN's int8 fc on a quantize's int8 / uint8 output (gradc.executor.kernels.onednn_int8), as Paddle does.
ONEDNN_NEUTRAL = {"fused_reshape2_shape": ([],), "use_quantizer": (False,), "fused_output_scale": (1.0,),
                  "mkldnn_data_type": ("float32", "int8")}
ONEDNN_FC = ("in_num_col_dims:i32 activation_type:str padding_weights:bool mkldnn_data_type:str=float32 "
             "scale_in=Scale_in:f32=1 scale_weights=Scale_weights:f32s scale_out=Scale_out:f32=1 "
             "force_fp32_output:bool")


def plain_onednn_fc(legacy, op, ctx) -> None:
    """Refuses an onednn_op.fc that fuses more than fc and an activation (a reshape, an output scale, bfloat16);
    writes its fuse_activation (fc_onednn_pass's) as the gradc op after the fc."""
    for name, neutral in ONEDNN_NEUTRAL.items():
        attr = op.attrs.get(name)
        if attr is not None and attr.plain() not in neutral:
            raise ctx.fail(op, f"attribute '{name}' = {attr.plain()!r:.60} fuses more than fc, which gradc's "
                               f"legacy fc cannot express (it computes fc only with {name} one of {list(neutral)})")
    undeclared_results(legacy, op, ctx)
    activation = op.attrs.get("fuse_activation")
    name = "" if activation is None else activation.plain()
    if name in ("", "identity"):
        return
    if not isinstance(name, str) or name not in ACTIVATION_OPS:
        raise ctx.fail(op, f"fuse_activation {name!r:.40} is not one of {sorted(ACTIVATION_OPS)}")
    alpha, beta = (op.attrs[key].plain() if key in op.attrs else 0.0 for key in ("fuse_alpha", "fuse_beta"))
    out = legacy.outputs["Out"][0]
    before = f"{out}.before_{name}"
    ctx.block.add_var(ctx.block.find_var(out).copy(before))
    legacy.outputs["Out"] = [before]
    op_type, attrs = ACTIVATION_OPS[name]
    ctx.emit(op_type, {"X": [before]}, {"Out": [out]}, attrs(alpha, beta))


def shape_tensors(legacy, op, ctx) -> None:
    """PIR's shape list takes every value of each tensor, gradc's ShapeTensor one value per tensor: the translator
    passes a legacy Shape tensor as a list of one, which goes back to Shape; a longer list must hold single values."""
    tensors = legacy.input("ShapeTensor")
    if len(tensors) == 1:
        legacy.inputs["Shape"], legacy.inputs["ShapeTensor"] = tensors, []
        return
    for name in tensors:
        var = ctx.block.find_var(name)
        shape = None if var is None else var.shape
        if shape is None or math.prod(shape) != 1:
            raise ctx.fail(op, f"the shape list mixes tensors of several values ('{name}' has shape {shape}), which "
                               f"gradc's reshape cannot take: give one tensor of all dims or one value per dim")


def out_shape_from_its_grad(legacy, op, ctx) -> None:
    """Legacy reshape_grad declares Out, which it reads for its shape only; PIR's does not take it, and Out@GRAD
    has that shape."""
    legacy.inputs["Out"] = list(legacy.input("Out@GRAD"))


def updates_in_place(*pairs: tuple[str, str]):
    """Export writes the in-place quantizer where the legacy op updates its state vars in place (as Paddle's
    programs do), so the running state stays in the parameters; otherwise the out-of-place one."""
    def when(legacy, exporter) -> bool:
        return all(legacy.input(source) and legacy.input(source) == legacy.output(target) for source, target in pairs)
    return when


def densified_rows(legacy, exporter):
    """Export writes a sparse embedding's gradient dense (pd_op.embedding_grad), so no SelectedRows are left for
    these ops to merge or take apart: refused rather than written over a dense tensor."""
    raise exporter.fail(f"{legacy.type} has no PIR export: export writes the sparse gradient it reads as a dense "
                        f"tensor (pd_op.embedding_grad)")


def batch_size_like_value(legacy, exporter):
    """A legacy str_value (exact for wide numbers) wins over value, as in Paddle's kernel; PIR has value only."""
    text = legacy.attrs.get("str_value") or ""
    if not text:
        return legacy
    try:
        value = float(text)
    except ValueError:
        raise exporter.fail(f"str_value {text!r:.40} is not a number") from None
    copy = legacy.copy()
    copy.set_attr("value", value)
    return copy


ROWS = [
    row("pd_op.assign_value", "assign_value", "", "out:Out", "shape:i32s dtype:dtype values:f64s place=-:place",
        back=literal_values),
    row("pd_op.full_batch_size_like", "fill_constant_batch_size_like", "input:Input", "out:Out",
        "shape:i32s dtype:dtype value:f32 input_dim_idx:i32 output_dim_idx:i32 place=-:place",
        back=batch_size_like_value),
    row("pd_op.legacy_reshape", "reshape", "x:X shape>shape:ints@Shape,ShapeTensor", hook=shape_tensors),
    row("pd_op.legacy_reshape_grad", "reshape_grad", "x:X out_grad:Out@GRAD ~Out ~Shape ~ShapeTensor", X_GRAD,
        hook=out_shape_from_its_grad),
    row("pd_op.hinge_loss", "hinge_loss", "logits:Logits labels:Labels", "loss:Loss"),
    row("pd_op.hinge_loss_grad", "hinge_loss_grad", "logits:Logits labels:Labels loss_grad:Loss@GRAD",
        "logits_grad:Logits@GRAD"),
    row("pd_op.l1_norm", "l1_norm", "x:X"),
    row("pd_op.l1_norm_grad", "l1_norm_grad", "x:X out_grad:Out@GRAD", X_GRAD),
    row("onednn_op.fc", "fc", "input:Input w:W bias?:Bias", "out:Out", ONEDNN_FC, hook=plain_onednn_fc),
    # recurrent layers over LoD sequences (fluid's dynamic_lstm / dynamic_gru / gru_unit)
    row("pd_op.lstm", "lstm", LSTM_IN, LSTM_OUT, LSTM_ATTRS),
    row("pd_op.lstm_grad", "lstm_grad", f"{LSTM_IN} {LSTM_OUT} hidden_grad:Hidden@GRAD",
        "input_grad:Input@GRAD h0_grad:H0@GRAD c0_grad:C0@GRAD weight_grad:Weight@GRAD bias_grad:Bias@GRAD",
        LSTM_ATTRS),
    row("pd_op.gru", "gru", GRU_IN, GRU_OUT, GRU_ATTRS),
    row("pd_op.gru_grad", "gru_grad", f"{GRU_IN} {GRU_OUT} hidden_grad:Hidden@GRAD",
        "input_grad:Input@GRAD h0_grad:H0@GRAD weight_grad:Weight@GRAD bias_grad:Bias@GRAD", GRU_ATTRS),
    row("pd_op.gru_unit", "gru_unit", GRU_UNIT_IN, "gate:Gate reset_hidden_prev:ResetHiddenPrev hidden:Hidden",
        GRU_UNIT_ATTRS),
    row("pd_op.gru_unit_grad", "gru_unit_grad",
        f"{GRU_UNIT_IN} gate:Gate reset_hidden_prev:ResetHiddenPrev hidden_grad:Hidden@GRAD",
        "input_grad:Input@GRAD hidden_prev_grad:HiddenPrev@GRAD weight_grad:Weight@GRAD bias_grad:Bias@GRAD",
        GRU_UNIT_ATTRS),
    # LoD sequence ops
    row("pd_op.sequence_pool", "sequence_pool", "x:X", "out:Out max_index:MaxIndex", SEQUENCE_POOL),
    row("pd_op.sequence_pool_grad", "sequence_pool_grad", "x:X max_index:MaxIndex out_grad:Out@GRAD", X_GRAD,
        SEQUENCE_POOL),
    row("pd_op.sequence_conv", "sequence_conv", "x:X padding_data?:PaddingData filter:Filter", "out:Out",
        SEQUENCE_CONV),
    row("pd_op.sequence_conv_grad", "sequence_conv_grad",
        "x:X padding_data?:PaddingData filter:Filter out_grad:Out@GRAD",
        "x_grad:X@GRAD padding_data_grad:PaddingData@GRAD filter_grad:Filter@GRAD", SEQUENCE_CONV),
    row("pd_op.sequence_expand", "sequence_expand", "x:X y:Y", "out:Out", "ref_level:i32"),
    row("pd_op.sequence_expand_grad", "sequence_expand_grad", "x:X y:Y out_grad:Out@GRAD", X_GRAD, "ref_level:i32"),
    row("pd_op.sequence_softmax", "sequence_softmax", "x:X"),
    row("pd_op.sequence_softmax_grad", "sequence_softmax_grad", "x:X out:Out out_grad:Out@GRAD", X_GRAD),
    row("pd_op.lod_reset", "lod_reset", "x:X y?:Y", "out:Out", LOD_RESET),
    row("pd_op.lod_reset_grad", "lod_reset_grad", "x:X out_grad:Out@GRAD", X_GRAD, LOD_RESET),
    row("pd_op.im2sequence", "im2sequence", "x:X y?:Y", "out:Out", IM2SEQUENCE),
    row("pd_op.im2sequence_grad", "im2sequence_grad", "x:X y?:Y out_grad:Out@GRAD", X_GRAD, IM2SEQUENCE),
    # metrics and decoding (no gradient)
    row("pd_op.chunk_eval", "chunk_eval", "inference:Inference label:Label seq_length?:SeqLength",
        "precision:Precision recall:Recall f1_score:F1-Score num_infer_chunks:NumInferChunks "
        "num_label_chunks:NumLabelChunks num_correct_chunks:NumCorrectChunks",
        "num_chunk_types:i32 chunk_scheme:str excluded_chunk_types:i32s"),
    row("pd_op.crf_decoding", "crf_decoding", "emission:Emission transition:Transition label?:Label length?:Length",
        "viterbi_path:ViterbiPath"),
    row("pd_op.ctc_align", "ctc_align", "input:Input input_length?:InputLength",
        "output:Output output_length:OutputLength", "blank:i32 merge_repeated:bool padding_value:i32"),
    row("pd_op.edit_distance", "edit_distance", "hyps:Hyps refs:Refs hypslength?:HypsLength refslength?:RefsLength",
        "sequencenum:SequenceNum out:Out", "normalized:bool"),
    row("pd_op.beam_search", "beam_search", "pre_ids:pre_ids pre_scores:pre_scores ids?:ids scores:scores",
        "selected_ids:selected_ids selected_scores:selected_scores parent_idx:parent_idx",
        "level:i32 beam_size:i32 end_id:i32 is_accumulated:bool"),
    # SelectedRows plumbing of sparse gradients (the grad of a sparse embedding is pd_op.embedding_sparse_grad)
    row("pd_op.embedding_sparse_grad", "lookup_table_v2_grad", "x:Ids weight:W out_grad:Out@GRAD",
        "weight_grad:W@GRAD", "padding_idx:i64", fixed={"is_sparse": True}),
    row("pd_op.merge_selected_rows", "merge_selected_rows", "x:X", back=densified_rows),
    row("pd_op.get_tensor_from_selected_rows", "get_tensor_from_selected_rows", "x:X", back=densified_rows),
    # quantizers in place on their running state, as the translator keeps the legacy ops' shared vars
    row("pd_op.moving_average_abs_max_scale_", "moving_average_abs_max_scale", "x:X in_accum:InAccum in_state:InState",
        "out:Out out_scale:OutScale out_state:OutState&in_state out_accum:OutAccum&in_accum",
        "moving_rate:f32=0.9 is_test:bool", when=updates_in_place(("InState", "OutState"), ("InAccum", "OutAccum"))),
    row("pd_op.fake_quantize_dequantize_moving_average_abs_max_", "fake_quantize_dequantize_moving_average_abs_max",
        "x:X in_scale:InScale in_accum:InAccum in_state:InState",
        "out:Out out_scale:OutScale&in_scale out_state:OutState&in_state out_accum:OutAccum&in_accum", MOVING,
        when=updates_in_place(("InScale", "OutScale"), ("InState", "OutState"), ("InAccum", "OutAccum"))),
]

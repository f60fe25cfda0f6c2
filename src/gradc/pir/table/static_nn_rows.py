"""Rows: the ops of paddle.static.nn's layers, paddle.text and the auc metric (gradc.ops.static_nn, text, metric),
class-center sampling, the seed op and Tensor.random_ (gradc.ops.random_draws), and paddle.static.Print and
check_numerics (gradc.ops.debug)."""

from __future__ import annotations

from . import row
from .hooks import dense_weight_grad, viterbi_types

NCE_INPUTS = ("input:Input label:Label weight:Weight bias?:Bias sample_weight?:SampleWeight "
              "custom_dist_probs?:CustomDistProbs custom_dist_alias?:CustomDistAlias "
              "custom_dist_alias_probs?:CustomDistAliasProbs")
NCE_ATTRS = ("num_total_classes:i32 custom_neg_classes:i32s num_neg_samples:i32=10 sampler:i32 seed:i32 "
             "is_sparse:bool remote_prefetch:bool is_test:bool")

PRINT = ("first_n:i32 message:str summarize:i32 print_tensor_name:bool print_tensor_type:bool print_tensor_shape:bool "
         "print_tensor_layout:bool print_tensor_lod:bool print_phase:str is_forward:bool")

ROWS = [
    # Paddle's PIR backward prints the grad with a copy of the forward's print (is_forward true, so print_phase
    # 'backward' shows nothing); gradc's grad op is the legacy one, is_forward false
    row("pd_op.print", "print", "in:In", "out:Out", PRINT),
    row("pd_op.check_numerics", "check_numerics", "tensor:tensor", "stats:stats values:values",
        "op_type:str var_name:str check_nan_inf_level:i32 stack_height_limit:i32 output_dir:str"),
    row("pd_op.cvm", "cvm", "x:X cvm:CVM", "out:Y", "use_cvm:bool=true"),
    row("pd_op.cvm_grad", "cvm_grad", "x:X cvm:CVM out_grad:Y@GRAD", "x_grad:X@GRAD", "use_cvm:bool=true"),
    row("pd_op.nce", "nce", NCE_INPUTS, "cost:Cost sample_logits:SampleLogits sample_labels:SampleLabels",
        NCE_ATTRS),
    row("pd_op.nce_grad", "nce_grad",
        "input:Input label:Label bias?:Bias weight:Weight sample_logits:SampleLogits sample_labels:SampleLabels "
        "sample_weight?:SampleWeight custom_dist_probs?:CustomDistProbs custom_dist_alias?:CustomDistAlias "
        "custom_dist_alias_probs?:CustomDistAliasProbs cost_grad:Cost@GRAD",
        "input_grad:Input@GRAD bias_grad:Bias@GRAD weight_grad:Weight@GRAD", NCE_ATTRS, back=dense_weight_grad),
    row("pd_op.row_conv", "row_conv", "x:X filter:Filter"),
    row("pd_op.row_conv_grad", "row_conv_grad", "x:X filter:Filter out_grad:Out@GRAD",
        "x_grad:X@GRAD filter_grad:Filter@GRAD"),
    row("pd_op.auc", "auc", "x:Predict label:Label stat_pos:StatPos stat_neg:StatNeg ins_tag_weight?:InsTagWeight",
        "auc:AUC stat_pos_out:StatPosOut stat_neg_out:StatNegOut",
        "curve:str=ROC num_thresholds:i32=8191 slide_steps:i32=1"),
    row("pd_op.viterbi_decode", "viterbi_decode", "potentials:Input transition_params:Transition lengths:Length",
        "scores:Scores path:Path", "include_bos_eos_tag:bool=true", hook=viterbi_types),
    row("pd_op.class_center_sample", "class_center_sample", "label:Label",
        "remapped_label:RemappedLabel sampled_local_class_center:SampledLocalClassCenter",
        "num_classes:i32 num_samples:i32 ring_id:i32 rank:i32 nranks:i32=1 fix_seed:bool seed:i32"),
    row("pd_op.seed", "seed", "", "out:Out", "seed:i32 deterministic:bool rng_name:str force_cpu:bool"),
    row("pd_op.random_", "random", "x:x", "out:out&x", "from:i64 to:i64"),
    row("pd_op.random_grad", "random_grad", "out_grad:out@GRAD", "x_grad:x@GRAD", "from:i64 to:i64"),
]

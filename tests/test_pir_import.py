"""Paddle 3.3.1's PIR programs load, compile with gradc's backward, and give Paddle's loss and every
gradient; saved inference models give Paddle's outputs."""

import gzip
import json
import re

import numpy as np
import pytest

import gradc
from gradc.io.pdiparams import read_params
from gradc.pir import is_pir, load_pir, parse_pir, serialize_pir
from gradc.pir.graph import walk_ops
from gradc.pir.reader import read_module
from gradc.pir.table import onednn_int8_rows
from gradc.pir.table.onednn_rows import ONEDNN_PLAIN
from gradc.pir.table.rows import TABLE
from pir_fixtures import (
    INFERENCE,
    LAYERS,
    LAYERS_WITH_BACKWARD,
    OPTIM,
    PIR_DATA,
    TRAINING,
    WITH_BACKWARD,
    assert_matches_paddle,
    load,
    meta,
    paddle_backward,
    program_file,
    run_fetches,
    run_inference,
    train_and_run,
)

# legacy programs through Paddle's translate_to_pir (tools/paddle_pir_translated.py)
TRANSLATED = ["translated_beam_search_log_probs", "translated_box_coder_decode", "translated_chunk_eval_iob",
              "translated_cond", "translated_crf_decoding_padded", "translated_ctc_align_lod", "translated_dynamic_gru",
              "translated_dynamic_lstm", "translated_edit_distance_padded", "translated_fake_quant_moving_average",
              "translated_fc_plain", "translated_fill_constant_batch_size_like_v1", "translated_gru_unit",
              "translated_hinge_loss", "translated_im2sequence", "translated_l1_norm", "translated_lod_reset_target",
              "translated_lod_reset_y_offsets", "translated_moving_average_abs_max_scale",
              "translated_reshape_v1_tensor", "translated_sequence_conv", "translated_sequence_expand",
              "translated_sequence_softmax", "translated_while_loop"]


def test_every_expected_fixture_is_there():
    assert TRAINING == ["cnn_bn", "cond", "gru_stacked_lengths", "legacy_lrn", "legacy_static_nn", "lstm",
                        "lstm_stacked", "lstm_stacked_lengths", "mlp",
                        "simple_rnn_relu_lengths", "simple_rnn_tanh", "transformer", *TRANSLATED,
                        "while_loop", "zoo_activation", "zoo_draws_bits", "zoo_extremes", "zoo_index", "zoo_math",
                        "zoo_nn", "zoo_random_dist", "zoo_reduce", "zoo_shape", "zoo_tensor_draws"]
    assert INFERENCE == ["inference", "jit", "jit_bf16"]


@pytest.mark.parametrize("case", TRAINING)
def test_training_program_gives_paddles_loss_and_gradients(case):
    assert_matches_paddle(train_and_run(load(case), case), case)


@pytest.mark.parametrize("case", TRAINING)
def test_the_loss_is_named_by_its_fetch_name(case):
    program = load(case)
    block = program.global_block
    assert meta(case)["loss"] == "loss"
    writer = next(op for op in block.ops if "loss" in op.output_names())
    assert writer.type not in ("fetch", "assign")
    assert block.ops[-1].type == "fetch" and block.ops[-1].input("X") == ["loss"]


@pytest.mark.parametrize("case", WITH_BACKWARD)
def test_paddles_own_training_program_runs_and_gives_its_gradients(case):
    """Paddle's backward (pd_op.*_grad ops) translated to legacy grad ops, no gradc backward pass."""
    program = load_pir(paddle_backward(case))
    assert any(op.type.endswith("_grad") for op in program.global_block.ops)
    assert_matches_paddle(run_fetches(program, case), case)


@pytest.mark.parametrize("case", INFERENCE)
def test_inference_model_gives_paddles_output(case):
    np.testing.assert_allclose(run_inference(load(case), case), np.load(PIR_DATA / case / "expected.npy"),
                               rtol=1e-5, atol=1e-6)


def test_parameter_names_are_kept_and_flags_follow_the_file():
    block = load("cnn_bn").global_block
    weight = block.vars["conv2d_0.w_0"]
    assert weight.persistable and weight.is_parameter and not weight.stop_gradient
    running_mean = next(v for name, v in block.vars.items() if name.startswith("batch_norm2d") and name.endswith("w_1"))
    assert running_mean.persistable and not running_mean.is_parameter and running_mean.stop_gradient
    assert block.vars["img"].need_check_feed and block.vars["img"].stop_gradient
    assert block.vars["img"].shape == [2, 3, 6, 6]


def test_a_parameter_the_file_marks_not_persistable_is_not_read_from_the_parameter_file():
    """dy2static turns an LSTM's DropoutState into a parameter op named "<name>__non_persistable" whose value is not
    persistable, and paddle.jit.save leaves it out of inference.pdiparams (PaddleOCR's BiLSTM recognizers)."""
    doc = json.loads((PIR_DATA / "jit" / "model.json").read_bytes())
    ops = doc["program"]["regions"][0]["blocks"][0]["ops"]
    ids = [int(m) for m in re.findall(r'"%": (\d+)', json.dumps(doc))]
    ops.insert(0, {"#": "p", "A": [0, 1, 1, "lstm_0.dropout_state__non_persistable"], "DA": [], "QA": [],
                   "O": {"%": max(ids) + 1, "TT": {"#": "0.t_dtensor", "D": [{"#": "0.t_ui8"}, [], "NCHW", [], 0]}},
                   "OA": [0, 1, 0]})
    program = parse_pir(json.dumps(doc).encode())
    assert not program.global_block.vars["lstm_0.dropout_state__non_persistable"].persistable
    expected = read_params(PIR_DATA / "jit" / "model.pdiparams", load("jit"))
    params = read_params(PIR_DATA / "jit" / "model.pdiparams", program)
    assert sorted(params) == sorted(expected)


def test_values_get_paddle_style_names():
    block = load("mlp").global_block
    matmuls = [op for op in block.ops if op.type == "matmul_v2"]
    assert [op.output("Out") for op in matmuls] == [["matmul_v2_0.tmp_0"], ["matmul_v2_1.tmp_0"]]
    assert all(name in block.vars for op in block.ops for name in op.output_names())


def test_batch_norm_updates_its_running_stats_in_place():
    op = next(op for op in load("cnn_bn").global_block.ops if op.type == "batch_norm")
    assert op.output("MeanOut") == op.input("Mean") and op.output("VarianceOut") == op.input("Variance")


def test_constant_shape_and_axis_lists_become_attributes():
    ops = load("cnn_bn").global_block.ops
    assert not any(op.type == "fill_constant" for op in ops)   # every full_int_array was folded
    pool = next(op for op in ops if op.type == "pool2d")
    assert pool.attrs["ksize"] == [2, 2] and pool.attrs["pooling_type"] == "max"
    means = [op for op in ops if op.type == "reduce_mean"]
    assert all(op.attrs["reduce_all"] for op in means)


def test_cond_is_two_conditional_blocks_and_a_select_input():
    program = load("cond")
    types = [op.type for op in program.global_block.ops]
    assert types.count("conditional_block") == 2 and "logical_not" in types and "select_input" in types
    assert [b.parent_idx for b in program.blocks] == [-1, 0, 0]
    true_branch = next(op for op in program.global_block.ops if op.type == "conditional_block")
    assert true_branch.attrs["is_scalar_condition"] is True
    assert set(true_branch.input("Input")) == {"x", "linear_0.w_0", "linear_0.b_0"}


def test_an_if_with_a_placeholder_false_branch_is_one_conditional_block():
    """Paddle's translation of a legacy cond: each branch an if whose false branch only yields zeros."""
    ops = load("translated_cond").global_block.ops
    assert [op.type for op in ops].count("conditional_block") == 2
    assert [op.type for op in ops].count("select_input") == 1


def test_while_carries_its_loop_values_in_vars_the_body_reassigns():
    program = load("while_loop")
    loop = next(op for op in program.global_block.ops if op.type == "while")
    body = program.blocks[loop.attrs["sub_block"]]
    carried = loop.output("Out")
    assert loop.input("Condition") == [carried[-1]]
    assert {op.output("Out")[0] for op in body.ops if op.type == "assign"} == set(carried)
    assert "create_parameter_0.w_0" in loop.input("X")


def test_lstm_is_one_fused_rnn_op_with_its_byte_buffers():
    block = load("lstm_stacked").global_block
    (rnn,) = [op for op in block.ops if op.type == "rnn"]
    assert rnn.attrs["mode"] == "LSTM" and rnn.attrs["num_layers"] == 2 and rnn.attrs["is_bidirec"] is True
    assert len(rnn.input("WeightList")) == 16 and len(rnn.input("PreState")) == 2
    assert block.vars[rnn.output("Reserve")[0]].dtype == gradc.VarType.UINT8


def test_is_pir_sniffs_pir_files_only():
    assert all(is_pir(program_file(case).read_bytes()) for case in TRAINING + INFERENCE)
    legacy = PIR_DATA.parent / "mlp" / "forward.pb"
    assert not is_pir(legacy.read_bytes())
    assert not is_pir(gradc.io.serialize(gradc.load(legacy), "json"))


def test_load_takes_bytes_and_paths_alike():
    path = program_file("mlp")
    by_path, by_bytes = load_pir(path), load_pir(path.read_bytes())
    assert [op.type for op in by_path.global_block.ops] == [op.type for op in by_bytes.global_block.ops]


def test_older_pir_versions_load():
    doc = json.loads(program_file("mlp").read_bytes())
    for version in (1, 2, 3):
        doc["base_code"]["version"] = version
        assert [op.type for op in load_pir(json.dumps(doc).encode()).global_block.ops][-1] == "fetch"


def test_a_program_saved_without_result_attributes_loads():
    """trainable=False files carry no OA: no stop_gradient or persistable flags."""
    doc = json.loads(program_file("mlp").read_bytes())
    doc["base_code"]["trainable"] = False
    for op in doc["program"]["regions"][0]["blocks"][0]["ops"]:
        op.pop("OA", None)
    program = load_pir(json.dumps(doc).encode())
    weight = program.global_block.vars["linear_0.w_0"]
    assert weight.persistable and weight.is_parameter and not weight.stop_gradient


def test_every_fixture_op_has_a_row_and_every_row_is_used_by_a_fixture():
    """Export alone writes pd_op.shape (legacy shape makes int32, which 3.3.1's layers never ask for),
    pd_op.select_output, pd_op.add_n_array and pd_op.assign_array (gradc's backward of cond and of tensor arrays),
    pd_op.array_length and pd_op.sequence_mask (legacy recurrent programs), pd_op.row_conv_grad (3.3.1's PIR
    row_conv has no vjp), pd_op.straight_through_estimator_grad (nor has moving_average_abs_max_scale),
    pd_op.memcpy (legacy AMP's copy of FoundInfinite for Adam's SkipUpdate: PIR's Adam reads the flag itself;
    tests/test_optimizer_amp.py writes and reads it), pd_op.margin_cross_entropy and its grad,
    pd_op.fused_rms_norm_quant_grad (3.3.1 has no CPU kernel of them) and pd_op.equal_all (3.3.1's PIR declares its
    bool result float32, so no layer can use it); the export tests read them back (tests/test_extra_math.py for the
    last four). So do paddle.incubate.layers' ops without a PIR fixture (tests/test_incubate.py): partial_sum_grad
    and partial_concat_grad (3.3.1's PIR has no vjp of them), batch_fc, rank_attention, correlation and
    fused_seqpool_cvm and their grads (no CPU kernel, no PIR layer), and fused_softmax_mask_upper_triangle_grad (3.3.1
    builds it only with a GPU kernel; tests/test_pir_sweep.py); and pd_op.seed, which only Paddle's translator
    writes (tests/test_recompute_dropout.py); and pd_op.slice_coo_grad_sp (Paddle's executor ran gradc's, once by
    hand; tests/test_sparse_int_args.py), and
    pd_op.add_coo_coo_grad_sp (the one sparse add of pir_unary adds sin(x), whose gradient Paddle's executor crashes
    on, docs/sparse.md; the gradcheck cases differentiate it), and pd_op.subtract_coo_coo_sp and transpose_coo_sp
    (Paddle aborts in them), and the grads multiply_coo_coo_grad_sp, divide_coo_coo_grad_sp and transpose_coo_grad_sp
    (tests/test_sparse_pir_ops.py), and the products and pooling no Paddle static program of which runs or builds:
    matmul_coo/csr_dense_sp, mv_csr_sp, addmm_csr_dense_sp, masked_matmul_sp (tests/test_sparse_matmul.py checks
    Paddle's mv_coo_sp and addmm_coo_dense_sp), maxpool_sp and maxpool_grad_sp (tests/test_sparse_maxpool.py); the CSR
    ops and conversions, products of two sparse tensors, acos and acosh are in the files Paddle wrote back of gradc's
    (sparse_tensor/pir_csr: model.json it ran, unrun.json it has no CPU kernel of), and the CSR forms of subtract,
    multiply, divide, transpose, reshape, slice and sum with their grad ops in gradc's training program Paddle read and
    wrote back (sparse_tensor/pir_csr_ops/train.json; it ran the forward ops, tests/test_sparse_csr_ops.py).
    Import alone reads the PIR programs
    Paddle builds, without running them, for its GPU-only fused_gemm_epilogue and fused_softmax_mask_upper_triangle
    (tests/data/paddle/pir_gpu_only). Dy2static's list ops (array_pop, slice_array, slice_array_dense) are in
    tests/data/paddle/pir_arrays. The suites' custom ops are in tests/data/paddle/ext_ops, but
    (tests/data/paddle/pir_gpu_only), the float8 ops' programs Paddle loads (tests/data/paddle/fp8) and
    pd_op.slice_array_dense (a PaddleDetection export's read of a list dy2static built; the edited array-loop fixture
    below). The suites' custom ops are in tests/data/paddle/ext_ops, but
    (tests/data/paddle/pir_gpu_only) and the GPU passes' fused ops (tests/data/paddle/gpu_inference) and
    pd_op.slice_array_dense (a PaddleDetection export's read of a list
    dy2static built; the edited array-loop fixture below). The suites' custom ops are in tests/data/paddle/ext_ops, but
    for Paddle3D's bird's-eye-view IoU and NMS, whose CPU source needs CUDA's headers (tests/test_ext_ops_boxes.py).
    The Predictor's PIR programs
    (tests/data/paddle/inference_optimized) hold pd_op.feed and three fused ops; 3.3.1 writes none with
    pd_op.fusion_lstm (its translation of the optimized program fails) or pd_op.fusion_seqpool_cvm_concat (its PIR
    save refuses a program without parameters), rows from fused_ops.yaml (docs/inference-optimized.md). The oneDNN
    Predictor's programs (tests/data/paddle/onednn_pir) hold the fused onednn_ops and the dialect's in-place forms;
    the onednn_op mirrors of pd_op rows (ONEDNN_PLAIN) and the in-place rows made from out-of-place ones
    (onednn_int8_rows.inplace: the inplace fixture uses 19 of them) are those rows; the oneDNN-only legacy ops'
    translations (tests/data/paddle/onednn_ops) hold the int8 reorders, fused_conv3d, conv2d_transpose_bias,
    fused_elementwise_div and onednn_op.matmul_with_flatten. No 3.3.1 API or pass writes legacy_matmul (its
    translator writes a v1 matmul as matmul + scale; tests/test_onednn_ops.py reads a renamed program), nor a
    layer pd_op.matmul_with_flatten or the grads of either (the rows are legacy mul's and matmul's)."""
    files = [program_file(case).read_bytes() for case in TRAINING + INFERENCE + LAYERS]
    files += [paddle_backward(case) for case in WITH_BACKWARD + LAYERS_WITH_BACKWARD]
    files += [gzip.decompress((PIR_DATA / case / f"{kind}.json.gz").read_bytes())
              for case in OPTIM for kind in ("train", "startup")]
    files.append((PIR_DATA.parent / "pir_translated_sparse_rows" / "program.json").read_bytes())   # SelectedRows ops
    files += [(PIR_DATA.parent / "sparse_tensor" / case / name).read_bytes()   # paddle.sparse's ops and grads
              for case in ("pir_jit", "pir_unary") for name in ("model.json", "train.json")]
    files += [(PIR_DATA.parent / "sparse_tensor" / case / "model.json").read_bytes()
              for case in ("pir_binary", "pir_int_args", "pir_products", "pir_csr")]
    files += [(PIR_DATA.parent / "sparse_tensor" / "pir_csr" / name).read_bytes()   # Paddle cannot run these
              for name in ("unrun.json", "train.json")]
    files.append((PIR_DATA.parent / "sparse_tensor" / "pir_csr_ops" / "train.json").read_bytes())   # CSR forms
    files += [path.read_bytes() for path in (PIR_DATA.parent / "pir_gpu_only").glob("*/program.json")]
    files += [path.read_bytes() for path in (PIR_DATA.parent / "fp8").glob("*/program.json")]   # the float8 ops
    files += [path.read_bytes() for path in (PIR_DATA.parent / "gpu_inference").glob("*/program.json")]
    files += [path.read_bytes() for path in sorted((PIR_DATA.parent / "ext_ops").glob("*/*.json"))   # custom ops
              if path.name != "meta.json"]
    files += [path.read_bytes() for path in (PIR_DATA.parent / "inference_optimized").glob("*/model.json")]
    files.append((PIR_DATA.parent / "random_inplace" / "program.json").read_bytes())   # Tensor.random_
    files += [path.read_bytes() for path in sorted((PIR_DATA.parent / "tensor_inplace").glob("*/program.json"))]
    files.append((PIR_DATA.parent / "index_elementwise" / "program.json").read_bytes())   # Tensor indexing's views
    files += [path.read_bytes() for path in (PIR_DATA.parent / "pir_arrays").glob("*/inference.json")]   # list ops
    files += [gzip.decompress(path.read_bytes())   # whole models as a CUDA build saves them (linear_v2, var, ...)
              for path in sorted((PIR_DATA.parent / "gpu_build").glob("*/*.json.gz"))]
    files += [gzip.decompress(path.read_bytes())   # four users' weeks in PIR (MAML's *_double_grad ops)
              for path in sorted((PIR_DATA.parent / "pir_weeks").glob("*/*.json.gz"))]
    files += [gzip.decompress(path.read_bytes())   # week 39's Eikonal losses: sin's, softplus', elu's, ... double grads
              for path in sorted((PIR_DATA.parent / "user_week39" / "pir").glob("*.json.gz"))]
    files += [gzip.decompress(path.read_bytes())   # a WGAN-GP penalty's conv2d_grad_grad, conv3d_double_grad
              for path in sorted((PIR_DATA.parent / "double_grad_ops" / "pir").glob("*.json.gz"))]
    files += [gzip.decompress(path.read_bytes())   # the norms' and unary double grads, sin's ... triple grads
              for path in sorted((PIR_DATA.parent / "double_grad_ops" / "higher" / "pir").glob("*.json.gz"))]
    files += [gzip.decompress(path.read_bytes())   # paddle.vision.ops' read_file and decode_jpeg
              for path in sorted((PIR_DATA.parent / "user_api_ops" / "pir").glob("*.json.gz"))]
    files += [path.read_bytes() for path in (PIR_DATA.parent / "tensor_parallel").glob("**/*.json")   # collectives
              if path.name != "meta.json"]
    files += [path.read_bytes() for case in ("pipeline", "sharding")   # point-to-point ops, reduce, broadcast
              for path in sorted((PIR_DATA.parent / case).glob("**/*.json")) if path.name != "meta.json"]
    files += [path.read_bytes() for path in (PIR_DATA.parent / "onednn_pir").glob("*/model.json")]   # onednn_op
    files += [path.read_bytes()   # dist_op.reshard: auto-parallel programs before Paddle's reshard pass
              for path in sorted((PIR_DATA.parent / "auto_parallel").glob("*/rank0/reshard.json"))]
    files += [path.read_bytes() for path in (PIR_DATA.parent / "onednn_ops").glob("*/program.json")]   # int8, ...
    used = {op.name for data in files for op in walk_ops(read_module(data).body)}
    assert used <= set(TABLE)
    in_place = {f"{dialect}.{name}" for dialect in ("pd_op", "onednn_op") for name in onednn_int8_rows.INPLACE}
    unused = set(TABLE) - used - {f"onednn_op.{name}" for name in ONEDNN_PLAIN} - in_place
    assert unused == {"pd_op.shape", "pd_op.select_output", "pd_op.add_n_array", "pd_op.assign_array",
                                 "pd_op.sequence_mask", "pd_op.row_conv_grad",
                                 "pd_op.straight_through_estimator_grad", "pd_op.memcpy", "pd_op.margin_cross_entropy",
                                 "pd_op.margin_cross_entropy_grad", "pd_op.equal_all",
                                 "pd_op.fused_rms_norm_quant_grad",
                                 "pd_op.partial_sum_grad", "pd_op.partial_concat_grad", "pd_op.seed",
                                 "pd_op.slice_coo_grad_sp", "pd_op.add_coo_coo_grad_sp",
                                 "pd_op.subtract_coo_coo_sp", "pd_op.transpose_coo_sp",
                                 "pd_op.multiply_coo_coo_grad_sp", "pd_op.divide_coo_coo_grad_sp",
                                 "pd_op.transpose_coo_grad_sp", "pd_op.matmul_coo_dense_sp",
                                 "pd_op.matmul_csr_dense_sp", "pd_op.mv_csr_sp", "pd_op.addmm_csr_dense_sp",
                                 "pd_op.masked_matmul_sp", "pd_op.maxpool_sp", "pd_op.maxpool_grad_sp",
                                 "pd_op.fused_softmax_mask_upper_triangle_grad",
                                 *(f"pd_op.{op}{grad}" for op in ("batch_fc", "rank_attention", "correlation",
                                                                  "fused_seqpool_cvm") for grad in ("", "_grad")),
                                 *(f"custom_op.{op}" for op in ("boxes_iou_bev_cpu", "boxes_iou_bev_gpu",
                                                                "boxes_overlap_bev_gpu", "nms_gpu", "nms_normal_gpu")),
                                 "pd_op.fusion_lstm", "pd_op.fusion_seqpool_cvm_concat",
                                 *(f"{dialect}.{op}" for dialect in ("pd_op", "onednn_op")
                                   for op in ("legacy_matmul", "legacy_matmul_grad", "matmul_with_flatten_grad")),
                                 "pd_op.matmul_with_flatten"}
    for case in TRAINING + INFERENCE + LAYERS:
        assert set(meta(case)["pir_ops"]) <= used


def test_translated_selected_rows_ops_give_paddles_merged_rows():
    """pd_op.embedding_sparse_grad, merge_selected_rows and get_tensor_from_selected_rows as Paddle's translator
    writes them (tools/paddle_pir_translated.py sparse_rows): the dense rows are Paddle's."""
    directory = PIR_DATA.parent / "pir_translated_sparse_rows"
    program = load_pir(directory / "program.json")
    assert [op.type for op in program.global_block.ops] == \
        ["lookup_table_v2_grad", "merge_selected_rows", "get_tensor_from_selected_rows"]
    with np.load(directory / "feed.npz") as feed:
        (dense,) = gradc.Executor().run(program, feed=dict(feed), fetch_list=program.global_block.ops[-1].output("Out"))
    np.testing.assert_array_equal(dense, np.load(directory / "expected.npy"))


def test_a_number_attribute_of_an_earlier_versions_kind_is_read_by_its_value():
    """Version 2 files hold kthvalue's k as a_i32 (3.yaml makes it a_i64): the number of either kind is read."""
    doc = json.loads(program_file("pir_layers/kthvalue").read_bytes())
    kthvalue = next(op for op in doc["program"]["regions"][0]["blocks"][0]["ops"] if op["#"] == "1.kthvalue")
    k = next(a for a in kthvalue["A"] if a["N"] == "k")
    assert k["AT"]["#"] == "0.a_i64"
    k["AT"]["#"] = "0.a_i32"
    case = "pir_layers/kthvalue"
    assert_matches_paddle(train_and_run(load_pir(json.dumps(doc).encode()), case), case)


DTYPES = PIR_DATA.parent / "pir_dtypes"   # tools/paddle_pir_dtypes.py
# the PIR op each case's export must write: the form of tril_triu and of repeat_interleave
EXPORTED_AS = {"tril_below": "1.tril", "triu_above": "1.triu", "repeat_interleave_int": "1.repeat_interleave",
               "repeat_interleave_tensor": "1.repeat_interleave_with_tensor_index"}


@pytest.mark.parametrize("case", sorted(p.stem for p in DTYPES.glob("*.json")))
def test_result_dtypes_and_pir_forms_give_paddles_values(case):
    """arange / linspace of integer and float64 dtypes over fractional bounds, unique's index dtypes, and the
    ops with two PIR forms: Paddle's value and dtype, read and written back as PIR."""
    program = load_pir(DTYPES / f"{case}.json")
    written = serialize_pir(program)
    with np.load(DTYPES / "feed.npz") as feed, np.load(DTYPES / "values.npz") as values:
        for again in (program, parse_pir(written)):
            (got,) = gradc.Executor().run(again, feed=dict(feed) if again.global_block.find_var("x") else {},
                                          fetch_list=["out"])
            assert got.dtype == values[case].dtype
            np.testing.assert_allclose(got, values[case], rtol=1e-6)
    if case in EXPORTED_AS:
        assert f'"{EXPORTED_AS[case]}"'.encode() in written


@pytest.mark.parametrize("draw, legacy", [("1.uniform", "uniform_random"), ("1.gaussian", "gaussian_random")])
def test_a_random_draw_of_a_computed_shape(draw, legacy):
    """pd_op.uniform / pd_op.gaussian with a shape computed in the program (PaddleSeg's SegNeXt draws its NMF bases
    of the input's batch size) read it at run time from the legacy op's ShapeTensor, as Paddle does."""
    doc = json.loads(program_file("zoo_nn").read_bytes())
    ops = doc["program"]["regions"][0]["blocks"][0]["ops"]
    at = next(i for i, op in enumerate(ops) if op["#"] == draw)
    data = [op for op in ops if op["#"] == "1.data"][1]["O"][0]["%"]   # a [2, 5] input
    ops[at]["I"][0] = {"%": 99999}   # the shape: pd_op.shape64 of that input
    ops.insert(at, {"#": "1.shape64", "A": [], "I": [{"%": data}],
                    "O": [{"%": 99999, "TT": {"#": "0.t_dtensor", "D": [{"#": "0.t_i64"}, [2], "NCHW", [], 0]}}],
                    "OA": [{"AT": {"#": "0.a_array", "D": [{"#": "0.a_bool", "D": True}]}, "N": "stop_gradient"}]})
    program = load_pir(json.dumps(doc).encode())
    (op,) = [op for op in program.global_block.ops if op.type == legacy]
    alone = gradc.Program()
    for name in (*op.input("ShapeTensor"), *op.output("Out")):
        alone.global_block.add_var(program.global_block.var(name).copy())
    alone.global_block.ops.append(op)
    (out,) = gradc.Executor().run(alone, {op.input("ShapeTensor")[0]: np.array([3, 7])}, op.output("Out"))
    assert np.shape(out) == (3, 7)


@pytest.mark.parametrize("start", [1, -2])
def test_slice_array_dense_reads_the_array_element_its_starts_name(start):
    """pd_op.slice_array_dense (dy2static's ``array[i]`` of a list it built: PaddleDetection's RoIAlign over FPN
    levels) is array[starts[0]], a negative start counted from the end (a list's x[-1]: PaddleSpeech's Tacotron2):
    the array-loop fixture (3 elements) with its read of element 1 written so gives Paddle's loss and gradients."""
    case = "pir_layers/while_loop_array"
    doc = json.loads(program_file(case).read_bytes())
    ops = doc["program"]["regions"][0]["blocks"][0]["ops"]
    reads = [i for i, op in enumerate(ops) if op["#"] == "1.array_read"]
    index, read = ops[reads[1] - 1], ops[reads[1]]
    assert index["#"] == "1.full" and index["A"][1]["AT"]["D"] == 1.0
    ops[reads[1] - 1] = {"#": "1.full_int_array", "A": [{"AT": {"#": "0.a_array", "D": [{"#": "0.a_i64", "D": start}]},
                                                         "N": "value"}, *index["A"][2:]],
                         "I": [], "O": index["O"], "OA": index["OA"]}
    read["#"] = "1.slice_array_dense"
    program = load_pir(json.dumps(doc).encode())
    types = [op.type for op in program.global_block.ops]
    assert types.count("read_from_array") == 3 and types.count("lod_array_length") == (start < 0)
    assert_matches_paddle(train_and_run(program, case), case)


def test_a_split_of_computed_sections_takes_them_as_a_list_of_scalars():
    """pd_op.split whose sections are computed (a pd_op.stack of sizes in PaddleDetection's deformable attention, or a
    builtin.combine of scalars) splits by them: legacy split's SectionsTensorList, one scalar var per section."""
    from programs import Net
    net = Net("float32")
    x, sizes = net.data("x", [6, 2]), net.data("sizes", [2], gradc.VarType.INT64)
    scalars = [net.tmp([], gradc.VarType.INT64) for _ in range(2)]
    net.block.append_op("unstack", {"X": [sizes]}, {"Y": scalars}, {"axis": 0, "num": 2})
    parts = [net.tmp([-1, 2]) for _ in range(2)]
    net.block.append_op("split", {"X": [x], "SectionsTensorList": scalars}, {"Out": parts}, {"axis": 0})
    doc = json.loads(serialize_pir(net.program, fetch=parts))
    feed = {"x": np.arange(12, dtype=np.float32).reshape(6, 2), "sizes": np.array([4, 2], np.int64)}
    ops = doc["program"]["regions"][0]["blocks"][0]["ops"]
    split = next(op for op in ops if op["#"] == "1.split")
    stacked = next(op for op in ops if op["#"] == "1.data" and op["A"][0]["AT"]["D"] == "sizes")["O"][0]["%"]
    for sections in (split["I"][1]["%"], stacked):   # the combine of scalars, then the 1-D tensor itself
        split["I"][1]["%"] = sections
        program = parse_pir(json.dumps(doc).encode())
        (op,) = [op for op in program.global_block.ops if op.type == "split"]
        assert len(op.input("SectionsTensorList")) == 2
        got = gradc.Executor().run(program, feed)   # its fetch ops
        np.testing.assert_array_equal(got[0], feed["x"][:4])
        np.testing.assert_array_equal(got[1], feed["x"][4:])

"""Coverage of PIR mode: every PIR op the layers, losses and models of docs/coverage.md emit in Paddle 3.3.1's
PIR mode (tests/data/paddle/pir_coverage.json, tools/paddle_pir_coverage.py) has a table row or a stated
reason; each row's slots and attributes are ones gradc's legacy op declares; and the PIR fixtures of a
covering set of rows (tests/data/paddle/pir_layers) compile with gradc's backward, and translate with
Paddle's own backward, to Paddle's loss and gradients."""

import json

import pytest

import gradc
from gradc.pir import load_pir, parse_pir, serialize_pir
from gradc.pir.table.rows import TABLE
from gradc.pir.table.unmapped import IN_MODEL_FILES, UNMAPPED
from gradc.registry import OPS
from pir_fixtures import (
    LAYERS,
    LAYERS_WITH_BACKWARD,
    PIR_DATA,
    assert_matches_paddle,
    load,
    meta,
    npz,
    paddle_backward,
    program_file,
    run_fetches,
    train_and_run,
)

RECORD = json.loads((PIR_DATA.parent / "pir_coverage.json").read_text())
# the families whose ops Paddle 3.3.1's PIR mode refuses
LEGACY_ONLY = {"legacy_v1", "sequence_lod", "lod_models", "lod_text", "detection_v1", "static_layers"}
EMITTED = sorted({name for row in RECORD.values() for name in row.get("forward", []) + row.get("backward", [])})


# paddle.nn.quant's fake-quantization layers append legacy ops only; PIR's dequantize_linear refuses an int8 X
LEGACY_ONLY_QUANT = ["dequantize_linear", "dequantize_linear_channel", "fake_quant_abs_max", "fake_quant_abs_max_4bit",
                     "fake_quant_abs_max_weight", "fake_quant_channel_wise", "fake_quant_channel_wise_3bit",
                     "fake_quant_channel_wise_axis1", "fake_quant_moving_average", "fake_quant_moving_average_rate",
                     "moving_average_abs_max_scale", "moving_average_abs_max_scale_rate", "quantized_conv2d",
                     "quantized_conv2d_channel", "quantized_conv2d_transpose", "quantized_conv2d_transpose_channel",
                     "quantized_linear", "quantized_linear_moving_channel"]

# dynamic-graph-only Tensor methods (or ones PIR values lack), GPU-only fused ops, gcd_ of a 2-D Tensor (its full() is
# handed None), Tensor.less_ (it calls a paddle.tensor.logic.less that does not exist), and a Hessian through
# square_double_grad, which has no grad op
PIR_SWEEP_PADDLE_CANNOT = ["as_strided", "erf_", "expm1_", "fill_diagonal_", "fill_diagonal_tensor", "fill_zero_",
                           "fused_linear", "gcd_lcm_", "incubate_Hessian_square", "ldexp_", "less_", "narrow",
                           "normal_", "softmax_mask_fuse_upper_triangle", "tensor_unfold", "uniform_", "view_as",
                           "view_shape"]


def test_the_record_holds_every_coverage_row():
    """The rows of docs/coverage.md, each with its legacy fixture; Paddle 3.3.1 builds all but these in PIR mode
    (and the rows of the families whose ops PIR mode has not: Paddle 1.x/2.x ops, LoD sequences)."""
    assert set(RECORD) == {meta.parent.name for meta in (PIR_DATA.parent / "layers").glob("*/meta.json")}
    failed = sorted(r for r, row in RECORD.items() if "paddle_error" in row and row.get("family") not in LEGACY_ONLY)
    # paddle.sparse: 3.3.1's PIR backward fails in full_like of a sparse var (docs/sparse.md), every row of them
    sparse = [r for r, row in RECORD.items() if row.get("family") == "sparse"]
    assert sparse and all("Only support paddle::dialect::DenseTensorType" in RECORD[r]["paddle_error"] for r in sparse)
    assert failed == sorted([*sparse, "adaptive_log_softmax_with_loss", "auc", "audio_mel_spectrogram", "audio_mfcc",
                             "audio_spectrogram", "continuous_value_model", "continuous_value_model_no_cvm",
                             "histogram_bin_edges", "nce",
                             "nce_custom_dist", "nce_log_uniform", "prelu_element", "row_conv", "row_conv_relu",
                             "stft_magnitude", "sync_batch_norm", "upsample_nearest_1d", *LEGACY_ONLY_QUANT,
                             # 3.3.1's PIR: equal_all's bool result declared float32; no CPU kernel of int64 ids
                             # in multiplex, nor of margin_cross_entropy (its grad refuses the softmax's dtype)
                             "equal_all", "multiplex_ids64", "margin_cross_entropy_arcface",
                             "margin_cross_entropy_cosface", "margin_cross_entropy_softmax",
                             # 3.3.1's PIR frobenius_norm of axes given as Tensors: "Axis contains duplicate dimensions"
                             "frobenius_norm_axes_tensors",
                             # 3.3.1's PIR at sizes declared -1: matrix_power's shape inference refuses them; the
                             # Python APIs of lu_solve, matrix_exp, householder_product and ormqr need static sizes;
                             # qr mode 'r' has no gradient
                             "dyn_matrix_power", "dyn_matrix_power_neg", "dyn_lu_solve", "dyn_matrix_exp",
                             "dyn_householder_product", "dyn_ormqr", "dyn_qr_r",
                             # 3.3.1's PIR StudentT hands paddle.static.nn.cond a Python bool
                             "StudentT_log_prob",
                             # 3.3.1's PIR declares their float32 Out like the int8 X
                             "dequantize_abs_max", "dequantize_abs_max_int16", "dequantize_log",
                             # paddle.incubate.layers take PIR values only in shuffle_batch and tdm_child; 3.3.1's
                             # PIR tdm_sampler fails in the cast of its parameters
                             "partial_sum", "partial_sum_to_end", "partial_concat", "partial_concat_from_end",
                             "tdm_sampler", "tdm_sampler_negatives_only", "batch_fc", "rank_attention",
                             "correlation", "fused_seqpool_cvm",
                             # mp_ops' c_split and c_softmax_with_cross_entropy append legacy ops in PIR mode;
                             # c_concat needs init_parallel_env; c_identity and mp_allreduce_sum have no CPU kernel
                             "c_split", "c_softmax_with_cross_entropy", "c_concat", "c_identity", "mp_allreduce_sum",
                             # paddle.distributed's reduce and scatter append legacy ops in PIR mode; broadcast's
                             # kernel has no communicator on one CPU process
                             "distributed.reduce", "distributed.scatter", "distributed.broadcast",
                             # the PIR sweep's rows Paddle 3.3.1 builds in no static mode (tools/coverage/pir_sweep.py)
                             *PIR_SWEEP_PADDLE_CANNOT,
                             # paddle.compat.max / min along a dim and SyncBatchNorm: GPU kernels only (their
                             # programs: tests/test_compat_ops.py); compat.equal writes equal_all (above)
                             "compat_max_dim", "compat_min_dim_keepdim", "sync_batch_norm_converted",
                             "compat_equal",
                             # PIR values carry no LoD: 3.3.1's pyramid_hash kernel crashes reading it
                             "search_pyramid_hash", "search_pyramid_hash_training"])


def test_every_emitted_op_has_a_row_or_a_reason():
    missing = [name for name in EMITTED if name not in TABLE and name not in UNMAPPED]
    assert not missing, f"PIR ops the coverage rows emit with neither a row nor a reason: {missing}"
    assert set(UNMAPPED) - set(IN_MODEL_FILES) <= set(EMITTED) and not set(UNMAPPED) & set(TABLE)


@pytest.mark.parametrize("name", sorted(n for n, r in TABLE.items() if r.special is None))
def test_a_row_names_slots_and_attributes_its_legacy_op_declares(name):
    row = TABLE[name]
    definition = OPS[row.legacy]
    slots = {o.slot for o in row.operands if o.slot} | {r.slot for r in row.results if r.slot}
    slots |= {slot for o in row.operands for slot in o.tensor_slots if slot} | set(row.extra_outputs)
    assert slots <= set(definition.inputs) | set(definition.outputs)
    attrs = {a.legacy for a in row.attrs if a.legacy} | {o.attr for o in row.operands if o.attr} | set(row.fixed)
    assert attrs <= set(definition.attrs)


def test_the_fixtures_use_every_row_the_coverage_rows_need():
    used = set()
    for case in LAYERS:
        used |= set(meta(case)["pir_ops"]) | set(meta(case)["pir_backward_ops"])
    for case_meta in PIR_DATA.glob("*/meta.json"):
        record = json.loads(case_meta.read_text())
        used |= set(record["pir_ops"]) | set(record.get("pir_backward_ops", []))
    assert set(EMITTED) & set(TABLE) <= used


@pytest.mark.parametrize("case", LAYERS)
def test_a_coverage_row_trains_to_paddles_gradients(case):
    assert_matches_paddle(train_and_run(load(case), case), case)


@pytest.mark.parametrize("case", LAYERS)
def test_gradcs_training_program_of_a_coverage_row_written_as_pir_gives_its_gradients(case):
    """Export of every op a row's program and gradc's backward of it hold (Paddle runs these files too:
    tools/run_pir_in_paddle.py)."""
    program = load(case)
    gradc.append_backward(program, "loss")
    data = serialize_pir(program, fetch=list(npz(case, "grads")))
    assert_matches_paddle(run_fetches(parse_pir(data), case), case)


def _constant_dtypes(document: bytes) -> dict[tuple[str, int], str]:
    """(op, operand position) -> the dtype of the pd_op.full(_int_array) constant the op reads there."""
    ops = json.loads(document)["program"]["regions"][0]["blocks"][0]["ops"]
    made = {result["%"]: result["TT"]["D"][0]["#"] for op in ops if op["#"] in ("1.full", "1.full_int_array")
            for result in op["O"]}
    return {(op["#"], k): made[operand["%"]] for op in ops for k, operand in enumerate(op.get("I", []))
            if isinstance(operand, dict) and operand.get("%") in made}


# Paddle's eye reads its sizes in any dtype (it writes float32 constants); gradc writes them as the int64 attribute.
# bincount's minlength and cumsum's axis are Scalars, read in any integer dtype: a row passing an int64 Tensor gets
# its constant folded into the attribute, which gradc writes as int32
SIZES_OF_ANY_DTYPE = {"1.eye", "1.bincount", "1.cumsum"}


@pytest.mark.parametrize("case", LAYERS)
def test_export_writes_constants_of_the_dtype_paddles_program_has(case):
    """A kernel may refuse a constant of another dtype (isclose's tolerances must be float64)."""
    theirs = _constant_dtypes(program_file(case).read_bytes())
    ours = _constant_dtypes(serialize_pir(load(case)))
    assert {key: dtype for key, dtype in ours.items() if key in theirs and key[0] not in SIZES_OF_ANY_DTYPE} == {
        key: theirs[key] for key in ours if key in theirs and key[0] not in SIZES_OF_ANY_DTYPE}


@pytest.mark.parametrize("case", LAYERS_WITH_BACKWARD)
def test_paddles_training_program_of_a_coverage_row_gives_its_gradients(case):
    program = load_pir(paddle_backward(case))
    assert_matches_paddle(run_fetches(program, case), case, paddles_program=True)


def test_an_op_without_a_legacy_counterpart_is_named_with_the_reason(monkeypatch):
    """Every op the coverage rows emit has a row or a reason; the ops here are stream waits gradc does not
    have (auto-parallel's c_wait_comm, c_wait_compute), one given a reason by the test and one with none, and a TensorRT
    engine's wrapper."""
    monkeypatch.setitem(UNMAPPED, "pd_op.c_wait_comm", "gradc has no streams to wait for")
    doc = json.loads((PIR_DATA / "mlp" / "forward.json").read_bytes())
    ops = doc["program"]["regions"][0]["blocks"][0]["ops"]
    relu = next(op for op in ops if op["#"] == "1.relu")
    relu["#"] = "1.c_wait_comm"
    with pytest.raises(gradc.FormatError, match=r"1 PIR op type\(s\) gradc cannot translate: pd_op.c_wait_comm "
                                                 r"\(first at region 0, block 0, op \d+ \(pd_op.c_wait_comm\): "
                                                 r"gradc has no streams to wait for\)$"):
        load_pir(json.dumps(doc).encode())
    relu["#"] = "1.tensorrt_engine"   # Paddle Inference's cached TensorRT wrapper program (a model file on GitHub)
    with pytest.raises(gradc.FormatError, match=r"pd_op.tensorrt_engine \(first at .*: it runs a TensorRT engine .*"
                                                 r"read the model it was built from\)$"):
        load_pir(json.dumps(doc).encode())
    relu["#"] = "1.c_wait_compute"
    with pytest.raises(gradc.FormatError, match=r"cannot translate: pd_op.c_wait_compute \(first at region 0, block 0, "
                                                 r"op \d+ \(pd_op.c_wait_compute\)\) \(a Paddle 3 PIR program"):
        load_pir(json.dumps(doc).encode())


def test_a_training_program_over_tensor_arrays_round_trips():
    """gradc's backward of nn.BiRNN's loops (while_grad over tensor arrays, their grads summed with
    add_n_array) written as PIR and read back gives Paddle's gradients."""
    case = "pir_layers/birnn_gru_cells"
    program = load(case)
    gradc.append_backward(program, "loss")
    data = serialize_pir(program, fetch=list(npz(case, "grads")))
    assert b'"1.add_n_array"' in data and b'"2.tuple_pop"' in data
    assert_matches_paddle(run_fetches(parse_pir(data), case), case)


def test_the_coverage_page_lists_every_emitted_op():
    """docs/pir-coverage.md (tools/pir_coverage_table.py) is regenerated with the record."""
    page = (PIR_DATA.parents[3] / "docs" / "pir-coverage.md").read_text()
    assert all(f"| `{name}` |" in page for name in EMITTED)
    assert f"with a table row: {len(set(EMITTED) & set(TABLE))};" in page

"""save_pir writes Paddle's PIR JSON: json -> gradc -> json -> gradc gives the same program and the same
numbers (Paddle itself runs these files: tools/run_pir_in_paddle.py)."""

import json

import numpy as np
import pytest

import gradc
from gradc.ir import AttrType
from gradc.pir import load_pir, parse_pir, save_pir, serialize_pir
from pir_fixtures import (
    INFERENCE,
    PIR_DATA,
    TRAINING,
    WITH_BACKWARD,
    assert_matches_paddle,
    detached_as_in_paddle,
    load,
    meta,
    npz,
    paddle_backward,
    run_fetches,
    run_inference,
    train_and_run,
)


def round_trip(case: str) -> gradc.Program:
    return parse_pir(serialize_pir(load(case)))


SPELLED_OTHERWISE = {   # translated cases whose ops export writes another way, computing the same
    "translated_moving_average_abs_max_scale": "a builtin.set_parameter mid-program is set at the end",
    "translated_box_coder_decode": "pd_op.assign_value is written as pd_op.assign_value_ into zeros",
}


@pytest.mark.parametrize("case", [case for case in TRAINING if "while" not in case and case not in SPELLED_OTHERWISE])
def test_round_trip_keeps_the_ops_and_vars(case):
    """(A while gains one assign per loop value each trip: importing copies the initial values into
    the loop vars, which keeps them intact for later readers.)"""
    first = load(case)
    again = round_trip(case)
    assert [op.type for op in again.global_block.ops] == [op.type for op in first.global_block.ops]
    for name, var in first.global_block.vars.items():
        if name in again.global_block.vars:
            copy = again.global_block.vars[name]
            assert (copy.shape, copy.dtype, copy.persistable, copy.is_parameter) == \
                   (var.shape, var.dtype, var.persistable, var.is_parameter), name


@pytest.mark.parametrize("case", TRAINING)
def test_round_trip_trains_to_paddles_gradients(case):
    assert_matches_paddle(train_and_run(round_trip(case), case), case)


@pytest.mark.parametrize("case", [case for case in TRAINING if meta(case)["params_grads"]])  # fc_plain has none
def test_a_compiled_training_program_round_trips_with_its_grad_ops(case):
    """gradc's backward written as pd_op.*_grad ops and read back runs to Paddle's loss and gradients."""
    program = load(case)
    gradc.append_backward(program, "loss", no_grad_set=detached_as_in_paddle(program))
    data = serialize_pir(program, fetch=list(npz(case, "grads")))
    assert b'_grad"' in data
    assert_matches_paddle(run_fetches(parse_pir(data), case), case)


@pytest.mark.parametrize("case", WITH_BACKWARD)
def test_paddles_training_program_round_trips(case):
    assert_matches_paddle(run_fetches(parse_pir(serialize_pir(load_pir(paddle_backward(case)))), case), case)


@pytest.mark.parametrize("case", INFERENCE)
def test_round_trip_of_an_inference_model_gives_paddles_output(case, tmp_path):
    save_pir(load(case), tmp_path / "model.json")
    again = load_pir(tmp_path / "model.json")
    np.testing.assert_allclose(run_inference(again, case), np.load(PIR_DATA / case / "expected.npy"),
                               rtol=1e-5, atol=1e-6)


def test_writing_is_deterministic_and_laid_out_as_paddle_writes():
    data = serialize_pir(load("mlp"))
    assert data == serialize_pir(load("mlp"))
    doc = json.loads(data)
    assert doc["base_code"] == {"magic": "pir", "version": 4, "trainable": True}
    ops = doc["program"]["regions"][0]["blocks"][0]["ops"]
    params = [op for op in ops if op["#"] == "p"]
    assert {op["A"][3] for op in params} == {"linear_0.w_0", "linear_0.b_0", "linear_1.w_0", "linear_1.b_0"}
    assert all(op["OA"] == [1, 0, 1] for op in params)
    matmul = next(op for op in ops if op["#"] == "1.matmul")
    assert [a["N"] for a in matmul["A"]] == ["transpose_x", "transpose_y"]
    ids = [op["O"]["%"] if op["#"] == "p" else r["%"] for op in ops for r in ([None] if op["#"] == "p" else op["O"])]
    assert ids == list(range(1, len(ids) + 1))


def test_constants_folded_on_import_are_operands_again():
    ops = json.loads(serialize_pir(load("cnn_bn")))["program"]["regions"][0]["blocks"][0]["ops"]
    pool = next(i for i, op in enumerate(ops) if op["#"] == "1.pool2d")
    kernel = next(op for op in ops if op["#"] == "1.full_int_array" and op["O"][0]["%"] == ops[pool]["I"][1]["%"])
    assert [a["AT"] for a in kernel["A"] if a["N"] == "value"] == [
        {"#": "0.a_array", "D": [{"#": "0.a_i64", "D": 2}, {"#": "0.a_i64", "D": 2}]}]


def test_fetch_adds_fetch_ops_named_after_the_vars():
    program = load("mlp")
    doc = json.loads(serialize_pir(program, fetch=["relu_0.tmp_0"]))
    fetches = [op for op in doc["program"]["regions"][0]["blocks"][0]["ops"] if op["#"] == "1.fetch"]
    assert [(a["N"], a["AT"]["D"]) for op in fetches for a in op["A"]] == [
        ("name", "loss"), ("col", 0), ("name", "relu_0.tmp_0"), ("col", 1)]


def test_control_flow_becomes_regions():
    doc = json.loads(serialize_pir(load("while_loop")))
    loop = next(op for op in doc["program"]["regions"][0]["blocks"][0]["ops"] if op["#"] == "1.while")
    body = loop["regions"][0]["blocks"][0]
    assert len(body["args"]) == len(loop["O"]) == len(loop["I"]) - 1
    assert body["ops"][-1]["#"] == "2.yield" and len(body["ops"][-1]["I"]) == len(loop["I"])
    ops = json.loads(serialize_pir(load("cond")))["program"]["regions"][0]["blocks"][0]["ops"]
    assert [op["#"] for op in ops].count("1.if") == 2 and "1.select_input" in [op["#"] for op in ops]


def test_every_op_without_an_export_is_listed_at_once():
    program = load("mlp")
    relu, mean = (next(op for op in program.global_block.ops if op.type == t) for t in ("relu", "reduce_mean"))
    relu.type, mean.type = "matmul", "flatten2"   # legacy v1 ops, which PIR has no op of
    with pytest.raises(gradc.ProgramError, match=r"cannot write as PIR: 2 op type.*: flatten2 "
                                                 r"\(first at block 0, op \d+ \(flatten2\)\); "
                                                 r"matmul \(first at block 0, op \d+ \(matmul\)\)"):
        serialize_pir(program)


def ops_in(doc) -> list:
    """Every op of a PIR document, nested regions included, outer before inner."""
    ops, stack = [], [doc["program"]["regions"][0]["blocks"][0]]
    while stack:
        for op in stack.pop(0)["ops"]:
            ops.append(op)
            stack.extend(block for region in op.get("regions", []) for block in region["blocks"])
    return ops


def test_control_flow_gradients_become_regions_over_cf_stacks():
    """What the forward of each branch or iteration computed is pushed onto a stack made at the top of the
    program, and popped by the grad region, as in Paddle's own PIR backward."""
    program = load("cond")
    gradc.append_backward(program, "loss")
    doc = json.loads(serialize_pir(program))
    top = [op["#"] for op in doc["program"]["regions"][0]["blocks"][0]["ops"]]
    assert top[:2] == ["2.stack_create", "2.stack_create"] and top.count("1.if") == 4
    names = [op["#"] for op in ops_in(doc)]
    assert names.count("2.tuple_push") == names.count("2.tuple_pop") == 2 and "1.select_output" in names
    program = load("while_loop")
    gradc.append_backward(program, "loss")
    names = [op["#"] for op in ops_in(json.loads(serialize_pir(program)))]
    assert names.count("1.while") == 2 and names.count("2.has_elements") == 2
    assert names.count("2.tuple_push") == names.count("2.tuple_pop") == 1


def test_a_legacy_broadcast_axis_becomes_unit_dims_on_y():
    """Legacy elementwise ops align Y from an axis (conv1d's bias at axis 1); PIR broadcasts numpy-style,
    so Y is unsqueezed first, and the program computes the same."""
    case = PIR_DATA.parent / "layers" / "conv1d"
    program = gradc.load(case / "forward.pb")
    add = next(op for op in program.global_block.ops if op.type == "elementwise_add")
    assert add.attrs["axis"] == 1
    loss = json.loads((case / "meta.json").read_text())["loss"]
    data = serialize_pir(program, fetch=[loss])
    assert b'"1.unsqueeze"' in data
    with np.load(case / "feed.npz") as feed, np.load(case / "params.npz") as params:
        scope = gradc.Scope()
        for name in params.files:
            scope[name] = params[name]
        (value,) = gradc.Executor().run(parse_pir(data), feed=dict(feed), fetch_list=[loss], scope=scope)
    np.testing.assert_allclose(value, np.load(case / "loss.npy"), rtol=1e-5, atol=1e-6)


def test_an_attribute_the_pir_op_cannot_express_is_refused():
    program = load("mlp")
    add = next(op for op in program.global_block.ops if op.type == "elementwise_add")
    add.set_attr("axis", 5)
    with pytest.raises(gradc.ProgramError, match=r"elementwise_add\): attribute axis=5 does not place Y \[8\] inside "
                                                 r"X \[4, 8\]"):
        serialize_pir(program)


def test_fill_zeros_like_is_full_like_of_zero():
    """Paddle 3.3.1 no longer registers fill_zeros_like; PIR's full_like of 0 computes it."""
    program = load("mlp")
    next(op for op in program.global_block.ops if op.type == "relu").type = "fill_zeros_like"
    data = serialize_pir(program)
    assert b'"1.full_like"' in data and b"fill_zeros_like" not in data
    zeros = [op for op in parse_pir(data).global_block.ops if op.type == "fill_any_like"]
    assert [op.attrs["value"] for op in zeros] == [0.0]


def test_a_gumbel_softmax_grad_of_another_temperature_is_refused():
    """Paddle's pd_op.gumbel_softmax_grad has no temperature and leaves out its 1/temperature factor."""
    program = gradc.load(PIR_DATA.parent / "layers" / "gumbel_softmax" / "forward.pb")
    next(op for op in program.global_block.ops if op.type == "gumbel_softmax").set_attr("temperature", 0.5)
    gradc.append_backward(program, json.loads((PIR_DATA.parent / "layers" / "gumbel_softmax" / "meta.json")
                                              .read_text())["loss"])
    with pytest.raises(gradc.ProgramError, match=r"attribute temperature=0.5 has no pd_op.gumbel_softmax_grad"):
        serialize_pir(program)


def _legacy_layer_op(row: str, op_type: str):
    program = gradc.load(PIR_DATA.parent / "layers" / row / "forward.pb")
    return program, next(op for op in program.global_block.ops if op.type == op_type)


def test_an_attribute_of_another_type_than_its_op_declares_is_refused():
    """A .pb may hold any wire type; export reads an attribute as the type the op declares (here an int)."""
    program, bincount = _legacy_layer_op("bincount", "bincount")
    bincount.set_attr("minlength", "zz", AttrType.STRING)
    with pytest.raises(gradc.ProgramError, match=r"cannot write as PIR: block 0, op \d+ \(bincount\): attribute "
                                                 r"'minlength' is STRING, but op 'bincount' defines it as INT"):
        serialize_pir(program)


def test_a_batch_size_like_str_value_that_is_no_number_is_refused():
    program, fill = _legacy_layer_op("fill_constant_batch_size_like_v1", "fill_constant_batch_size_like")
    fill.set_attr("str_value", "zz")
    with pytest.raises(gradc.ProgramError, match=r"fill_constant_batch_size_like.*str_value 'zz' is not a number"):
        serialize_pir(program)


def test_a_place_that_is_no_place_is_refused():
    """A PIR-only attribute a ``back`` hook passes on (fill_any_like's place) must be a place, or the file
    would be one gradc and Paddle refuse to read."""
    program = load("mlp")
    relu = next(op for op in program.global_block.ops if op.type == "relu")
    relu.type = "fill_any_like"
    relu.set_attr("place", "zz")
    with pytest.raises(gradc.ProgramError, match=r"\(fill_any_like\): attribute value .zz. does not fit PIR kind"):
        serialize_pir(program)


def test_a_legacy_slot_the_table_does_not_map_is_refused():
    program = load("mlp")
    reshape_like = next(op for op in program.global_block.ops if op.type == "reduce_mean")
    reshape_like.inputs["Extra"] = ["x"]
    with pytest.raises(gradc.ProgramError, match="input slot.*Extra have no counterpart"):
        serialize_pir(program)


LEGACY = {   # Paddle's legacy training programs (backward.pb), a PIR op each must become, and what it exercises
    "conv": ("1.matmul_grad", "fluid's fc: mul / mul_grad, which PIR spells matmul / matmul_grad over X flattened"),
    "layers/conv1d": ("1.unsqueeze", "a bias added at axis 1: Y unsqueezed, as PIR broadcasts numpy-style"),
    "layers/hsigmoid_loss": ("1.hsigmoid_loss_grad", "hsigmoid's W_Out, which names W itself"),
    "layers/cross_entropy_weight_constant": ("1.assign_value_", "assign_value's values as serialized Scalars"),
    "rnn/while_array": ("1.array_length", "lod_array_length of a tensor array a while loop fills"),
    "rnn/rnn_gru_cell_seq_init": ("1.sequence_mask", "sequence_mask of the sequence lengths"),
    "layers/row_conv": ("1.row_conv_grad", "row_conv's grad, which 3.3.1's PIR row_conv (no vjp) never makes"),
    "layers/moving_average_abs_max_scale": ("1.straight_through_estimator_grad",
                                            "its straight-through grad, which 3.3.1's PIR op (no vjp) never makes"),
    "layers/dequantize_linear_levels": ("1.dequantize_linear", "dequantize_linear, which 3.3.1's PIR runs wrongly"),
    "layers/pad_constant": ("1.pad_grad", "pad_grad, whose PIR op also reads x: a slice of out_grad stands in"),
    "layers/tril_diagonal": ("1.tril_grad", "tril_triu_grad of the lower triangle"),
    "layers/triu_diagonal": ("1.triu_grad", "tril_triu_grad of the upper triangle"),
    "layers/repeat_interleave_tensor": ("1.repeat_interleave_with_tensor_index_grad", "repeats given as a tensor"),
    # fluid 1.x ops as Paddle's legacy-to-PIR translator spells them (LoD inputs fed with their offsets)
    "layers/dynamic_lstm": ("1.lstm_grad", "dynamic_lstm over LoD sequences"),
    "layers/dynamic_gru": ("1.gru_grad", "dynamic_gru over LoD sequences"),
    "layers/gru_unit": ("1.gru_unit_grad", "gru_unit, its activations as ints"),
    "layers/sequence_conv": ("1.sequence_conv_grad", "sequence_conv's camel-case attributes"),
    "layers/lod_reset_y_lod": ("1.lod_reset_grad", "lod_reset taking the LoD of Y, then sequence_pool"),
    "layers/im2sequence": ("1.im2sequence_grad", "im2sequence"),
    "layers/reshape_v1_tensor": ("1.legacy_reshape_grad", "v1 reshape by a Shape tensor, its grad without Out"),
    "layers/fill_constant_batch_size_like_v1": ("1.full_batch_size_like", "fill_constant_batch_size_like"),
    "layers/fake_quant_moving_average": ("1.fake_quantize_dequantize_moving_average_abs_max_",
                                         "a quantizer updating its scale and state in place"),
    "layers/crf_decoding_lod": ("1.crf_decoding", "crf_decoding of LoD emissions"),
    "layers/lstm_text_classifier": ("1.unsqueeze", "v1 lookup_table: embedding and a squeeze, its grad of the "
                                                   "output grad unsqueezed"),
    "layers/sample_neighbors_all": ("1.graph_sample_neighbors", "neighbour sampling that takes every neighbour"),
    "layers/reindex_heter_graph": ("1.reindex_graph", "graph_reindex of two edge types' concatenated counts"),
}


@pytest.mark.parametrize("case", sorted(LEGACY))
def test_a_legacy_training_program_converts_to_pir(case):
    """`gradc convert train.pb train.json` of Paddle's own legacy training program, read back: Paddle's loss
    and gradients (Paddle 3.3.1 runs these files too: tools/run_legacy_as_pir_in_paddle.py)."""
    directory = PIR_DATA.parent / case
    program = gradc.load(directory / "backward.pb")
    loss = json.loads((directory / "meta.json").read_text())["loss"]
    with np.load(directory / "grads.npz") as archive:
        grads = {name: archive[name] for name in archive.files}
    data = serialize_pir(program, fetch=[loss, *grads])
    assert f'"{LEGACY[case][0]}"'.encode() in data
    again = parse_pir(data)
    scope = gradc.Scope()
    if (directory / "params.npz").exists():
        with np.load(directory / "params.npz") as params:
            for name in params.files:
                scope[name] = params[name]
    lods = json.loads((directory / "meta.json").read_text()).get("lods", {})
    with np.load(directory / "feed.npz") as feed:
        inputs = {name: gradc.LoDTensor(feed[name], lods[name]) if name in lods else feed[name] for name in feed.files}
        values = gradc.Executor().run(again, feed=inputs, fetch_list=[loss, *grads], scope=scope)
    np.testing.assert_allclose(values[0], np.load(directory / "loss.npy"), rtol=1e-5, atol=1e-6)
    for (name, expected), value in zip(grads.items(), values[1:]):
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_pushed_value_no_pop_reads_is_not_kept():
    """Paddle's nested-cond training program pushes the inner cond's inputs, its max's empty axis list among them,
    and pops them unread: gradc keeps no array for those (Paddle cannot copy an empty tensor into an array)."""
    program = load_pir(paddle_backward("pir_layers/cond_nested"))
    written = [op.input("X")[0] for block in program.blocks for op in block.ops if op.type == "write_to_array"]
    made = {name for block in program.blocks for op in block.ops for name in op.output_names()
            if op.type == "fill_constant" and op.attrs.get("shape") == [0]}
    assert written and not made & set(written)
    assert all(program.global_block.find_var(name) is None or program.global_block.find_var(name).shape != [0]
               for name in written)


def test_an_empty_int_constant_is_written_as_paddle_makes_one():
    program = gradc.Program()
    program.global_block.create_var("none", [0], gradc.VarType.INT64)
    program.global_block.append_op("fill_constant", {}, {"Out": ["none"]},
                                   {"shape": [0], "dtype": int(gradc.VarType.INT64), "value": 0.0, "str_value": "0"})
    data = serialize_pir(program, fetch=["none"])
    assert "1.full_int_array" in {op["#"] for op in json.loads(data)["program"]["regions"][0]["blocks"][0]["ops"]}
    got, = gradc.Executor().run(parse_pir(data), fetch_list=["none"])
    assert got.dtype == np.int64 and got.shape == (0,)


def test_a_value_only_one_branch_writes_gets_a_placeholder_of_unknown_dims():
    """The false branch of pd_op.if yields a stand-in for what only the true branch writes: with dims known only at
    run time, dy2static's own (a 0-d full typed as the value), as PaddleOCR's SAR recognizer needed."""
    from programs import Net
    net = Net("float32")
    x = net.data("x", [-1, 3])
    out = net.tmp([-1, 3], prefix="out")
    pred = net.op("fill_constant", {}, {"shape": [], "dtype": int(gradc.VarType.BOOL), "value": 1.0})
    with net.sub_block() as body:
        net.assign(net.op("scale", {"X": x}, {"scale": 2.0}), out)
    op = net.block.append_op("conditional_block", {"Cond": [pred], "Input": [x]},
                             {"Out": [out], "Scope": [net.scopes()]}, {"is_scalar_condition": True})
    op.set_attr("sub_block", body.idx, AttrType.BLOCK)
    doc = json.loads(serialize_pir(net.program, fetch=[out]))
    branch = next(op for op in doc["program"]["regions"][0]["blocks"][0]["ops"] if op["#"] == "1.if")
    (stand_in,) = [op for op in branch["regions"][1]["blocks"][0]["ops"] if op["#"] == "1.full"]
    assert stand_in["A"][0]["AT"]["D"] == [] and stand_in["O"][0]["TT"]["D"][1] == [-1, 3]
    feed = {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}
    (value,) = gradc.Executor().run(parse_pir(json.dumps(doc).encode()), feed, [out], gradc.Scope())
    np.testing.assert_array_equal(value, 2 * feed["x"])


def test_a_one_hot_of_another_dtype_is_paddles_float32_one_cast():
    """pd_op.one_hot writes float32 whatever the program's dtype: a float64 one_hot_v2 (a program widened to float64,
    PaddleOCR's attention decoders) is written as that and a cast, and reading PIR back names one_hot's dtype."""
    from programs import Net
    net = Net("float64")
    label = net.data("label", [4], gradc.VarType.INT64)
    hot = net.op("one_hot_v2", {"X": label}, {"depth": 3, "dtype": int(gradc.VarType.FP64)})
    ops = json.loads(serialize_pir(net.program, fetch=[hot]))["program"]["regions"][0]["blocks"][0]["ops"]
    names = [op["#"] for op in ops]
    assert names.index("1.cast") == names.index("1.one_hot") + 1
    program = parse_pir(serialize_pir(net.program, fetch=[hot]))
    assert {op.attrs["dtype"] for op in program.global_block.ops if op.type == "one_hot_v2"} == {gradc.VarType.FP32}
    (value,) = gradc.Executor().run(program, {"label": np.array([0, 2, 1, 2])}, [hot], gradc.Scope())
    assert value.dtype == np.float64
    np.testing.assert_array_equal(value, np.eye(3)[[0, 2, 1, 2]])


def test_a_loop_bodys_xshape_that_its_grad_reads_is_saved_as_the_x_it_describes():
    """A loop body's unsqueeze2 and squeeze2 leave XShape vars that their grads read (PaddleDetection's R-CNN heads):
    PIR has no XShape value, so each run pushes the X it describes, and the round trip trains to gradc's gradients."""
    from programs import Net
    net = Net("float64")
    w = net.param("w", [2, 3])
    i, n = net.constant(0), net.constant(3)
    h = net.copy(w)

    def body(i, h):
        wide = net.op("unsqueeze2", {"X": h}, {"axes": [0]})
        return [net.increment(i), net.op("squeeze2", {"X": net.tanh(wide)}, {"axes": [0]})]

    net.while_loop(lambda i, h: net.less_than(i, n), body, [i, h])
    loss = net.mean(net.elementwise_mul(h, w))
    names = [op["#"] for op in ops_in(_trains_as_before_after_a_round_trip(net, loss, seed=0))]
    assert names.count("2.tuple_push") == names.count("2.tuple_pop") == 1


def test_a_loop_bodys_reshape_grad_of_a_value_of_unknown_dims_reads_back():
    """Reading back a pd_op.reshape_grad whose x has unknown dims (Tacotron2's decoder step reshapes a value read from
    an array): its legacy grad's XShape, which no constant can give, is the one a reshape2 of x writes as it runs."""
    from programs import Net
    net = Net("float64")
    w = net.param("w", [2, 3])
    i, n = net.constant(0), net.constant(3)
    h = net.copy(w)
    net.block.var(h).shape = [-1, 3]

    def body(i, h):
        wide = net.op("reshape2", {"X": h}, {"shape": [1, -1, 3]})
        return [net.increment(i), net.op("reshape2", {"X": net.tanh(wide)}, {"shape": [-1, 3]})]

    net.while_loop(lambda i, h: net.less_than(i, n), body, [i, h])
    loss = net.mean(net.elementwise_mul(h, w))
    names = [op["#"] for op in ops_in(_trains_as_before_after_a_round_trip(net, loss, seed=0))]
    assert names.count("1.reshape_grad") == 2


@pytest.mark.parametrize("taken", [True, False])
def test_a_tensor_array_a_cond_reads_gets_zeros_as_an_array_where_the_branch_did_not_run(taken):
    """A cond whose branch reads a tensor array (PaddleDetection's Cascade R-CNN picks its RoIs from a list so):
    where the branch did not run, the array's grad is pd_op.create_array_like of 0 (Paddle's full_like refuses an
    array), and the round trip trains to gradc's gradients."""
    from gradcheck_cases.tensor_array import array, read, write
    from programs import Net
    net = Net("float64")
    w = net.param("w", [2, 3])
    a = write(net, net.scale(w, scale=3.0), net.constant(0), array(net, w))
    pred = net.op("fill_constant", {}, {"shape": [], "dtype": int(gradc.VarType.BOOL), "value": float(taken)})
    out = net.cond(pred, lambda: net.tanh(read(net, a, net.constant(0))), lambda: net.scale(w, scale=2.0))
    loss = net.mean(net.elementwise_mul(out, w))
    assert "1.create_array_like" in [op["#"] for op in ops_in(_trains_as_before_after_a_round_trip(net, loss, seed=1))]


def _trains_as_before_after_a_round_trip(net, loss: str, seed: int) -> dict:
    """Differentiate ``net`` (parameter w [2, 3]) for ``loss``, write it as PIR and read it back: the loss and w's
    gradient as before. The written document, for the test to look into."""
    gradc.append_backward(net.program, loss)
    w_value = np.random.default_rng(seed).standard_normal((2, 3))

    def run(program):
        scope = gradc.Scope()
        scope["w"] = w_value.copy()
        return gradc.Executor().run(program, {}, [loss, "w@GRAD"], scope)

    expected = run(net.program.clone())
    doc = json.loads(serialize_pir(net.program, fetch=[loss, "w@GRAD"]))
    for value, reference in zip(run(parse_pir(json.dumps(doc).encode())), expected):
        np.testing.assert_allclose(value, reference, rtol=1e-12)
    return doc

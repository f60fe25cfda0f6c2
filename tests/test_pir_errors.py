"""Bad PIR input gives one FormatError that names where (region/block/op index, PIR op name) and what;
never another exception; huge or deeply nested files are refused without exhausting memory or stack."""

import copy
import json
import re

import numpy as np
import pytest

import gradc
from gradc import opdef
from gradc.ir import AttrType
from gradc.limits import limited
from gradc.pir import load_pir
from gradc.pir.reader import read_module
from pir_fixtures import paddle_backward, program_file

MLP = json.loads(program_file("mlp").read_bytes())
WHILE = json.loads(program_file("while_loop").read_bytes())


def ops_of(doc) -> list:
    return doc["program"]["regions"][0]["blocks"][0]["ops"]


def index_of(doc, name: str) -> int:
    return next(i for i, op in enumerate(ops_of(doc)) if op["#"] == name)


def fails(doc_or_bytes, match: str):
    data = doc_or_bytes if isinstance(doc_or_bytes, bytes) else json.dumps(doc_or_bytes).encode()
    with pytest.raises(gradc.FormatError, match=match) as info:
        load_pir(data)
    return str(info.value)


def edited(doc, edit):
    doc = copy.deepcopy(doc)
    edit(doc)
    return doc


def test_truncated_json():
    fails(program_file("mlp").read_bytes()[:500], r"not valid JSON: .*char 500")


def test_bytes_that_are_not_text():
    fails(b'{"base_code": "\xff\xfe"}', "not UTF-8")


def test_unknown_magic_is_named():
    fails(edited(MLP, lambda d: d["base_code"].update(magic="xir")), r"magic is 'xir', not 'pir'")


@pytest.mark.parametrize("version", [0, 5, "4", None, True])
def test_unknown_version_is_named(version):
    fails(edited(MLP, lambda d: d["base_code"].update(version=version)),
          rf"PIR version {version!r} is not one gradc reads \(known: 1, 2, 3, 4")


def test_program_without_its_one_region():
    fails(edited(MLP, lambda d: d["program"].update(regions=[])), "exactly one region")


def test_dangling_value_id_names_the_op():
    position = index_of(MLP, "1.relu")
    doc = edited(MLP, lambda d: ops_of(d)[position]["I"][0].update({"%": 999}))
    fails(doc, rf"region 0, block 0, op {position} \(pd_op.relu\): operand 0 refers to %999, which no earlier op")


def test_dangling_value_id_inside_a_loop_body_names_the_nesting():
    loop = index_of(WHILE, "1.while")

    def edit(d):
        body = ops_of(d)[loop]["regions"][0]["blocks"][0]["ops"]
        body[2]["I"][0]["%"] = 12345
    fails(edited(WHILE, edit), rf"op {loop} \(pd_op.while\) > region 0, block 0, op 2 \(pd_op.matmul\): .*%12345")


def test_a_value_used_outside_the_block_that_defines_it():
    loop = index_of(WHILE, "1.while")
    inner_id = ops_of(WHILE)[loop]["regions"][0]["blocks"][0]["ops"][1]["O"][0]["%"]
    mean = index_of(WHILE, "1.mean")
    fails(edited(WHILE, lambda d: ops_of(d)[mean]["I"][0].update({"%": inner_id})),
          rf"op {mean} \(pd_op.mean\): operand 0 refers to %{inner_id}")


def test_unknown_type_names_the_op_and_result():
    position = index_of(MLP, "1.relu")
    doc = edited(MLP, lambda d: ops_of(d)[position]["O"][0]["TT"].update({"#": "0.t_quaternion"}))
    fails(doc, rf"op {position} \(pd_op.relu\), result 0: unknown type '0.t_quaternion'")


def test_unknown_element_type():
    position = index_of(MLP, "1.relu")
    doc = edited(MLP, lambda d: ops_of(d)[position]["O"][0]["TT"]["D"][0].update({"#": "0.t_f7"}))
    fails(doc, r"unknown element type 't_f7'")


def test_unknown_attribute_kind_names_the_attribute():
    position = index_of(MLP, "1.matmul")
    doc = edited(MLP, lambda d: ops_of(d)[position]["A"][0]["AT"].update({"#": "0.a_tensor_view"}))
    fails(doc, rf"op {position} \(pd_op.matmul\): attribute 'transpose_x': unknown attribute kind '0.a_tensor_view'")


def test_attribute_data_of_the_wrong_shape():
    position = index_of(MLP, "1.matmul")
    doc = edited(MLP, lambda d: ops_of(d)[position]["A"][0]["AT"].update({"D": "no"}))
    fails(doc, r"attribute 'transpose_x': attribute kind a_bool cannot hold 'no'")


def test_value_defined_twice():
    first, second = index_of(MLP, "1.relu"), index_of(MLP, "1.data")
    doc = edited(MLP, lambda d: ops_of(d)[first]["O"][0].update({"%": ops_of(d)[second]["O"][0]["%"]}))
    fails(doc, rf"op {first} \(pd_op.relu\), result 0: value %\d+ is defined twice")


def test_every_unmapped_op_type_is_listed_at_once():
    relu, mean = index_of(MLP, "1.relu"), index_of(MLP, "1.mean")

    def edit(d):
        ops_of(d)[relu]["#"] = "1.no_such_op"
        ops_of(d)[mean]["#"] = "3.my_custom_op"
    message = fails(edited(MLP, edit), "2 PIR op type")
    assert f"custom_op.my_custom_op (first at region 0, block 0, op {mean} (custom_op.my_custom_op))" in message
    assert f"pd_op.no_such_op (first at region 0, block 0, op {relu} (pd_op.no_such_op))" in message


def test_an_op_with_the_wrong_operand_count_for_its_row():
    position = index_of(MLP, "1.relu")
    doc = edited(MLP, lambda d: ops_of(d)[position]["I"].append(ops_of(d)[position]["I"][0]))
    fails(doc, rf"op {position} \(pd_op.relu\): has 2 operands and 1 results; gradc's table expects 1 \(x\)")


def test_a_folded_operand_that_is_not_a_constant(monkeypatch):
    """pd_op.mean's axis becomes legacy attribute dim: a constant, or (where the legacy op lets a var give it)
    the var of a computed value. An op that takes no var there refuses a computed value."""
    monkeypatch.setattr(opdef.get("reduce_mean"), "tensor_attrs", frozenset())
    fails(_mean_axis_from_data(), rf"op {index_of(MLP, '1.mean')} \(pd_op.mean\): operand 'axis' must be a constant "
                                  r".* attribute 'dim', but it comes from pd_op.data")


def test_a_computed_operand_becomes_a_tensor_valued_attribute():
    mean = next(op for op in load_pir(json.dumps(_mean_axis_from_data()).encode()).global_block.ops
                if op.type == "reduce_mean")
    assert mean.attr_types["dim"] == AttrType.VAR and mean.var_attrs == ("dim",) and "reduce_all" not in mean.attrs


def _mean_axis_from_data():
    mean = index_of(MLP, "1.mean")
    data_id = ops_of(MLP)[index_of(MLP, "1.data")]["O"][0]["%"]
    return edited(MLP, lambda d: ops_of(d)[mean]["I"][1].update({"%": data_id}))


@pytest.mark.parametrize("values, made_by", [([3, 1, 4], "assign_value"), ([2, 2], "fill_constant"),
                                             ([], "fill_constant")])
def test_a_constant_int_list_read_as_a_tensor_is_made(values, made_by):
    """Legacy ops take int lists as attributes; one read as a tensor (a cf stack push of Paddle's nested-cond
    training program) is made by a legacy op."""
    last_mean, at = len(ops_of(MLP)) - 2, index_of(MLP, "1.full_int_array")
    int_array = ops_of(MLP)[at]["O"][0]["%"]

    def edit(doc):
        ops_of(doc)[last_mean]["I"][0].update({"%": int_array})
        value = next(attr for attr in ops_of(doc)[at]["A"] if attr["N"] == "value")
        value["AT"]["D"] = [{"#": "0.a_i64", "D": v} for v in values]
    program = load_pir(json.dumps(edited(MLP, edit)).encode())
    read = next(op for op in reversed(program.global_block.ops) if op.type == "reduce_mean").input("X")[0]
    maker = next(op for op in program.global_block.ops if read in op.output_names())
    assert maker.type == made_by
    made = gradc.Program()
    made.global_block.add_var(program.global_block.var(read).copy())
    made.global_block.ops.append(maker)
    got, = gradc.Executor().run(made, fetch_list=[read])
    assert got.dtype == np.int64 and got.tolist() == values


def test_a_special_op_with_missing_attributes():
    data = index_of(MLP, "1.data")
    doc = edited(MLP, lambda d: ops_of(d)[data].update(A=[]))
    fails(doc, rf"op {data} \(pd_op.data\): attribute 'name' must be str, got no such attribute")


def test_a_file_over_the_size_limit_is_refused_before_parsing():
    with pytest.raises(gradc.FormatError, match="more than the 100 bytes"):
        read_module(program_file("mlp").read_bytes(), "big.json", max_bytes=100)


def test_the_size_limit_follows_the_memory_limit():
    """Parsed JSON takes up to ~25 times its text: a file is refused when that could pass --max-memory."""
    data = program_file("mlp").read_bytes()
    with limited(max_bytes=32 * (len(data) - 1)):
        with pytest.raises(gradc.FormatError, match=rf"{len(data):,} bytes is more than the {len(data) - 1:,} bytes "
                                                     r"gradc reads as PIR JSON \(parsing .*--max-memory"):
            load_pir(data)
    with limited(max_bytes=32 * len(data)):
        assert load_pir(data).global_block.ops


def test_deeply_nested_json_is_refused():
    fails(b'{"base_code": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", "nested too deeply")


def test_deeply_nested_regions_are_refused():
    cond = ops_of(MLP)[index_of(MLP, "1.data")]["O"][0]["%"]
    yield_op = {"#": "2.yield", "I": [], "O": [], "A": []}
    ops = [yield_op]
    for _ in range(80):   # if inside if inside if ...
        branch = [{"#": "r", "blocks": [{"#": "b", "args": [], "ops": body}]} for body in (ops, [yield_op])]
        ops = [{"#": "1.if", "I": [{"%": cond}], "O": [], "A": [], "regions": branch}, yield_op]
    doc = edited(MLP, lambda d: ops_of(d).append(ops[0]))
    fails(doc, r"op \d+ \(pd_op.if\)( > region 0, block 0, op 0 \(pd_op.if\)){63} > region 0, block 0: regions "
               r"nested more than 64 deep")


def _mutations(doc):
    """Every op with each of its keys deleted, or replaced by a value of the wrong type."""
    for position, op in enumerate(ops_of(doc)):
        for key in list(op):
            for replacement in (None, 7, "x", [None], {"#": 3}):
                yield position, key, replacement


@pytest.mark.parametrize("position, key, replacement", list(_mutations(MLP)))
def test_corrupt_op_fields_give_format_errors_only(position, key, replacement):
    doc = copy.deepcopy(MLP)
    if replacement is None:
        del ops_of(doc)[position][key]
    else:
        ops_of(doc)[position][key] = replacement
    try:
        load_pir(json.dumps(doc).encode())
    except gradc.FormatError as exc:
        assert "region 0, block 0" in str(exc) or "PIR op type" in str(exc)


def _backward_doc(case: str) -> dict:
    return json.loads(paddle_backward(case))


def _all_ops(doc) -> list:
    found, stack = [], [doc["program"]["regions"][0]["blocks"][0]]
    while stack:
        for op in stack.pop()["ops"]:
            found.append(op)
            stack.extend(b for r in op.get("regions", []) for b in r["blocks"])
    return found


def test_a_pop_from_something_that_is_not_a_stack():
    doc = _backward_doc("while_loop")
    ops = _all_ops(doc)
    pop = next(op for op in ops if op["#"] == "2.tuple_pop")
    pop["I"][0] = {"%": next(op for op in ops if op["#"] == "1.full")["O"][0]["%"]}
    fails(doc, r"op \d+ \(cf.tuple_pop\): operand 0 is not a stack made by cf.stack_create")


def test_a_stack_pushed_tuples_of_different_sizes():
    doc = _backward_doc("cond")
    pushes = [op for op in _all_ops(doc) if op["#"] == "2.tuple_push"]
    pushes[1]["I"][0] = pushes[0]["I"][0]   # both branches push onto the first branch's stack
    fails(doc, r"op \d+ \(cf.stack_create\): its stack is pushed tuples of different sizes")


def test_a_transpose_grad_whose_perm_is_no_permutation():
    doc = _backward_doc("transformer")
    grad = next(op for op in _all_ops(doc) if op["#"] == "1.transpose_grad")
    next(a for a in grad["A"] if a["N"] == "perm")["AT"]["D"] = [{"#": "0.a_i32", "D": 0}] * 4
    fails(doc, r"op \d+ \(pd_op.transpose_grad\): attribute 'perm' must be a permutation, got \[0, 0, 0, 0\]")


@pytest.mark.parametrize("name, value, shown", [("mkldnn_data_type", "bfloat16", "'bfloat16'"),
                                               ("fused_output_scale", 0.5, "0.5")])
def test_an_onednn_fc_that_fuses_more_than_fc(name, value, shown):
    """The translator writes legacy fc as onednn_op.fc; one that computes in bfloat16 or scales its output is no
    legacy fc (an activation it fuses becomes the op after it: tests/test_onednn_pir.py; int8 is oneDNN's int8 fc:
    tests/test_onednn_int8.py)."""
    def fuse(doc):
        fc = ops_of(doc)[index_of(doc, "onednn_op.fc")]
        next(a for a in fc["A"] if a["N"] == name)["AT"]["D"] = value
    fails(edited(json.loads(program_file("translated_fc_plain").read_bytes()), fuse),
          rf"\(onednn_op\.fc\): attribute '{name}' = {shown} fuses more than fc")


def test_a_v1_reshape_whose_shape_list_mixes_tensors_of_several_values():
    def two_shape_tensors(doc):
        combine = ops_of(doc)[index_of(doc, "0.combine")]
        combine["I"] *= 2
        combine["O"][0]["TT"]["D"] *= 2
    fails(edited(json.loads(program_file("translated_reshape_v1_tensor").read_bytes()), two_shape_tensors),
          r"\(pd_op\.legacy_reshape\): the shape list mixes tensors of several values \('shape' has shape \[3\]\)")


def _layer_op(case: str, name: str, edit):
    """The PIR file of coverage row ``case`` with ``edit`` applied to its first op ``name``."""
    def at_op(doc):
        edit(next(op for op in ops_of(doc) if op["#"] == name))
    return edited(json.loads(program_file(f"pir_layers/{case}").read_bytes()), at_op)


def test_an_attribute_of_another_kind_is_named_before_a_hook_reads_it():
    """pd_op.any's hook reads axis as a list (PIR's empty list meaning every axis): an a_i32 there is refused."""
    def axis_as_int(op):
        next(a for a in op["A"] if a["N"] == "axis")["AT"] = {"#": "0.a_i32", "D": 1}
    fails(_layer_op("any", "1.any", axis_as_int), r"op \d+ \(pd_op.any\): attribute 'axis' is a_i32, not a list")


def test_a_unique_of_another_index_dtype_is_refused_when_checked():
    """unique's hook types the index results by its dtype; one that is no index dtype is left to unique's check."""
    def float_indices(op):
        next(a for a in op["A"] if a["N"] == "dtype")["AT"] = {"#": "0.a_dtype", "D": "float32"}
    program = load_pir(json.dumps(_layer_op("unique", "1.unique", float_indices)).encode())
    assert any(re.search(r"unique dtype 5 is not int32 \(2\) or int64 \(3\)", line) for line in gradc.verify(program))


def test_a_unique_without_its_dtype_takes_the_legacy_default():
    def drop_dtype(op):
        op["A"] = [a for a in op["A"] if a["N"] != "dtype"]
    program = load_pir(json.dumps(_layer_op("unique", "1.unique", drop_dtype)).encode())
    unique = next(op for op in program.global_block.ops if op.type == "unique")
    assert {program.global_block.find_var(n).dtype for n in unique.output("Index")} == {gradc.VarType.INT64}


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_folded_int_constant_that_is_not_finite(value):
    """bincount's minlength comes from a pd_op.full; NaN or inf is no int to fold into the attribute."""
    doc = json.loads(program_file("pir_layers/bincount").read_bytes())
    bincount = ops_of(doc)[index_of(doc, "1.bincount")]
    made = {op["O"][0]["%"]: op for op in ops_of(doc) if op["#"] == "1.full"}
    minlength = made[bincount["I"][-1]["%"]]
    next(a for a in minlength["A"] if a["N"] == "value")["AT"]["D"] = value
    fails(doc, rf"\(pd_op.bincount\): operand 'minlength' must hold finite numbers for attribute 'minlength', "
               rf"not \[{value}\]")

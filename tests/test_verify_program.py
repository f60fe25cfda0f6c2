"""gradc.verify / gradc verify: every problem at once, each check catching what it is for, and not one false
alarm on Paddle's own programs (every .pb, .pdmodel and PIR .json fixture, forward and backward)."""


import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, data_files
from gradc.errors import ProgramError
from gradc.layers import ProgramBuilder
from gradc.verify_shapes import check_shapes


def test_no_false_alarm_on_any_paddle_program():
    programs = data_files(".pb", ".pdmodel") + [
        path for path in data_files(".json", under=DATA / "pir") if path.name != "meta.json"]
    assert len(programs) > 1000
    alarms = {str(path): problems for path in programs if (problems := gradc.verify(gradc.load(path)))}
    assert not alarms, list(alarms.items())[:3]


def _mlp():
    return gradc.load(DATA / "mlp" / "backward.pb")


def test_a_var_rewritten_in_place_with_another_shape_is_checked_at_each_shape():
    # Paddle's Dirac initializer: w flattened in place, ones scattered into it, reshaped back to its declaration
    program = gradc.load(DATA / "initializers" / "dirac_legacy" / "startup.pb")
    assert gradc.verify(program) == []
    del program.global_block.ops[-1]   # without the reshape back, the last writer leaves w off its declaration
    assert gradc.verify(program) == ["block 0, op 4 (scatter): output 'w' is declared with shape [16, 3, 3, 3], but "
                                     "the inputs give [432] [inputs: Ids=scatter_index_0[3], "
                                     "Updates=scatter_value_0[3], X=w[432]]"]


def test_a_loop_var_that_grows_each_iteration_is_declared_as_the_loop_starts():
    """A decoding loop's cache, concatenated a step at a time, which Paddle declares with its first shape (the legacy
    beam search fixture's, tests/data/paddle/generation): the body reads its dims as unknown; a body-local var whose
    declaration no iteration gives is still a problem."""
    from programs import Net
    net = Net()
    i, n, cache = net.constant(0), net.constant(4), net.constant(0.0, (2, 0), gradc.ir.VarType.FP64)

    def grow(i, cache):
        step = net.constant(1.0, (2, 1), gradc.ir.VarType.FP64)
        return [net.increment(i), net.op("concat", {"X": [cache, step]}, {"axis": 1})]

    net.while_loop(lambda i, cache: net.less_than(i, n), grow, [i, cache])
    assert gradc.verify(net.program) == []
    body = net.program.blocks[1]
    body.var(next(op.output("Out")[0] for op in body.ops if op.type == "fill_constant")).shape = [2, 3]
    assert [problem.split(":")[0] for problem in gradc.verify(net.program)] == ["block 1, op 0 (fill_constant)"]


def test_every_problem_is_reported_not_only_the_first():
    program = _mlp()
    block = program.global_block
    block.ops[0].inputs["X"] = ["nowhere"]                      # undeclared
    block.ops[3].set_attr("x_num_col_dims", "one", gradc.ir.AttrType.STRING)   # an attribute of the wrong kind
    block.vars["mean_0.tmp_0"].shape = [7]                      # inference disagrees (nobody infers from it)
    block.vars["fc_0.w_0@GRAD"].dtype = gradc.VarType.FP64      # so does the dtype of a final grad
    problems = gradc.verify(program)
    assert len(problems) == 4, problems
    assert "block 0, op 0 (mul) reads var 'nowhere' (slot X), which is not declared" in problems[0]
    assert "block 0, op 3 (mul): attribute 'x_num_col_dims' is STRING, but op 'mul' defines it as INT" in problems[1]
    assert "op 6 (reduce_mean): output 'mean_0.tmp_0' is declared with shape [7], but the inputs give []" in problems[2]
    assert "op 14 (mul_grad): output 'fc_0.w_0@GRAD' is declared float64, but the inputs give float32" in problems[3]
    with pytest.raises(ProgramError, match="x_num_col_dims"):   # the raising check still stops at the first
        check_shapes(program)


def test_read_before_write():
    program = _mlp()
    block = program.global_block
    block.ops[1], block.ops[2] = block.ops[2], block.ops[1]     # relu now reads fc_0.tmp_1 before it is written
    assert gradc.verify(program) == [
        "block 0, op 1 (relu) reads var 'fc_0.tmp_1' (slot X) before any op writes it, and it is neither "
        "persistable nor fed; block 0, op 2 (elementwise_add) writes it"]


def test_unreachable_block():
    program = gradc.load(DATA / "cond" / "forward.pb")
    program.global_block.ops[2].set_attr("sub_block", 2, gradc.ir.AttrType.BLOCK)   # both conds run block 2
    problems = gradc.verify(program)
    assert ("block 1 (parent 0, 3 ops) never runs: no op that block 0 runs, directly or through other blocks, "
            "names it in a block attribute") in problems


def test_the_scratch_blocks_paddles_recompute_leaves_are_not_a_problem():
    """Paddle's RecomputeOptimizer builds each segment in a block no op runs and copies its ops into block 0."""
    program = gradc.load(DATA / "recompute" / "train.pb")
    assert len(program.blocks) == 3 and gradc.verify(program) == []
    program.blocks[1].ops[0].inputs["X"] = ["x"]   # no longer a copy: a block of its own that never runs
    assert any(p.startswith("block 1 (parent 0, 14 ops) never runs") for p in gradc.verify(program))


def test_lost_gradient_contribution():
    program = gradc.load(DATA / "shared_param" / "backward.pb")
    block = program.global_block
    summed = next(i for i, op in enumerate(block.ops) if op.type == "sum")
    renamed = block.ops[summed].input("X")
    for op in block.ops:   # the partial grads written straight to the final name, the sum dropped
        for slot, args in op.outputs.items():
            op.outputs[slot] = [block.ops[summed].output("Out")[0] if a in renamed else a for a in args]
    final = block.ops[summed].output("Out")[0]
    del block.ops[summed]
    problems = gradc.verify(program)
    assert len(problems) == len(renamed) - 1 and all(f"writes '{final}', which" in p for p in problems), problems
    assert "that gradient contribution is lost" in problems[0]


def test_cli_lists_problems_and_compile_verifies(tmp_path):
    broken = _mlp()
    broken.global_block.ops[0].inputs["X"] = ["nowhere"]
    broken.global_block.vars["mean_0.tmp_0"].shape = [7]
    path = tmp_path / "broken.pb"
    gradc.save(broken, path)
    result = gradc_cli("verify", DATA / "mlp" / "backward.pb", path)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == f"{DATA / 'mlp' / 'backward.pb'}: ok (1 block(s), 15 ops)"
    assert len(result.stdout.splitlines()) == 3
    assert result.stderr.strip() == f"gradc: error: problems found in {path} (2)"
    compiled = gradc_cli("compile", DATA / "cond" / "forward.pb", "-o", tmp_path / "train.pb")
    assert compiled.returncode == 0 and gradc_cli("verify", "-q", tmp_path / "train.pb").stdout == ""


def test_verify_names_the_op_types_it_could_not_check(tmp_path):
    """An op type gradc does not know (a Paddle custom op) has no definition to check its slots and shapes against:
    verify says so beside its ok, in text and JSON, instead of calling it checked."""
    program = _mlp()
    block = program.global_block
    block.create_var("custom_out", [2])
    block.append_op("my_custom_op", {"X": [block.ops[0].input("X")[0]]}, {"Out": ["custom_out"]})
    gradc.save(program, tmp_path / "custom.pb")
    shown = gradc_cli("verify", tmp_path / "custom.pb")
    assert shown.returncode == 0 and shown.stdout.strip().endswith(
        "ops; not checked, op types gradc does not know: my_custom_op)"), shown.stdout
    report = json.loads(gradc_cli("verify", tmp_path / "custom.pb", "--json").stdout)
    assert report["ok"] is True and report["programs"][0]["unknown_op_types"] == ["my_custom_op"]


def _legacy_declarations(mean_shape, slice_shape, mask_shape=None, version=None):
    """layer_norm over batch dims [-1, -1], a slice of one element and a dropout, their outputs declared as given, in
    a program of that Paddle version."""
    net = ProgramBuilder()
    x = net.data("x", [-1, -1, 4])
    shape = net.op("shape", {"Input": x})[0]
    net.op("slice", {"Input": shape}, {"axes": [0], "starts": [1], "ends": [2], "decrease_axis": [0]})
    net.op("layer_norm", {"X": x}, {"begin_norm_axis": 2}, outputs=["Mean"])
    net.op("dropout", {"X": x}, {"is_test": True}, outputs=["Mask"])
    block = net.program.global_block
    block.var(block.ops[2].output("Mean")[0]).shape = mean_shape
    block.var(block.ops[1].output("Out")[0]).shape = slice_shape
    block.var(block.ops[3].output("Mask")[0]).shape = [-1, -1, 4] if mask_shape is None else mask_shape
    net.program.version = version
    return net.program


def test_declarations_of_older_paddle_versions_pass_and_others_do_not():
    """Paddle before 2.5 declared a 0-d result [1] and left some shapes unrecorded ([]: dropout's Mask in a 2.2
    model), and layer_norm's Mean over [-1, -1] batch dims [1] (the product of the dims, -1 * -1): models exported
    by PaddleOCR hold these, and Paddle 3 runs them. [] is a 0-d shape from 2.5 on."""
    assert gradc.verify(_legacy_declarations([1], [1])) == []
    assert gradc.verify(_legacy_declarations([1], [1], mask_shape=[], version=2002002)) == []
    problems = gradc.verify(_legacy_declarations([2], [3], mask_shape=[], version=2005000))
    assert len(problems) == 3, problems
    assert "op 1 (slice): output 'slice_0.tmp_0' is declared with shape [3], but the inputs give []" in problems[0]
    assert "op 2 (layer_norm): output 'layer_norm_0.tmp_1' is declared with shape [2], but the inputs give [-1, -1]" \
        in problems[1]
    assert "op 3 (dropout): output 'dropout_0.tmp_1' is declared with shape [], but the inputs give [-1, -1, 4]" \
        in problems[2]


@pytest.mark.parametrize("op_type, declared, fits", [("fill_constant", [-1, 30], True), ("fill_constant", [1000], True),
                                                     ("scale", [-1, 30], False), ("scale", [1000], False)])
def test_a_0d_constant_declared_with_other_dims_is_dy2statics_placeholder(op_type, declared, fits):
    """Paddle 3 writes a value a branch or a loop body defines as a 0-d pd_op.full typed as that value, its dims
    unknown (PaddleOCR's table models, PARSeq) or fixed (PaddleDetection's R-CNNs): such a fill_constant fits; another
    op's 0-d result declared so does not."""
    net = ProgramBuilder()
    value = net.op("fill_constant", {}, {"shape": [], "dtype": 5, "value": 0.0})[0]
    if op_type == "scale":
        value = net.op("scale", {"X": value}, {"scale": 2.0})[0]
    net.program.global_block.var(value).shape = declared
    problems = gradc.verify(net.program)
    assert (problems == []) == fits, problems


def test_an_integer_output_may_be_declared_of_another_width_and_an_int_bool_attribute_reads_as_a_bool():
    """Paddle 3.3.1's legacy matrix_nms declares Index int64 where its kernel writes int32; Paddle 1.x wrote is_test
    as an int (1), which Paddle 3 reads as a bool. A float of another type, or an int other than 0 and 1, is wrong."""
    net = ProgramBuilder()
    x = net.data("x", [2, 3])
    values, index = net.op("argsort", {"X": x}, outputs=["Out", "Indices"])
    out = net.op("dropout", {"X": x}, {"is_test": True, "dropout_prob": 0.5})[0]
    block = net.program.global_block
    block.var(index).dtype = gradc.VarType.INT32
    block.ops[1].set_attr("is_test", 1, gradc.ir.AttrType.INT)
    assert gradc.verify(net.program) == []
    (kept,) = gradc.Executor().run(net.program, {"x": np.ones((2, 3), np.float32)}, [out])
    np.testing.assert_array_equal(kept, np.full((2, 3), 0.5, np.float32))   # test mode: scaled by 1 - p, no mask
    block.var(values).dtype = gradc.VarType.FP64
    block.ops[1].set_attr("is_test", 2, gradc.ir.AttrType.INT)
    problems = gradc.verify(net.program)
    assert len(problems) == 2, problems
    assert f"op 0 (argsort): output '{values}' is declared float64, but the inputs give float32" in problems[0]
    assert "op 1 (dropout): attribute 'is_test' is INT, but op 'dropout' defines it as BOOLEAN" in problems[1]

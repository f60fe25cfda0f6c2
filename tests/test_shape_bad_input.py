"""Bad input to the shape, indexing, padding and tensor-creating ops gives one clear error naming the block,
the op index and type, and the input vars: from shape inference (`gradc compile`'s verify pass) for what the
declared shapes and attributes already show, from the kernel (`gradc run`) for what only the values show
(indices, tensor-valued shapes). Never a numpy traceback, never a silently wrong result."""

import numpy as np
import pytest

import gradc
from gradc.errors import ExecutionError, ProgramError
from gradc.ir import to_var_type
from gradc.verify_shapes import check_shapes
from test_cli import assert_clean_failure
from test_cli import gradc as gradc_cli

F32, I64 = 5, 3


def _program(op_type, inputs, attrs, outputs=("Out",)):
    """One op reading vars declared from {slot: (name, shape, dtype) or [...]}; one output var of unknown shape
    per slot in ``outputs`` (two for a slot written "Out*2")."""
    program = gradc.Program()
    block = program.global_block
    slots = {}
    for slot, spec in inputs.items():
        specs = spec if isinstance(spec, list) else [spec]
        slots[slot] = [name for name, _, _ in specs]
        for name, shape, dtype in specs:
            block.create_var(name, shape, dtype)
    outs = {}
    for spec in outputs:
        slot, _, count = spec.partition("*")
        outs[slot] = [f"{slot.lower()}_out"] + [f"{slot.lower()}_out{i}" for i in range(1, int(count or 1))]
        for name in outs[slot]:
            block.create_var(name, None, None)
    block.append_op(op_type, slots, outs, attrs)
    return program


X = ("x", [2, 3, 4], F32)
M = ("m", [3, 4], F32)
IDX = ("i", [2], I64)

COMPILE_TIME = {
    "reshape2 size": ("reshape2", {"X": X}, {"shape": [5, -1]}, ("Out", "XShape"), "cannot reshape [2, 3, 4]"),
    "reshape2 two -1": ("reshape2", {"X": X}, {"shape": [-1, -1]}, ("Out", "XShape"), "at most one -1"),
    "reshape2 0 past rank": ("reshape2", {"X": M}, {"shape": [0, 0, 0]}, ("Out", "XShape"), "0 only where X has"),
    "split uneven num": ("split", {"X": X}, {"axis": 1, "num": 2}, ("Out*2",), "cannot cut a dim of 3 into 2"),
    "split outputs": ("split", {"X": X}, {"axis": 1, "num": 3}, ("Out*2",), "2 output var(s) but num 3"),
    "split sections sum": ("split", {"X": X}, {"axis": -1, "sections": [1, 2]}, ("Out*2",), "do not add up"),
    "split two -1": ("split", {"X": X}, {"axis": 0, "sections": [-1, -1]}, ("Out*2",), "at most one -1"),
    "concat ranks": ("concat", {"X": [X, M]}, {"axis": 0}, ("Out",), "differ outside axis"),
    "expand_v2 dim": ("expand_v2", {"X": M}, {"shape": [3, 5]}, ("Out",), "cannot expand dim 4"),
    "expand_v2 rank": ("expand_v2", {"X": X}, {"shape": [3, 4]}, ("Out",), "lower rank"),
    "pad count": ("pad", {"X": M}, {"paddings": [1, 1]}, ("Out",), "needs 2 * rank = 4 paddings"),
    "pad negative": ("pad", {"X": M}, {"paddings": [0, 0, -1, 0]}, ("Out",), ">= 0"),
    "pad3d mode": ("pad3d", {"X": ("v", [1, 1, 2, 2, 2], F32)}, {"paddings": [1] * 6, "mode": "wrap"}, ("Out",),
                   "mode 'wrap'"),
    "pad3d reflect": ("pad3d", {"X": ("v", [1, 1, 2, 2, 2], F32)}, {"paddings": [2, 0, 0, 0, 0, 0], "mode": "reflect"},
                      ("Out",), "smaller than the dims"),
    "pad3d crop": ("pad3d", {"X": ("v", [1, 1, 2, 2, 2], F32)}, {"paddings": [-2, -1, 0, 0, 0, 0]}, ("Out",),
                   "cut more than the whole"),
    "fill_constant negative": ("fill_constant", {}, {"shape": [2, -3], "dtype": F32}, ("Out",), "negative dim"),
    "uniform_random min max": ("uniform_random", {}, {"shape": [2], "min": 1.0, "max": 0.0}, ("Out",), "above max"),
    "uniform_random diag": ("uniform_random", {}, {"shape": [2, 2], "diag_num": 3, "diag_step": 1}, ("Out",),
                            "does not fit"),
    "gaussian_random std": ("gaussian_random", {}, {"shape": [2], "std": -1.0}, ("Out",), "negative"),
    "eye negative": ("eye", {}, {"num_rows": -2}, ("Out",), "num_rows and num_columns >= 0"),
    "assign_value count": ("assign_value", {}, {"shape": [2, 2], "dtype": F32, "values": [1.0, 2.0]},
                           ("Out",), "holds 2 values for shape [2, 2]"),
    "linspace num": ("linspace", {"Start": ("a", [1], F32), "Stop": ("b", [1], F32), "Num": ("n", [2], I64)}, {},
                     ("Out",), "one-element Num"),
    "flip twice": ("flip", {"X": M}, {"axis": [0, -2]}, ("Out",), "names a dim twice"),
    "flip axis": ("flip", {"X": M}, {"axis": [2]}, ("Out",), "axis 2 is out of range"),
    "roll shifts": ("roll", {"X": M}, {"shifts": [1, 2], "axis": [0]}, ("Out",), "one shift per axis"),
    "tril_triu rank": ("tril_triu", {"X": ("v", [3], F32)}, {}, ("Out",), "rank >= 2"),
    "meshgrid rank": ("meshgrid", {"X": [M]}, {}, ("Out",), "1-D (or 0-d)"),
    "index_select axis": ("index_select", {"X": M, "Index": IDX}, {"dim": 2}, ("Out",), "axis 2 is out of range"),
    "index_sample rows": ("index_sample", {"X": M, "Index": ("j", [2, 2], I64)}, {}, ("Out",), "[N, D]"),
    "take_along_axis rank": ("take_along_axis", {"Input": M, "Index": IDX}, {"Axis": 0}, ("Result",),
                             "Input's rank 2"),
    "take_along_axis size": ("take_along_axis", {"Input": M, "Index": ("j", [2, 5], I64)}, {"Axis": 0}, ("Result",),
                             "larger than Input"),
    "put_along_axis reduce": ("put_along_axis", {"Input": M, "Index": ("j", [1, 4], I64), "Value": ("w", [1, 4], F32)},
                              {"Axis": 0, "Reduce": "max"}, ("Result",), "Reduce 'max'"),
    "scatter_nd_add updates": ("scatter_nd_add", {"X": M, "Index": ("j", [2, 1], I64), "Updates": ("u", [2, 3], F32)},
                               {}, ("Out",), "Updates shaped"),
    "masked_select shapes": ("masked_select", {"X": M, "Mask": ("b", [2], 0)}, {}, ("Y",), "cannot broadcast"),
    "where_index 0-d": ("where_index", {"Condition": ("b", [], 0)}, {}, ("Out",), "rank >= 1"),
    "unique axes": ("unique", {"X": M}, {"axis": [0, 1]}, ("Out", "Index"), "at most one axis"),
    "unique dtype": ("unique", {"X": M}, {"dtype": 5}, ("Out", "Index"), "dtype 5"),
    "gather_tree shapes": ("gather_tree", {"Ids": ("a", [2, 3, 4], I64), "Parents": ("b", [2, 3], I64)}, {},
                           ("Out",), "one shape"),
    "label_smooth prior": ("label_smooth", {"X": M, "PriorDist": ("p", [3], F32)}, {}, ("Out",), "[num_classes]"),
    "unbind outputs": ("unbind", {"X": M}, {"axis": 1}, ("Out*3",), "gives 4 tensors, but 3 outputs"),
    "pixel_shuffle channels": ("pixel_shuffle", {"X": ("v", [1, 6, 2, 2], F32)}, {"upscale_factor": 2}, ("Out",),
                               "do not divide by upscale_factor^2 = 4"),
    "pixel_unshuffle rank": ("pixel_unshuffle", {"X": M}, {"downscale_factor": 2}, ("Out",), "X must be 4-D"),
    "channel_shuffle groups": ("channel_shuffle", {"X": ("v", [1, 6, 2, 2], F32)}, {"groups": 4}, ("Out",),
                               "into 4 groups"),
    "set_value step": ("set_value", {"Input": M}, {"axes": [0], "starts": [0], "ends": [2], "steps": [0],
                                                   "shape": [1], "values": [1.0]}, ("Out",), "step must not be 0"),
    "set_value decrease": ("set_value", {"Input": M}, {"axes": [1], "starts": [0], "ends": [2], "steps": [1],
                                                       "decrease_axes": [1], "shape": [1], "values": [1.0]}, ("Out",),
                           "decreases axes [1]"),
    "set_value values": ("set_value", {"Input": M}, {"axes": [0], "starts": [0], "ends": [1], "steps": [1],
                                                     "shape": [1], "values": [1.0, 2.0]}, ("Out",),
                         "2 values for shape [1]"),
    "set_value value shape": ("set_value", {"Input": M, "ValueTensor": ("w", [3], F32)},
                              {"axes": [0], "starts": [0], "ends": [1], "steps": [1]}, ("Out",),
                              "does not broadcast to"),
    "top_k_v2 k": ("top_k_v2", {"X": M}, {"k": 5}, ("Out", "Indices"), "k 5 must be in [1, 4]"),
    "argsort axis": ("argsort", {"X": M}, {"axis": -3}, ("Out", "Indices"), "axis -3 is out of range"),
    "crop_tensor window": ("crop_tensor", {"X": M}, {"shape": [2, 3], "offsets": [2, 0]}, ("Out",), "leaves X"),
    "crop_tensor rank": ("crop_tensor", {"X": M}, {"shape": [2]}, ("Out",), "every dim of [3, 4]"),
    "repeat_interleave repeats": ("repeat_interleave", {"X": M, "RepeatsTensor": ("r", [3], I64)}, {"dim": 1},
                                  ("Out",), "[X's dim 1] = [4]"),
    "repeat_interleave negative": ("repeat_interleave", {"X": M}, {"Repeats": -1}, ("Out",), ">= 0"),
    "diag_v2 rank": ("diag_v2", {"X": X}, {}, ("Out",), "1-D X"),
    "diag_v2 offset": ("diag_v2", {"X": M}, {"offset": 4}, ("Out",), "names no diagonal of a 3 x 4"),
    "randint range": ("randint", {}, {"shape": [2], "low": 3, "high": 3}, ("Out",), "low < high"),
    "randperm n": ("randperm", {}, {"n": -1}, ("Out",), "n >= 0"),
    "kthvalue k": ("kthvalue", {"X": M}, {"k": 5}, ("Out", "Indices"), "k 5 must be in [1, 4]"),
    "index_add value": ("index_add", {"X": M, "Index": IDX, "AddValue": ("w", [3, 3], F32)}, {"axis": 1}, ("Out",),
                        "AddValue shaped like X"),
    "searchsorted shapes": ("searchsorted", {"SortedSequence": M, "Values": ("v", [2, 4], F32)}, {}, ("Out",),
                            "leading dims"),
    "bincount rank": ("bincount", {"X": ("c", [2, 2], I64)}, {}, ("Out",), "1-D X"),
    "shard_index shard": ("shard_index", {"X": ("c", [4, 1], I64)}, {"index_num": 8, "nshards": 2, "shard_id": 2},
                          ("Out",), "0 <= shard_id < nshards"),
    "sequence_mask dtype": ("sequence_mask", {"X": IDX}, {"out_dtype": 17}, ("Y",), "out_dtype 17"),
    "coalesce dtype": ("coalesce_tensor", {"Input": [M]}, {"dtype": 7}, ("Output", "FusedOutput"), "dtype 7"),
}


@pytest.mark.parametrize("case", COMPILE_TIME, ids=str)
def test_shape_inference_names_the_op_and_its_inputs(case):
    op_type, inputs, attrs, outputs, phrase = COMPILE_TIME[case]
    with pytest.raises(ProgramError) as error:
        check_shapes(_program(op_type, inputs, attrs, outputs))
    message = str(error.value)
    assert message.startswith(f"block 0, op 0 ({op_type}): ") and phrase in message, message
    assert all(f"{slot}={(specs[0] if isinstance(specs, list) else specs)[0]}" in message
               for slot, specs in inputs.items()), message   # the first var of each input slot


def i64(*values):
    return np.array(values, np.int64)


m34 = np.arange(12.0).reshape(3, 4)
RUN_TIME = {
    "gather index": ("gather", {"X": m34, "Index": i64(1, 3)}, {}, "Index holds 3, outside [-3, 3)"),
    "index_select index": ("index_select", {"X": m34, "Index": i64(-5)}, {"dim": 1}, "Index holds -5"),
    "index_sample negative": ("index_sample", {"X": m34, "Index": i64([0], [-1], [2])}, {}, "outside [0, 4)"),
    "take_along_axis index": ("take_along_axis", {"Input": m34, "Index": i64([4, 0, 1, 2])}, {"Axis": 0},
                              "Index holds 4"),
    "put_along_axis index": ("put_along_axis", {"Input": m34, "Index": i64([0, 9]), "Value": np.ones((1, 2))},
                             {"Axis": 1}, "Index holds 9"),
    "scatter_nd_add index": ("scatter_nd_add", {"X": m34, "Index": i64([0, 4]), "Updates": np.ones(1)}, {},
                             "Index holds 4"),
    "gather_tree parents": ("gather_tree", {"Ids": np.zeros((2, 1, 2), np.int64), "Parents": np.full((2, 1, 2), 2)},
                            {}, "Parents holds 2"),
    "range step": ("range", {"Start": i64(0), "End": i64(3), "Step": i64(0)}, {}, "Step must not be 0"),
    "linspace num": ("linspace", {"Start": np.zeros(1), "Stop": np.ones(1), "Num": i64(-1)}, {"dtype": 6},
                     "Num must be >= 0"),
    "masked_select mask": ("masked_select", {"X": m34, "Mask": np.ones((3, 4))}, {}, "Mask must be bool"),
    "reshape2 tensor": ("reshape2", {"X": m34, "ShapeTensor": [i64(5), i64(-1)]}, {}, "cannot reshape [3, 4]"),
    "split sections tensor": ("split", {"X": m34, "SectionsTensorList": [i64(3), i64(3)]}, {"axis": 1},
                              "SectionsTensorList (2 vars) ask for 2"),
    "fill_constant tensor": ("fill_constant", {"ShapeTensor": i64(2, -1)}, {"dtype": F32}, "negative dim"),
    "repeat_interleave tensor": ("repeat_interleave", {"X": m34, "RepeatsTensor": i64(1, -1, 2)}, {},
                                 "a count >= 0 per element"),
    "crop_tensor tensor": ("crop_tensor", {"X": m34, "Offsets": i64(2, 3)}, {"shape": [2, 2]}, "leaves X"),
    "bincount negative": ("bincount", {"X": i64(1, -2)}, {}, "negative"),
    "shard_index id": ("shard_index", {"X": i64([3], [9])}, {"index_num": 8, "nshards": 2}, "outside [0, index_num"),
    "pad3d tensor": ("pad3d", {"X": np.zeros((1, 1, 1, 2, 2)), "Paddings": i64(2, 0, 0, 0, 0, 0)}, {"mode": "reflect"},
                     "must be smaller than the dims"),
}


@pytest.mark.parametrize("case", RUN_TIME, ids=str)
def test_a_kernel_names_the_op_and_the_bad_value(case):
    op_type, feeds, attrs, phrase = RUN_TIME[case]
    inputs = {slot: [(f"{slot.lower()}{i}", list(np.shape(a)), to_var_type(np.asarray(a).dtype))
                     for i, a in enumerate(v if isinstance(v, list) else [v])] for slot, v in feeds.items()}
    outputs = ("Out", "XShape") if op_type == "reshape2" else ("Y",) if op_type in ("masked_select", "sequence_mask") \
        else ("Result",) if "along_axis" in op_type else ("Out",)
    program = _program(op_type, inputs, attrs, outputs)
    feed = {name: np.asarray(a) for slot, v in feeds.items()
            for (name, _, _), a in zip(inputs[slot], v if isinstance(v, list) else [v])}
    with pytest.raises(ExecutionError) as error:
        gradc.Executor().run(program, feed, [f"{outputs[0].lower()}_out"], gradc.Scope())
    message = str(error.value)
    assert message.startswith(f"block 0, op 0 ({op_type}): ") and phrase in message, message
    assert all(name in message for specs in inputs.values() for name, _, _ in specs), message


def test_the_cli_reports_one_line(tmp_path):
    """`gradc compile` of a program with an absurd reshape target: one error line, no traceback."""
    program = _program("reshape2", {"X": ("x", [2, 3], F32)}, {"shape": [7, -1]}, ("Out", "XShape"))
    program.global_block.var("x").is_parameter = True
    program.global_block.var("x").persistable = True
    block = program.global_block
    block.var("out_out").shape, block.var("out_out").dtype = [7, -1], F32
    block.create_var("loss", [], F32)
    block.append_op("mean", {"X": ["out_out"]}, {"Out": ["loss"]})
    gradc.save(program, tmp_path / "p.pb")
    assert_clean_failure(gradc_cli("compile", tmp_path / "p.pb", "-o", tmp_path / "o.pb"),
                         "block 0, op 0 (reshape2)", "cannot reshape [2, 3]", "X=x[2, 3]")

"""An axis out of range is caught by `gradc compile`: one `gradc: error:` line naming the block, the op
index and type, and the axis, never an internal error or a message about some other shape."""

import pytest

import gradc as gc
from gradc import Program
from test_cli import _edited_program, assert_clean_failure, gradc

F32 = 5


def _one_op_program(path, type, ins, attrs, shapes, out_shapes, out_slot="Out"):
    """Parameters named by ``shapes`` feed op 0 (``type``), whose outputs feed a mean loss (op 1)."""
    program = Program()
    block = program.global_block
    for name, shape in shapes.items():
        block.create_var(name, shape, F32, is_parameter=True, persistable=True)
    outs = [f"y{i}" for i in range(len(out_shapes))]
    for name, shape in zip(outs, out_shapes):
        block.create_var(name, shape, F32)
    block.append_op(type, ins, {out_slot: outs}, attrs)
    block.create_var("loss", [], F32)
    block.append_op("mean", {"X": outs[:1]}, {"Out": ["loss"]})
    gc.save(program, path)
    return path


ONE_OP_CASES = {
    "concat": ("concat", {"X": ["w", "w"]}, {"axis": 5}, [[4, 3]], "axis 5"),
    "reduce_sum": ("reduce_sum", {"X": ["w"]}, {"dim": [3]}, [[2]], "axis 3"),
    "reduce_max": ("reduce_max", {"X": ["w"]}, {"dim": [0, -3]}, [[3]], "axis -3"),
    "softmax": ("softmax", {"X": ["w"]}, {"axis": 4}, [[2, 3]], "axis 4"),
    "log_softmax": ("log_softmax", {"X": ["w"]}, {"axis": -3}, [[2, 3]], "axis -3"),
    "cumsum": ("cumsum", {"X": ["w"]}, {"axis": 2}, [[2, 3]], "axis 2"),
    "p_norm": ("p_norm", {"X": ["w"]}, {"axis": -5}, [[2]], "axis -5"),
    "split": ("split", {"X": ["w"]}, {"axis": 2, "num": 1}, [[2, 3]], "axis 2"),
    "stack": ("stack", {"X": ["w", "w"]}, {"axis": 3}, [[2, 3, 2]], "axis 3"),
    "gather": ("gather", {"X": ["w"], "Index": ["i"]}, {"axis": 2}, [[2, 2]], "axis 2"),
    "transpose2": ("transpose2", {"X": ["w"]}, {"axis": [1, 2]}, [[3, 2]], "axis 2"),
    "unsqueeze2": ("unsqueeze2", {"X": ["w"]}, {"axes": [4]}, [[2, 3, 1]], "axis 4"),
    "squeeze2": ("squeeze2", {"X": ["w"]}, {"axes": [-3]}, [[2, 3]], "axis -3"),
    "flatten": ("flatten_contiguous_range", {"X": ["w"]}, {"start_axis": 0, "stop_axis": 2}, [[6]], "axis 2"),
    "slice": ("slice", {"Input": ["w"]}, {"axes": [2], "starts": [0], "ends": [1]}, [[2, 3]], "axis 2"),
    "top_k_v2": ("top_k_v2", {"X": ["w"]}, {"k": 1, "axis": 2}, [[2, 1]], "axis 2"),
    "elementwise_add": ("elementwise_add", {"X": ["w"], "Y": ["b"]}, {"axis": 2}, [[2, 3]], "axis 2"),
}


@pytest.mark.parametrize("case", ONE_OP_CASES, ids=str)
def test_axis_out_of_range(case, tmp_path):
    type, ins, attrs, out_shapes, phrase = ONE_OP_CASES[case]
    shapes = {"w": [2, 3], "b": [3], "i": [2]}
    program = _one_op_program(tmp_path / "p.pb", type, ins, attrs,
                              {n: shapes[n] for names in ins.values() for n in names}, out_shapes,
                              "Y" if type == "stack" else "Out")
    assert_clean_failure(gradc("compile", program, "-o", tmp_path / "o.pb"),
                         f"block 0, op 0 ({type})", f"{phrase} is out of range")
    assert not (tmp_path / "o.pb").exists()


def test_concat_of_0d_tensors(tmp_path):
    program = _one_op_program(tmp_path / "p.pb", "concat", {"X": ["w", "w"]}, {"axis": 0}, {"w": []}, [[2]])
    assert_clean_failure(gradc("compile", program, "-o", tmp_path / "o.pb"), "block 0, op 0 (concat)", "0-d")


@pytest.mark.parametrize("op_index, type, old, new, phrase", [
    (5, "softmax_with_cross_entropy", "i: -1\n", "i: 2\n", "axis 2"),  # over logits [32, 10]
    (1, "elementwise_add", "i: 1\n", "i: 3\n", "axis 3"),               # of [32, 32] and [32]
])
def test_axis_out_of_range_in_a_paddle_program(op_index, type, old, new, phrase, tmp_path):
    def edit(text):
        at = text.index('name: "axis"', text.index(f'type: "{type}"'))
        return text[:at] + text[at:].replace(old, new, 1)
    program = _edited_program(tmp_path, edit)
    assert_clean_failure(gradc("compile", program, "-o", tmp_path / "o.pb"),
                         f"block 0, op {op_index} ({type})", f"{phrase} is out of range")

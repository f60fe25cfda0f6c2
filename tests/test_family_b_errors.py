"""Bad input to the resize, vision, pooling and normalisation ops gives one clear error naming the block, the
op index and type, and the inputs with their shapes: from shape inference when the attributes or shapes
are wrong (what `gradc compile` runs), from the kernel when only the values tell (sizes in tensors)."""

import numpy as np
import pytest

import gradc
from gradc import registry
from gradc.errors import ExecutionError, ProgramError
from gradc.verify_shapes import check_shapes
from test_axis_errors import _one_op_program
from test_cli import assert_clean_failure
from test_cli import gradc as run_cli

RESIZE = {"interp_method": "bilinear", "out_h": 4, "out_w": 4, "align_corners": False}

# name -> (op, input shapes by slot, attributes, phrase of the message)
INFERENCE_CASES = {
    "interp_unknown_mode": ("bilinear_interp_v2", {"X": [1, 2, 3, 4]}, {**RESIZE, "interp_method": "area"},
                            "interp_method 'area' is not one of"),
    "interp_zero_size": ("nearest_interp_v2", {"X": [1, 2, 3, 4]}, {"interp_method": "nearest", "out_h": 0, "out_w": 5},
                         "output size [0, 5] must be > 0"),
    "interp_negative_scale": ("bilinear_interp_v2", {"X": [1, 2, 3, 4]}, {**RESIZE, "scale": [-2.0, 2.0]},
                              "attribute scale [-2.0, 2.0] must be > 0"),
    "interp_rank": ("trilinear_interp_v2", {"X": [1, 2, 3, 4]}, {**RESIZE, "interp_method": "trilinear"},
                    "needs a 5-D input, got rank 4"),
    "interp_align_mode": ("bilinear_interp_v2", {"X": [1, 2, 3, 4]}, {**RESIZE, "align_mode": 2},
                          "align_mode must be 0 or 1"),
    "pixel_shuffle_channels": ("pixel_shuffle", {"X": [1, 6, 2, 2]}, {"upscale_factor": 2}, "do not divide"),
    "channel_shuffle_zero_groups": ("channel_shuffle", {"X": [1, 4, 2, 2]}, {"groups": 0}, "groups must be >= 1"),
    "unfold_kernel": ("unfold", {"X": [1, 2, 3, 3]}, {"kernel_sizes": [4, 4]}, "larger than the padded input"),
    "fold_windows": ("fold", {"X": [1, 8, 5]}, {"output_sizes": [3, 4], "kernel_sizes": [2, 2]},
                     "X has 5 windows, but output_sizes [3, 4] give 2 x 3"),
    "max_pool_window": ("max_pool2d_with_index", {"X": [1, 1, 2, 2]}, {"ksize": [3, 3]}, "window does not fit"),
    "unpool_indices": ("unpool", {"X": [1, 1, 2, 2], "Indices": [1, 1, 2, 3]}, {"output_size": [4, 4]},
                       "Indices [1, 1, 2, 3] must have X's shape"),
    "unpool_output_size": ("unpool", {"X": [1, 1, 2, 2], "Indices": [1, 1, 2, 2]}, {"output_size": [0, 4]},
                           "output_size must be 2 sizes >= 1"),
    "lp_pool_norm_type": ("lp_pool2d", {"x": [1, 1, 4, 4]}, {"kernel_size": [2, 2], "norm_type": 0.0},
                          "norm_type must not be 0"),
    "fractional_too_large": ("fractional_max_pool2d", {"x": [1, 1, 4, 4]}, {"output_size": [6, 2], "random_u": 0.5},
                             "cannot give output_size [6, 2]"),
    "instance_norm_scale": ("instance_norm", {"X": [2, 3, 4], "Scale": [4]}, {}, "Scale must be a vector of X's 3"),
    "spectral_norm_dim": ("spectral_norm", {"Weight": [3, 4], "U": [3], "V": [4]}, {"dim": 2},
                          "dim 2 is out of range"),
    "spectral_norm_u": ("spectral_norm", {"Weight": [3, 4], "U": [4], "V": [4]}, {}, "U must be a vector of 3"),
    "lrn_even_n": ("lrn", {"X": [1, 4, 2, 2]}, {"n": 4}, "n must be a positive odd number"),
    "batch_norm_layout": ("batch_norm", {"X": [2, 3, 4], "Mean": [3], "Variance": [3]}, {"data_layout": "NDHWC"},
                          "data_layout 'NDHWC'"),
    "batch_norm_rank": ("batch_norm", {"X": [2, 3, 1, 1, 1, 1], "Mean": [3], "Variance": [3]}, {},
                        "rank 2 to 5"),
}


def _program(op_type, shapes, attrs, dtypes=None):
    program = gradc.Program()
    block = program.global_block
    for slot, shape in shapes.items():
        block.create_var(slot, shape, (dtypes or {}).get(slot, gradc.VarType.FP32))
    outputs = {slot: [f"{slot}.out"] for slot in registry.get(op_type).outputs}
    for names in outputs.values():
        block.create_var(names[0], None, gradc.VarType.FP32)
    block.append_op(op_type, {slot: [slot] for slot in shapes}, outputs, attrs)
    return program


@pytest.mark.parametrize("case", INFERENCE_CASES)
def test_inference_names_the_op_and_its_inputs(case):
    op_type, shapes, attrs, phrase = INFERENCE_CASES[case]
    with pytest.raises(ProgramError) as error:
        check_shapes(_program(op_type, shapes, attrs))
    message = str(error.value)
    assert f"block 0, op 0 ({op_type})" in message and phrase in message
    first = next(iter(shapes))
    assert f"{first}={first}{shapes[first]}" in message   # the input var, with its shape


# values that only the run reveals: (op, inputs, attributes, phrase)
RUN_CASES = {
    "size_tensor_zero": ("bilinear_interp_v2", {"X": np.ones((1, 1, 2, 2), np.float32),
                                                "SizeTensor": [np.array([0], np.int32), np.array([3], np.int32)]},
                         RESIZE, "output size [0, 3] must be > 0"),
    "scale_tensor_negative": ("nearest_interp_v2", {"X": np.ones((1, 1, 2, 2), np.float32),
                                                    "Scale": np.array([-1.5], np.float32)},
                              {"interp_method": "nearest"}, "the Scale input [-1.5, -1.5] must be > 0"),
    "unpool_index_out_of_range": ("unpool", {"X": np.ones((1, 1, 1, 2), np.float32),
                                             "Indices": np.array([[[[0, 9]]]], np.int32)},
                                  {"output_size": [2, 2]}, "hold positions in [0, 4)"),
    "lp_pool_kernel_tensor": ("lp_pool2d", {"x": np.ones((1, 1, 2, 2), np.float32),
                                            "KernelSizeTensor": np.array([3, 3], np.int64)},
                              {"norm_type": 2.0}, "window does not fit"),
}


@pytest.mark.parametrize("case", RUN_CASES)
def test_values_known_at_run_time_fail_naming_the_op(case):
    op_type, inputs, attrs, phrase = RUN_CASES[case]
    program = gradc.Program()
    block = program.global_block
    feed, slots = {}, {}
    for slot, value in inputs.items():
        values = value if isinstance(value, list) else [value]
        slots[slot] = [f"{slot}{i}" for i in range(len(values))]
        for name, array in zip(slots[slot], values):
            block.create_var(name, list(array.shape), gradc.ir.to_var_type(array.dtype))
            feed[name] = array
    out = registry.get(op_type).outputs[0]
    block.create_var("out", None, gradc.VarType.FP32)
    block.append_op(op_type, slots, {out: ["out"]}, attrs)
    with pytest.raises(ExecutionError) as error:
        gradc.Executor().run(program, feed, ["out"], gradc.Scope())
    assert f"block 0, op 0 ({op_type})" in str(error.value) and phrase in str(error.value)


@pytest.mark.parametrize("case, op_type, attrs, phrase", [
    ("mode", "bilinear_interp_v2", {**RESIZE, "interp_method": "cubic"}, "interp_method 'cubic'"),
    ("groups", "channel_shuffle", {"groups": 0}, "groups must be >= 1"),
])
def test_cli_compile_reports_one_line(case, op_type, attrs, phrase, tmp_path):
    program = _one_op_program(tmp_path / "p.pb", op_type, {"X": ["w"]}, attrs, {"w": [1, 4, 2, 2]}, [[1, 4, 2, 2]])
    assert_clean_failure(run_cli("compile", program, "-o", tmp_path / "o.pb"), f"block 0, op 0 ({op_type})", phrase)
    assert not (tmp_path / "o.pb").exists()

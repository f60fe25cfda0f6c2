"""Rows: reshaping, slicing, gathering, casting and tensor creation."""

from __future__ import annotations

from ...ir import VarType
from . import row
from .hooks import (
    cast_dtypes,
    fill_any_like_back,
    from_the_end,
    literal_dtype,
    literal_values,
    reads_an_array,
    writes_a_persistable,
    zeros_only,
)

STARTS, ENDS = "StartsTensor,StartsTensorList", "EndsTensor,EndsTensorList"
SHAPE = "shape>shape:ints@ShapeTensor,ShapeTensorList"
STRIDED_BOUNDS = (f"starts>starts:ints@{STARTS} ends>ends:ints@{ENDS} "
                  "strides>strides:ints@StridesTensor,StridesTensorList")


BOUNDS = ("starts>starts:ints@,StartsTensorList ends>ends:ints@,EndsTensorList "   # set_value takes lists only
         "steps>steps:ints@,StepsTensorList")
SET_VALUE = "axes:i64s decrease_axes:i64s none_axes:i64s"


def _literal(op, exporter) -> bool:
    """x[i] = 2.0: the values are attributes (PIR's set_value), not a tensor (set_value_with_tensor)."""
    return not op.input("ValueTensor")


def _has_sections(op, exporter) -> bool:
    return bool(op.attrs.get("sections") or op.input("SectionsTensorList"))

ROWS = [
    row("pd_op.reshape", "reshape2", "x:X shape>shape:ints@Shape,ShapeTensor", "out:Out +XShape"),
    row("pd_op.transpose", "transpose2", "x:X", "out:Out +XShape", "perm=axis:i32s"),
    row("pd_op.flatten", "flatten_contiguous_range", "x:X", "out:Out +XShape", "start_axis:i32 stop_axis:i32"),
    row("pd_op.squeeze", "squeeze2", "x:X axis>axes:ints", "out:Out +XShape"),
    row("pd_op.unsqueeze", "unsqueeze2", "x:X axis>axes:ints@AxesTensor,AxesTensorList", "out:Out +XShape"),
    row("pd_op.concat", "concat", "x:X* axis>axis:int@AxisTensor"),
    # computed sections (a stack of sizes: PaddleDetection's deformable attention) are SectionsTensorList's scalars
    row("pd_op.split", "split", "x:X sections>sections:ints@,SectionsTensorList axis>axis:int@AxisTensor",
        "out:Out*", when=_has_sections),
    row("pd_op.split_with_num", "split", "x:X axis>axis:int@AxisTensor", "out:Out*", "num:i32"),
    row("pd_op.stack", "stack", "x:X*", "out:Y", "axis:i32"),
    row("pd_op.unstack", "unstack", "x:X", "out:Y*", "axis:i32 num:i32"),
    row("pd_op.slice", "slice", f"input:Input starts>starts:ints@{STARTS} ends>ends:ints@{ENDS}", "out:Out",
        "axes:i64s infer_flags:i64s decrease_axis:i64s"),
    row("pd_op.strided_slice", "strided_slice", "x:Input " + STRIDED_BOUNDS, "out:Out", "axes:i32s"),
    row("pd_op.tile", "tile", "x:X repeat_times>repeat_times:ints@RepeatTimes,repeat_times_tensor"),
    row("pd_op.expand", "expand_v2", "x:X shape>shape:ints@Shape,expand_shapes_tensor"),
    row("pd_op.expand_as", "expand_as_v2", "x:X y?:Y", "out:Out", "target_shape:i64s"),
    row("pd_op.gather", "gather", "x:X index:Index axis>axis:int@Axis"),
    row("pd_op.gather_nd", "gather_nd", "x:X index:Index"),
    row("pd_op.index_put", "index_put", "x:x indices:indices* value:value", "out:out", "accumulate:bool"),
    row("pd_op.index_put_", "index_put", "x:x indices:indices* value:value", "out:out&x", "accumulate:bool"),
    row("pd_op.broadcast_tensors", "broadcast_tensors", "input:X*", "out:Out*"),
    row("pd_op.scatter", "scatter", "x:X index:Ids updates:Updates", "out:Out", "overwrite:bool"),
    row("pd_op.cast", "cast", "x:X", "out:Out", "dtype=out_dtype:dtype", hook=cast_dtypes),
    row("pd_op.assign_array", "assign", "x:X", when=reads_an_array),   # a copy of a tensor array (a cond's grad)
    row("pd_op.assign", "assign", "x:X"),
    row("pd_op.share_data_", "share_data", "x:X"),
    row("pd_op.assign_out_", "assign", "x:X output:-", "out:Out&output", when=writes_a_persistable),
    row("pd_op.pad3d", "pad3d", "x:X paddings>paddings:ints@Paddings", "out:Out",
        "mode:str pad_value=value:f64 data_format:str"),
    row("pd_op.one_hot", "one_hot_v2", "x:X num_classes>depth:int@depth_tensor",
        fixed={"dtype": int(VarType.FP32)}),   # always
    row("pd_op.topk", "top_k_v2", "x:X k>k:int@K", "out:Out indices:Indices", "axis:i32 largest:bool sorted:bool"),
    row("pd_op.flip", "flip", "x:X", "out:Out", "axis:i32s"),
    row("pd_op.argsort", "argsort", "x:X", "out:Out indices:Indices", "axis:i32 descending:bool stable:bool"),
    row("pd_op.crop", "crop_tensor",
        "x:X shape>shape:ints@Shape,ShapeTensor offsets>offsets:ints@Offsets,OffsetsTensor"),
    row("pd_op.index_select", "index_select", "x:X index:Index", "out:Out", "axis=dim:i32"),
    row("pd_op.triu", "tril_triu", "x:X", "out:Out", "diagonal:i32", fixed={"lower": False}),
    row("pd_op.index_sample", "index_sample", "x:X index:Index"),
    row("pd_op.take_along_axis", "take_along_axis", "arr:Input indices:Index", "out:Result", "axis=Axis:i32"),
    row("pd_op.scatter_nd_add", "scatter_nd_add", "x:X index:Index updates:Updates"),
    row("pd_op.shape", "shape", "input:Input"),
    row("pd_op.numel", "size", "x:Input"),
    row("pd_op.set_value_", "set_value", "x:Input " + BOUNDS, "out:Out&x", SET_VALUE + " shape:i64s values:f64s",
        hook=literal_dtype, back=literal_values, when=_literal),
    row("pd_op.set_value_with_tensor_", "set_value",
        "x:Input values:ValueTensor " + BOUNDS, "out:Out&x",
        "axes:i64s decrease_axes:i64s none_axes:i64s"),
    row("pd_op.set_value_with_tensor", "set_value",   # export writes the in-place row above
        "x:Input values:ValueTensor " + BOUNDS, "out:Out",
        "axes:i64s decrease_axes:i64s none_axes:i64s"),
    # tensor arrays: PIR creates them explicitly (plumbing.create_array) and writes them in place; Paddle's backward
    # of a loop over one makes its grad array with create_array_like of zeros
    row("pd_op.create_array_like", "fill_zeros_like", "input:X", "out:Out", "val=-:f32=0.0", hook=zeros_only),
    row("pd_op.array_write_", "write_to_array", "array:- x:X i:I", "out:Out&array"),
    # X_W (a grad read: zeros where no slot was written) is dropped on export, as Paddle's own grads read
    row("pd_op.array_read", "read_from_array", "array:X i:I ~X_W"),
    # array[starts[0]] (dy2static's read of a list it built, e.g. PaddleDetection's RoIAlign); export writes array_read
    row("pd_op.slice_array_dense", "read_from_array", "input:X starts:I", hook=from_the_end),
    row("pd_op.array_to_tensor", "tensor_array_to_tensor", "x:X", "out:Out out_index:OutIndex",
        "axis:i32 use_stack:bool"),
    row("pd_op.array_length", "lod_array_length", "x:X"),
    # dy2static's list.pop() and list[a:b] (forward-only in Paddle): pop changes the array in place
    row("pd_op.array_pop", "array_pop", "array:array", "array_out:array_out&array out:out", "index:i32"),
    row("pd_op.slice_array", "slice_array", "input:input starts:starts ends:ends", "out:out"),
    row("pd_op.sequence_mask", "sequence_mask", "x:X max_len>maxlen:int@MaxLenTensor", "out:Y", "out_dtype:dtype"),
    # creation
    row("pd_op.full_like", "fill_any_like", "x:X value>value:float", "out:Out", "dtype:dtype place=-:place",
        back=fill_any_like_back),
    row("pd_op.uniform", "uniform_random", SHAPE + " min>min:float max>max:float", "out:Out",
        "dtype:dtype seed:i32 place=-:place"),
    row("pd_op.gaussian", "gaussian_random", SHAPE, "out:Out",
        "mean:f32 std:f32 seed:i32 dtype:dtype place=-:place"),
    row("pd_op.full_with_tensor", "fill_constant",
        "value>value:value@ValueTensor shape>shape:ints@ShapeTensor,ShapeTensorList", "out:Out", "dtype:dtype"),
    row("pd_op.logspace", "logspace", "start:Start stop:Stop num:Num base:Base", "out:Out",
        "dtype:dtype place=-:place"),
    row("pd_op.unique_consecutive", "unique_consecutive", "x:X", "out:Out index:Index counts:Counts",
        "return_inverse:bool return_counts:bool axis:i32s dtype:dtype=int64"),
    # random draws
    row("pd_op.bernoulli", "bernoulli", "x:X"),
    row("pd_op.multinomial", "multinomial", "x:X num_samples>num_samples:int", "out:Out", "replacement:bool"),
    row("pd_op.poisson", "poisson", "x:X"),
    row("pd_op.eye", "eye", "num_rows>num_rows:long num_columns>num_columns:long", "out:Out",
        "dtype:dtype place=-:place"),
    row("pd_op.increment_", "increment", "x:X", "out:Out&x", "value=step:f32"),
    row("pd_op.assign_value_", "assign_value", "output:-", "out:Out&output",
        "shape:i32s dtype:dtype values:f64s place=-:place", back=literal_values),
]

"""PIR export and import of operands a program computes (shapes read at run time): they become the values of PIR's
operands, which read back into the legacy ops' tensor inputs."""

import json

import numpy as np
import pytest

import gradc
from gradc.pir import parse_pir, serialize_pir


@pytest.mark.parametrize("dtype, written", [(gradc.VarType.FP64, "float64"), (gradc.VarType.FP32, "float32"),
                                            (gradc.VarType.INT64, "int64")])
def test_a_fill_constant_of_a_computed_shape_gets_its_value_in_its_own_dtype(dtype, written):
    """pd_op.full_with_tensor reads its value operand as a tensor of its output's dtype: a float64 program's (gradc's
    float64 widening of a decoding loop) refused to run in Paddle with a float32 one."""
    from programs import Net
    net = Net("float32")
    x = net.data("x", [-1, 3])
    shape = net.op("shape", {"Input": x})
    out = net.tmp([-1, 3], dtype, prefix="out")
    net.block.append_op("fill_constant", {"ShapeTensor": [shape]}, {"Out": [out]},
                        {"dtype": int(dtype), "value": 2.0, "shape": []})
    ops = json.loads(serialize_pir(net.program, fetch=[out]))["program"]["regions"][0]["blocks"][0]["ops"]
    made = {result["%"]: op for op in ops for result in (op.get("O") or [])}
    (full,) = [op for op in ops if op["#"] == "1.full_with_tensor"]
    value = made[full["I"][0]["%"]]
    assert value["#"] == "1.full" and value["A"][2]["AT"]["D"] == written
    (result,) = gradc.Executor().run(parse_pir(serialize_pir(net.program, fetch=[out])),
                                     {"x": np.zeros((2, 3), np.float32)}, [out], gradc.Scope())
    assert result.dtype == np.dtype(written) and (result == 2).all()


@pytest.mark.parametrize("sampler, attrs", [("gaussian_random", {"mean": 0.0, "std": 1.0}),
                                            ("uniform_random", {"min": -1.0, "max": 1.0})])
def test_a_sampler_of_a_computed_shape_keeps_it_through_pir(sampler, attrs):
    """A sampler shaped like another tensor (dy2static's randn_like of a dynamic batch) takes its shape as a PIR value,
    which reads back into the legacy op's ShapeTensor."""
    from programs import Net
    net = Net("float32")
    x = net.data("x", [-1, 3])
    shape = net.op("shape", {"Input": x})
    out = net.tmp([-1, 3], prefix="out")
    net.block.append_op(sampler, {"ShapeTensor": [shape]}, {"Out": [out]},
                        {"dtype": int(gradc.VarType.FP32), "shape": [], "seed": 7, **attrs})
    program = parse_pir(serialize_pir(net.program, fetch=[out]))
    (op,) = [op for op in program.global_block.ops if op.type == sampler]
    assert op.input("ShapeTensor") and not op.attrs.get("shape")
    (result,) = gradc.Executor().run(program, {"x": np.zeros((5, 3), np.float32)}, [out], gradc.Scope())
    assert result.shape == (5, 3) and np.unique(result).size == 15


def test_a_loop_var_entering_as_a_placeholder_takes_the_dtype_the_body_gives_it():
    """dy2static's placeholder for a value only a loop body defines is a 0-d pd_op.full typed as its guess of it;
    PaddleDetection's R-CNNs guess float32 for RPN's int32 counts. The loop var takes the body's dtype, the placeholder
    entering cast to it, so that verify (and `gradc compile`, which verifies first) reads the file as Paddle runs it."""
    from programs import Net
    net = Net("float32")
    i, n = net.constant(0), net.constant(3)
    counts = net.op("fill_constant", {}, {"shape": [], "dtype": int(gradc.VarType.FP32), "value": 0.0})
    net.block.var(counts).shape = [-1]   # typed as the value it stands for

    def body(i, counts):
        made = net.op("fill_constant", {}, {"shape": [2], "dtype": int(gradc.VarType.INT32), "value": 7.0})
        return [net.increment(i), net.op("scale", {"X": made}, {"scale": 2.0})]

    net.while_loop(lambda i, counts: net.less_than(i, n), body, [i, counts])
    doc = json.loads(serialize_pir(net.program, fetch=[i]))   # counts is the loop's own, as RPN's are
    loop = next(op for op in doc["program"]["regions"][0]["blocks"][0]["ops"] if op["#"] == "1.while")
    ops = loop["regions"][0]["blocks"][0]["ops"]
    yielded = ops[-1]["I"][2]["%"]   # the condition, i, counts
    (made,) = [op for op in ops if any(result["%"] == yielded for result in op.get("O") or [])]
    made["O"][0]["TT"]["D"][0] = {"#": "0.t_i32"}   # the body gives int32, as RPN's counts are
    program = parse_pir(json.dumps(doc).encode())
    assert gradc.verify(program) == []
    (cast,) = [op for op in program.global_block.ops if op.type == "cast"]
    assert cast.attrs["out_dtype"] == int(gradc.VarType.INT32)
    carried = cast.output("Out")[0]
    assert program.global_block.var(carried).dtype == gradc.VarType.INT32
    (result,) = gradc.Executor().run(program, {}, [carried], gradc.Scope())
    np.testing.assert_array_equal(result, np.full(2, 14, np.int32))


def test_a_dim_paddle_types_0_for_an_unknown_one_is_read_as_unknown():
    """Paddle 3.3.1 types a Conv1DTranspose's length 0 where its input's is unknown, and the ops after it inherit the
    0 (PaddleSpeech's HiFiGAN) or a size computed from it (a pad by 1 and 1 typed 2: Multi-band MelGAN): gradc read
    them as known, and refused the conv after them. Such a 0, and a dim of an op after a repaired one, is -1 where
    gradc's inference does not know the dim either; a 0 it knows (an empty slice) stays."""
    from programs import Net
    net = Net("float32")
    x = net.data("x", [1, 2, -1, 1])
    up = net.op("conv2d_transpose", {"Input": x, "Filter": net.param("w", [2, 2, 4, 1])},
                {"strides": [2, 1], "paddings": [1, 0], "output_padding": [0, 0]}, out="Output")
    padded = net.op("pad", {"X": up}, {"paddings": [0, 0, 0, 0, 1, 1, 0, 0], "pad_value": 0.0})
    out = net.op("conv2d", {"Input": padded, "Filter": net.param("v", [2, 2, 3, 1])}, out="Output")
    empty = net.op("slice", {"Input": x}, {"axes": [1], "starts": [0], "ends": [0], "infer_flags": [1],
                                           "decrease_axis": []})
    doc = json.loads(serialize_pir(net.program, fetch=[out, empty]))
    typed = {"1.conv2d_transpose": [1, 2, 0, 1], "1.pad": [1, 2, 2, 1], "1.conv2d": [1, 2, 0, 1]}   # as Paddle's
    for op in doc["program"]["regions"][0]["blocks"][0]["ops"]:
        if op["#"] in typed:
            op["O"][0]["TT"]["D"][1] = typed[op["#"]]
    program = parse_pir(json.dumps(doc).encode())
    shapes = {op.type: program.global_block.var(op.output_names()[0]).shape for op in program.global_block.ops}
    assert shapes["conv2d_transpose"] == shapes["pad"] == shapes["conv2d"] == [1, 2, -1, 1]
    assert shapes["slice"] == [1, 0, -1, 1]
    assert gradc.verify(program) == []
    scope = gradc.Scope()
    scope["w"], scope["v"] = np.ones((2, 2, 4, 1), np.float32), np.ones((2, 2, 3, 1), np.float32)
    (result,) = gradc.Executor().run(program, {"x": np.ones((1, 2, 3, 1), np.float32)}, [out], scope)
    assert result.shape == (1, 2, 6, 1)

"""Regenerates cases.json + values.npz: what PaddlePaddle (legacy IR, CPU, float64) computes for single
conv/pool ops and their grads. Run with a Python that has paddlepaddle (not a gradc dependency):

    FLAGS_enable_pir_api=0 python tests/data/paddle/conv_ops/generate.py

Each case is one raw op; the loss is sum(Out * weight) with a fixed random weight, so the grads
are the op's vector-Jacobian products. Test: tests/test_conv_ops_vs_paddle.py.
"""

import json
from pathlib import Path

import numpy as np
import paddle
from paddle.base.backward import append_backward

rng = np.random.default_rng(2026)


def randn(*shape):
    return rng.standard_normal(shape)


def distinct(*shape):
    return rng.permutation(int(np.prod(shape))).reshape(shape) / 10.0


def conv(name, x, w, **attrs):
    return name, "conv2d", {"Input": x, "Filter": w}, attrs


def pool(name, x, **attrs):
    return name, "pool2d", {"X": x}, attrs


CASES = [
    conv("conv_pad1", randn(2, 2, 4, 4), randn(3, 2, 3, 3), paddings=[1, 1]),
    conv("conv_groups_stride", randn(1, 4, 5, 5), randn(4, 2, 3, 3), groups=2, strides=[2, 2]),
    conv("conv_dilation", randn(1, 2, 6, 6), randn(2, 2, 2, 2), dilations=[2, 2], paddings=[1, 1]),
    conv("conv_same", randn(2, 4, 7, 6), randn(6, 2, 3, 2), groups=2, strides=[3, 2], padding_algorithm="SAME",
         dilations=[2, 2]),
    conv("conv_valid", randn(1, 2, 5, 4), randn(2, 2, 3, 2), padding_algorithm="VALID", paddings=[3, 3]),
    conv("conv_nhwc_pads4", randn(2, 7, 6, 4), randn(6, 2, 3, 2), groups=2, strides=[2, 3], dilations=[2, 1],
         paddings=[1, 2, 0, 3], data_format="NHWC"),
    ("depthwise", "depthwise_conv2d", {"Input": randn(1, 3, 4, 4), "Filter": randn(6, 1, 3, 3)},
     {"groups": 3, "paddings": [1, 1], "strides": [2, 2]}),
    ("deconv_stride_pad", "conv2d_transpose", {"Input": randn(1, 2, 3, 3), "Filter": randn(2, 3, 3, 3)},
     {"strides": [2, 2], "paddings": [1, 1]}),
    ("deconv_output_size", "conv2d_transpose", {"Input": randn(1, 2, 3, 3), "Filter": randn(2, 2, 3, 3)},
     {"strides": [3, 2], "paddings": [2, 0, 1, 1], "output_size": [9, 6]}),
    ("deconv_groups_same", "conv2d_transpose", {"Input": randn(2, 4, 3, 2), "Filter": randn(4, 3, 2, 3)},
     {"groups": 2, "strides": [2, 2], "padding_algorithm": "SAME", "dilations": [2, 2], "output_padding": [1, 1]}),
    ("deconv_nhwc_dilation", "conv2d_transpose", {"Input": randn(1, 3, 3, 4), "Filter": randn(4, 1, 2, 2)},
     {"groups": 2, "strides": [2, 2], "dilations": [2, 1], "output_padding": [1, 0], "data_format": "NHWC"}),
    pool("max_2x2", distinct(1, 2, 4, 4), pooling_type="max", ksize=[2, 2], strides=[2, 2]),
    pool("max_ceil_pads4", distinct(1, 2, 5, 6), pooling_type="max", ksize=[3, 3], strides=[2, 2],
         paddings=[0, 2, 1, 0], ceil_mode=True),
    pool("max_same_nhwc", distinct(1, 5, 4, 2), pooling_type="max", ksize=[3, 2], strides=[2, 2],
         padding_algorithm="SAME", data_format="NHWC"),
    pool("max_global", distinct(1, 2, 3, 4), pooling_type="max", ksize=[1, 1], global_pooling=True),
    pool("max_adaptive", distinct(1, 2, 5, 7), pooling_type="max", ksize=[3, 2], adaptive=True),
    pool("avg_exclusive", randn(1, 2, 4, 4), pooling_type="avg", ksize=[3, 3], strides=[2, 2], paddings=[1, 1]),
    pool("avg_inclusive", randn(1, 2, 4, 4), pooling_type="avg", ksize=[3, 3], strides=[2, 2], paddings=[1, 1],
         exclusive=False),
    pool("avg_inclusive_ceil", randn(1, 2, 5, 6), pooling_type="avg", ksize=[3, 3], strides=[2, 2],
         paddings=[1, 0, 0, 1], exclusive=False, ceil_mode=True),
    pool("avg_inclusive_bottom_pad", randn(1, 2, 6, 5), pooling_type="avg", ksize=[3, 2], strides=[2, 2],
         paddings=[0, 2, 1, 1], exclusive=False),
    pool("avg_same_ceil_nhwc", randn(1, 5, 6, 2), pooling_type="avg", ksize=[3, 3], strides=[2, 2],
         padding_algorithm="SAME", exclusive=False, ceil_mode=True, data_format="NHWC"),
    pool("avg_global", randn(1, 2, 3, 4), pooling_type="avg", ksize=[2, 2], global_pooling=True, paddings=[1, 1]),
    pool("avg_adaptive", randn(1, 2, 5, 7), pooling_type="avg", ksize=[2, 3], adaptive=True),
    pool("avg_valid", randn(1, 2, 5, 5), pooling_type="avg", ksize=[2, 3], strides=[2, 1],
         padding_algorithm="VALID", paddings=[2, 2]),
    pool("avg_empty_window", randn(1, 2, 6, 5), pooling_type="avg", ksize=[3, 2], strides=[2, 2],
         paddings=[0, 2, 1, 1], ceil_mode=True),
]


def run(op_type, inputs, attrs):
    """Out, the loss weight and every input grad of one raw op."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        block = main.global_block()
        feeds = {}
        for slot, value in inputs.items():
            feeds[slot] = paddle.static.data(slot, list(value.shape), "float64")
            feeds[slot].stop_gradient = False
        out = block.create_var(name="out", dtype="float64")
        block.append_op(type=op_type, inputs={s: [v] for s, v in feeds.items()},
                        outputs={"Output" if "conv" in op_type else "Out": [out]}, attrs=dict(attrs))
        weight = paddle.static.data("weight", [-1] * 4, "float64")
        prod = block.create_var(name="prod", dtype="float64")
        loss = block.create_var(name="loss", dtype="float64", shape=[])
        block.append_op(type="elementwise_mul", inputs={"X": [out], "Y": [weight]}, outputs={"Out": [prod]})
        block.append_op(type="reduce_sum", inputs={"X": [prod]}, outputs={"Out": [loss]},
                        attrs={"reduce_all": True, "dim": [], "keep_dim": False})
        append_backward(loss)
    exe = paddle.static.Executor(paddle.CPUPlace())
    (shape,) = exe.run(main, feed={**inputs, "weight": np.zeros([1] * 4)}, fetch_list=["out"])
    weight = rng.standard_normal(shape.shape)
    values = exe.run(main, feed={**inputs, "weight": weight}, fetch_list=["out", *(s + "@GRAD" for s in inputs)])
    return values[0], weight, dict(zip(inputs, values[1:]))


def main():
    paddle.enable_static()
    here = Path(__file__).parent
    meta, arrays = [], {}
    for name, op_type, inputs, attrs in CASES:
        out, weight, grads = run(op_type, inputs, attrs)
        meta.append({"name": name, "op": op_type, "attrs": attrs, "inputs": list(inputs)})
        arrays.update({f"{name}/{slot}": value for slot, value in inputs.items()})
        arrays.update({f"{name}/{slot}@GRAD": value for slot, value in grads.items()})
        arrays[f"{name}/out"], arrays[f"{name}/weight"] = out, weight
    lines = ",\n  ".join(json.dumps(case) for case in meta)
    (here / "cases.json").write_text(f'{{"paddle_version": "{paddle.__version__}", "cases": [\n  {lines}\n]}}\n')
    np.savez_compressed(here / "values.npz", **arrays)


if __name__ == "__main__":
    main()

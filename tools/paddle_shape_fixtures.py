"""Fixtures for the shape, indexing and tensor-creating ops: what PaddlePaddle (legacy IR, CPU, float64)
computes for small programs built with its own functional API and layers, and their gradients. Needs
paddlepaddle 3.x, which gradc does not depend on:

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_shape_fixtures.py tests/data/paddle/ops/shape

Each case writes <case>.pb, Paddle's forward program (op_callstack stripped), and entries in cases.json (the
outputs compared, the inputs differentiated) and values.npz (<case>/<var>: feeds, outputs, and for float
outputs a random weight W and Paddle's input grads of sum(output * W)). APIs that 3.3.1 binds to PIR-only C
functions (tril/triu, roll, expand_as) append their legacy op directly. Test: tests/test_shape_ops_vs_paddle.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle.base.backward import append_backward
from paddle.base.layer_helper import LayerHelper

paddle.enable_static()
paddle.seed(2027)
rng = np.random.default_rng(2027)


def data(name, value, grad=None):
    var = paddle.static.data(name, list(value.shape), str(value.dtype))
    var.stop_gradient = not (value.dtype.kind == "f" if grad is None else grad)
    return var


def legacy(op_type, inputs, attrs, out_slot="Out", dtype="float64"):
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={out_slot: out}, attrs=attrs)
    return out


def i32(*values):
    return paddle.full([len(values)], values[0], "int32") if len(values) == 1 else \
        paddle.assign(np.array(values, np.int32))


def randn(*shape):
    return rng.standard_normal(shape)


X = {"x": randn(3, 4)}
X3 = {"x": randn(2, 3, 4)}


def case(feeds, build, description):
    return feeds, build, description


CASES = {
    # tensor inputs that override attributes, as the Python API emits them
    "concat_axis_tensor": case({"x": randn(2, 3), "y": randn(2, 2)},
                               lambda v: [paddle.concat([v["x"], v["y"]], axis=i32(-1))], "concat(axis=tensor)"),
    "split_tensors": case(X3, lambda v: paddle.split(v["x"], [1, i32(-1)], axis=i32(2)),
                          "split(sections=[1, tensor -1], axis=tensor)"),
    "reshape_tensors": case(X3, lambda v: [paddle.reshape(v["x"], [i32(4), -1]),
                                           paddle.reshape(v["x"], paddle.assign(np.array([3, 8], np.int32)))],
                            "reshape(shape=[tensor, -1]) and reshape(shape=tensor)"),
    "expand_tensors": case({"x": randn(3, 1)}, lambda v: [paddle.expand(v["x"], [2, i32(3), 4]),
                                                          paddle.expand(v["x"], i32(2, 3, 5))],
                           "expand(shape=[.., tensor, ..]) and expand(shape=tensor)"),
    "tile_tensors": case({"x": randn(2, 3)}, lambda v: [paddle.tile(v["x"], [i32(2), 1]),
                                                        paddle.tile(v["x"], i32(1, 2, 2))],
                         "tile(repeat_times=[tensor, 1]) and tile(repeat_times=tensor)"),
    "slice_tensors": case(X3, lambda v: [paddle.slice(v["x"], [1, 2], [i32(1), 0], [3, i32(-1)]),
                                         paddle.strided_slice(v["x"], [2], [i32(-1)], [-5], [i32(-2)])],
                          "slice and strided_slice with tensor starts, ends and strides"),
    "unsqueeze_gather_topk_tensors": case(
        {"x": randn(3, 4), "index": np.array([2, 0, 2])},
        lambda v: [paddle.unsqueeze(v["x"], i32(1)), paddle.gather(v["x"], v["index"], axis=i32(1)),
                   paddle.topk(v["x"], i32(2))[0]],
        "unsqueeze(axis=tensor), gather(axis=tensor), topk(k=tensor)"),
    "pad_modes": case({"x": randn(2, 3), "img": randn(1, 2, 3, 4)},
                      lambda v: [F.pad(v["x"], [1, 0, 0, 2], value=0.5), F.pad(v["img"], [2, 1, 1, 2], mode="reflect"),
                                 F.pad(v["img"], [-1, 2, 1, -1], mode="circular"),
                                 F.pad(v["img"], i32(1, 0, 2, 1), mode="replicate")],
                      "F.pad: constant (pad op), reflect/circular with a crop, replicate with a tensor pad (pad3d)"),
    "expand_as_full": case({"x": randn(3, 1), "y": randn(2, 3, 4)},
                           lambda v: [legacy("expand_as_v2", {"X": v["x"], "Y": v["y"]}, {"target_shape": [2, 3, 4]}),
                                      paddle.full(i32(2, 3), paddle.assign(np.array([1.5])), "float64")],
                           "expand_as_v2 with Y, full(shape=tensor, value=tensor)"),
    # new ops
    "flip_roll_tril": case(
        {"x": randn(3, 4)},
        lambda v: [paddle.flip(v["x"], [0, -1]), legacy("roll", {"X": v["x"]}, {"shifts": [1, -2], "axis": [0, 1]}),
                   legacy("roll", {"X": v["x"], "ShiftsTensor": paddle.assign(np.array([5], np.int64))},
                          {"shifts": [0], "axis": []}),
                   legacy("tril_triu", {"X": v["x"]}, {"diagonal": 1, "lower": True}),
                   legacy("tril_triu", {"X": v["x"]}, {"diagonal": -1, "lower": False})],
        "flip, roll (and with ShiftsTensor, flat), tril/triu"),
    "shuffles_unbind": case(
        {"x": randn(2, 8, 2, 3), "y": randn(1, 3, 2, 9)},
        lambda v: [paddle.nn.PixelShuffle(2)(v["x"]), paddle.nn.PixelShuffle(3, "NHWC")(v["y"]),
                   paddle.nn.PixelUnshuffle(2)(paddle.nn.PixelShuffle(2)(v["x"])),
                   paddle.nn.PixelUnshuffle(3, "NHWC")(v["y"][:, :, :, :9].reshape([1, 3, 3, 6])),
                   paddle.nn.ChannelShuffle(4)(v["x"]), paddle.nn.ChannelShuffle(3, "NHWC")(v["y"]),
                   *paddle.unbind(v["x"], axis=2)],
        "nn.PixelShuffle, nn.PixelUnshuffle, nn.ChannelShuffle (NCHW and NHWC), unbind"),
    "setitem": case(
        {"x": randn(3, 4, 2), "v": randn(4), "w": randn(4, 2)},
        lambda v: [paddle.static.setitem(paddle.scale(v["x"], 1.0), index, value) for index, value in (
            ((1, slice(None), 0), v["v"]), ((slice(None, None, -1),), v["w"]),
            ((slice(1, None), slice(None, None, 2), 0), 2.5), ((slice(None), None, 0), 3.0),
            ((slice(paddle.full([1], 1, "int64"), None), slice(-1, None, -2)), 0.5))],
        "paddle.static.setitem (set_value): tensor and literal values, negative steps, None and int indices"),
    "sort_crop_repeat_diag": case(
        {"x": randn(3, 4), "v": randn(3)},
        lambda v: [paddle.sort(v["x"], axis=0, descending=True), paddle.argsort(v["x"], axis=-1),
                   paddle.crop(v["x"], [2, -1], [1, 1]),
                   paddle.crop(v["x"], i32(2, 2), [paddle.full([1], 1, "int32"), 2]),
                   paddle.repeat_interleave(v["x"], 2, 1),
                   paddle.repeat_interleave(v["x"], paddle.assign(np.array([1, 0, 3], np.int64)), 0),
                   paddle.diag(v["v"], offset=1, padding_value=0.5), paddle.diag(v["x"], offset=-1)],
        "sort, argsort, crop (attr and tensor shape/offsets), repeat_interleave (int and tensor), diag (both ways)"),
    "kth_search_count": case(
        {"x": randn(3, 4), "index": np.array([2, 0, 2]), "value": randn(3, 3), "seq": np.array([[1.0, 3.0, 5.0],
                                                                                               [2.0, 4.0, 6.0]]),
         "ids": np.array([[1], [7], [12], [19]]), "counts": np.array([0, 3, 3, 5]), "lengths": np.array([2, 0, 3])},
        lambda v: [paddle.kthvalue(v["x"], 2, axis=1)[0], paddle.index_add(v["x"], v["index"], 1, v["value"]),
                   paddle.searchsorted(v["seq"], v["seq"] + 1.0, right=True),
                   paddle.bucketize(v["seq"][0], v["seq"][1], out_int32=True),
                   paddle.bincount(v["counts"], minlength=7), paddle.bincount(v["counts"], weights=v["x"][0]),
                   paddle.shard_index(v["ids"], 20, 3, 1), F.sequence_mask(v["lengths"], dtype="float64"),
                   F.sequence_mask(v["lengths"], paddle.full([1], 5, "int32"))],
        "kthvalue, index_add, searchsorted, bucketize, bincount (with weights), shard_index, sequence_mask"),
    "meshgrid": case({"a": randn(2), "b": randn(3), "c": randn(4)}, lambda v: paddle.meshgrid(v["a"], v["b"], v["c"]),
                     "meshgrid of three vectors"),
    "index_ops": case(
        {"x": randn(3, 5), "index": np.array([4, 0, 2, 4]), "rows": np.array([[0, 4], [1, 1], [3, -2]])},
        lambda v: [paddle.index_select(v["x"], v["index"], axis=1), paddle.index_sample(v["x"], v["rows"] % 5),
                   paddle.take_along_axis(v["x"], v["rows"], 1)],
        "index_select, index_sample, take_along_axis (a negative index)"),
    # Paddle 3.3.1's grads of these two are wrong for a negative index (tests/test_shape_ops_vs_paddle.py)
    "index_select_negative_index": case({"x": randn(2, 5), "index": np.array([4, 0, -1])},
                                        lambda v: [paddle.index_select(v["x"], v["index"], axis=1)],
                                        "index_select with index -1"),
    "put_along_axis_negative_index": case(
        {"x": randn(2, 5), "index": np.array([[-1], [0]]), "value": randn(2, 1)},
        lambda v: [paddle.put_along_axis(v["x"], v["index"], v["value"], 1, reduce="add")],
        "put_along_axis with index -1"),
    "put_along_axis": case(
        {"x": randn(3, 4), "index": np.array([[0, 0, 3], [1, 3, 2], [2, 2, 2]]), "value": randn(3, 3)},
        lambda v: [paddle.put_along_axis(v["x"], v["index"], v["value"], 1, reduce=r, include_self=s)
                   for r in ("assign", "add", "mul", "mean", "amin", "amax") for s in (True, False)],
        "put_along_axis, every reduce mode with and without include_self, repeated targets"),
    "scatter_nd_add_masked_select": case(
        {"x": randn(3, 4), "index": np.array([[1], [1], [0]]), "updates": randn(3, 4)},
        lambda v: [paddle.scatter_nd_add(v["x"], v["index"], v["updates"]), paddle.masked_select(v["x"], v["x"] > 0),
                   paddle.nonzero(v["x"] > 0)],
        "scatter_nd_add (repeated rows), masked_select, nonzero (where_index)"),
    "unique": case({"x": np.array([[3.0, 1.0], [3.0, 1.0], [0.5, 2.0]])},
                   lambda v: [*paddle.unique(v["x"], return_index=True, return_inverse=True, return_counts=True),
                              *paddle.unique(v["x"], return_index=True, return_inverse=True, return_counts=True,
                                             axis=0)],
                   "unique of all elements and of rows, with indices, inverse and counts"),
    "gather_tree": case({"ids": rng.integers(0, 9, (4, 2, 3)), "parents": rng.integers(0, 3, (4, 2, 3))},
                        lambda v: [F.gather_tree(v["ids"], v["parents"])], "gather_tree"),
    "label_smooth": case({"x": rng.uniform(0, 1, (2, 3, 4)), "prior": np.array([0.4, 0.3, 0.2, 0.1])},
                         lambda v: [F.label_smooth(v["x"], epsilon=0.1),
                                    F.label_smooth(v["x"], prior_dist=v["prior"], epsilon=0.25)],
                         "label_smooth, uniform and with a prior (F.label_smooth stops the label's gradient)"),
    "label_smooth_grad": case({"x": rng.uniform(0, 1, (3, 4)), "prior": np.array([0.4, 0.3, 0.2, 0.1])},
                              lambda v: [legacy("label_smooth", {"X": v["x"], "PriorDist": v["prior"]},
                                                {"epsilon": 0.25})],
                              "the label_smooth op itself, differentiated"),
    "constants": case({"x": randn(2, 3)},
                      lambda v: [v["x"] * paddle.assign(randn(2, 3)), paddle.assign(np.array([[3, -1]], np.int64)),
                                 paddle.assign(np.array([True, False])), paddle.eye(3, 4, "float64"),
                                 paddle.linspace(0.0, 1.0, 7, "float32"), paddle.linspace(0, 10, 4, "int64"),
                                 paddle.arange(0.5, 2.0, 0.4, "float32"), paddle.arange(5, -2, -3, "int64")],
                      "assign(numpy: float, int, bool), eye, linspace (float32, int), arange (float32, negative)"),
    "multi_margin_loss": case({"x": randn(4, 5), "label": np.array([1, 0, 4, 2])},
                              lambda v: [paddle.nn.MultiMarginLoss(margin=0.5)(v["x"], v["label"])],
                              "nn.MultiMarginLoss (index_sample inside)"),
}


def _strip(program) -> bytes:
    for block in program.blocks:
        for op in block.ops:
            op.desc.remove_attr("op_callstack")
    return program.desc.serialize_to_string()


def build(name: str, out_dir: Path, arrays: dict) -> dict:
    feeds, make, description = CASES[name]
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        inputs = {k: data(k, v) for k, v in feeds.items()}
        outputs = [o for o in make(inputs)]
        forward = main.clone()
        executor = paddle.static.Executor(paddle.CPUPlace())
        executor.run(startup)
        values = executor.run(forward, feed=feeds, fetch_list=[o.name for o in outputs])
        weighted = [(o, v) for o, v in zip(outputs, values) if v.dtype.kind == "f" and not o.stop_gradient]
        grads = [k for k, var in inputs.items() if not var.stop_gradient]
        weights = {}
        if weighted:
            terms = []
            for out, value in weighted:
                weights[out.name] = rng.standard_normal(value.shape).astype(value.dtype)
                # unknown dims: Paddle's compile-time shape of a tensor-decided output can be wrong
                w = paddle.static.data(f"{out.name}@W", [-1] * value.ndim, str(value.dtype))
                terms.append(legacy("reduce_sum", {"X": out * w}, {"reduce_all": True, "dim": [], "keep_dim": False},
                                    dtype=str(value.dtype)))
            loss = terms[0]
            for term in terms[1:]:
                loss = loss + term
            append_backward(loss)
            grads = [k for k in grads if main.global_block().has_var(f"{k}@GRAD")]  # Y of expand_as gets none
            feed = {**feeds, **{f"{n}@W": w for n, w in weights.items()}}
            grad_values = executor.run(main, feed=feed, fetch_list=[f"{k}@GRAD" for k in grads])
        else:
            grads, grad_values = [], []
    (out_dir / f"{name}.pb").write_bytes(_strip(forward))
    arrays.update({f"{name}/{k}": v for k, v in feeds.items()})
    arrays.update({f"{name}/{o.name}": v for o, v in zip(outputs, values)})
    arrays.update({f"{name}/{n}@W": w for n, w in weights.items()})
    arrays.update({f"{name}/{k}@GRAD": g for k, g in zip(grads, grad_values)})
    return {"name": name, "description": description, "feeds": list(feeds), "outputs": [o.name for o in outputs],
            "weighted": list(weights), "grads": grads}


def build_coalesce(name: str, out_dir: Path, arrays: dict, layer) -> dict:
    """The coalesce_tensor op of an RNN layer's startup program (its initialisers removed: the parameters
    they made are fed), and the fused buffer Paddle makes from them."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        layer()(paddle.static.data("x", [2, 5, 4], "float32"))
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    block = startup.global_block()
    while block.ops[0].type != "coalesce_tensor":
        block._remove_op(0)
    op = block.ops[0]
    feeds = {p: np.array(paddle.static.global_scope().find_var(p).get_tensor()) for p in op.input("Input")}
    outputs = op.output("FusedOutput")
    values = executor.run(startup, feed=feeds, fetch_list=outputs)
    (out_dir / f"{name}.pb").write_bytes(_strip(startup))
    arrays.update({f"{name}/{k}": v for k, v in feeds.items()})
    arrays.update({f"{name}/{o}": v for o, v in zip(outputs, values)})
    return {"name": name, "description": "coalesce_tensor of nn.GRU's startup program", "feeds": list(feeds),
            "outputs": outputs, "weighted": [], "grads": []}


def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    arrays, meta = {}, []
    for name in CASES:
        meta.append(build(name, out_dir, arrays))
        print(f"{name}: {len(meta[-1]['outputs'])} outputs, grads of {meta[-1]['grads']}")
    meta.append(build_coalesce("gru_coalesce_tensor", out_dir, arrays, lambda: paddle.nn.GRU(4, 3, num_layers=2)))
    lines = ",\n  ".join(json.dumps(m) for m in meta)
    (out_dir / "cases.json").write_text(f'{{"paddle_version": "{paddle.__version__}", "cases": [\n  {lines}\n]}}\n')
    np.savez_compressed(out_dir / "values.npz", **arrays)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/ops/shape"))

"""Paddle 3.3.1's legacy second-derivative ops of unary math that gradc's week-39 set lacked, as
`paddle.static.gradients` of a gradient writes them (legacy static mode, FLAGS_enable_pir_api=0):
double_<act>.pb.gz, float64 sum(v * grad_x sum(w * act(x))) (x, w, v fed), and double_<act>_paddle.pb.gz, Paddle's
gradients of it to x and w (sqrt_grad_grad, rsqrt_grad_grad, leaky_relu_grad_grad, abs_double_grad);
double.npz: the feeds (x positive for sqrt and rsqrt) and Paddle's gradients.

    cd tools && FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python paddle_double_grad_ops.py \
        ../tests/data/paddle/double_grad_ops
"""

import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle.base.layer_helper import LayerHelper
from paddle_programs import without_callstacks, write_gz

RNG = np.random.default_rng(46)


def matmul_v1(x, y):
    """The legacy matmul op (v1, with alpha and transposes), which no 3.3.1 API appends any more."""
    helper = LayerHelper("matmul")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="matmul", inputs={"X": x, "Y": y}, outputs={"Out": out},
                     attrs={"alpha": 0.5, "transpose_X": False, "transpose_Y": True})
    return out


# name -> (act of x and y, x's shape, y's shape or None); looked up late: install() rebinds paddle's C-only APIs
DOUBLE = {"sqrt": (lambda x, y: paddle.sqrt(x), (3, 4), None), "rsqrt": (lambda x, y: paddle.rsqrt(x), (3, 4), None),
          "leaky_relu": (lambda x, y: F.leaky_relu(x, 0.1), (3, 4), None),
          "abs": (lambda x, y: paddle.abs(x), (3, 4), None),
          # x with zeros: Paddle's leaky_relu_grad_grad takes alpha there (its leaky_relu_grad takes 1)
          "leaky_relu_at_zero": (lambda x, y: F.leaky_relu(x, 0.1), (3, 4), None),
          "clip": (lambda x, y: paddle.clip(x, -0.5, 0.8), (3, 4), None),
          "matmul": (matmul_v1, (3, 4), (2, 4)),
          "pool2d": (lambda x, y: F.avg_pool2d(x, 2, stride=2), (1, 2, 4, 4), None),
          "pad3d": (lambda x, y: F.pad(x, [1, 0, 0, 1, 1, 1], data_format="NCDHW"), (1, 1, 2, 3, 3), None),
          # Paddle's pad3d_double_grad pads ddX with the value too (its grad to w then holds 0.5 v-free terms)
          "pad3d_value": (lambda x, y: F.pad(x, [1, 0, 0, 1, 1, 1], value=0.5, data_format="NCDHW"), (1, 1, 2, 3, 3),
                          None)}
POSITIVE = ("sqrt", "rsqrt")
NO_KERNEL = ("matmul",)   # Paddle 3.3.1 registers no kernel of matmul_grad_grad: its program's values in closed form


def closed_form(feed: dict) -> list:
    """sum(v * grad_x sum(w * 0.5 x y^T)) = sum(v * 0.5 w y): to x 0, to w 0.5 v y^T, to y 0.5 w^T v."""
    x, y, w, v = (feed[name] for name in "xywv")
    return [np.zeros_like(x), 0.5 * v @ y.T, 0.5 * w.T @ v]


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    results = {}
    for name, (act, x_shape, y_shape) in DOUBLE.items():
        x = RNG.uniform(0.3, 1.5, x_shape) * (1 if name in POSITIVE else RNG.choice([-1, 1], x_shape))
        x[..., 0] = 0.0 if name.endswith("_at_zero") else x[..., 0]
        feed = {"x": x, "v": RNG.normal(size=x_shape), **({"y": RNG.normal(size=y_shape)} if y_shape else {})}
        main_program = paddle.static.Program()
        with paddle.static.program_guard(main_program, paddle.static.Program()):
            xv, vv = (paddle.static.data(n, x_shape, "float64") for n in ("x", "v"))
            yv = paddle.static.data("y", y_shape, "float64") if y_shape else None
            for var in (xv, yv) if y_shape else (xv,):
                var.stop_gradient = False   # before the ops that read them: their outputs' flag is set on append
            out_v = act(xv, yv)
            feed["w"] = RNG.normal(size=out_v.shape)
            wv = paddle.static.data("w", out_v.shape, "float64")
            wv.stop_gradient = False
            wrt = [xv, wv, *([yv] if y_shape else [])]
            (grad,) = paddle.static.gradients(paddle.sum(out_v * wv), xv)
            loss = paddle.sum(grad * vv)
            forward = main_program.clone()
            grads = paddle.static.gradients(loss, wrt)
        print(name, [op.type for op in main_program.global_block().ops])
        values = closed_form(feed) if name in NO_KERNEL else exe.run(main_program, feed=feed, fetch_list=grads)
        results.update({f"{name}_{var}": value for var, value in feed.items()})
        results.update({f"{name}_{var.name}@GRAD": value for var, value in zip(wrt, values)})
        write_gz(out / f"double_{name}.pb", without_callstacks(forward))
        write_gz(out / f"double_{name}_paddle.pb", without_callstacks(main_program))
    np.savez(out / "double.npz", **results)


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""Paddle 3.3.1's last legacy higher-order op types gradc lacked, as `paddle.static.gradients` writes them in legacy
static mode (FLAGS_enable_pir_api=0), into tests/data/paddle/double_grad_ops/higher/:

- triple_<act>.pb.gz: float64 sum(v * grad_x sum(u * grad_x sum(w * act(x)))) (x, w, u, v fed), and
  triple_<act>_paddle.pb.gz, Paddle's gradients of it to x, w and u (sin/cos/sigmoid/pow_triple_grad).
- norm_<case>.pb.gz: float64 sum(v * grad_x sum(w * tanh(norm(x, scale, bias)))) (all fed; batch_norm's running
  mean and variance too), and norm_<case>_paddle.pb.gz, its gradients to x, scale, bias and w (batch_norm_grad_grad
  in training, NHWC, use_global_stats and is_test modes; instance_norm_double_grad). Paddle's kernel refuses is_test
  (use_global_stats, it says): that program has no values.
- double_acos.pb.gz / double_acos_paddle.pb.gz: sum(v * grad_x sum(w * acos(x))) and its gradients to x and w.
  Paddle 3.3.1 registers no kernel of acos_double_grad (it cannot even infer its shapes: this script does that
  for it), so those values are the closed form.
higher.npz: the feeds and Paddle's gradients, `<case>_<var>` and `<case>_<var>@GRAD`, and `<case>@FETCH` the names of
the gradients in Paddle's program.
- pir/<case>.json.gz: the same programs built in PIR static mode (Paddle 3's default; pd_op.<op>_double_grad and
  _triple_grad), and those of tools/paddle_double_grad_ops.py's sqrt, rsqrt, leaky_relu, abs, clip, pool2d, pad3d,
  with a fetch op per gradient (grad_<i>); pir/higher.npz: the feeds (the legacy programs') and
  Paddle's values, `<case>_<i>@GRAD` (this script's second interpreter, ``OUT --pir``); and norm_batch_norm_plain,
  batch_norm without scale and bias (its double grad's scale null), which has no legacy program.

    cd tools && FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python paddle_higher_order_ops.py \
        ../tests/data/paddle/double_grad_ops/higher
"""

from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle.base import core
from paddle_double_grad_ops import DOUBLE
from paddle_programs import pir_half, script_main, with_fetches, without_callstacks, write_gz

RNG = np.random.default_rng(47)
# act -> (act of x, x drawn); looked up late: install() rebinds paddle's C-only APIs
TRIPLE = {"sin": (lambda x: paddle.sin(x), lambda s: RNG.normal(size=s)),
          "cos": (lambda x: paddle.cos(x), lambda s: RNG.normal(size=s)),
          "sigmoid": (lambda x: F.sigmoid(x), lambda s: RNG.normal(size=s)),
          "pow": (lambda x: paddle.pow(x, 3.5), lambda s: RNG.uniform(0.5, 1.5, s))}


def _batch_norm(**options):
    def norm(x, scale, bias, mean, var):
        return F.batch_norm(x, mean, var, scale, bias, epsilon=1e-3, **options)
    return norm


# case -> (x's shape, its channel count, the norm of (x, scale, bias, mean, variance))
NORMS = {"batch_norm": ((3, 2, 2, 3), 2, _batch_norm(training=True)),
         "batch_norm_nhwc": ((3, 2, 3, 2), 2, _batch_norm(training=True, data_format="NHWC")),
         "batch_norm_global": ((3, 2, 2, 3), 2, _batch_norm(training=True, use_global_stats=True)),
         "batch_norm_test": ((3, 2, 2, 3), 2, _batch_norm(training=False)),
         "instance_norm": ((2, 3, 2, 3), 3, lambda x, scale, bias, mean, var: F.instance_norm(
             x, weight=scale, bias=bias, eps=1e-3))}


# Paddle's batch_norm_grad_grad kernel refuses is_test ("CANNOT be used in train program"): no values of it
REFUSED = ("norm_batch_norm_test",)


def _acos_shapes() -> None:
    """Let acos_double_grad's shapes be inferred (each output is shaped like its input): Paddle's has no kernel."""
    original = core.OpDesc.infer_shape

    def infer_shape(op, block):
        if op.type() != "acos_double_grad":
            return original(op, block)
        for out, like in (("x@GRAD", "x"), ("grad_out@GRAD", "grad_out")):
            source = block.find_var_recursive(op.input(like)[0].encode())
            for name in op.output(out):
                block.find_var_recursive(name.encode()).set_shape(source.shape())
        return None

    core.OpDesc.infer_shape = infer_shape


def _data(feed: dict, name: str, value, differentiated: bool):
    """A float64 input fed ``value``, or the value the feed already holds (the PIR half's: the legacy half's)."""
    value = feed.setdefault(name, value)
    var = paddle.static.data(name, value.shape, "float64")
    var.stop_gradient = not differentiated   # before the ops that read it: their outputs' flag is set on append
    return var


def triple(name: str, feed: dict):
    act, draw = TRIPLE[name]
    x = _data(feed, "x", draw((3, 4)), True)
    w, u, v = (_data(feed, n, RNG.normal(size=(3, 4)), n in "wu") for n in "wuv")
    (once,) = paddle.static.gradients(paddle.sum(act(x) * w), x)
    (twice,) = paddle.static.gradients(paddle.sum(once * u), x)
    return paddle.sum(twice * v), [x, w, u]


def norm(name: str, feed: dict):
    shape, channels, apply = NORMS[name]
    x = _data(feed, "x", RNG.normal(size=shape), True)
    scale, bias = (_data(feed, n, RNG.normal(size=channels), True) for n in ("scale", "bias"))
    mean = _data(feed, "mean", RNG.normal(size=channels) * 0.1, False)
    var = _data(feed, "variance", RNG.uniform(0.5, 1.5, channels), False)
    y = apply(x, scale, bias, mean, var)
    w, v = (_data(feed, n, RNG.normal(size=shape), n == "w") for n in "wv")
    (grad,) = paddle.static.gradients(paddle.sum(paddle.tanh(y) * w), x)
    return paddle.sum(grad * v), [x, scale, bias, w]


def plain_norm(name: str, feed: dict):
    """batch_norm without scale and bias (PIR only: Paddle's legacy batch_norm_grad cannot infer its shapes then)."""
    x = _data(feed, "x", RNG.normal(size=(3, 2, 2, 3)), True)
    mean, var = _data(feed, "mean", RNG.normal(size=2) * 0.1, False), _data(feed, "variance", RNG.uniform(0.5, 1.5, 2),
                                                                               False)
    y = F.batch_norm(x, mean, var, None, None, training=True, epsilon=1e-3)
    w, v = (_data(feed, n, RNG.normal(size=(3, 2, 2, 3)), n == "w") for n in "wv")
    (grad,) = paddle.static.gradients(paddle.sum(paddle.tanh(y) * w), x)
    return paddle.sum(grad * v), [x, w]


def acos(name: str, feed: dict):
    x = _data(feed, "x", RNG.uniform(-0.8, 0.8, (3, 4)), True)
    w, v = (_data(feed, n, RNG.normal(size=(3, 4)), n == "w") for n in "wv")
    (grad,) = paddle.static.gradients(paddle.sum(paddle.acos(x) * w), x)
    return paddle.sum(grad * v), [x, w]


def double(name: str, feed: dict):
    """tools/paddle_double_grad_ops.py's program of ``name`` (its feeds given), for its PIR half."""
    act = DOUBLE[name][0]
    x = _data(feed, "x", None, True)
    out = act(x, None)
    w, v = (_data(feed, n, None, n == "w") for n in "wv")
    (grad,) = paddle.static.gradients(paddle.sum(out * w), x)
    return paddle.sum(grad * v), [x, w]


def acos_closed_form(feed: dict) -> list:
    """sum(v w acos'(x)), acos' = -1 / sqrt(1 - x^2): to x v w acos''(x) = -v w x / (1 - x^2)^1.5, to w v acos'(x)."""
    x, w, v = (feed[n] for n in "xwv")
    return [-v * w * x / (1 - x * x) ** 1.5, -v / np.sqrt(1 - x * x)]


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    _acos_shapes()
    paddle.enable_static()
    out.mkdir(parents=True, exist_ok=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    cases = {**{f"triple_{n}": (triple, n) for n in TRIPLE}, **{f"norm_{n}": (norm, n) for n in NORMS},
             "double_acos": (acos, "acos")}
    results = {}
    for case, (build, name) in cases.items():
        feed, main_program = {}, paddle.static.Program()
        with paddle.static.program_guard(main_program, paddle.static.Program()):
            loss, wrt = build(name, feed)
            forward = main_program.clone()
            grads = paddle.static.gradients(loss, wrt)
        print(case, [op.type for op in main_program.global_block().ops if "double" in op.type or "triple" in op.type
                     or op.type.endswith("grad_grad")])
        results.update({f"{case}_{var}": value for var, value in feed.items()})
        results[f"{case}@FETCH"] = np.array([grad.name for grad in grads])
        write_gz(out / f"{case}.pb", without_callstacks(forward))
        write_gz(out / f"{case}_paddle.pb", without_callstacks(main_program))
        if case in REFUSED:
            continue
        values = (acos_closed_form(feed) if case == "double_acos" else
                  exe.run(main_program, feed=feed, fetch_list=grads))
        results.update({f"{case}_{var.name}@GRAD": value for var, value in zip(wrt, values)})
    np.savez(out / "higher.npz", **results)
    pir_half(__file__, out)


# the PIR half: case -> its builder; dg1's second-derivative ops too (acos_grad has no PIR grad, nor Paddle's CPU build
# a kernel of matmul v1, depthwise_conv2d's and conv2d_transpose's double grads)
PIR = {**{f"triple_{n}": (triple, n) for n in TRIPLE},
       **{f"norm_{n}": (norm, n) for n in NORMS if f"norm_{n}" not in REFUSED},
       **{f"double_{n}": (double, n) for n in ("sqrt", "rsqrt", "leaky_relu", "abs", "clip", "pool2d", "pad3d")},
       "norm_batch_norm_plain": (plain_norm, "batch_norm_plain")}


FED = ("x", "w", "u", "v", "scale", "bias", "mean", "variance")


def main_pir(out: Path) -> None:
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    ours, dg1s = np.load(out / "higher.npz"), np.load(out.parent / "double.npz")
    (out / "pir").mkdir(exist_ok=True)
    results = {}
    for case, (build, name) in PIR.items():
        given = dg1s if build is double else ours   # the plain batch norm has no legacy program: its feeds drawn
        prefix = name if build is double else case
        feed = {key[len(prefix) + 1:]: given[key] for key in given.files
                if key.startswith(prefix + "_") and key[len(prefix) + 1:] in FED}
        main_program = paddle.static.Program()
        with paddle.static.program_guard(main_program, paddle.static.Program()):
            loss, wrt = build(name, feed)
            grads = paddle.static.gradients(loss, wrt)
        values = exe.run(main_program, feed=feed, fetch_list=grads)
        results.update({f"{case}_{var}": value for var, value in feed.items()})
        results.update({f"{case}_{index}@GRAD": value for index, value in enumerate(values)})
        # save_inference_model would set is_test, which changes batch_norm's grads
        write_gz(out / "pir" / f"{case}.json",
                 with_fetches(main_program, [(f"grad_{index}", grad) for index, grad in enumerate(grads)]))
    np.savez(out / "pir" / "higher.npz", **results)


if __name__ == "__main__":
    script_main(main, main_pir)

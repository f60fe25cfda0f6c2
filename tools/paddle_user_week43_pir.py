"""The PIR half of tools/paddle_user_week43.py (run by it in a second interpreter, PIR being Paddle 3's default):
the sr net in dygraph with the legacy sr's trained weights (the same names), saved by paddle.jit.save with H and W
dynamic, and the Predictor's and dygraph's outputs on 11x13 inputs, larger and odd (predictor.npz); resizes by a
scale attribute, which PIR holds in double (resize_pir.json, resize_pir.npz)."""

import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle_programs import predict
from paddle_user_week43 import EDSR, write_gz


def resize_pir(out: Path) -> None:
    """A float64 bilinear resize by scale [1.3, 1.7] (align_mode 1) with the gradient of sum(y * sin(3 y)), and an
    antialiased bilinear one by [0.7, 0.29], in PIR static mode, saved by save_inference_model."""
    paddle.enable_static()
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        x = paddle.static.data("x", [-1, 3, -1, -1], "float64")
        x.stop_gradient = False
        y = F.interpolate(x, scale_factor=[1.3, 1.7], mode="bilinear", align_mode=1)
        (grad,) = paddle.static.gradients(paddle.sum(y * paddle.sin(3.0 * y)), x)
        smooth = F.interpolate(x, scale_factor=[0.7, 0.29], mode="bilinear", antialias=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    feed = {"x": np.random.default_rng(43).normal(size=(1, 3, 10, 10))}
    values = exe.run(main, feed=feed, fetch_list=[y, grad, smooth])
    with tempfile.TemporaryDirectory() as tmp:
        paddle.static.save_inference_model(f"{tmp}/resize", [x], [y, grad, smooth], exe, program=main)
        write_gz(out / "resize_pir.json", Path(f"{tmp}/resize.json").read_bytes())
    np.savez(out / "resize_pir.npz", **feed, y=values[0], grad=values[1], smooth=values[2])
    paddle.disable_static()


def main_pir(out: Path) -> None:
    paddle.seed(43)
    net = EDSR(skip=lambda x: F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False))
    trained = np.load(out / "sr" / "trained.npz")
    names = sorted(n for n in trained.files if n.startswith("conv2d_") and int(n.split("_")[1].split(".")[0]) < 6)
    state = net.state_dict()
    assert len(state) == len(names)
    # the legacy program's conv2d_0 ... conv2d_5 in creation order are the layer's convs in creation order
    order = sorted(names, key=lambda n: (int(n.split("_")[1].split(".")[0]), n.endswith("b_0")))
    net.set_state_dict({key: paddle.to_tensor(trained[name]) for key, name in zip(state, order)})
    net.eval()
    lr = np.random.default_rng(43).uniform(0, 1, (1, 3, 11, 13)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        paddle.jit.save(net, f"{tmp}/sr", input_spec=[paddle.static.InputSpec([None, 3, None, None], "float32", "lr")])
        # its parameters are sr/trained.npz's conv2d_0 ... conv2d_5 under the same names: no .pdiparams kept
        write_gz(out / "sr_pir.json", Path(f"{tmp}/sr.json").read_bytes())
        predicted = predict(f"{tmp}/sr.json", f"{tmp}/sr.pdiparams", {"lr": lr})
    dygraph = net(paddle.to_tensor(lr)).numpy()
    np.savez_compressed(out / "predictor.npz", lr=lr, dygraph=dygraph, **predicted)
    resize_pir(out)

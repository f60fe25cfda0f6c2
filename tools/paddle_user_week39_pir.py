"""The PIR half of tools/paddle_user_week39.py (which runs it in a second interpreter, PIR mode being Paddle 3's
default): the NeRF renderer saved by paddle.jit.save and run by the Predictor; the SDFs built in PIR static mode with
Paddle's own minimize() programs; the second-derivative programs in PIR. Its outputs are listed in that script's
docstring."""

import json
import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
from paddle_programs import gzip_file, predict, write_gz, write_pir_gz
from paddle_user_week39 import DOUBLE, POINTS, RAYS, SAMPLES, SDF_STEPS, Field, render, sdf_program


def sdf_pir(out: Path) -> None:
    """The SDFs again in PIR static mode: Paddle's own training programs (pd_op.sin_double_grad,
    softplus_double_grad, tanh_double_grad in them), startups, initial weights and 5 steps' losses."""
    folder = out / "pir"
    folder.mkdir(exist_ok=True)
    points = np.load(out / "sdf_sine" / "data.npz")["points"]
    losses = {}
    for activation in ("sine", "softplus", "tanh"):
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
            paddle.seed(39)
            # the loss only: a PIR value has no name to record
            loss = sdf_program(activation, names=False)
            paddle.optimizer.Adam(1e-3).minimize(loss)
        exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            exe.run(startup)
            names = [op.attrs()["parameter_name"] for op in main.global_block().ops if op.name() == "builtin.parameter"]
            np.savez(folder / f"{activation}_init.npz", **{n: np.array(scope.find_var(n).get_tensor()) for n in names})
            losses[activation] = [float(exe.run(main, feed={"points": points[step * POINTS:(step + 1) * POINTS]},
                                                fetch_list=[loss])[0]) for step in range(SDF_STEPS)]
        for name, program in (("train", main), ("startup", startup)):
            write_pir_gz(program, folder / f"{activation}_{name}.json")
    (folder / "losses.json").write_text(json.dumps(losses, indent=1) + "\n")


def double_grad_pir(out: Path) -> None:
    """The second-derivative programs of double_grad_programs in PIR static mode, saved by save_inference_model with
    the two gradients as fetches (pir/double_<act>.json), and Paddle's values of them (pir/double.npz)."""
    feeds = np.load(out / "double.npz")
    results = {}
    for name, act in {**DOUBLE, "cos": paddle.cos, "log": paddle.log}.items():
        main, startup = paddle.static.Program(), paddle.static.Program()
        feed = {"x": np.abs(feeds["x"]) if name in ("pow", "log") else feeds["x"], "w": feeds["w"], "v": feeds["v"]}
        with paddle.static.program_guard(main, startup):
            xv, wv, vv = (paddle.static.data(n, [3, 4], "float64") for n in ("x", "w", "v"))
            xv.stop_gradient = wv.stop_gradient = False
            (grad,) = paddle.static.gradients(paddle.sum(act(xv) * wv), xv)
            grads = paddle.static.gradients(paddle.sum(grad * vv), [xv, wv])
        exe = paddle.static.Executor(paddle.CPUPlace())
        results[f"{name}_x"], results[f"{name}_w"] = exe.run(main, feed=feed, fetch_list=grads)
        with tempfile.TemporaryDirectory() as tmp:
            paddle.static.save_inference_model(f"{tmp}/m", [xv, wv, vv], grads, exe, program=main)
            write_gz(out / "pir" / f"double_{name}.json", Path(f"{tmp}/m.json").read_bytes())
    np.savez(out / "pir" / "double.npz", **results)


def main_pir(out: Path) -> None:
    """A NeRF renderer (its layers' own initial weights, paddle.seed(39)), saved by paddle.jit.save and run by the
    Predictor."""
    paddle.seed(39)
    field = Field()
    class Renderer(nn.Layer):
        def __init__(self):
            super().__init__()
            self.field = field

        def forward(self, rays_o, rays_d, depths):
            colour, depth, opacity, _ = render(self.field, rays_o, rays_d, depths)
            return colour, depth, opacity

    model = Renderer()
    specs = [paddle.static.InputSpec([None, 3], "float32", "rays_o"),
             paddle.static.InputSpec([None, 3], "float32", "rays_d"),
             paddle.static.InputSpec([None, SAMPLES], "float32", "depths")]
    paddle.jit.save(model, str(out / "nerf_pir"), input_spec=specs)
    feed = {k: v[:RAYS] for k, v in np.load(out / "nerf" / "data.npz").items() if k != "target"}
    predicted = predict(str(out / "nerf_pir.json"), str(out / "nerf_pir.pdiparams"), feed)
    config = paddle.inference.Config(str(out / "nerf_pir.json"), str(out / "nerf_pir.pdiparams"))
    config.switch_ir_optim(False)   # with its default passes and oneDNN the colour and depth change (Paddle's fault)
    config.disable_mkldnn()
    plain = paddle.inference.create_predictor(config)
    for name in plain.get_input_names():
        plain.get_input_handle(name).copy_from_cpu(feed[name])
    plain.run()
    unoptimised = {f"plain_{name}": plain.get_output_handle(name).copy_to_cpu() for name in plain.get_output_names()}
    dygraph = model(*(paddle.to_tensor(feed[name]) for name in ("rays_o", "rays_d", "depths")))
    np.savez(out / "predictor_pir.npz", **predicted, **unoptimised,
             **{f"dygraph_{i}": value.numpy() for i, value in enumerate(dygraph)})
    gzip_file(out / "nerf_pir.json")
    paddle.enable_static()
    sdf_pir(out)
    double_grad_pir(out)

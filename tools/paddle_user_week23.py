"""The image-restoration engineer's programs of docs/tools.md's 'An image-restoration engineer's week', written with
Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), on 1-channel images:

- sr.pb: an ESPCN/EDSR-like x2 super-resolution net (a head Conv2D, one residual block, a Conv2D to 4 channels and
  PixelShuffle(2)) over low-resolution images [-1, 1, -1, -1] (any H, W), an L1 loss plus 0.1 times a perceptual
  loss (the MSE of a frozen feature net's features, trainable=False), and a PSNR of the clipped output; trained by
  Paddle's Adam (lr 0.01) 6 steps of 4 16x16 images.
- style.pb: a neural style transfer whose trained variable is the IMAGE (a parameter initialised from the content
  image by a NumpyArrayInitializer), a frozen 2-layer feature net (trainable=False), a content loss, Gram matrices by
  matmul of the reshaped features, a total-variation loss by slicing and abs; Paddle's Adam (lr 0.02) 10 steps.
- sr_infer.pdmodel: the SR net alone saved by save_inference_model from Paddle's trained scope, run by Paddle's
  Predictor on 32x32 images (twice the training size: 16x16 in, 32x32 out), and so sr_fixed.pdmodel, declared
  8x8 as in training (the Predictor checks no declared size); and, in PIR mode (a second interpreter),
  the same net in dygraph with the trained weights saved by paddle.jit.save (sr_pir.json) and run so.

Written (programs gzipped): sr.pb, sr_startup.pb, style.pb, style_startup.pb, sr_infer.pdmodel, data.npz (hr, lr),
sr_trained.npz, style.npz (content, style, the frozen net, the trained image), predictor.npz (its input and output),
sr_pir.json, predictor_pir.npz,
meta.json (Paddle's losses per step, the vars' names, Paddle's float64 gradients' errors against central
differences).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week23.py tests/data/paddle/user_week23
"""

import json
import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import pir_half, predict, script_main, without_callstacks, write_gz

SIZE, IMAGES, BATCH, STEPS, STYLE_STEPS, FEATURES = 16, 24, 4, 6, 10, 8
RNG = np.random.default_rng(23)


def smooth_images(count: int, size: int) -> np.ndarray:
    """Images in (0, 1) of a few random low-frequency waves: something a x2 upscaler can learn."""
    grid = np.linspace(0, 1, size)
    y, x = np.meshgrid(grid, grid, indexing="ij")
    out = np.zeros((count, 1, size, size))
    for image in out:
        for _ in range(3):
            fy, fx, phase = RNG.uniform(0.5, 3, 2).tolist() + [RNG.uniform(0, 6.3)]
            image[0] += RNG.uniform(0.1, 0.3) * np.sin(2 * np.pi * (fy * y + fx * x) + phase)
    return (0.5 + out).clip(0.02, 0.98).astype(np.float32)


def downscale(hr: np.ndarray) -> np.ndarray:
    """The 2x2 mean, as the low-resolution inputs are made."""
    n, c, h, w = hr.shape
    return hr.reshape(n, c, h // 2, 2, w // 2, 2).mean((3, 5)).astype(np.float32)


def frozen_conv(name: str, channels_in: int, channels_out: int):
    return paddle.nn.Conv2D(channels_in, channels_out, 3, padding=1,
                            weight_attr=paddle.ParamAttr(name=f"{name}.w", trainable=False),
                            bias_attr=paddle.ParamAttr(name=f"{name}.b", trainable=False))


def conv(name: str, channels_in: int, channels_out: int):
    return paddle.nn.Conv2D(channels_in, channels_out, 3, padding=1, weight_attr=paddle.ParamAttr(name=f"{name}.w"),
                            bias_attr=paddle.ParamAttr(name=f"{name}.b"))


class SRNet(paddle.nn.Layer):
    """head conv, relu; a residual block (conv, relu, conv, added); a conv to 4 channels; PixelShuffle(2)."""

    def __init__(self):
        super().__init__()
        self.head, self.tail = conv("head", 1, FEATURES), conv("tail", FEATURES, 4)
        self.body1, self.body2 = conv("body1", FEATURES, FEATURES), conv("body2", FEATURES, FEATURES)

    def forward(self, lr):
        x = F.relu(self.head(lr))
        x = x + self.body2(F.relu(self.body1(x)))
        return F.pixel_shuffle(self.tail(x), 2)


def sr_net(lr):
    return SRNet()(lr)


def sr_programs():
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 23
    with paddle.static.program_guard(main, startup):
        lr = paddle.static.data("lr", [-1, 1, -1, -1], "float32")
        hr = paddle.static.data("hr", [-1, 1, -1, -1], "float32")
        sr = sr_net(lr)
        features = frozen_conv("perceptual", 1, 4)
        perceptual = F.mse_loss(F.relu(features(sr)), F.relu(features(hr)))
        loss = F.l1_loss(sr, hr) + 0.1 * perceptual
        psnr = 10 * paddle.log10(1 / paddle.mean(paddle.square(paddle.clip(sr, 0.0, 1.0) - hr)))
    forward = main.clone()
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.Adam(0.01).minimize(loss)
    return main, forward, startup, {"loss": loss.name, "sr": sr.name, "psnr": psnr.name}


def gram(features):
    """[N, C, H, W] -> [N, C, C] / (H W): the reshaped features times their transpose."""
    n, c, h, w = features.shape
    flat = paddle.reshape(features, [0, c, h * w])
    return paddle.matmul(flat, flat, transpose_y=True) / (h * w)


def total_variation(image):
    return (paddle.mean(paddle.abs(image[:, :, 1:, :] - image[:, :, :-1, :]))
            + paddle.mean(paddle.abs(image[:, :, :, 1:] - image[:, :, :, :-1])))


def style_programs(content_image: np.ndarray):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 23
    with paddle.static.program_guard(main, startup):
        content = paddle.static.data("content", [1, 1, SIZE, SIZE], "float32")
        style = paddle.static.data("style", [1, 1, SIZE, SIZE], "float32")
        image = paddle.static.create_parameter(
            [1, 1, SIZE, SIZE], "float32", attr=paddle.ParamAttr(
                name="image", initializer=paddle.nn.initializer.Assign(content_image)))
        conv1, conv2 = frozen_conv("vgg1", 1, 4), frozen_conv("vgg2", 4, 4)

        def features(x):
            first = F.relu(conv1(x))
            return first, F.relu(conv2(first))

        (image1, image2), (content1, content2), (style1, style2) = map(features, (image, content, style))
        content_loss = F.mse_loss(image2, content2)
        style_loss = F.mse_loss(gram(image1), gram(style1)) + F.mse_loss(gram(image2), gram(style2))
        tv = total_variation(image)
        loss = content_loss + 100 * style_loss + 0.1 * tv
    forward = main.clone()
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.Adam(0.02).minimize(loss)
    return main, forward, startup, {"loss": loss.name, "tv": tv.name}


def frozen_values(scope, prefixes) -> dict:
    return {name: np.array(scope.var(name).get_tensor()) for prefix in prefixes for name in (f"{prefix}.w",
                                                                                             f"{prefix}.b")}


def train_sr(out: Path, exe, meta: dict) -> dict:
    hr = smooth_images(IMAGES, SIZE)
    data = {"lr": downscale(hr), "hr": hr}
    np.savez_compressed(out / "data.npz", **data)
    main, forward, startup, names = sr_programs()
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        frozen = frozen_values(scope, ["perceptual"])
        losses, psnrs = [], []
        for step in range(STEPS):
            feed = {key: value[step * BATCH:(step + 1) * BATCH] for key, value in data.items()}
            loss, psnr = exe.run(main, feed=feed, fetch_list=[names["loss"], names["psnr"]])
            losses.append(float(loss))
            psnrs.append(float(psnr))
        assert all(np.array_equal(value, np.array(scope.var(name).get_tensor())) for name, value in frozen.items())
        trained = {param.name: np.array(scope.var(param.name).get_tensor())
                   for param in main.global_block().all_parameters()}
        export(out, exe, meta)
    write_gz(out / "sr.pb", without_callstacks(forward))
    write_gz(out / "sr_startup.pb", without_callstacks(startup))
    np.savez(out / "sr_trained.npz", **trained)
    meta["sr"] = {**names, "losses": losses, "psnrs": psnrs}
    return trained


def export(out: Path, exe, meta: dict) -> None:
    """The SR net alone from the trained scope, saved for inference and run by the Predictor on 32x32 images: with
    H, W declared -1 (sr_infer.pdmodel), and declared 8 as in training (sr_fixed.pdmodel: the Predictor runs it on
    16x16 inputs all the same, where the Executor refuses them)."""
    large = downscale(smooth_images(2, 2 * SIZE))
    outputs, names = {}, {}
    for name, side in (("sr_infer", -1), ("sr_fixed", SIZE // 2)):
        infer, infer_startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(infer, infer_startup):
            lr = paddle.static.data("lr", [-1, 1, side, side], "float32")
            sr = sr_net(lr)
        with tempfile.TemporaryDirectory() as saved:
            paddle.static.save_inference_model(f"{saved}/sr", [lr], [sr], exe, program=infer)
            write_gz(out / f"{name}.pdmodel", Path(f"{saved}/sr.pdmodel").read_bytes())
            predictor = paddle.inference.create_predictor(paddle.inference.Config(f"{saved}/sr.pdmodel",
                                                                                  f"{saved}/sr.pdiparams"))
            predictor.get_input_handle("lr").copy_from_cpu(large)
            predictor.run()
            (names[name],) = predictor.get_output_names()
            outputs[name] = predictor.get_output_handle(names[name]).copy_to_cpu()
    np.savez(out / "predictor.npz", lr=large, sr=outputs["sr_infer"], sr_fixed=outputs["sr_fixed"])
    meta["infer"] = names


def train_style(out: Path, exe, meta: dict) -> None:
    content, style = smooth_images(1, SIZE), smooth_images(1, SIZE)
    main, forward, startup, names = style_programs(content)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        frozen = frozen_values(scope, ["vgg1", "vgg2"])
        losses = [float(exe.run(main, feed={"content": content, "style": style}, fetch_list=[names["loss"]])[0])
                  for _ in range(STYLE_STEPS)]
        image = np.array(scope.var("image").get_tensor())
    write_gz(out / "style.pb", without_callstacks(forward))
    write_gz(out / "style_startup.pb", without_callstacks(startup))
    np.savez(out / "style.npz", content=content, style=style, trained_image=image, **frozen)
    meta["style"] = {**names, "losses": losses}


def float64_gradients(meta: dict) -> None:
    """Paddle's float64 gradients of pixel_shuffle, pixel_unshuffle and the TV loss (by the dygraph autograd of the
    same ops) against central differences: the largest absolute difference of each."""
    paddle.disable_static()
    weights = RNG.standard_normal((2, 4, 6, 6))
    cases = {
        "pixel_shuffle": (lambda x: paddle.sum(F.pixel_shuffle(x, 2) * paddle.to_tensor(weights.reshape(2, 1, 12,
                                                                                                          12))),
                          (2, 4, 6, 6)),
        "pixel_unshuffle": (lambda x: paddle.sum(F.pixel_unshuffle(x, 2) * paddle.to_tensor(
            weights.reshape(2, 4, 6, 6))), (2, 1, 12, 12)),
        "total_variation": (total_variation, (2, 1, 6, 6)),
    }
    errors = {}
    for name, (function, shape) in cases.items():
        x0 = RNG.standard_normal(shape)
        x = paddle.to_tensor(x0, stop_gradient=False)
        (grad,) = paddle.grad(function(x), [x])
        numeric = np.zeros(x0.size)
        for i in range(x0.size):
            step = np.zeros(x0.size)
            step[i] = 1e-6
            plus = float(function(paddle.to_tensor(x0 + step.reshape(shape))))
            minus = float(function(paddle.to_tensor(x0 - step.reshape(shape))))
            numeric[i] = (plus - minus) / 2e-6
        errors[name] = float(np.abs(grad.numpy().ravel() - numeric).max())
    meta["paddle_float64_gradient_errors"] = errors
    paddle.enable_static()


def main_pir(out: Path) -> None:
    """The SR net in dygraph with Paddle's trained weights (the same names), saved by paddle.jit.save (PIR's
    sr_pir.json; its weights are sr_trained.npz) for any H, W, and run by the Predictor on the 16x16 inputs."""
    model = SRNet()
    trained = np.load(out / "sr_trained.npz")
    model.set_state_dict({key: trained[param.name] for key, param in model.state_dict().items()})
    large = np.load(out / "predictor.npz")["lr"]
    with tempfile.TemporaryDirectory() as saved:
        paddle.jit.save(model, f"{saved}/sr", input_spec=[paddle.static.InputSpec([-1, 1, -1, -1], "float32", "lr")])
        write_gz(out / "sr_pir.json", Path(f"{saved}/sr.json").read_bytes())
        (output,) = predict(f"{saved}/sr.json", f"{saved}/sr.pdiparams", {"lr": large}).values()
        np.savez(out / "predictor_pir.npz", sr=output)
    meta = json.loads((out / "meta.json").read_text())
    meta["pir"] = {"sr": output}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {}
    train_sr(out, exe, meta)
    train_style(out, exe, meta)
    float64_gradients(meta)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


if __name__ == "__main__":
    script_main(main, main_pir)

"""The style-transfer researcher's programs of docs/tools.md's 'A style-transfer researcher's week', written with Paddle
3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), on 3x16x16 images in [0, 1]:

- vgg: a small frozen VGG-style feature net (three 3x3 Conv2D, relu, a max_pool2d after the second), its weights
  ParamAttr(trainable=False) named vgg_*, drawn once and saved by paddle.static.save of the net alone (vgg.pdparams).
- johnson: a feed-forward transformation net (Pad2D(mode='reflect') + 5x5 Conv2D, InstanceNorm2D, relu; two stride-2
  Conv2D down; a residual block of reflect-padded convs; up by nn.Upsample(nearest) + conv and by Conv2DTranspose;
  a reflect-padded conv to 3 channels, (tanh + 1) / 2), its parameters tn_*; the perceptual loss through the vgg of
  the output, the content image and the style image: content MSE of relu2's features, style MSE of the Gram matrices
  (reshape, matmul(transpose_y=True) / (C*H*W)) of relu1..3, total variation; Adam(0.002), 5 steps of 2 images, the
  style image the same at every step.
- gatys: the image itself the one trainable parameter (create_parameter, Assign of the content image), the same loss
  of one content and the style image; Adam(0.004), 5 steps.

Each model: forward.pb (main.clone() before minimize), train.pb (Paddle's own), startup.pb, init.npz (its trainable
parameters only: the vgg's come from vgg.pdparams), trained.npz, losses in meta.json; grads.npz: Paddle's gradients of
the trainable parameters on the first batch from init; outputs.npz: the stylised first batch (johnson) or the image
(gatys) after training. data.npz holds the content images, style.npz the style image.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week59.py tests/data/paddle/user_week59
"""

import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import legacy_persistables, minimized, write_programs_gz

SIZE, STEPS, BATCH = 16, 5, 2
RNG = np.random.default_rng(59)
CONTENT, STYLE, TV = 1.0, 20.0, 0.05


def frozen(name):
    return paddle.ParamAttr(name=name, trainable=False)


class Vgg(nn.Layer):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2D(3, 6, 3, padding=1, weight_attr=frozen("vgg_c1_w"), bias_attr=frozen("vgg_c1_b"))
        self.c2 = nn.Conv2D(6, 6, 3, padding=1, weight_attr=frozen("vgg_c2_w"), bias_attr=frozen("vgg_c2_b"))
        self.c3 = nn.Conv2D(6, 8, 3, padding=1, weight_attr=frozen("vgg_c3_w"), bias_attr=frozen("vgg_c3_b"))

    def forward(self, x):
        relu1 = F.relu(self.c1(x))
        relu2 = F.relu(self.c2(relu1))
        relu3 = F.relu(self.c3(F.max_pool2d(relu2, 2)))
        return relu1, relu2, relu3


def named(prefix):
    return paddle.ParamAttr(name=prefix + "_w"), paddle.ParamAttr(name=prefix + "_b")


def conv(cin, cout, k, name, stride=1, reflect=True):
    weight, bias = named(name)
    layers = [nn.Pad2D(k // 2, mode="reflect")] if reflect else []
    return nn.Sequential(*layers, nn.Conv2D(cin, cout, k, stride=stride, padding=0 if reflect else k // 2,
                                            weight_attr=weight, bias_attr=bias))


def norm(channels, name):
    scale, bias = named(name)
    return nn.InstanceNorm2D(channels, weight_attr=scale, bias_attr=bias)


class Transform(nn.Layer):
    def __init__(self):
        super().__init__()
        self.c1, self.n1 = conv(3, 6, 5, "tn_c1"), norm(6, "tn_n1")
        self.down1, self.n2 = conv(6, 8, 3, "tn_down1", stride=2, reflect=False), norm(8, "tn_n2")
        self.down2, self.n3 = conv(8, 8, 3, "tn_down2", stride=2, reflect=False), norm(8, "tn_n3")
        self.r1, self.rn1 = conv(8, 8, 3, "tn_res1"), norm(8, "tn_rn1")
        self.r2, self.rn2 = conv(8, 8, 3, "tn_res2"), norm(8, "tn_rn2")
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.c4, self.n4 = conv(8, 8, 3, "tn_up1"), norm(8, "tn_n4")
        weight, bias = named("tn_up2")
        self.deconv = nn.Conv2DTranspose(8, 6, 4, stride=2, padding=1, weight_attr=weight, bias_attr=bias)
        self.n5 = norm(6, "tn_n5")
        self.out = conv(6, 3, 5, "tn_out")

    def forward(self, x):
        h = F.relu(self.n1(self.c1(x)))
        h = F.relu(self.n2(self.down1(h)))
        h = F.relu(self.n3(self.down2(h)))
        h = h + self.rn2(self.r2(F.relu(self.rn1(self.r1(h)))))
        h = F.relu(self.n4(self.c4(self.up(h))))
        h = F.relu(self.n5(self.deconv(h)))
        return (paddle.tanh(self.out(h)) + 1.0) / 2.0


def gram(features):
    _, channels, height, width = features.shape
    flat = paddle.reshape(features, [0, channels, height * width])
    return paddle.matmul(flat, flat, transpose_y=True) / (channels * height * width)


def total_variation(image):
    return (paddle.mean(paddle.abs(image[:, :, 1:, :] - image[:, :, :-1, :]))
            + paddle.mean(paddle.abs(image[:, :, :, 1:] - image[:, :, :, :-1])))


def perceptual_loss(stylised, content, style):
    vgg = Vgg()
    mine, target, styled = vgg(stylised), vgg(content), vgg(style)
    content_loss = F.mse_loss(mine[1], target[1])
    style_loss = sum(F.mse_loss(gram(a), paddle.expand_as(gram(s), gram(a))) for a, s in zip(mine, styled))
    return CONTENT * content_loss + STYLE * style_loss + TV * total_variation(stylised)


def images(name, batch=-1):
    return paddle.static.data(name, [batch, 3, SIZE, SIZE], "float32")


def johnson():
    content, style = images("content"), images("style", 1)
    stylised = Transform()(content)
    return perceptual_loss(stylised, content, style), stylised


def gatys():
    content, style = images("content", 1), images("style", 1)
    image = paddle.create_parameter([1, 3, SIZE, SIZE], "float32", name="image",
                                    default_initializer=nn.initializer.Assign(CONTENT_IMAGES[:1]))
    return perceptual_loss(image, content, style), image


CONTENT_IMAGES = np.clip(RNG.random((BATCH * STEPS, 3, SIZE, SIZE)).cumsum(axis=3) / 8, 0, 1).astype(np.float32)
STYLE_IMAGE = (0.5 + 0.5 * np.sin(np.arange(SIZE)[None, None, :, None] * np.array([0.7, 1.3, 2.1])[None, :, None, None]
                                  + np.arange(SIZE)[None, None, None, :] * 0.9)).astype(np.float32)
MODELS = {"johnson": (johnson, lambda: paddle.optimizer.Adam(0.002), BATCH),
          "gatys": (gatys, lambda: paddle.optimizer.Adam(0.004), 1)}


def save_vgg(out: Path, exe) -> None:
    """The frozen net alone, its weights drawn once, saved as paddle.static.save writes them: vgg.pdparams."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 7
    with paddle.static.program_guard(main, startup):
        Vgg()(images("x"))
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        paddle.static.save(main, str(out / "vgg"))
    for extra in ("vgg.pdmodel", "vgg.pdopt"):  # the weights are what the user keeps
        (out / extra).unlink()


def train_model(out: Path, name: str, exe) -> dict:
    build, make_optimizer, batch = MODELS[name]
    main, startup, forward, _, (loss, output) = minimized(build, make_optimizer, seed=59)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    scope, losses = paddle.static.Scope(), []
    vgg = paddle.static.load_program_state(str(out / "vgg.pdparams"))
    trainable = [p.name for p in main.all_parameters() if p.trainable]
    # the transformation net sees new images each step, Gatys's image is always the first one's
    feeds = [{"content": CONTENT_IMAGES[step * batch:(step + 1) * batch] if name == "johnson" else CONTENT_IMAGES[:1],
              "style": STYLE_IMAGE} for step in range(STEPS)]
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        paddle.static.set_program_state(main, vgg)
        init = legacy_persistables(forward, scope)
        np.savez(folder / "init.npz", **{key: init[key] for key in trainable})
        for feed in feeds:
            (value,) = exe.run(main, feed=feed, fetch_list=[loss.name])
            losses.append(float(value))
        trained = legacy_persistables(forward, scope)
        np.savez(folder / "trained.npz", **trained)
        (stylised,) = exe.run(forward, feed=feeds[0], fetch_list=[output.name])
    np.savez(folder / "outputs.npz", stylised=stylised)
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    first_grads(folder, forward, loss, trainable, {**init, **vgg}, feeds[0], exe)
    return {"loss": loss.name, "output": output.name, "losses": losses, "trainable": trainable}


def first_grads(folder: Path, forward, loss, trainable, values, feed, exe) -> None:
    """Paddle's gradients of the trainable parameters on the first batch from the initial values: grads.npz."""
    program = forward.clone()
    with paddle.static.program_guard(program):
        block = program.global_block()
        params = [block.var(name) for name in trainable]
        grads = paddle.static.gradients([block.var(loss.name)], params)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for key, value in values.items():
            scope.var(key).get_tensor().set(np.asarray(value), paddle.CPUPlace())
        fetched = exe.run(program, feed=feed, fetch_list=[g.name for g in grads])
    np.savez(folder / "grads.npz", **dict(zip(trainable, fetched)))


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    out.mkdir(parents=True, exist_ok=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    save_vgg(out, exe)
    meta = {name: train_model(out, name, exe) for name in MODELS}
    np.savez_compressed(out / "data.npz", content=CONTENT_IMAGES)
    np.savez(out / "style.npz", style=STYLE_IMAGE)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

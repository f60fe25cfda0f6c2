"""The input-optimisation researcher's programs of docs/tools.md's 'An input-optimisation researcher's week', written
with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), the input optimised, not the weights:

- style: a frozen VGG-like feature net (three Conv2D of ParamAttr(trainable=False), relu, max_pool2d) shared by the
  image (create_parameter, initialised from the content image by initializer.Assign), the content and the style image
  (both fed); the content loss (mse of conv3's features), the style loss (mse of Gram matrices, bmm of the reshaped
  features by their transpose over C*H*W, of all three layers), the total variation (abs of slices' differences);
  style_forward.pb (main.clone() before minimize), style_train.pb (Adam(0.02).minimize), style_startup.pb.
  style.npz: Paddle's 6 losses and the image after every step, each step followed by the clip to [0, 1].
- dream: gradient ascent on conv3's channel 2 (minus its mean) with an L2 frequency penalty (squared differences of
  neighbours), SGD(0.5), the image rolled by a seeded jitter before each step and rolled back after: dream.npz.
- saliency: a classifier (Conv2D, relu, max_pool2d, Conv2D, relu: the Grad-CAM layer, adaptive_avg_pool2d, Linear)
  whose score is sum(logits * onehot); saliency_forward.pb; saliency.pb: the clone with x.stop_gradient = False,
  paddle.static.gradients(score, [x, feat]) and Grad-CAM in the program (the channel weights the mean of feat@GRAD
  over H, W; relu of the weighted sum; F.interpolate bilinear to 16x16); saliency.npz: Paddle's x@GRAD, feat@GRAD and
  cam of 3 images, SmoothGrad's noisy copies and mean gradient, integrated gradients (8 steps from a black
  baseline); export.pdmodel (gzipped) and export.pdiparams: save_inference_model of saliency.pb fetching the input
  gradient and the cam (Paddle 3.3.1's Predictor cannot run it: meta.json keeps its error).

- lbfgs.npz: Paddle's dygraph LBFGS (its optimizer has no static form) on the same style loss, from style_init.npz,
  2 steps of max_iter=5 with the strong Wolfe line search: the losses its steps return and the image (a second
  interpreter, as script_main's second half).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week36.py tests/data/paddle/user_week36
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import gzip_file, pir_half, predict, script_main, without_callstacks, write_gz

SIZE, STYLE_STEPS, DREAM_STEPS, NOISY, IG_STEPS, CLASSES = 16, 6, 4, 3, 8, 3
CONTENT_W, STYLE_W, TV_W, DREAM_CHANNEL, FREQ_W = 1.0, 50.0, 0.05, 2, 0.5
RNG = np.random.default_rng(36)


def picture(kind: int) -> np.ndarray:
    """A 3x16x16 image in [0, 1]: stripes (kind 0) or a checker (kind 1) over smooth colour, with noise."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE] / SIZE
    base = np.stack([yy, xx, 1 - yy]) * 0.5
    pattern = np.sin(xx * 12)[None] if kind == 0 else np.sign(np.sin(yy * 9) * np.sin(xx * 9))[None]
    return np.clip(base + 0.3 * pattern + RNG.uniform(-0.05, 0.05, (3, SIZE, SIZE)), 0, 1).astype(np.float32)


def feature_net():
    frozen = dict(weight_attr=paddle.ParamAttr(trainable=False), bias_attr=paddle.ParamAttr(trainable=False))
    convs = [paddle.nn.Conv2D(3, 8, 3, padding=1, **frozen), paddle.nn.Conv2D(8, 8, 3, padding=1, **frozen),
             paddle.nn.Conv2D(8, 8, 3, padding=1, **frozen)]

    def features(image):
        one = F.relu(convs[0](image))
        two = F.relu(convs[1](one))
        return [one, two, F.relu(convs[2](F.max_pool2d(two, 2)))]
    features.convs = convs   # for the dygraph half, which loads the static half's weights into them
    return features


def gram(feature):
    _, channels, height, width = feature.shape
    flat = paddle.reshape(feature, [0, channels, height * width])
    return paddle.bmm(flat, paddle.transpose(flat, [0, 2, 1])) / float(channels * height * width)


def total_variation(image):
    return (paddle.mean(paddle.abs(image[:, :, 1:, :] - image[:, :, :-1, :]))
            + paddle.mean(paddle.abs(image[:, :, :, 1:] - image[:, :, :, :-1])))


def style_programs(content):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 36
    with paddle.static.program_guard(main, startup):
        content_in = paddle.static.data("content", [1, 3, SIZE, SIZE], "float32")
        style_in = paddle.static.data("style", [1, 3, SIZE, SIZE], "float32")
        image = paddle.static.create_parameter([1, 3, SIZE, SIZE], "float32", name="image",
                                               default_initializer=paddle.nn.initializer.Assign(content[None]))
        features = feature_net()
        mine, target, styled = features(image), features(content_in), features(style_in)
        content_loss = F.mse_loss(mine[2], target[2])
        style_loss = paddle.add_n([F.mse_loss(gram(a), gram(b)) for a, b in zip(mine, styled)])
        loss = CONTENT_W * content_loss + STYLE_W * style_loss + TV_W * total_variation(image)
    forward = main.clone()
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.Adam(0.02).minimize(loss)
    return main, forward, startup, {"loss": loss.name, "content_loss": content_loss.name,
                                    "style_loss": style_loss.name}


def dream_programs(start):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 36
    with paddle.static.program_guard(main, startup):
        image = paddle.static.create_parameter([1, 3, SIZE, SIZE], "float32", name="dream",
                                               default_initializer=paddle.nn.initializer.Assign(start[None]))
        activation = feature_net()(image - 0.5)[2]
        penalty = (paddle.mean(paddle.square(image[:, :, 1:, :] - image[:, :, :-1, :]))
                   + paddle.mean(paddle.square(image[:, :, :, 1:] - image[:, :, :, :-1])))
        loss = FREQ_W * penalty - paddle.mean(activation[:, DREAM_CHANNEL])
    forward = main.clone()
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.SGD(0.5).minimize(loss)
    return main, forward, startup, {"loss": loss.name, "activation": activation.name}


def saliency_programs():
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 36
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [-1, 3, SIZE, SIZE], "float32")
        onehot = paddle.static.data("onehot", [-1, CLASSES], "float32")
        hidden = F.max_pool2d(F.relu(paddle.nn.Conv2D(3, 6, 3, padding=1)(x)), 2)
        feat = F.relu(paddle.nn.Conv2D(6, 8, 3, padding=1)(hidden))
        logits = paddle.nn.Linear(8, CLASSES)(paddle.flatten(F.adaptive_avg_pool2d(feat, 1), 1))
        score = paddle.sum(logits * onehot)
    forward = main.clone()
    with paddle.static.program_guard(main, paddle.static.Program()):
        x.stop_gradient = False
        x_grad, feat_grad = paddle.static.gradients(score, [x, feat])
        weights = paddle.mean(feat_grad, axis=[2, 3], keepdim=True)
        cam = F.interpolate(F.relu(paddle.sum(weights * feat, axis=1, keepdim=True)), size=[SIZE, SIZE],
                            mode="bilinear")
    names = {"score": score.name, "logits": logits.name, "feat": feat.name, "x_grad": x_grad.name,
             "feat_grad": feat_grad.name, "cam": cam.name}
    return main, forward, startup, names, (x, onehot, x_grad, cam)


def persistables(scope, program) -> dict:
    return {v.name: np.array(scope.find_var(v.name).get_tensor()) for v in program.list_vars()
            if v.persistable and v.name not in ("feed", "fetch") and scope.find_var(v.name) is not None}


def set_var(scope, name, value) -> None:
    scope.find_var(name).get_tensor().set(np.ascontiguousarray(value, np.float32), paddle.CPUPlace())


def style_week(out: Path, exe, meta: dict) -> None:
    content, style = picture(0), picture(1)
    train, forward, startup, names = style_programs(content)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(out / "style_init.npz", **{k: v for k, v in persistables(scope, forward).items()})
        feed = {"content": content[None], "style": style[None]}
        np.savez(out / "style_feed.npz", **feed)
        losses, images = [], []
        for _ in range(STYLE_STEPS):
            (loss,) = exe.run(train, feed=feed, fetch_list=[names["loss"]])
            set_var(scope, "image", np.clip(np.array(scope.find_var("image").get_tensor()), 0, 1))
            losses.append(float(loss))
            images.append(np.array(scope.find_var("image").get_tensor()))
    np.savez(out / "style.npz", images=np.stack(images))
    meta["style"] = {**names, "losses": losses}
    for name, program in [("style_forward", forward), ("style_train", train), ("style_startup", startup)]:
        write_gz(out / f"{name}.pb", without_callstacks(program))


def dream_week(out: Path, exe, meta: dict) -> None:
    train, forward, startup, names = dream_programs(picture(0))
    shifts = RNG.integers(-2, 3, (DREAM_STEPS, 2))
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(out / "dream_init.npz", **persistables(scope, forward))
        losses, images = [], []
        for dy, dx in shifts:
            jittered = np.roll(np.array(scope.find_var("dream").get_tensor()), (dy, dx), axis=(2, 3))
            set_var(scope, "dream", jittered)
            (loss,) = exe.run(train, fetch_list=[names["loss"]])
            moved = np.roll(np.array(scope.find_var("dream").get_tensor()), (-dy, -dx), axis=(2, 3))
            set_var(scope, "dream", np.clip(moved, 0, 1))
            losses.append(float(loss))
            images.append(np.array(scope.find_var("dream").get_tensor()))
    np.savez(out / "dream.npz", images=np.stack(images), shifts=shifts)
    meta["dream"] = {**names, "losses": losses}
    write_gz(out / "dream_forward.pb", without_callstacks(forward))
    write_gz(out / "dream_train.pb", without_callstacks(train))


def saliency_week(out: Path, exe, meta: dict) -> None:
    program, forward, startup, names, (x, onehot, x_grad, cam) = saliency_programs()
    images = np.stack([picture(i % 2) for i in range(3)])
    classes = np.eye(CLASSES, dtype=np.float32)[[0, 1, 2]]
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(out / "saliency_params.npz", **persistables(scope, forward))
        fetch = [names["x_grad"], names["feat_grad"], names["cam"], names["logits"]]
        grad, feat_grad, cam_map, logits = exe.run(program, feed={"x": images, "onehot": classes}, fetch_list=fetch)
        noisy = (images[None] + RNG.normal(0, 0.1, (NOISY, *images.shape))).astype(np.float32)
        smooth = np.mean([exe.run(program, feed={"x": n, "onehot": classes}, fetch_list=[names["x_grad"]])[0]
                          for n in noisy], axis=0)
        alphas = (np.arange(1, IG_STEPS + 1) / IG_STEPS).astype(np.float32)
        path = [exe.run(program, feed={"x": a * images, "onehot": classes}, fetch_list=[names["x_grad"]])[0]
                for a in alphas]
        integrated = images * np.mean(path, axis=0)
        np.savez_compressed(out / "saliency.npz", x=images, onehot=classes, grad=grad, feat_grad=feat_grad, cam=cam_map,
                 logits=logits, noisy=noisy, smooth=smooth, integrated=integrated)
        paddle.static.save_inference_model(str(out / "export"), [x, onehot], [x_grad, cam], exe, program=program)
    meta["saliency"] = names
    try:
        predicted = predict(str(out / "export.pdmodel"), str(out / "export.pdiparams"),
                            {"x": images, "onehot": classes})
        np.savez(out / "export_predicted.npz", **predicted)
    except RuntimeError as error:   # Paddle 3.3.1's Predictor cannot run its own export of a gradient program
        meta["saliency"]["predictor_error"] = str(error).splitlines()[0]
    write_gz(out / "saliency_forward.pb", without_callstacks(forward))
    write_gz(out / "saliency.pb", without_callstacks(program))
    write_gz(out / "saliency_startup.pb", without_callstacks(startup))
    model = out / "export.pdmodel"
    gzip_file(model)


def lbfgs_dygraph(out: Path) -> None:
    """Paddle's LBFGS (dygraph only) on the style loss from the same frozen weights and content image: 2 steps of
    max_iter=5 with the strong Wolfe line search; lbfgs.npz holds the losses each step returns and the image."""
    init, feed = np.load(out / "style_init.npz"), np.load(out / "style_feed.npz")
    features = feature_net()
    for number, layer in enumerate(features.convs):
        layer.weight.set_value(init[f"conv2d_{number}.w_0"])
        layer.bias.set_value(init[f"conv2d_{number}.b_0"])
    image = paddle.create_parameter([1, 3, SIZE, SIZE], "float32",
                                    default_initializer=paddle.nn.initializer.Assign(init["image"]))
    content, style = paddle.to_tensor(feed["content"]), paddle.to_tensor(feed["style"])
    target, styled = features(content), features(style)
    optimizer = paddle.optimizer.LBFGS(learning_rate=1.0, max_iter=5, line_search_fn="strong_wolfe",
                                       parameters=[image])

    def closure():
        optimizer.clear_grad()
        mine = features(image)
        style_loss = paddle.add_n([F.mse_loss(gram(a), gram(b)) for a, b in zip(mine, styled)])
        loss = (CONTENT_W * F.mse_loss(mine[2], target[2]) + STYLE_W * style_loss
                + TV_W * total_variation(image))
        loss.backward()
        return loss

    losses = [float(optimizer.step(closure)) for _ in range(2)]
    np.savez(out / "lbfgs.npz", losses=np.array(losses), image=image.numpy())


def main_dygraph(out: Path) -> None:
    lbfgs_dygraph(out)


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe, meta = paddle.static.Executor(paddle.CPUPlace()), {}
    style_week(out, exe, meta)
    dream_week(out, exe, meta)
    saliency_week(out, exe, meta)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


if __name__ == "__main__":
    script_main(main, main_dygraph)

"""The image-captioning engineer's programs of docs/tools.md's 'An image-captioning engineer's week', written with
Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), on 16x16 grey images of a bright square in one
of four corners, each captioned by 1 to 6 words of a vocabulary of 30 (0 the padding, 1 <bos>, 2 <eos>) between
<bos> and <eos>, so 3 to 8 tokens, padded with 0 to 8:

- showtell: a CNN encoder (Conv2D, ReLU, MaxPool2D twice, AdaptiveAvgPool2D(1), Linear, tanh) whose feature is the
  initial state h0 of an nn.LSTM decoder (c0 zeros), teacher forcing (caption[:, :-1] in, caption[:, 1:] out),
  Linear to the vocabulary, F.cross_entropy with ignore_index=0 (the padding left out of the mean).
- attend: Show-Attend-Tell: the encoder's 4x4 map as 16 spatial features, an nn.LSTMCell unrolled over the 7 steps,
  additive attention (Linear of the features + Linear of h, tanh, Linear to a score) softmaxed over the 16 places,
  the context concatenated to the word's embedding; the token loss smoothed (label_smoothing=0.1 of a one-hot),
  times the padding's mask over the mask's sum, plus 0.5 times the doubly-stochastic penalty
  mean_b sum_l (1 - sum_t mask_t alpha_tl)^2.

Both: Adam(LinearWarmup(ExponentialDecay(0.01, 0.9), 2, 0.0, 0.01), grad_clip=ClipGradByGlobalNorm(1.0)), 5 steps of
8. Each model: forward.pb (main.clone() before minimize), train.pb (Paddle's own), startup.pb, step.pb (the one-step
decoder: a token, the state (and the features) in; logits and the next state out, the same parameter names),
init.npz, trained.npz, losses in meta.json; outputs.npz: Paddle's greedy decoding of the first 8 images with the
trained weights (tokens, the first and last step's logits), the best-scored token of every position of the 40 captions
(all_predicted), and the loss of the 40 at once (set_loss in meta.json). data.npz: images and captions. PIR half:
showtell built and minimized in PIR static mode (showtell_pir_train.json / _startup.json, pir_losses.json; its
startup draws the legacy init.npz's values, which the script asserts).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week55.py tests/data/paddle/user_week55
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import (
    legacy_persistables,
    pir_half,
    pir_minimized,
    script_main,
    without_callstacks,
    write_gz,
)

VOCAB, EMB, HIDDEN, ATTN, CHANNELS, PLACES, WIDTH, STEPS, BATCH = 30, 8, 16, 8, 8, 16, 8, 5, 8
RNG = np.random.default_rng(55)


def attr(name: str):
    """A named parameter: the training and one-step programs share their weights by name."""
    return paddle.ParamAttr(name=name)


def encoder(image):
    """[B, 1, 16, 16] -> [B, 8, 4, 4]."""
    x = F.relu(nn.Conv2D(1, 4, 3, padding=1, weight_attr=attr("conv1.w"), bias_attr=attr("conv1.b"))(image))
    x = nn.MaxPool2D(2)(x)
    x = F.relu(nn.Conv2D(4, CHANNELS, 3, padding=1, weight_attr=attr("conv2.w"), bias_attr=attr("conv2.b"))(x))
    return nn.MaxPool2D(2)(x)


def linear(size_in, size_out, name):
    return nn.Linear(size_in, size_out, weight_attr=attr(f"{name}.w"), bias_attr=attr(f"{name}.b"))


def embed():
    return nn.Embedding(VOCAB, EMB, weight_attr=attr("embedding.w"))


def lstm():
    return nn.LSTM(EMB, HIDDEN, weight_ih_attr=attr("lstm.w_ih"), weight_hh_attr=attr("lstm.w_hh"),
                   bias_ih_attr=attr("lstm.b_ih"), bias_hh_attr=attr("lstm.b_hh"))


def showtell_encoder(image):
    pooled = paddle.flatten(nn.AdaptiveAvgPool2D(1)(encoder(image)), 1)
    return paddle.unsqueeze(paddle.tanh(linear(CHANNELS, HIDDEN, "init_h")(pooled)), 0)  # [1, B, H]


def showtell():
    image = paddle.static.data("image", [-1, 1, 16, 16], "float32")
    caption = paddle.static.data("caption", [-1, WIDTH], "int64")
    h0 = showtell_encoder(image)
    states, _ = lstm()(embed()(caption[:, :-1]), (h0, paddle.zeros_like(h0)))
    logits = linear(HIDDEN, VOCAB, "word")(states)  # [B, T, V]
    target = paddle.unsqueeze(caption[:, 1:], -1)
    loss = F.cross_entropy(logits, target, ignore_index=0)
    return loss, {"logits": logits, "h0": h0}


def showtell_step():
    token = paddle.static.data("token", [-1, 1], "int64")
    h = paddle.static.data("h", [1, -1, HIDDEN], "float32")
    c = paddle.static.data("c", [1, -1, HIDDEN], "float32")
    states, (h_next, c_next) = lstm()(embed()(token), (h, c))
    logits = linear(HIDDEN, VOCAB, "word")(states)
    return {"logits": logits, "h_next": h_next, "c_next": c_next}


class Attention:
    """Additive attention over the spatial features, the layers made once for every step."""

    def __init__(self):
        self.features, self.state = linear(CHANNELS, ATTN, "att_f"), linear(HIDDEN, ATTN, "att_h")
        self.score = linear(ATTN, 1, "att_v")
        self.cell = nn.LSTMCell(EMB + CHANNELS, HIDDEN, weight_ih_attr=attr("cell.w_ih"),
                                weight_hh_attr=attr("cell.w_hh"), bias_ih_attr=attr("cell.b_ih"),
                                bias_hh_attr=attr("cell.b_hh"))
        self.word, self.embedding = linear(HIDDEN, VOCAB, "word"), embed()

    def step(self, token, h, c, features, projected):
        """One decoding step: the logits, the next state and the attention weights."""
        scores = paddle.squeeze(self.score(paddle.tanh(projected + paddle.unsqueeze(self.state(h), 1))), -1)
        alpha = F.softmax(scores, axis=1)  # [B, L]
        context = paddle.sum(features * paddle.unsqueeze(alpha, -1), axis=1)
        _, (h, c) = self.cell(paddle.concat([self.embedding(token), context], axis=1), (h, c))
        return self.word(h), h, c, alpha


def attend_encoder(image):
    """The 16 spatial features [B, 16, 8] and the initial state from their mean."""
    features = paddle.transpose(paddle.reshape(encoder(image), [-1, CHANNELS, PLACES]), [0, 2, 1])
    mean = paddle.mean(features, axis=1)
    return features, paddle.tanh(linear(CHANNELS, HIDDEN, "init_h")(mean)), paddle.tanh(
        linear(CHANNELS, HIDDEN, "init_c")(mean))


def attend():
    image = paddle.static.data("image", [-1, 1, 16, 16], "float32")
    caption = paddle.static.data("caption", [-1, WIDTH], "int64")
    features, h0, c0 = attend_encoder(image)
    h, c, attention = h0, c0, Attention()
    projected = attention.features(features)
    logits, alphas = [], []
    for t in range(WIDTH - 1):
        step_logits, h, c, alpha = attention.step(caption[:, t], h, c, features, projected)
        logits.append(step_logits)
        alphas.append(alpha)
    logits, alphas = paddle.stack(logits, axis=1), paddle.stack(alphas, axis=1)  # [B, T, V], [B, T, L]
    target = caption[:, 1:]
    mask = paddle.cast(target != 0, "float32")
    tokens = F.cross_entropy(logits, F.one_hot(target, VOCAB), soft_label=True, label_smoothing=0.1,
                             reduction="none")
    token_loss = paddle.sum(paddle.squeeze(tokens, -1) * mask) / paddle.sum(mask)
    attended = paddle.sum(alphas * paddle.unsqueeze(mask, -1), axis=1)  # [B, L]
    penalty = paddle.mean(paddle.sum((1.0 - attended) ** 2, axis=1))
    return token_loss + 0.5 * penalty, {"logits": logits, "features": features, "h0": h0, "c0": c0,
                                            "alphas": alphas}


def attend_encoder_outputs():
    image = paddle.static.data("image", [-1, 1, 16, 16], "float32")
    return dict(zip(("features", "h0", "c0"), attend_encoder(image)))


def attend_step():
    token = paddle.static.data("token", [-1], "int64")
    h = paddle.static.data("h", [-1, HIDDEN], "float32")
    c = paddle.static.data("c", [-1, HIDDEN], "float32")
    features = paddle.static.data("features", [-1, PLACES, CHANNELS], "float32")
    attention = Attention()
    logits, h_next, c_next, alpha = attention.step(token, h, c, features, attention.features(features))
    return {"logits": logits, "h_next": h_next, "c_next": c_next, "alpha": alpha}


MODELS = {"showtell": showtell, "attend": attend}
STEP = {"showtell": showtell_step, "attend": attend_step}


def optimizer():
    schedule = paddle.optimizer.lr.LinearWarmup(paddle.optimizer.lr.ExponentialDecay(0.01, 0.9), 2, 0.0, 0.01)
    return paddle.optimizer.Adam(schedule, grad_clip=nn.ClipGradByGlobalNorm(1.0))


def data(count: int) -> dict:
    """Images of a bright square in a corner on noise; the caption names the corner, the square's size and a few
    words drawn by the corner."""
    images = RNG.normal(0, 0.1, size=(count, 1, 16, 16)).astype(np.float32)
    captions = np.zeros((count, WIDTH), np.int64)
    for i in range(count):
        corner, size = RNG.integers(4), RNG.integers(3, 7)
        row, col = (corner // 2) * (16 - size), (corner % 2) * (16 - size)
        images[i, 0, row:row + size, col:col + size] += 1.0
        words = [3 + corner, 7 + (size > 4)] + list(9 + 5 * corner + RNG.integers(0, 5, RNG.integers(0, 5)))
        words = words[:RNG.integers(1, 7)]
        captions[i, :len(words) + 2] = [1, *words, 2]
    return {"image": images, "caption": captions}


def build(function):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 55
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        outputs = function()
    return main, startup, outputs


def greedy(exe, name: str, step_program, outputs: dict, start: dict, features=None) -> tuple:
    """Paddle's greedy decoding: <bos> first, then each step's best token with the state it returned; the tokens, the
    first and the last step's logits."""
    h, c = start["h"], start["c"]
    token = np.ones(len(h if name == "attend" else h[0]), np.int64)
    decoded, step_logits = [], []
    for _ in range(WIDTH - 1):
        feed = {"token": token if name == "attend" else token[:, None], "h": h, "c": c}
        if features is not None:
            feed["features"] = features
        logits, h, c = exe.run(step_program, feed=feed, fetch_list=[outputs[k].name for k in ("logits", "h_next",
                                                                                             "c_next")])
        step_logits.append(logits.reshape(len(token), VOCAB))
        token = step_logits[-1].argmax(1).astype(np.int64)
        decoded.append(token)
    return np.stack(decoded, 1), step_logits[0], step_logits[-1]


def train_model(out: Path, name: str, exe, arrays: dict) -> dict:
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 55
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        loss, outputs = MODELS[name]()
        forward = main.clone()
        opt = optimizer()
        opt.minimize(loss)
    step_program, _, step_outputs = build(STEP[name])
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    scope, losses = paddle.static.Scope(), []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez_compressed(folder / "init.npz", **legacy_persistables(forward, scope))
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in arrays.items()}
            (value,) = exe.run(main, feed=feed, fetch_list=[loss.name])
            losses.append(float(value))
            opt._learning_rate.step()
        np.savez_compressed(folder / "trained.npz", **legacy_persistables(forward, scope))
        first = {k: v[:BATCH] for k, v in arrays.items()}
        set_loss, set_logits = exe.run(forward, feed=arrays, fetch_list=[loss.name, outputs["logits"].name])
        if name == "attend":
            encoder_program, _, encoder_outputs = build(attend_encoder_outputs)
            features, h0, c0 = exe.run(encoder_program, feed={"image": first["image"]},
                                       fetch_list=[encoder_outputs[k].name for k in ("features", "h0", "c0")])
            tokens, first_logits, last_logits = greedy(exe, name, step_program, step_outputs, {"h": h0, "c": c0},
                                                        features)
        else:
            (h0,) = exe.run(forward, feed=first, fetch_list=[outputs["h0"].name])
            tokens, first_logits, last_logits = greedy(exe, name, step_program, step_outputs,
                                                        {"h": h0, "c": np.zeros_like(h0)})
    np.savez_compressed(folder / "outputs.npz", tokens=tokens, first_logits=first_logits, last_logits=last_logits,
                        all_predicted=set_logits.argmax(-1).astype(np.int8))
    for program_name, program in [("forward", forward), ("train", main), ("startup", startup),
                                  ("step", step_program)]:
        write_gz(folder / f"{program_name}.pb", without_callstacks(program))
    return {"loss": loss.name, **{k: v.name for k, v in outputs.items()},
            "step": {k: v.name for k, v in step_outputs.items()}, "losses": losses, "set_loss": float(set_loss)}


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    out.mkdir(parents=True, exist_ok=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    arrays = data(STEPS * BATCH)
    np.savez_compressed(out / "data.npz", **arrays)
    meta = {name: train_model(out, name, exe, arrays) for name in MODELS}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    """showtell minimized in PIR static mode, trained on the legacy run's batches: pir_losses.json."""
    main, startup, loss, opt = pir_minimized(out, "showtell_", lambda: showtell()[0], optimizer, 55)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    arrays, losses = dict(np.load(out / "data.npz")), []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        legacy = np.load(out / "showtell" / "init.npz")   # the same named draws: the tests train from the legacy file
        for key in legacy.files:
            if key != "lstm_0.w_0":   # PIR's flat buffer is no view of the cells
                np.testing.assert_array_equal(np.array(scope.var(key).get_tensor()), legacy[key], err_msg=key)
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in arrays.items()}
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0]))
            opt._learning_rate.step()
    (out / "pir_losses.json").write_text(json.dumps({"showtell": losses}, indent=1) + "\n")


if __name__ == "__main__":
    script_main(main, main_pir)

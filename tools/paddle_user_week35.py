"""The vision-language retrieval engineer's programs of docs/tools.md's 'A vision-language retrieval engineer's week',
written with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0): a small CLIP-style dual encoder.

- clip.pb: an image tower (a tiny ViT over 1x8x8 images: Conv2D patch embedding of 4x4 patches, a class token and
  positional embeddings as parameters, nn.TransformerEncoder of 1 layer, LayerNorm, the class token's feature) and a
  text tower (Embedding + positional Embedding, nn.TransformerEncoder with CLIP's causal float mask of -inf above the
  diagonal, LayerNorm, the end-of-text token's feature picked by argmax of the token ids and take_along_axis), each
  projected by a bias-free Linear and L2-normalised (x / norm(x)); a learnable logit_scale (log 1/0.07) whose exp is
  clipped at 100 as CLIP does; the symmetric InfoNCE loss (cross_entropy over the similarities both ways, halved);
  recall@1 and @5 within the batch both ways (paddle.static.accuracy of the similarities against arange).
  clip_train.pb is Paddle's own training program: AdamW(weight_decay=0.1) whose apply_decay_param_fun leaves out
  biases, norms, the class token, positional embeddings and logit_scale, ClipGradByGlobalNorm(1.0), and
  LinearWarmup(CosineAnnealingDecay(0.01, T_max=4), warmup_steps=2, start_lr=0, end_lr=0.01) stepped on the host
  after each of 6 steps of 8 pairs.
- clip_indexed.pb: the same with the end token picked as OpenAI's CLIP writes it, x[arange(B), argmax(tokens)]
  (broadcast_tensors, stack, gather_nd); indexed_grads.npz: Paddle's gradients of its loss (text tower and
  logit_scale) at the initial weights on the first batch. (gradc's run of clip_startup.pb gives Paddle's initial
  weights exactly: none are kept.)
- clip_test.pb: its for_test clone, fetching the two embeddings; paddle_test.npz: Paddle's embeddings of the 16 test
  pairs and of the 4 class prompts (zero-shot), and its loss on the test pairs.
- image_tower.pdmodel / text_tower.pdmodel (+ .pdiparams): save_inference_model of each tower, trained.
- probe.pb: a linear probe on the frozen trained image tower (its features detached), Linear(16, 4), cross_entropy,
  Momentum(0.1, 0.9), 4 steps of 8 images: probe_startup.pb, losses, probe_trained.npz.
- image_tower_pir.json / text_tower_pir.json (+ .pdiparams): the towers in dygraph (PIR mode, F.normalize) on the
  trained weights,
  saved by paddle.jit.save with input specs, and the Predictor's outputs on the test set (predictor_pir.npz).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week35.py tests/data/paddle/user_week35
"""

import json
import math
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import gzip_file, pir_half, predict, script_main, without_callstacks, write_gz

VOCAB, LENGTH, DIM, EMBED, CLASSES = 12, 6, 16, 8, 4
START, END, PAD = 1, VOCAB - 1, 0
BATCH, STEPS, PROBE_STEPS, PAIRS, TEST = 8, 6, 4, 48, 16
RNG = np.random.default_rng(35)


def pairs(count: int) -> dict:
    """1x8x8 images of a bar (horizontal, vertical, diagonal, anti-diagonal) at a place, on noise, captioned
    [START, 'a', 'photo'?, class word, place word?, END, PAD...]: captions of varying length, END the highest id."""
    labels = RNG.integers(0, CLASSES, count)
    images = RNG.integers(0, 4, (count, 1, 8, 8)) / 16
    tokens = np.full((count, LENGTH), PAD, np.int64)
    for image, label, row in zip(images, labels, tokens):
        at = int(RNG.integers(2, 6))
        bar = [np.eye(8)[at - 1:at + 1].sum(0)[:, None] * np.ones(8), None, np.eye(8, k=at - 4),
               np.fliplr(np.eye(8, k=at - 4))][label]
        image[0] += 0.6 * (bar if bar is not None else np.eye(8)[at - 1:at + 1].sum(0)[None, :] * np.ones((8, 1)))
        words = [START, 2] + ([3] if RNG.random() < 0.5 else []) + [4 + label]
        words += [8 + (at > 3)] if RNG.random() < 0.5 else []
        row[:len(words) + 1] = words + [END]
    return {"image": images.astype(np.float32), "tokens": tokens, "label": labels.reshape(-1, 1)}


def prompts() -> np.ndarray:
    """The zero-shot classifier's prompts, 'a photo <class>', one per class."""
    out = np.full((CLASSES, LENGTH), PAD, np.int64)
    for label in range(CLASSES):
        out[label, :5] = [START, 2, 3, 4 + label, END]
    return out


def l2_normalised(x):
    """x / ||x|| as CLIP's code writes it (Paddle 3.3.1's legacy static F.normalize raises UnboundLocalError); in
    dygraph (the PIR exports) F.normalize itself."""
    if paddle.in_dynamic_mode():
        return F.normalize(x, axis=-1)
    return x / paddle.linalg.norm(x, axis=-1, keepdim=True)


class ImageTower(nn.Layer):
    """A tiny ViT: 4x4 patches by Conv2D, a class token, positional embeddings, one encoder layer, the class token's
    LayerNorm'd feature projected to EMBED and L2-normalised."""

    def __init__(self):
        super().__init__()
        self.patches = nn.Conv2D(1, DIM, 4, stride=4)
        self.class_token = self.create_parameter([1, 1, DIM], default_initializer=nn.initializer.Normal(0, 0.02))
        self.positions = self.create_parameter([1, 5, DIM], default_initializer=nn.initializer.Normal(0, 0.02))
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(DIM, 2, 32, dropout=0.0), 1)
        self.norm = nn.LayerNorm(DIM)
        self.projection = nn.Linear(DIM, EMBED, bias_attr=False)

    def features(self, image):
        patches = paddle.transpose(paddle.flatten(self.patches(image), 2), [0, 2, 1])       # [B, 4, DIM]
        class_tokens = paddle.expand(self.class_token, [paddle.shape(image)[0], 1, DIM])
        return self.norm(self.encoder(paddle.concat([class_tokens, patches], axis=1) + self.positions))[:, 0]

    def forward(self, image):
        return l2_normalised(self.projection(self.features(image)))


class TextTower(nn.Layer):
    """Token and positional embeddings, one causal encoder layer, the END token's LayerNorm'd feature (END is the
    highest id, so argmax finds it, as CLIP does) projected to EMBED and L2-normalised."""

    def __init__(self, indexed: bool = False):
        super().__init__()
        self.indexed = indexed   # the end token picked as OpenAI's CLIP writes it: x[arange(B), tokens.argmax(-1)]
        self.tokens = nn.Embedding(VOCAB, DIM)
        self.positions = nn.Embedding(LENGTH, DIM)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(DIM, 2, 32, dropout=0.0), 1)
        self.norm = nn.LayerNorm(DIM)
        self.projection = nn.Linear(DIM, EMBED, bias_attr=False)

    def forward(self, tokens, mask):
        embedded = self.tokens(tokens) + self.positions(paddle.arange(LENGTH, dtype="int64").unsqueeze(0))
        encoded = self.norm(self.encoder(embedded, src_mask=mask))
        ends = paddle.argmax(tokens, axis=-1)
        if self.indexed:   # broadcast_tensors, stack and gather_nd in the program
            picked = encoded[paddle.arange(paddle.shape(tokens)[0]), ends]
        else:
            picked = paddle.take_along_axis(encoded, ends.reshape([-1, 1, 1]), axis=1).squeeze(1)
        return l2_normalised(self.projection(picked))


def build_clip(indexed: bool = False):
    """The dual encoder's loss and embeddings in the current program; the mask a constant of the program."""
    image = paddle.static.data("image", [-1, 1, 8, 8], "float32")
    tokens = paddle.static.data("tokens", [-1, LENGTH], "int64")
    image_tower, text_tower = ImageTower(), TextTower(indexed)
    image_embedding = image_tower(image)
    text_embedding = text_tower(tokens, paddle.assign(np.triu(np.full((LENGTH, LENGTH), -np.inf, np.float32), 1)))
    logit_scale = paddle.create_parameter([1], "float32", name="logit_scale",
                                          default_initializer=nn.initializer.Constant(math.log(1 / 0.07)))
    scale = paddle.clip(paddle.exp(logit_scale), max=100.0)
    logits = scale * paddle.matmul(image_embedding, text_embedding, transpose_y=True)
    targets = paddle.arange(paddle.shape(image)[0], dtype="int64").unsqueeze(-1)
    loss = (F.cross_entropy(logits, targets) + F.cross_entropy(logits.T, targets)) / 2
    # recall@k within the batch, image->text and text->image: each row's pair among its k best-scored columns
    recalls = {f"{way}_recall@{k}": paddle.static.accuracy(scores, targets, k=k)
               for way, scores in (("i2t", logits), ("t2i", logits.T)) for k in (1, 5)}
    return loss, image_embedding, text_embedding, recalls


def decays(name: str) -> bool:
    """AdamW's apply_decay_param_fun: weights only, not biases, norms, tokens, positions or the temperature."""
    return name.endswith(".w_0") and not name.startswith(
        ("layer_norm", "logit_scale", "embedding", "image_tower"))


def schedule():
    return paddle.optimizer.lr.LinearWarmup(paddle.optimizer.lr.CosineAnnealingDecay(0.01, T_max=4),
                                            warmup_steps=2, start_lr=0.0, end_lr=0.01)


def batches(data: dict, steps: int, keys=None):
    for step in range(steps):
        yield {key: value[step * BATCH:(step + 1) * BATCH] for key, value in data.items() if key in (keys or data)}


def train_clip(exe, data: dict, test: dict, out: Path) -> dict:
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        main.random_seed = startup.random_seed = 35
        loss, image_embedding, text_embedding, recalls = build_clip()
        forward, test_program = main.clone(), main.clone(for_test=True)
        rates = schedule()
        optimizer = paddle.optimizer.AdamW(rates, weight_decay=0.1, apply_decay_param_fun=decays,
                                           grad_clip=nn.ClipGradByGlobalNorm(1.0))
        optimizer.minimize(loss)
    names = [p.name for p in main.all_parameters()]
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        initial = {n: np.array(scope.var(n).get_tensor()) for n in names}   # gradc's run of the startup gives them
        losses, used_rates = [], []
        for feed in batches(data, STEPS, ("image", "tokens")):
            used_rates.append(rates())
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0]))
            rates.step()
        trained = {n: np.array(scope.var(n).get_tensor()) for n in names}
        fetches = [loss, image_embedding, text_embedding, *recalls.values()]
        test_loss, test_images, test_texts, *test_recalls = exe.run(
            test_program, feed={k: test[k] for k in ("image", "tokens")}, fetch_list=fetches)
        # the prompts twice over 8 images: the program's recall@5 needs 5 columns
        twice = {"image": test["image"][:2 * CLASSES], "tokens": np.tile(prompts(), (2, 1))}
        (prompt_texts,) = exe.run(test_program, feed=twice, fetch_list=[text_embedding])
        prompt_texts = prompt_texts[:CLASSES]
        paddle.static.save_inference_model(str(out / "image_tower"), [main.global_block().var("image")],
                                           [image_embedding], exe, program=test_program)
        paddle.static.save_inference_model(str(out / "text_tower"), [main.global_block().var("tokens")],
                                           [text_embedding], exe, program=test_program)
    np.savez(out / "trained.npz", **trained)
    indexed_gradients(exe, initial, dict(next(batches(data, 1, ("image", "tokens")))), out)
    np.savez(out / "paddle_test.npz", loss=test_loss, image_embedding=test_images, text_embedding=test_texts,
             prompt_embedding=prompt_texts, prompts=prompts())
    for name, program in (("clip", forward), ("clip_train", main), ("clip_startup", startup),
                          ("clip_test", test_program)):
        write_gz(out / f"{name}.pb", without_callstacks(program))
    for tower in ("image_tower", "text_tower"):   # without the stack traces Paddle records (their line numbers)
        saved = paddle.static.Program.parse_from_string((out / f"{tower}.pdmodel").read_bytes())
        write_gz(out / f"{tower}.pdmodel", without_callstacks(saved))
        (out / f"{tower}.pdmodel").unlink()
    return {"loss": loss.name, "image_embedding": image_embedding.name, "text_embedding": text_embedding.name,
            "recalls": {key: value.name for key, value in recalls.items()},
            "test_recalls": {key: float(value) for key, value in zip(recalls, test_recalls)},
            "losses": losses, "rates": used_rates, "decayed": sorted(n for n in names if decays(n)),
            "parameters": names}


def indexed_gradients(exe, initial: dict, feed: dict, out: Path) -> None:
    """clip_indexed.pb: the model with the end token picked by x[arange(B), argmax] (gather_nd), and Paddle's
    gradients of its loss at the initial weights on the first batch (indexed_grads.npz)."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        loss = build_clip(indexed=True)[0]
        forward = main.clone()
        parameters = main.all_parameters()   # the text tower's, which the pick changes, and logit_scale: made last
        parameters = parameters[[p.name for p in parameters].index("embedding_0.w_0"):]
        grads = paddle.static.gradients(loss, parameters)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for name, value in initial.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        values = exe.run(main, feed=feed, fetch_list=[loss, *grads])
    np.savez(out / "indexed_grads.npz", loss=values[0], **{p.name: g for p, g in zip(parameters, values[1:])})
    write_gz(out / "clip_indexed.pb", without_callstacks(forward))


def train_probe(exe, data: dict, trained: dict, out: Path) -> dict:
    """A linear probe on the frozen image tower: its features detached, the tower's weights from the CLIP run."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        main.random_seed = startup.random_seed = 35
        image = paddle.static.data("image", [-1, 1, 8, 8], "float32")
        label = paddle.static.data("label", [-1, 1], "int64")
        tower, head = ImageTower(), nn.Linear(DIM, CLASSES)
        logits = head(tower.features(image).detach())
        loss = paddle.mean(F.cross_entropy(logits, label))
        accuracy = paddle.static.accuracy(F.softmax(logits), label)
        forward = main.clone()
        paddle.optimizer.Momentum(0.1, 0.9).minimize(loss)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for parameter in tower.parameters():   # the image tower's names are the CLIP run's (built first in both)
            scope.var(parameter.name).get_tensor().set(trained[parameter.name], paddle.CPUPlace())
        probe = [parameter.name for parameter in head.parameters()]
        np.savez(out / "probe_init.npz", **{n: np.array(scope.var(n).get_tensor()) for n in probe})
        losses = [float(exe.run(main, feed=feed, fetch_list=[loss])[0])
                  for feed in batches(data, PROBE_STEPS, ("image", "label"))]
        np.savez(out / "probe_trained.npz", **{n: np.array(scope.var(n).get_tensor()) for n in probe})
    write_gz(out / "probe.pb", without_callstacks(forward))
    return {"loss": loss.name, "accuracy": accuracy.name, "losses": losses, "probe": probe}


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    data, test = pairs(PAIRS), pairs(TEST)
    np.savez_compressed(out / "data.npz", **data)
    np.savez_compressed(out / "test_data.npz", **test)
    meta = {"clip": train_clip(exe, data, test, out)}
    meta["probe"] = train_probe(exe, data, dict(np.load(out / "trained.npz")), out)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    """Each trained tower in dygraph (built in the static run's order, so its parameters have the same names),
    saved by paddle.jit.save with its input spec and run by the Predictor on the test set."""
    trained, test = dict(np.load(out / "trained.npz")), dict(np.load(out / "test_data.npz"))
    with paddle.utils.unique_name.guard():
        towers = {"image_tower": ImageTower(), "text_tower": TextTower()}

    class Text(nn.Layer):
        def __init__(self, tower):
            super().__init__()
            self.tower = tower

        def forward(self, tokens):
            # the mask built by ops, as CLIP's build_attention_mask does (a captured tensor is refused by jit.save)
            return self.tower(tokens, paddle.triu(paddle.full([LENGTH, LENGTH], -np.inf), 1))

    outputs = {}
    exported = {"image_tower": (towers["image_tower"], paddle.static.InputSpec([-1, 1, 8, 8], "float32", "image")),
                "text_tower": (Text(towers["text_tower"]), paddle.static.InputSpec([-1, LENGTH], "int64", "tokens"))}
    for name, (model, spec) in exported.items():
        for parameter in model.parameters():
            parameter.set_value(trained[parameter.name])
        model.eval()
        paddle.jit.save(model, str(out / f"{name}_pir"), input_spec=[spec])
        predicted = predict(str(out / f"{name}_pir.json"), str(out / f"{name}_pir.pdiparams"),
                            {spec.name: test[spec.name]})
        outputs.update({f"{name}_{k}": v for k, v in predicted.items()})
        gzip_file(out / f"{name}_pir.json")
    np.savez(out / "predictor_pir.npz", **outputs)


if __name__ == "__main__":
    script_main(main, main_pir)
